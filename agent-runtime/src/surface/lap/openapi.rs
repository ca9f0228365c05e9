//! The OpenAPI 3.1 document of LAP (`GET {lapBasePath}/openapi.json`), generated from the
//! operation table ([`OPERATIONS`]): one `POST` per operation, its request and 200 schemas from
//! schemars (JSON Schema 2020-12, the dialect of OpenAPI 3.1), and the error answers of the gate
//! (`docs/lap.md` §5.1, §5.3, §10), all with the [`ErrorResponse`] body.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{json, Map, Value};
use tea_agent_schema::protocol::{ErrorCode, ErrorResponse};

use crate::ops::budget::{bounded_answer_schema, budget_schema, takes_budget};
use crate::ops::{OperationSpec, OPERATIONS};

/// Where the schemas live in the document (`#/components/schemas/<name>`).
const DEFINITIONS_PATH: &str = "/components/schemas/";

/// The name of the bearer security scheme.
const BEARER: &str = "agentToken";

/// The LAP path of `/message`, whose answer may carry `idempotent-replayed` (`docs/lap.md`
/// §5.7).
const MESSAGE_PATH: &str = "/message";

/// An error answer of the LAP gate or handlers: its code (which knows its status) and its
/// component name.
struct ErrorAnswer {
    code: ErrorCode,
    name: &'static str,
    /// Only the operations whose conduct says they conflict answer it (409).
    message_only: bool,
}

/// The error answers of the LAP operations (`docs/lap.md` §5.1, §5.3, §10), in status order: every
/// operation can give them, except 409, which only the operations marked `conflicts` give
/// (`/message` §5.7, `/withdraw` §5.8).
const ERROR_ANSWERS: &[ErrorAnswer] = &[
    ErrorAnswer {
        code: ErrorCode::Invalid,
        name: "Invalid",
        message_only: false,
    },
    ErrorAnswer {
        code: ErrorCode::AuthFailed,
        name: "AuthFailed",
        message_only: false,
    },
    ErrorAnswer {
        code: ErrorCode::Revoked,
        name: "Revoked",
        message_only: false,
    },
    ErrorAnswer {
        code: ErrorCode::Conflict,
        name: "Conflict",
        message_only: true,
    },
    ErrorAnswer {
        code: ErrorCode::PayloadTooLarge,
        name: "PayloadTooLarge",
        message_only: false,
    },
    ErrorAnswer {
        code: ErrorCode::RateLimited,
        name: "RateLimited",
        message_only: false,
    },
    ErrorAnswer {
        code: ErrorCode::Internal,
        name: "Internal",
        message_only: false,
    },
    ErrorAnswer {
        code: ErrorCode::Paused,
        name: "Paused",
        message_only: false,
    },
    ErrorAnswer {
        code: ErrorCode::Timeout,
        name: "Timeout",
        message_only: false,
    },
];

/// The limits the document's prose names, as this server is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DocumentedLimits {
    /// The body cap.
    pub(crate) max_body_bytes: usize,
    /// How long an `idempotencyKey` is remembered.
    pub(crate) idempotency_window_ms: u64,
    /// How long a paired session's app has to answer a relayed read (none without pairing).
    pub(crate) forward_timeout: Option<u64>,
}

