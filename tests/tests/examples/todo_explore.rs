//! A generated agent tries everything on the todo app (`tea_agent_runtime::testing::explore`):
//! a few hundred steps of actions listed available, unavailable and `@humanOnly`, payloads
//! inside and just outside their schemas, the human approving, rejecting, editing, dispatching
//! and undoing; every property holds at every step. Failing seeds would be kept under
//! `proptest-regressions/`, the shrunk run's transcript beside them.

use agent_examples::todo::TodoApp;
use tea_agent_runtime::testing::{explore, Property};

#[test]
fn an_agent_that_tries_everything_finds_nothing() {
    let report = explore(TodoApp::default())
        .cases(12)
        .steps(30)
        .workers(2)
        .persist(file!())
        .run()
        .unwrap();
    report.assert_passed();
    for property in Property::ALL {
        assert!(report.checked(property) > 0, "{property} was never checked");
    }
    insta::assert_json_snapshot!(report);
}
