//! Valid but unusual: several examples, renames and aliases, `rename_all` on a variant,
//! block comments, hand-written `#[doc]` attributes, tags mentioned in backticks, list
//! markers, emails and handles in prose, and tags between fenced code blocks.
use tea_agent_derive::AgentMsg;
use tea_agent_schema::AgentMsg as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The messages. Tags such as `@intent` go on variants; mail support@example.com.
#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum Msg {
    /// @example({"type":"add-row","rowName":"a"})
    /// @example("{\"type\":\"add-row\",\"rowName\":\"b\"}")
    /// @example({"rowName": "payload only"})
    #[serde(rename_all = "camelCase")]
    AddRow { row_name: String },
    /// Ask @alice before using it; see `@humanOnly` for the other kind.
    /// - @humanOnly
    #[serde(rename = "Matrix/Reset", alias = "reset")]
    Reset,
    /** @intent("one
     * two") @warning("careful") */
    Block,
    #[doc = "@intent(\"hand written\")"]
    #[doc = r#"@agentOnly"#]
    Hand,
    /// ```
    /// @humanOnly
    /// ```
    /// @requiresConfirm
    /// ~~~
    /// @humanOnly
    /// ~~~
    Fenced,
    #[serde(skip)]
    #[allow(dead_code)]
    Internal,
}

fn main() {
    let names: Vec<_> = Msg::variants().iter().map(|v| v.wire_name).collect();
    assert_eq!(names, ["add-row", "Matrix/Reset", "block", "hand", "fenced"]);
    let add = &Msg::variants()[0];
    assert_eq!(add.annotations.examples.len(), 3);
    assert_eq!(add.fields[0].wire_name, "rowName");
    assert_eq!(Msg::variants()[2].annotations.intent, Some("one two"));
    assert!(Msg::variants()[4].annotations.requires_confirm);
    assert_eq!(
        Msg::variants()[4].annotations.dispatch_mode,
        tea_agent_schema::DispatchMode::Shared
    );
    // Renamed and skipped variants have kinds too; a skipped one answers its serialize name.
    use tea_agent_schema::VariantKind as _;
    assert_eq!(MsgKind::Reset.wire_name(), "Matrix/Reset");
    assert_eq!(MsgKind::Internal.wire_name(), "internal");
    assert_eq!(Msg::Hand.kind(), MsgKind::Hand);
}