/// `bytes` for people: `1 MiB`, `64 KiB`, or bytes.
fn size_text(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// `ms` for people: whole minutes or seconds when they are, else milliseconds.
fn duration_text(ms: u64) -> String {
    if ms >= 60_000 && ms.is_multiple_of(60_000) {
        format!("{} minutes", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

/// The description of an error answer, with the configured limits.
fn error_description(code: ErrorCode, limits: &DocumentedLimits) -> String {
    let what = match code {
        ErrorCode::Invalid => "the body is not one the operation can use; `detail` says why \
            (e.g. `path must be a string`, `unknown confirmId: <id>`)."
            .to_string(),
        ErrorCode::AuthFailed => {
            "the bearer token is missing, malformed, unknown, expired or idle.".to_string()
        }
        ErrorCode::Revoked => "the token was revoked.".to_string(),
        ErrorCode::Conflict => format!(
            "the `idempotencyKey` was used for a different message within the last {}.",
            duration_text(limits.idempotency_window_ms)
        ),
        ErrorCode::PayloadTooLarge => format!(
            "the body is over {}, or one item is over its byte budget (a narration text, a \
             proposal, an idempotency record); the detail names the size and the limit.",
            size_text(limits.max_body_bytes)
        ),
        ErrorCode::RateLimited => "the token's rate limit is exhausted, or a byte budget is \
            full (pending confirmations, idempotency records; the detail names the limit); \
            retry after `retryAfterMs`."
            .to_string(),
        ErrorCode::Internal => "the handler or an app hook failed.".to_string(),
        ErrorCode::Paused => "the token's session was closed by the host (or its stored state \
            cannot be migrated after an upgrade: `detail` says why), or a paired \
            session's app is not connected; `reconnect` (also in the `x-llui-reconnect` \
            header) says what to do."
            .to_string(),
        ErrorCode::Timeout => match limits.forward_timeout {
            Some(ms) => format!(
                "a paired session's app did not answer within {}.",
                duration_text(ms)
            ),
            None => "the session did not answer in time.".to_string(),
        },
        other => other.as_str().to_string(),
    };
    format!("`{}`: {what}", code.as_str())
}

/// The schemars settings of the document: JSON Schema 2020-12 with the definitions under
/// `#/components/schemas/` and no `$schema` keyword.
fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = DEFINITIONS_PATH.into();
        s.meta_schema = None;
    })
}

/// The OpenAPI 3.1.0 document of the LAP operations served under `lap_base_path`
/// (`/agent/lap/v1`), with `title` and `version` as its `info` (the app's name and version).
///
/// Request schemas describe what the server reads (schemars' deserialize contract), 200 and
/// error schemas what it writes (the serialize contract). `servers` is omitted, so the paths
/// are relative to the origin the document was fetched from.
pub(crate) fn openapi_document(
    lap_base_path: &str,
    title: &str,
    version: &str,
    limits: &DocumentedLimits,
) -> Value {
    let base = lap_base_path.trim_end_matches('/');
    let mut requests = settings().for_deserialize().into_generator();
    let mut responses = settings().for_serialize().into_generator();
    let error_schema = responses.subschema_for::<ErrorResponse>().to_value();

    let mut paths = Map::new();
    for spec in OPERATIONS {
        let request = request_schema(spec, &mut requests);
        let mut response = (spec.response_schema)(&mut responses).to_value();
        if takes_budget(spec.lap_path) {
            // With `budgetChars`, a long answer is its bounded view.
            response = json!({"anyOf": [response, bounded_answer_schema()]});
        }
        paths.insert(
            format!("{base}{}", spec.lap_path),
            json!({ "post": operation(spec, request, response) }),
        );
    }

    let mut schemas = take_definitions(&mut responses);
    for (name, schema) in take_definitions(&mut requests) {
        // A type used on both sides gets one entry; the unit tests check that the two
        // contracts agree on it.
        schemas.entry(name).or_insert(schema);
    }

    let mut error_responses = Map::new();
    for answer in ERROR_ANSWERS {
        let mut response = json!({
            "description": error_description(answer.code, limits),
            "content": {"application/json": {"schema": error_schema.clone()}},
        });
        if answer.code == ErrorCode::Paused {
            response["headers"] = json!({
                "x-llui-reconnect": {
                    "description": "The `reconnect` of the body (`expired` in-process).",
                    "schema": {"type": "string"},
                }
            });
        }
        error_responses.insert(answer.name.to_string(), response);
    }

    json!({
        "openapi": "3.1.0",
        "info": {
            "title": format!("{title}: LAP"),
            "version": version,
            "description": format!(
                "LAP, the agent protocol of this app, under `{base}`. Every operation is a \
                 `POST` with an optional JSON body (an empty or malformed body reads as no \
                 keys; a key whose value is null counts as absent; unknown keys are ignored) \
                 and a bearer agent token (`agt_…`) minted by `POST /agent/mint`. A refusal \
                 of a message is a 200 answer, not an error; errors answer \
                 `{{\"error\":{{\"code\",\"detail\"?,\"retryAfterMs\"?,\"reconnect\"?}}}}`."
            ),
        },
        "security": [{ BEARER: [] }],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": error_responses,
            "securitySchemes": {
                BEARER: {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An agent token (`agt_…`) from `POST /agent/mint`, bound \
                        to one session.",
                }
            },
        },
    })
}

/// The generator's definitions with their transforms applied.
/// The request schema of `spec`'s operation, with `budgetChars` where LAP takes it (a
/// surface field: the operation's request type does not carry it).
fn request_schema(spec: &OperationSpec, generator: &mut SchemaGenerator) -> Value {
    let mut request = (spec.request_schema)(generator).to_value();
    if !takes_budget(spec.lap_path) {
        return request;
    }
    let inline = request.get("$ref").is_none() && request.get("allOf").is_none();
    if let (true, Some(schema)) = (inline, request.as_object_mut()) {
        let properties = schema
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(properties) = properties.as_object_mut() {
            properties.insert("budgetChars".into(), budget_schema());
        }
        return request;
    }
    // A shared request type (`/observe`'s): its schema, and the one key LAP adds.
    json!({
        "allOf": [request],
        "properties": {"budgetChars": budget_schema()}
    })
}

