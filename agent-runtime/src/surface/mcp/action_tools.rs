//! The app's actions as MCP tools (`docs/mcp.md` §Action tools): one `do_<wire name>` tool per
//! variant an agent may ever send (every one but the `@humanOnly`), in declaration order, with
//! the variant's payload as its input schema. The list is the same whatever the state: it
//! changes only with the app's schema. Calling one sends the message exactly as `send_message`
//! would (the same gate: validation, `@validates`, confirmation, idempotency, audit, rate limit,
//! the action gate); one the state does not offer now answers a tool error
//! ([`ActionCatalog::unavailable`]).
//!
//! Names are given over every variant of the app in schema order, so a variant keeps its tool
//! name whatever its annotations.

use std::collections::HashSet;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};
use tea_agent_schema::protocol::{Action, SendResult};
use tea_agent_schema::tags::prose_of;
use tea_agent_schema::{DispatchMode, MessageAnnotations};

use super::tools::annotations;
use crate::algo::affordances::DEFAULT_UNAVAILABLE_REASON;
use crate::ops::ToolHints;

/// Tool names are at most this long (MCP clients refuse longer ones).
const MAX_NAME: usize = 64;
/// Every action tool's name starts so, apart from the 19 tools.
const PREFIX: &str = "do_";

/// One variant of the app as a tool.
#[derive(Debug, Clone)]
pub(crate) struct ActionEntry {
    /// The variant's wire name.
    pub wire: String,
    /// The tool name.
    pub name: String,
    /// The payload's JSON Schema (an object schema without the `type` discriminant).
    payload: JsonObject,
    /// `(field, hint)` of the fields tagged `@should`.
    hints: Vec<(String, String)>,
    /// The variant's annotations, as the description carries them.
    annotations: MessageAnnotations,
    /// The argument that carries `send_message`'s `reason` (not a payload field).
    reason_key: String,
    /// The argument that carries `send_message`'s `idempotencyKey`.
    key_key: String,
}

/// Every variant of one app as a tool.
#[derive(Debug, Clone, Default)]
pub(crate) struct ActionCatalog {
    entries: Vec<ActionEntry>,
    /// The listed tools, built once: every entry an agent may send, in declaration order.
    listed: Vec<Tool>,
}

