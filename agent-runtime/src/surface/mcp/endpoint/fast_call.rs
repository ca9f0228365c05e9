//! The fast path of `tools/call` on `/agent/mcp` (`docs/mcp.md` §Fast path): the admission
//! layer answers a plain tool call itself, as one `application/json` JSON-RPC response,
//! instead of handing it to rmcp's per-request machinery (a session worker and an event stream
//! on the legacy generation, a service and its tasks per request on 2026-07-28).
//!
//! A call is answered here only when rmcp would accept it exactly as it is; anything unusual
//! or erroneous goes to rmcp unchanged, so its error codes and statuses stay rmcp's:
//! - a JSON-RPC `tools/call` request, read with rmcp's own types and nothing else in it;
//! - no `Mcp-Param-*` header;
//! - on a legacy session (live, not being rebuilt: the admission layer checked and touched
//!   it): no protocol version in `_meta`, and an `MCP-Protocol-Version` header, when sent,
//!   naming one known revision with `initialize`;
//! - on 2026-07-28 with a verified bearer: `MCP-Protocol-Version: 2026-07-28` once, the same
//!   version and the client capabilities in `_meta`, `Mcp-Method: tools/call` and `Mcp-Name`
//!   equal to the tool's name (plain, not Base64), each once;
//! - a tool that runs for a binding: never `connect_session` / `disconnect_session`, and on a
//!   legacy session never `describe_app` / `observe` (they use the session's description
//!   cache, which lives in rmcp's handler);
//! - with `McpOptions::confirm_in_client` on, never `send_message` or a `do_<action>` tool:
//!   they may ask the client to confirm (`client_confirm`), which takes rmcp's handler;
//! - a tool that exists: an unknown name (answered before anything runs) goes to rmcp for its
//!   error.
//!
//! The tool then runs through the same code as the handler's ([`ToolRunner::run`]), and the
//! response is written as rmcp's handler writes it for the generation ([`written`]).

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestMethod, CallToolRequestParams, CallToolResponse, ClientCapabilities,
    InputResponses, JsonObject, JsonRpcVersion2_0, ProtocolVersion, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::bound_token::BoundToken;
use super::client_confirm::InClient;
use super::registry::McpSessions;
use super::run::{BoundCall, ClientAsks, Generation, ToolAnswer, ToolCall, ToolRunner};
use crate::app::App;
use crate::ops::error::ApiError;
use crate::ops::Operation;
use crate::security::TokenRecord;
use crate::surface::mcp::forward::DescriptionCache;

const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const METHOD: &str = "mcp-method";
const NAME: &str = "mcp-name";
const PARAM_PREFIX: &str = "mcp-param-";
/// A header value in this form is Base64 (SEP-2243); rmcp decodes it, so it goes to rmcp.
const BASE64_PREFIX: &str = "=?base64?";
/// The `_meta` keys of the protocol version and the client capabilities (2026-07-28).
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// Where a `tools/call` came in.
pub(super) enum Route<'a> {
    /// On the legacy session with this id.
    Session(&'a str),
    /// On 2026-07-28, with the binding of its bearer and the token record the admission layer
    /// verified it to in this request (the gate takes it instead of verifying it again).
    Stateless(&'a BoundToken, Box<TokenRecord>),
}

/// The answer to a `tools/call`, or `None` when rmcp must take it (nothing ran).
pub(super) async fn answer<A: App>(
    runner: &ToolRunner<A>,
    sessions: &McpSessions,
    headers: &HeaderMap,
    mut request: PlainCall,
    route: Route<'_>,
) -> Option<Response> {
    let generation = match route {
        Route::Session(_) => Generation::Session,
        Route::Stateless(..) => Generation::Stateless,
    };
    if !plain_headers(headers, generation) {
        return None;
    }
    let meta = request.params.meta.take().unwrap_or_default();
    let meta_fits = match generation {
        Generation::Session => meta.version.is_none(),
        Generation::Stateless => {
            meta.version.as_deref() == Some(ProtocolVersion::V_2026_07_28.as_str())
                && meta.capabilities
        }
    };
    // A call that asks for progress is rmcp's: it sends the notifications.
    if !meta_fits || meta.progress {
        return None;
    }
    if generation == Generation::Stateless && !names_tool(headers, &request.params.name) {
        return None;
    }
    let ToolCall::Bound(call) = runner.resolve(request.params.into_rmcp()).ok()? else {
        return None;
    };
    // A message that may ask the client to confirm needs rmcp's handler (its peer, its
    // `input_required` result).
    if runner.may_ask_client(&call) {
        return None;
    }
    let (binding, verified) = match route {
        Route::Session(id) => {
            if let BoundCall::Run(Operation::Describe | Operation::Observe, _) = call {
                return None;
            }
            (sessions.bound_token(id), None)
        }
        Route::Stateless(binding, record) => (Some(binding.clone()), Some(*record)),
    };
    // A legacy session's cache is never read (above); a 2026-07-28 request starts with none.
    let cache = DescriptionCache::default();
    let answer = runner
        .run(
            call,
            binding,
            verified,
            generation,
            &cache,
            ClientAsks {
                in_client: &InClient::No,
                follow: None,
            },
        )
        .await
        .ok()?;
    Some(json_response(request.id, answer, generation))
}

/// A `tools/call` request: the JSON-RPC envelope and the call's parameters with rmcp's types,
/// read directly (rmcp reads any message through enums with flattened fields, which buffer the
/// whole message first). Anything more in the envelope goes to rmcp.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PlainCall {
    #[allow(dead_code)] // read to require "2.0", as rmcp does
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[allow(dead_code)] // read to require "tools/call"
    method: CallToolRequestMethod,
    params: PlainParams,
}

