//! On a live todo session, random edits (each commit advancing the session's gate tables
//! along its patch) never make `list_actions` disagree with the route gates evaluated on the
//! whole published state.

use std::time::Duration;

use agent_examples::todo::{Msg, NewTodo, TodoApp};
use proptest::prelude::*;
use tea_agent_runtime::cel_eval::evaluate_gate;
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::Host;
use tea_agent_schema::protocol::WaitFor;
use tea_agent_schema::MsgModel;

#[derive(Debug, Clone)]
enum Edit {
    Add,
    Bulk(usize),
    Toggle(usize),
    Delete(usize),
    CompleteAll,
    ClearCompleted,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        2 => Just(Edit::Add),
        1 => (1usize..4).prop_map(Edit::Bulk),
        5 => (0usize..8).prop_map(Edit::Toggle),
        2 => (0usize..8).prop_map(Edit::Delete),
        1 => Just(Edit::CompleteAll),
        1 => Just(Edit::ClearCompleted),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn list_actions_follows_the_gates(edits in prop::collection::vec(edit(), 1..16)) {
        let gates: Vec<(String, String)> = MsgModel::build::<Msg>()
            .unwrap()
            .variants
            .iter()
            .filter_map(|v| Some((v.wire_name.clone(), v.annotations.route_gate.clone()?)))
            .collect();
        prop_assert_eq!(gates.len(), 2);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _guard = rt.enter();
        let host = Host::new(TodoApp {
            save_delay: Duration::ZERO,
            ..TodoApp::default()
        }).unwrap();
        let session = host.create_session(None).unwrap();
        let mut opts = DispatchOptions::default();
        opts.wait_for = WaitFor::Idle;
        for edit in &edits {
            let id = |k: usize| session.with_state(|s| {
                (!s.todos.is_empty()).then(|| s.todos[k % s.todos.len()].id.clone())
            });
            let msg = match edit {
                Edit::Add => Some(Msg::Add { title: "a".into(), priority: None }),
                Edit::Bulk(n) => Some(Msg::BulkAdd {
                    todos: (0..*n).map(|_| NewTodo { title: "b".into(), priority: None }).collect(),
                }),
                Edit::Toggle(k) => id(*k).map(|id| Msg::Toggle { id }),
                Edit::Delete(k) => id(*k).map(|id| Msg::Delete { id }),
                Edit::CompleteAll => Some(Msg::CompleteAll),
                Edit::ClearCompleted => Some(Msg::ClearCompleted),
            };
            let Some(msg) = msg else { continue };
            rt.block_on(session.dispatch_msg(msg, opts)).unwrap();
            let actions = session.list_actions().unwrap();
            let state = session.state();
            for (variant, gate) in &gates {
                if let Some(action) = actions.iter().find(|a| &a.variant == variant) {
                    let open = evaluate_gate(gate, &state);
                    prop_assert_eq!(action.available.is_none(), open, "{} on {}", gate, state);
                }
            }
        }
    }
}
