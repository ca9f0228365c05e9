//! A generated agent tries everything the app lets agents do, and what it does not
//! (`tea_agent_runtime::testing::explore`); every property holds at every step.

use notes_app::Notes;

#[test]
fn an_agent_that_tries_everything_finds_nothing() {
    let report = tea_agent_runtime::testing::explore(Notes)
        .cases(12)
        .steps(30)
        .persist(file!())
        .run()
        .unwrap();
    report.assert_passed();
}