impl PlainCall {
    /// A POST body read as a plain `tools/call`, once, for both the admission layer and the
    /// fast path; `None` for anything else (the admission layer then peeks at it, and a body
    /// this does not read because of its `_meta` protocol version, not text or given twice,
    /// is one the peek cannot read either).
    pub(super) fn read(body: &[u8]) -> Option<Self> {
        serde_json::from_slice(body).ok()
    }

    /// The protocol version in `_meta`, as the admission layer's peek reads it.
    pub(super) fn version(&self) -> Option<&str> {
        self.params.meta.as_ref()?.version.as_deref()
    }
}

/// rmcp's `CallToolRequestParams` (rmcp 3.11), read field for field as rmcp reads it, but for
/// `_meta`: only what the fast path checks of it is kept ([`MetaView`]), and the fast path
/// runs nothing that reads the rest.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlainParams {
    #[serde(rename = "_meta", default)]
    meta: Option<MetaView>,
    name: String,
    arguments: Option<JsonObject>,
    input_responses: Option<InputResponses>,
    request_state: Option<String>,
}

impl PlainParams {
    /// The parameters as rmcp's type, without `_meta`.
    fn into_rmcp(self) -> CallToolRequestParams {
        let mut params = CallToolRequestParams::new(self.name);
        params.arguments = self.arguments;
        params.input_responses = self.input_responses;
        params.request_state = self.request_state;
        params
    }
}

/// What the fast path reads of a request's `_meta` (an object, as rmcp requires), the way
/// rmcp's `RequestMetaObject` answers it: the protocol version (`protocol_version()`: a text,
/// else none) and whether the client capabilities read as rmcp's `ClientCapabilities`
/// (`client_capabilities()`, the last of repeated keys). The version given twice, or as
/// anything but text or null, fails the read, as the admission layer's peek fails on it.
#[derive(Default)]
struct MetaView {
    version: Option<String>,
    capabilities: bool,
    /// A `progressToken` is given.
    progress: bool,
}

impl<'de> Deserialize<'de> for MetaView {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MetaVisitor)
    }
}

struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = MetaView;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the _meta object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<MetaView, M::Error> {
        let mut view = MetaView::default();
        let mut versioned = false;
        while let Some(key) = map.next_key::<MetaKey>()? {
            match key {
                MetaKey::Version if versioned => {
                    return Err(de::Error::duplicate_field(META_VERSION));
                }
                MetaKey::Version => {
                    versioned = true;
                    view.version = map.next_value()?;
                }
                MetaKey::Capabilities => {
                    let value: Value = map.next_value()?;
                    view.capabilities = ClientCapabilities::deserialize(&value).is_ok();
                }
                MetaKey::Progress => {
                    map.next_value::<IgnoredAny>()?;
                    view.progress = true;
                }
                MetaKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(view)
    }
}

/// A key of `_meta`, read without copying it.
enum MetaKey {
    Version,
    Capabilities,
    Progress,
    Other,
}

impl<'de> Deserialize<'de> for MetaKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Key;
        impl Visitor<'_> for Key {
            type Value = MetaKey;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a _meta key")
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<MetaKey, E> {
                Ok(match key {
                    META_VERSION => MetaKey::Version,
                    META_CAPABILITIES => MetaKey::Capabilities,
                    "progressToken" => MetaKey::Progress,
                    _ => MetaKey::Other,
                })
            }
        }
        deserializer.deserialize_identifier(Key)
    }
}

