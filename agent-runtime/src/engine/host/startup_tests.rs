//! `Host::new` refuses an app whose tags fail the start-up checks (issue 11), with the same
//! texts as `describe`.

use std::future::Future;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::app::EffectContext;
use crate::app::{App, EffectError};
use crate::AgentMsg;
use crate::Host;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
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

struct TodoApp;

impl App for TodoApp {
    type State = State;
    type Msg = Msg;
    type Effect = ();

    fn name(&self) -> &str {
        "todo"
    }

    fn version(&self) -> &str {
        "1"
    }

    fn init(&self) -> (State, Vec<()>) {
        (State { todos: vec![] }, vec![])
    }

    fn update(&self, _state: &mut State, _msg: Msg) -> Vec<()> {
        vec![]
    }

    // The trait asks for a `'static` future, which an `async fn` borrowing `self` is not.
    #[allow(clippy::manual_async_fn)]
    fn run_effect(
        &self,
        _effect: (),
        _ctx: EffectContext<Msg>,
    ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
        async { Ok(()) }
    }
}

#[test]
fn host_new_reports_the_first_failed_check() {
    let error = Host::new(TodoApp).unwrap_err().to_string();
    assert_eq!(
        error,
        "variant \"add\": `@example` #1 does not deserialize as the message: invalid type: \
         integer `7`, expected a string\n\
         help: make the example match the variant's fields, or remove it"
    );
}
