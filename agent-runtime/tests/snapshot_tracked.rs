//! Through the public API, on a live todo session (its todos are a `TrackedVec`, walked only
//! in the chunks each commit changed): after random messages, every published snapshot is
//! the full serialization of the typed state (without the `@redact`ed key) and its patch is
//! exactly the diff from the snapshot before.

use std::time::Duration;

use agent_examples::todo::{Msg, NewTodo, TodoApp};
use proptest::prelude::*;
use tea_agent_runtime::diff::diff;
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::Host;
use tea_agent_schema::protocol::WaitFor;

#[derive(Debug, Clone)]
enum Edit {
    Add,
    Bulk(usize),
    Toggle(usize),
    Rename(usize),
    Delete(usize),
    CompleteAll,
    ClearCompleted,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        1 => Just(Edit::Add),
        1 => (1usize..40).prop_map(Edit::Bulk),
        6 => any::<usize>().prop_map(Edit::Toggle),
        2 => any::<usize>().prop_map(Edit::Rename),
        2 => any::<usize>().prop_map(Edit::Delete),
        1 => Just(Edit::CompleteAll),
        1 => Just(Edit::ClearCompleted),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_commit_publishes_the_full_state_and_its_diff(
        start in 0usize..70,
        edits in prop::collection::vec(edit(), 1..20),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _guard = rt.enter();
        let host = Host::new(TodoApp {
            save_delay: Duration::ZERO,
            ..TodoApp::default()
        }).unwrap();
        let session = host.create_session(None).unwrap();
        // Drained: the save effect's own commits are done before the state is compared.
        let mut opts = DispatchOptions::default();
        opts.wait_for = WaitFor::Drained;
        opts.drain_quiet = std::time::Duration::from_millis(5);
        let bulk = |n: usize| Msg::BulkAdd {
            todos: (0..n).map(|i| NewTodo { title: format!("todo {i}"), priority: None }).collect(),
        };
        rt.block_on(session.dispatch_msg(bulk(start), opts)).unwrap();
        for edit in &edits {
            let id = |k: usize| session.with_state(|s| {
                (!s.todos.is_empty()).then(|| s.todos[k % s.todos.len()].id.clone())
            });
            let msg = match edit {
                Edit::Add => Some(Msg::Add { title: "a".into(), priority: None }),
                Edit::Bulk(n) => Some(bulk(*n)),
                Edit::Toggle(k) => id(*k).map(|id| Msg::Toggle { id }),
                Edit::Rename(k) => id(*k).map(|id| Msg::Rename { id, title: format!("r{k}") }),
                Edit::Delete(k) => id(*k).map(|id| Msg::Delete { id }),
                Edit::CompleteAll => Some(Msg::CompleteAll),
                Edit::ClearCompleted => Some(Msg::ClearCompleted),
            };
            let Some(msg) = msg else { continue };
            let before = session.published();
            rt.block_on(session.dispatch_msg(msg, opts)).unwrap();
            let after = session.published();
            let mut full = session.with_state(|s| serde_json::to_value(s)).unwrap();
            full.as_object_mut().unwrap().remove("apiKey");
            let (was, now) = (before.state(), after.state());
            prop_assert_eq!(&now, &full);
            let text = after.json();
            prop_assert_eq!(text.get(), serde_json::to_string(&full).unwrap());
            prop_assert_eq!(after.diff_since(&before), diff(&was, &now));
            if after.seq == before.seq + 1 {
                prop_assert_eq!(after.patch().to_vec(), diff(&was, &now));
            }
        }
    }
}