fn take_definitions(generator: &mut SchemaGenerator) -> Map<String, Value> {
    generator.take_definitions(true).into_iter().collect()
}

/// The `post` object of one operation.
fn operation(spec: &OperationSpec, request: Value, response: Value) -> Value {
    let mut responses = Map::new();
    let mut ok = json!({
        "description": "The operation's answer.",
        "content": {"application/json": {"schema": response}},
    });
    if spec.lap_path == MESSAGE_PATH {
        ok["headers"] = json!({
            "idempotent-replayed": {
                "description": "`true` when the answer is the stored answer of an earlier \
                    call with the same `idempotencyKey`.",
                "schema": {"type": "string", "enum": ["true"]},
            }
        });
    }
    responses.insert("200".into(), ok);
    for answer in ERROR_ANSWERS {
        if answer.message_only && !spec.conduct.conflicts {
            continue;
        }
        responses.insert(
            answer.code.status().to_string(),
            json!({ "$ref": format!("#/components/responses/{}", answer.name) }),
        );
    }
    json!({
        "operationId": spec.tool,
        "summary": summary(spec.description),
        "description": spec.description,
        "requestBody": {
            "required": false,
            "content": {"application/json": {"schema": request}},
        },
        "responses": responses,
    })
}

/// The first sentence of a description, without its period: up to the first `. ` that is
/// followed by a capital letter (so `e.g. a counter` does not end it).
fn summary(description: &str) -> &str {
    let mut from = 0;
    while let Some(i) = description[from..].find(". ") {
        let end = from + i;
        if description[end + 2..]
            .chars()
            .next()
            .is_some_and(char::is_uppercase)
        {
            return &description[..end];
        }
        from = end + 2;
    }
    description.trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: DocumentedLimits = DocumentedLimits {
        max_body_bytes: 1 << 20,
        idempotency_window_ms: 600_000,
        forward_timeout: Some(15_000),
    };

    #[test]
    fn error_prose_names_the_configured_limits() {
        let doc = document();
        let responses = &doc["components"]["responses"];
        let text = |name: &str| responses[name]["description"].as_str().unwrap().to_string();
        assert!(text("PayloadTooLarge").contains("over 1 MiB"));
        assert!(text("Conflict").contains("within the last 10 minutes"));
        assert!(text("Timeout").contains("within 15 s"));
        let other = DocumentedLimits {
            max_body_bytes: 64 << 10,
            idempotency_window_ms: 90_000,
            forward_timeout: Some(2_500),
        };
        let doc = openapi_document("/agent/lap/v1", "counter", "1.2.3", &other);
        let responses = &doc["components"]["responses"];
        let text = |name: &str| responses[name]["description"].as_str().unwrap().to_string();
        assert!(text("PayloadTooLarge").contains("over 64 KiB"));
        assert!(text("Conflict").contains("within the last 90 s"));
        assert!(text("Timeout").contains("within 2500 ms"));
        for answer in ERROR_ANSWERS {
            assert!(text(answer.name).starts_with(&format!("`{}`", answer.code.as_str())));
        }
    }

    fn document() -> Value {
        openapi_document("/agent/lap/v1/", "counter", "1.2.3", &LIMITS)
    }

    /// Every `$ref` in `value`, with the JSON Pointer path where it occurs.
    fn refs<'a>(value: &'a Value, at: String, out: &mut Vec<(String, &'a str)>) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    if key == "$ref" {
                        if let Some(r) = v.as_str() {
                            out.push((at.clone(), r));
                        }
                    }
                    refs(v, format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    refs(v, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    /// Follows `schema` through a `$ref` into the document.
    fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => doc
                .pointer(r.strip_prefix('#').expect("a local $ref"))
                .unwrap_or_else(|| panic!("{r} does not resolve")),
            None => schema,
        }
    }

    #[test]
    fn is_openapi_3_1_with_a_global_bearer_scheme() {
        let doc = document();
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(doc["info"]["title"], "counter: LAP");
        assert_eq!(doc["info"]["version"], "1.2.3");
        assert!(doc.get("servers").is_none());
        assert_eq!(doc["security"], json!([{ BEARER: [] }]));
        assert_eq!(doc["components"]["securitySchemes"][BEARER]["type"], "http");
        assert_eq!(
            doc["components"]["securitySchemes"][BEARER]["scheme"],
            "bearer"
        );
        let text = doc.to_string();
        assert!(!text.contains("\"$schema\""), "no $schema keyword");
        assert!(!text.contains("#/$defs"), "no $defs reference");
    }

    #[test]
    fn lists_every_operation_with_its_schemas() {
        let doc = document();
        let paths = doc["paths"].as_object().unwrap();
        assert_eq!(paths.len(), OPERATIONS.len());
        let mut ids = Vec::new();
        for spec in OPERATIONS {
            let path = format!("/agent/lap/v1{}", spec.lap_path);
            let item = paths
                .get(&path)
                .unwrap_or_else(|| panic!("{path} is listed"));
            assert_eq!(item.as_object().unwrap().len(), 1, "{path}: POST only");
            let op = &item["post"];
            assert_eq!(op["operationId"], spec.tool);
            assert_eq!(op["description"], spec.description);
            let summary = op["summary"].as_str().unwrap();
            assert!(!summary.is_empty() && spec.description.starts_with(summary));
            ids.push(spec.tool);

            let mut requests = settings().for_deserialize().into_generator();
            let mut responses = settings().for_serialize().into_generator();
            assert_eq!(op["requestBody"]["required"], false);
            let request = &op["requestBody"]["content"]["application/json"]["schema"];
            assert_eq!(*request, request_schema(spec, &mut requests));
            assert_eq!(
                request["properties"].get("budgetChars").is_some(),
                takes_budget(spec.lap_path),
                "{path}: {request}"
            );
            assert!(resolve(&doc, request).is_object(), "{path}: request schema");
            let ok = &op["responses"]["200"]["content"]["application/json"]["schema"];
            let own = (spec.response_schema)(&mut responses).to_value();
            if takes_budget(spec.lap_path) {
                // Its own answer, or the bounded view of it under `budgetChars`.
                assert_eq!(
                    *ok,
                    json!({"anyOf": [own, bounded_answer_schema()]}),
                    "{path}"
                );
                assert!(
                    resolve(&doc, &ok["anyOf"][0]).is_object(),
                    "{path}: response"
                );
            } else {
                assert_eq!(*ok, own);
                assert!(resolve(&doc, ok).is_object(), "{path}: response schema");
            }

            let statuses: Vec<&str> = op["responses"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            let mut expected = vec![
                "200", "400", "401", "403", "409", "413", "429", "500", "503", "504",
            ];
            if !["/message", "/withdraw"].contains(&spec.lap_path) {
                expected.retain(|s| *s != "409");
            }
            assert_eq!(statuses, expected, "{path}");
            for status in &expected[1..] {
                let answer = resolve(&doc, &op["responses"][*status]);
                let schema = &answer["content"]["application/json"]["schema"];
                assert_eq!(
                    resolve(&doc, schema),
                    &doc["components"]["schemas"]["ErrorResponse"],
                    "{path} {status}"
                );
            }
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), OPERATIONS.len(), "operationIds are unique");
    }

    #[test]
    fn every_ref_resolves() {
        let doc = document();
        let mut found = Vec::new();
        refs(&doc, String::new(), &mut found);
        assert!(found.len() > OPERATIONS.len(), "schemas are shared by $ref");
        for (at, r) in found {
            let pointer = r
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("{at}: {r} is not local"));
            assert!(
                pointer.starts_with("/components/"),
                "{at}: {r} points into the components"
            );
            assert!(doc.pointer(pointer).is_some(), "{at}: {r} does not resolve");
        }
    }

    #[test]
    fn schemas_are_json_schema_2020_12() {
        let doc = document();
        for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
            assert!(
                jsonschema::draft202012::meta::is_valid(schema),
                "{name} is a 2020-12 schema"
            );
        }
    }

    #[test]
    fn request_and_response_contracts_agree_on_shared_types() {
        let mut requests = settings().for_deserialize().into_generator();
        let mut responses = settings().for_serialize().into_generator();
        for spec in OPERATIONS {
            (spec.request_schema)(&mut requests);
            (spec.response_schema)(&mut responses);
        }
        responses.subschema_for::<ErrorResponse>();
        let responses = take_definitions(&mut responses);
        for (name, schema) in take_definitions(&mut requests) {
            if let Some(other) = responses.get(&name) {
                assert_eq!(&schema, other, "{name} is read and written alike");
            }
        }
    }

    #[test]
    fn summaries_are_first_sentences() {
        assert_eq!(summary("Do a. Then b."), "Do a");
        assert_eq!(
            summary("Read x, e.g. a counter. Use y."),
            "Read x, e.g. a counter"
        );
        assert_eq!(summary("One sentence."), "One sentence");
    }
}