impl ActionCatalog {
    /// A hosted app's catalog: payload schemas from the schemars schema of its `Msg` type,
    /// `@should` hints from its description.
    pub(crate) fn hosted<M: JsonSchema>(description: &Value) -> Self {
        let root = SchemaSettings::draft2020_12()
            .with(|s| {
                s.inline_subschemas = true;
                s.meta_schema = None;
            })
            .into_generator()
            .into_root_schema_for::<M>()
            .to_value();
        let defs = root.get("$defs").cloned();
        let members = root
            .get("oneOf")
            .or_else(|| root.get("anyOf"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_else(|| vec![root.clone()]);
        let payloads = members.into_iter().filter_map(|member| {
            let Value::Object(mut member) = member else {
                return None;
            };
            let wire = discriminant(&member)?;
            strip_discriminant(&mut member);
            for value in member.values_mut() {
                clean_descriptions(value);
            }
            if let Some(defs) = &defs {
                member.insert("$defs".into(), defs.clone());
            }
            Some((wire, member))
        });
        ActionCatalog::build(payloads, description, Some(Arc::new(output_schema())))
    }

    /// A paired app's catalog, from the message shapes of its description
    /// (`docs/annotations.md` §7.2).
    pub(crate) fn from_description(description: &Value) -> Self {
        let variants = description
            .pointer("/messages/variants")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let payloads = variants
            .into_iter()
            .map(|(wire, fields)| (wire, object_schema(&fields)));
        ActionCatalog::build(payloads, description, None)
    }

    /// The catalog of `payloads` (in declaration order) with `description`'s hints and
    /// annotations; `output` the `outputSchema` of every tool.
    fn build(
        payloads: impl Iterator<Item = (String, JsonObject)>,
        description: &Value,
        output: Option<Arc<JsonObject>>,
    ) -> Self {
        let mut taken = HashSet::new();
        let entries = payloads
            .map(|(wire, payload)| {
                let name = tool_name(&wire, &mut taken);
                let fields = description
                    .pointer(&format!("/messages/variants/{}", pointer_escape(&wire)))
                    .and_then(Value::as_object);
                let hints = fields.map(should_hints).unwrap_or_default();
                let mut payload = payload;
                describe_hinted_fields(&mut payload, &hints);
                let reason_key = free_key(&payload, "_reason");
                let key_key = free_key(&payload, "_idempotencyKey");
                let annotations = annotations_of(description, &wire);
                ActionEntry {
                    wire,
                    name,
                    payload,
                    hints,
                    annotations,
                    reason_key,
                    key_key,
                }
            })
            .collect::<Vec<ActionEntry>>();
        let listed = entries
            .iter()
            .filter(|e| e.annotations.dispatch_mode != DispatchMode::HumanOnly)
            .map(|e| e.tool(output.clone()))
            .collect();
        ActionCatalog { entries, listed }
    }

    /// The entry of the tool called `name`.
    pub(crate) fn find(&self, name: &str) -> Option<&ActionEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The annotations of the variant `wire`, when the app has it.
    pub(crate) fn annotations(&self, wire: &str) -> Option<&MessageAnnotations> {
        self.entries
            .iter()
            .find(|e| e.wire == wire)
            .map(|e| &e.annotations)
    }

    /// The listed tools: one per variant an agent may send, whatever the state.
    pub(crate) fn tools(&self) -> &[Tool] {
        &self.listed
    }

    /// The tool error of a call of `entry` that `send_message` refused as `unavailable` with
    /// `detail`: the reason, and the tools of `available` (what `list_actions` answers now)
    /// an agent may call now, as text and as `structuredContent`.
    pub(crate) fn unavailable(
        &self,
        entry: &ActionEntry,
        detail: Option<&str>,
        available: &[Action],
    ) -> CallToolResult {
        let now: Vec<&str> = available
            .iter()
            .filter(|a| a.available != Some(false))
            .filter_map(|a| self.entries.iter().find(|e| e.wire == a.variant))
            .map(|e| e.name.as_str())
            .collect();
        let detail = detail.unwrap_or("the action is not offered in the current state");
        let mut text = format!("{} is not available now: {detail}.", entry.name);
        if now.is_empty() {
            text.push_str(" No action is available now.");
        } else {
            text.push_str(&format!(" Available now: {}.", now.join(", ")));
        }
        let mut result = CallToolResult::default();
        result.content = vec![ContentBlock::text(text)];
        result.structured_content = Some(json!({
            "status": "rejected",
            "reason": "unavailable",
            "detail": detail,
            "availableNow": now,
        }));
        result.is_error = Some(true);
        result
    }
}

impl ActionEntry {
    /// The tool's hints (`docs/mcp.md` §Tool annotations; its title is the intent): a dispatch,
    /// destructive when the human must approve it (`@requiresConfirm`), never idempotent (the
    /// update runs again; `_idempotencyKey` makes a retry safe), open-world when it `@emits`
    /// effects.
    fn hints(&self) -> ToolHints {
        let a = &self.annotations;
        ToolHints::change("", a.requires_confirm, false, !a.emits.is_empty())
    }

    fn tool(&self, output: Option<Arc<JsonObject>>) -> Tool {
        let requires_confirm = self.annotations.requires_confirm;
        let mut schema = self.payload.clone();
        let properties = schema
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(properties) = properties {
            if requires_confirm {
                properties.insert(
                    self.reason_key.clone(),
                    json!({"type": "string", "description":
                        "Why you are doing this, in a sentence the user reads when asked to approve."}),
                );
            }
            properties.insert(
                self.key_key.clone(),
                json!({"type": "string", "description":
                    "Optional: the same key on a retry applies the action once (10 minutes)."}),
            );
        }
        let title = self
            .annotations
            .intent
            .clone()
            .filter(|i| !i.is_empty())
            .unwrap_or_else(|| self.wire.clone());
        let mut tool = Tool::new(self.name.clone(), self.description(), Arc::new(schema))
            .with_title(title.as_str())
            .with_annotations(annotations(&title, &self.hints()));
        if let Some(output) = output {
            tool = tool.with_raw_output_schema(output);
        }
        tool
    }

    fn description(&self) -> String {
        let a = &self.annotations;
        let mut text = match a.intent.as_deref().filter(|i| !i.is_empty()) {
            Some(intent) => format!("{intent} (sends the message `{}`).", self.wire),
            None => format!("Sends the message `{}`.", self.wire),
        };
        if let Some(warning) = &a.warning {
            text.push_str(&format!(" Warning: {warning}"));
        }
        // The gate's reason says why it is closed ("no todo is completed yet").
        if let Some(gate) = a.route_gate.as_deref() {
            text.push_str(&format!(
                " Available only when the state allows it (`{gate}`); otherwise refused: {}.",
                a.route_gate_reason
                    .as_deref()
                    .unwrap_or(DEFAULT_UNAVAILABLE_REASON)
            ));
        }
        for (field, hint) in &self.hints {
            text.push_str(&format!("\n- `{field}`: {hint}"));
        }
        if a.requires_confirm {
            text.push_str(&format!(
                "\nThe user must approve it: the answer is `pending-confirmation` with a \
                 confirmId to poll with get_confirm_result; say why in `{}`.",
                self.reason_key
            ));
        }
        text
    }

    /// The `send_message` request of a call with `args`: the payload fields become the
    /// message, the option arguments its `reason` and `idempotencyKey`; it waits for `idle`.
    pub(crate) fn message_request(&self, mut args: Map<String, Value>) -> Value {
        let reason = args.remove(&self.reason_key);
        let key = args.remove(&self.key_key);
        let mut msg = Map::with_capacity(args.len() + 1);
        msg.insert("type".into(), Value::String(self.wire.clone()));
        msg.extend(args);
        let mut request = Map::new();
        request.insert("msg".into(), Value::Object(msg));
        request.insert("waitFor".into(), Value::from("idle"));
        if let Some(reason) = reason.filter(|r| !r.is_null()) {
            request.insert("reason".into(), reason);
        }
        if let Some(key) = key.filter(|k| !k.is_null()) {
            request.insert("idempotencyKey".into(), key);
        }
        Value::Object(request)
    }
}

/// `do_` + the wire name with every character outside `[A-Za-z0-9_-]` replaced by `_`, cut to
/// 64 characters, and made unique among `taken` with a numeric suffix.
pub(crate) fn tool_name(wire: &str, taken: &mut HashSet<String>) -> String {
    let clean: String = wire
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base: String = format!("{PREFIX}{clean}").chars().take(MAX_NAME).collect();
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        let suffix = format!("_{n}");
        let keep = MAX_NAME - suffix.len();
        name = format!("{}{suffix}", base.chars().take(keep).collect::<String>());
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// `preferred`, or with more leading underscores while the payload has such a field.
fn free_key(payload: &JsonObject, preferred: &str) -> String {
    let has = |k: &str| {
        payload
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key(k))
    };
    let mut key = preferred.to_string();
    while has(&key) {
        key.insert(0, '_');
    }
    key
}

/// The `type` literal of a variant's object schema.
fn discriminant(member: &JsonObject) -> Option<String> {
    let ty = member.get("properties")?.get("type")?;
    ty.get("const")
        .or_else(|| ty.get("enum").and_then(|e| e.get(0)))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Removes the `type` discriminant (and the variant's own title and doc: the tool has them).
fn strip_discriminant(member: &mut JsonObject) {
    if let Some(Value::Object(p)) = member.get_mut("properties") {
        p.remove("type");
    }
    if let Some(Value::Array(required)) = member.get_mut("required") {
        required.retain(|r| r != "type");
        if required.is_empty() {
            member.remove("required");
        }
    }
    member.remove("title");
    member.remove("description");
    member.insert("type".into(), Value::from("object"));
}

/// `outputSchema` of a hosted app's action tools: an object with the `status` of
/// `send_message`'s answer (the statuses read from [`SendResult`]'s schema). The answer's
/// other keys depend on its status; the whole union (7.7 kB) is `send_message`'s and would be
/// repeated per tool (`docs/mcp.md` §Action tools).
fn output_schema() -> JsonObject {
    let root = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<SendResult>()
        .to_value();
    let statuses: Vec<Value> = root
        .get("oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|member| {
            let status = member.pointer("/properties/status")?;
            status
                .get("const")
                .or_else(|| status.pointer("/enum/0"))
                .cloned()
        })
        .collect();
    let mut schema = JsonObject::new();
    schema.insert("type".into(), Value::from("object"));
    schema.insert(
        "properties".into(),
        json!({"status": {"type": "string", "enum": statuses}}),
    );
    schema.insert("required".into(), json!(["status"]));
    schema
}

/// The annotations of `wire` in `description` (`/annotations/<wire>`), lenient: a key missing
/// or unreadable keeps its default.
fn annotations_of(description: &Value, wire: &str) -> MessageAnnotations {
    let mut record = match serde_json::to_value(MessageAnnotations::default()) {
        Ok(Value::Object(record)) => record,
        _ => return MessageAnnotations::default(),
    };
    let defaults = record.clone();
    if let Some(Value::Object(given)) = description.get("annotations").and_then(|a| a.get(wire)) {
        for (key, value) in given {
            if record.contains_key(key) {
                record.insert(key.clone(), value.clone());
            }
        }
    }
    serde_json::from_value(Value::Object(record))
        .or_else(|_| serde_json::from_value(Value::Object(defaults)))
        .unwrap_or_default()
}

/// Every `description` of a schemars schema without its tags: a field's doc is written with
/// them (`docs/annotations.md` §1), a model reads prose.
fn clean_descriptions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(doc)) = map.get("description") {
                let prose = prose_of(doc);
                if prose.is_empty() {
                    map.remove("description");
                } else {
                    map.insert("description".into(), Value::String(prose));
                }
            }
            for (key, child) in map.iter_mut() {
                // `properties` maps names to schemas: a field may be called `description`.
                if key != "description" {
                    clean_descriptions(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean_descriptions),
        _ => {}
    }
}

/// A field with a `@should` hint and no prose of its own is described by its hint.
fn describe_hinted_fields(payload: &mut JsonObject, hints: &[(String, String)]) {
    let Some(Value::Object(properties)) = payload.get_mut("properties") else {
        return;
    };
    for (field, hint) in hints {
        if let Some(Value::Object(schema)) = properties.get_mut(field) {
            schema
                .entry("description")
                .or_insert_with(|| Value::from(hint.as_str()));
        }
    }
}

/// The `@should` hints of a variant's `{field: MsgSchemaField}` map.
fn should_hints(fields: &Map<String, Value>) -> Vec<(String, String)> {
    fields
        .iter()
        .filter_map(|(name, field)| {
            let hint = field.get("hint")?.as_str()?;
            Some((name.clone(), hint.to_string()))
        })
        .collect()
}

/// The JSON Schema of a `{field: MsgSchemaField}` map (`docs/annotations.md` §7.2).
fn object_schema(fields: &Value) -> JsonObject {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, field) in fields.as_object().into_iter().flatten() {
        let (ty, optional, hint) = match field.get("type") {
            // The rich form: `{type, optional?, priority?, hint?, validates?}`.
            Some(ty) if field.get("kind").is_none() && field.get("enum").is_none() => (
                ty,
                field.get("optional").and_then(Value::as_bool) == Some(true),
                field.get("hint").and_then(Value::as_str),
            ),
            _ => (field, false, None),
        };
        let mut schema = bare_schema(ty);
        if let Some(hint) = hint {
            schema.insert("description".into(), Value::from(hint));
        }
        if !optional {
            required.push(Value::from(name.as_str()));
        }
        properties.insert(name.clone(), Value::Object(schema));
    }
    let mut out = JsonObject::new();
    out.insert("type".into(), Value::from("object"));
    out.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    out
}

/// The JSON Schema of a `MsgSchemaBareType`.
fn bare_schema(ty: &Value) -> JsonObject {
    let schema = match ty {
        Value::String(s) if matches!(s.as_str(), "string" | "number" | "boolean") => {
            json!({ "type": s })
        }
        Value::Object(o) if o.contains_key("enum") => json!({ "enum": o["enum"] }),
        Value::Object(o) => match o.get("kind").and_then(Value::as_str) {
            Some("object") => Value::Object(object_schema(o.get("shape").unwrap_or(&Value::Null))),
            Some("array") => json!({
                "type": "array",
                "items": Value::Object(bare_schema(o.get("element").unwrap_or(&Value::Null))),
            }),
            Some("discriminated-union") => {
                let discriminant = o
                    .get("discriminant")
                    .and_then(Value::as_str)
                    .unwrap_or("type");
                let branches: Vec<Value> = o
                    .get("variants")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .map(|(value, fields)| {
                        let mut branch = object_schema(fields);
                        if let Some(Value::Object(p)) = branch.get_mut("properties") {
                            p.insert(discriminant.into(), json!({ "const": value }));
                        }
                        if let Some(Value::Array(r)) = branch.get_mut("required") {
                            r.push(Value::from(discriminant));
                        } else {
                            branch.insert("required".into(), json!([discriminant]));
                        }
                        Value::Object(branch)
                    })
                    .collect();
                json!({ "oneOf": branches })
            }
            _ => json!({}),
        },
        // `unknown` and anything this version does not know: any value.
        _ => json!({}),
    };
    match schema {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

/// A JSON Pointer segment (RFC 6901).
fn pointer_escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
#[path = "action_tools_tests.rs"]
mod tests;
