//! `Host::new` refuses an app whose types fail the start-up checks (issues 11 and 33), with
//! every error at once and the same list as `describe`.

use std::future::Future;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::app::{App, EffectContext, EffectError, EffectPreview};
use crate::AgentMsg;
use crate::Host;

/// An app over `$state`, `$msg` and `$effect` that does nothing; `$preview` is its
/// `effect_preview`.
macro_rules! test_app {
    ($app:ident, $state:ty, $msg:ty, $effect:ty, $preview:expr) => {
        struct $app;

        impl App for $app {
            type State = $state;
            type Msg = $msg;
            type Effect = $effect;

            fn name(&self) -> &str {
                "todo"
            }

            fn version(&self) -> &str {
                "1"
            }

            fn init(&self) -> ($state, Vec<$effect>) {
                (<$state>::default(), vec![])
            }

            fn update(&self, _state: &mut $state, _msg: $msg) -> Vec<$effect> {
                vec![]
            }

            fn effect_preview(&self) -> EffectPreview<$effect> {
                $preview
            }

            // The trait asks for a `'static` future, which an `async fn` borrowing `self` is
            // not.
            #[allow(clippy::manual_async_fn)]
            fn run_effect(
                &self,
                _effect: $effect,
                _ctx: EffectContext<$msg>,
            ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
                async { Ok(()) }
            }
        }
    };
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
struct State {
    todos: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @example({"type":"add","title":7})
    Add { title: String },
    /// @routeGated("state.todos.length > 0")
    Clear,
}

test_app!(TodoApp, State, Msg, (), EffectPreview::hidden());

#[test]
fn host_new_reports_every_failed_check() {
    let error = Host::new(TodoApp).unwrap_err().to_string();
    assert_eq!(
        error,
        "2 start-up errors:\n\
         - variant \"add\": `@example` #1 does not deserialize as the message: invalid type: \
         integer `7`, expected a string\n  \
         help: make the example match the variant's fields, or remove it\n\
         - variant \"clear\": `@routeGated` `state.todos.length > 0` reads `state.todos.length` \
         of a list\n  \
         help: CEL has no `.length`: use size(state.todos)"
    );
}

/// A state with a near-miss `@redact` tag.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
struct Vault {
    todos: Vec<String>,
    /// @redacted
    api_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum VaultMsg {
    /// @example({"title":7})
    Add { title: String },
    /// @routeGated("state.archive.size() > 0")
    Clear,
}

test_app!(VaultApp, Vault, VaultMsg, (), EffectPreview::hidden());

#[test]
fn describe_and_host_new_report_the_same_errors() {
    let host = Host::new(VaultApp).unwrap_err();
    let schema = tea_agent_schema::describe::<VaultMsg, Vault>("todo", "1", None).unwrap_err();
    let runtime = crate::describe(&VaultApp).unwrap_err();
    assert_eq!(host.errors().len(), 3, "{host}");
    assert_eq!(host, schema);
    assert_eq!(host, runtime);
    insta::assert_snapshot!(host.to_string());
}

/// An effect with a near-miss `@redact` tag.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct Call {
    /// @redact(always)
    key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum PatternMsg {
    Rename {
        #[schemars(pattern("(unclosed"))]
        to: String,
        #[schemars(pattern("[z-a]"))]
        from: String,
    },
}

test_app!(
    PatternApp,
    State,
    PatternMsg,
    Call,
    EffectPreview::redacted()
);

#[test]
fn the_runtime_checks_join_the_list() {
    let host = Host::new(PatternApp).unwrap_err();
    assert_eq!(host, crate::describe(&PatternApp).unwrap_err());
    let kinds: Vec<String> = host
        .errors()
        .iter()
        .map(|e| {
            e.to_string()
                .split(':')
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "effect type",
            "the constraints of the property at /oneOf/0/properties/to do not compile",
            "the constraints of the property at /oneOf/0/properties/from do not compile",
        ],
        "{host}"
    );
    // The types alone pass: the runtime's checks are what fails.
    assert!(tea_agent_schema::describe::<PatternMsg, State>("todo", "1", None).is_ok());
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum GoodMsg {
    /// @example({"title":"milk"})
    Add { title: String },
    /// @routeGated("size(state.todos) > 0")
    Clear,
}

test_app!(GoodApp, State, GoodMsg, (), EffectPreview::hidden());

#[test]
fn describe_gives_the_document_the_host_serves() {
    let document = crate::describe(&GoodApp).unwrap();
    let host = Host::new(GoodApp).unwrap();
    let served: serde_json::Value = serde_json::from_str(host.description().0.get()).unwrap();
    assert_eq!(document.to_value(), served);
    assert_eq!(document.name, "todo");
}