/// The headers rmcp accepts as they are for a tool call of `generation` (the body's side is
/// checked once it is parsed).
fn plain_headers(headers: &HeaderMap, generation: Generation) -> bool {
    if headers
        .keys()
        .any(|name| name.as_str().starts_with(PARAM_PREFIX))
    {
        return false;
    }
    let version = sole(headers, PROTOCOL_VERSION);
    match generation {
        Generation::Session => match version {
            Sole::Absent => true,
            Sole::One(v) => ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|known| known.as_str() == v && known.has_initialize()),
            Sole::Other => false,
        },
        Generation::Stateless => {
            matches!(version, Sole::One(v) if v == ProtocolVersion::V_2026_07_28.as_str())
                && matches!(sole(headers, METHOD), Sole::One("tools/call"))
        }
    }
}

/// `Mcp-Name` is the tool's name as it is.
fn names_tool(headers: &HeaderMap, name: &str) -> bool {
    matches!(sole(headers, NAME), Sole::One(v) if v == name && !v.starts_with(BASE64_PREFIX))
}

/// What a request carries of a header.
enum Sole<'a> {
    Absent,
    /// One value, valid text.
    One(&'a str),
    /// Several values, or one that is not valid text.
    Other,
}

fn sole<'a>(headers: &'a HeaderMap, name: &str) -> Sole<'a> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Sole::Absent,
        (Some(v), None) => v.to_str().map_or(Sole::Other, Sole::One),
        _ => Sole::Other,
    }
}

/// The JSON-RPC response as rmcp writes it for a request of `generation` answered with plain
/// JSON.
fn json_response(id: RequestId, answer: ToolAnswer, generation: Generation) -> Response {
    let fast = match &answer {
        ToolAnswer::Passed(success) if success.is_canonical() => {
            passed(&id, success.text(), generation)
        }
        _ => None,
    };
    let body = match fast {
        Some(body) => Ok(body),
        None => written(id, answer.into_response(), generation),
    };
    match body {
        Ok(body) => {
            let mut response = Response::new(Body::from(body));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => {
            ApiError::internal(format!("serializing the tool result failed: {e}")).into_response()
        }
    }
}

/// The response rmcp's handler writes for `result`: on 2026-07-28 with the caching hints a
/// cacheable result lacks (none for a tool call) and `resultType`; on a legacy session without
/// `resultType: "complete"` and without a structured content that is not an object.
fn written(
    id: RequestId,
    result: CallToolResponse,
    generation: Generation,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut result = ServerResult::from(result);
    match generation {
        Generation::Stateless => result.fill_missing_cache_hints(),
        Generation::Session => {
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
        }
    }
    serde_json::to_vec(&ServerJsonRpcMessage::response(result, id))
}

/// The response of a success that passes the operation's JSON text on, `text` being
/// serde_json's compact text of a value (a canonical [`ToolAnswer::Passed`]): written around the
/// text instead of parsing it into a value and writing that again (the same bytes as
/// [`written`]). `None` for text that is not a JSON object: it is written by [`written`],
/// parsed.
fn passed(id: &RequestId, text: &str, generation: Generation) -> Option<Vec<u8>> {
    if !text.starts_with('{') {
        return None;
    }
    // The text twice, once escaped (a quote takes two bytes), and the envelope.
    let mut out = Vec::with_capacity(3 * text.len() + 128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut out, id).ok()?;
    out.extend_from_slice(match generation {
        Generation::Stateless => br#","result":{"resultType":"complete","content":["#,
        Generation::Session => br#","result":{"content":["#,
    });
    out.extend_from_slice(br#"{"type":"text","text":"#);
    write_str(&mut out, text);
    out.extend_from_slice(br#"}],"structuredContent":"#);
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"}}");
    Some(out)
}

/// `text` as a JSON string, the bytes serde_json writes for it. A text without control
/// characters (any JSON text serde_json wrote compactly) has only its quotes and backslashes
/// escaped, copied in one pass into room made for the worst case; one with control
/// characters is written by serde_json.
fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    if bytes.iter().any(|&b| b < 0x20) {
        // Writing into a `Vec` does not fail.
        let _ = serde_json::to_writer(&mut *out, text);
        return;
    }
    let start = out.len();
    out.resize(start + 2 * bytes.len() + 2, 0);
    let room = &mut out[start..];
    room[0] = b'"';
    let mut at = 1;
    for &b in bytes {
        if b == b'"' || b == b'\\' {
            room[at] = b'\\';
            at += 1;
        }
        room[at] = b;
        at += 1;
    }
    room[at] = b'"';
    out.truncate(start + at + 1);
}

#[cfg(test)]
#[path = "fast_call_tests.rs"]
mod tests;
