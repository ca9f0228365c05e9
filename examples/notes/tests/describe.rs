//! What agents see of the app, as a snapshot: any change to it shows in review. `describe`
//! runs every check the server's start runs, so this test also fails, with the same list of
//! errors, exactly when the start would.

use notes_app::Notes;

#[test]
fn what_agents_see_is_stable() {
    let doc = tea_agent_runtime::describe(&Notes).unwrap();
    insta::assert_json_snapshot!(doc.to_value());
}
