//! What agents see of the app, as a snapshot: any change to it shows in review.

use notes_app::{Msg, State};

#[test]
fn what_agents_see_is_stable() {
    let doc = agent_runtime::agent_schema::describe::<Msg, State>("notes", "0.1.0", None).unwrap();
    insta::assert_json_snapshot!(doc.to_value());
}
