//! `#[derive(AgentMsg)]`: compile-fail cases (trybuild) and the behaviour of the emitted impl.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tea_agent_derive::AgentMsg;
use tea_agent_schema::{AgentMsg as _, DispatchMode, StaticFieldTags};

#[test]
fn compile_fail() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile_fail/*.rs");
    cases.pass("tests/pass/*.rs");
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Payload {
    id: String,
    qty: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Extra {
    tag_line: String,
}

/// The messages of the test app. Mentions the `@intent` tag in prose, which is fine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Msg {
    /// @intent("increment the counter")
    /// @example({"type":"inc"})
    Inc,
    /// Removes a row.
    /// @intent("Delete a row") @requiresConfirm
    /// @emits("cloud/save", "analytics/track", "cloud/save")
    /// @routeGated("state.mode == \"edit\"", "switch to edit mode first")
    DeleteRow { row_id: String },
    /// @intent("Add criteria")
    #[serde(rename = "Matrix/AddCriteria")]
    AddCriteria { names: Vec<String> },
    #[serde(rename(serialize = "setOut", deserialize = "setIn"))]
    Set { value: i32 },
    #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
    Save {
        /// Why the save happens.
        /// @should("say why")
        why_now: Option<String>,
        #[serde(rename = "n")]
        note: Option<String>,
        /// @validates("v >= 0 && v <= 100")
        #[serde(default)]
        weight: f64,
        #[serde(skip)]
        cache: u8,
        #[serde(flatten)]
        extra: Extra,
    },
    /// @humanOnly
    #[serde(skip)]
    Internal,
    /// @agentOnly
    Wrap(Payload),
    /// @intent("first part
    ///    second part")
    #[doc = "@warning(\"hand written\")"]
    #[doc = r#"@alwaysAffordable"#]
    Multi,
    /** @example("{\"type\":\"block\"}")
     * @emits(
     *   "a",
     *   "b")
     */
    Block,
    /// ```text
    /// @humanOnly
    /// ```
    Fenced { r#loop: bool },
    #[serde(skip_deserializing)]
    Echo { text: String },
}

fn wire_names() -> Vec<&'static str> {
    Msg::variants().iter().map(|v| v.wire_name).collect()
}

#[test]
fn wire_names_follow_serde() {
    assert_eq!(
        wire_names(),
        [
            "inc",
            "deleteRow",
            "Matrix/AddCriteria",
            "setIn",
            "save",
            "wrap",
            "multi",
            "block",
            "fenced"
        ]
    );
}

#[test]
fn wire_names_equal_the_schemars_discriminants() {
    let schema = serde_json::to_value(schemars::schema_for!(Msg)).unwrap();
    let members = schema["oneOf"].as_array().expect("oneOf");
    let discriminants: Vec<&str> = members
        .iter()
        .map(|m| {
            let ty = &m["properties"]["type"];
            ty["const"]
                .as_str()
                .or_else(|| ty["enum"][0].as_str())
                .expect("a string literal")
        })
        .collect();
    assert_eq!(discriminants, wire_names());
}

#[test]
fn every_wire_name_deserializes() {
    let payloads = [
        json!({"type": "inc"}),
        json!({"type": "deleteRow", "rowId": "r1"}),
        json!({"type": "Matrix/AddCriteria", "names": []}),
        json!({"type": "setIn", "value": 3}),
        json!({"type": "save", "WHY_NOW": "x", "n": "y", "WEIGHT": 1.0, "tag_line": "t"}),
        json!({"type": "wrap", "id": "a", "qty": 1}),
        json!({"type": "multi"}),
        json!({"type": "block"}),
        json!({"type": "fenced", "loop": true}),
    ];
    for (payload, expected) in payloads.iter().zip(wire_names()) {
        let msg: Msg =
            serde_json::from_value(payload.clone()).unwrap_or_else(|e| panic!("{payload}: {e}"));
        assert_eq!(msg.variant_name(), expected);
    }
}

#[test]
fn variant_name_of_every_value() {
    let extra = Extra {
        tag_line: String::new(),
    };
    let save = Msg::Save {
        why_now: None,
        note: None,
        weight: 0.0,
        cache: 0,
        extra,
    };
    assert_eq!(save.variant_name(), "save");
    assert_eq!(Msg::Set { value: 1 }.variant_name(), "setIn");
    let wrap = Msg::Wrap(Payload {
        id: "a".into(),
        qty: 1,
    });
    assert_eq!(wrap.variant_name(), "wrap");
    // Skipped variants answer their serialize name.
    assert_eq!(Msg::Internal.variant_name(), "internal");
    let echo = Msg::Echo { text: "x".into() };
    assert_eq!(echo.variant_name(), "echo");
    assert_eq!(serde_json::to_value(&echo).unwrap()["type"], "echo");
}

/// The generated `MsgKind`: one kind per variant (skipped ones included), each answering the
/// wire name `variant_name` answers.
#[test]
fn kinds() {
    use tea_agent_schema::VariantKind as _;
    let kinds = [
        MsgKind::Inc,
        MsgKind::DeleteRow,
        MsgKind::AddCriteria,
        MsgKind::Set,
        MsgKind::Save,
        MsgKind::Internal,
        MsgKind::Wrap,
        MsgKind::Multi,
        MsgKind::Block,
        MsgKind::Fenced,
        MsgKind::Echo,
    ];
    let names: Vec<_> = kinds.iter().map(|k| k.wire_name()).collect();
    assert_eq!(
        names,
        [
            "inc",
            "deleteRow",
            "Matrix/AddCriteria",
            "setIn",
            "save",
            "internal",
            "wrap",
            "multi",
            "block",
            "fenced",
            "echo"
        ]
    );
    assert_eq!(Msg::Set { value: 1 }.kind(), MsgKind::Set);
    assert_eq!(Msg::Internal.kind(), MsgKind::Internal);
    assert_eq!(
        Generic::CarryValue { value: 1 }.kind(),
        GenericKind::CarryValue
    );
    assert_eq!(GenericKind::Other.wire_name(), "other");
}

fn record(wire: &str) -> Value {
    let descriptor = Msg::variant(wire).unwrap_or_else(|| panic!("no variant {wire}"));
    serde_json::to_value(descriptor.annotations.to_annotations()).unwrap()
}

#[test]
fn records() {
    assert_eq!(
        record("deleteRow"),
        json!({"intent":"Delete a row","alwaysAffordable":false,"requiresConfirm":true,
               "dispatchMode":"shared","examples":[],"warning":null,
               "emits":["cloud/save","analytics/track"],
               "routeGate":"state.mode == \"edit\"","routeGateReason":"switch to edit mode first"})
    );
    assert_eq!(record("inc")["intent"], "increment the counter");
    assert_eq!(record("inc")["examples"], json!(["{\"type\":\"inc\"}"]));
    assert_eq!(record("Matrix/AddCriteria")["intent"], "Add criteria");
    assert_eq!(record("wrap")["dispatchMode"], "agent-only");
    let multi = record("multi");
    assert_eq!(multi["intent"], "first part second part");
    assert_eq!(multi["warning"], "hand written");
    assert_eq!(multi["alwaysAffordable"], true);
    let block = record("block");
    assert_eq!(block["examples"], json!(["{\"type\":\"block\"}"]));
    assert_eq!(block["emits"], json!(["a", "b"]));
    let fenced = Msg::variant("fenced").unwrap();
    assert_eq!(fenced.annotations.dispatch_mode, DispatchMode::Shared);
    for wire in ["setIn", "save", "fenced"] {
        assert!(
            Msg::variant(wire)
                .unwrap()
                .annotations
                .to_annotations()
                .is_default(),
            "{wire}"
        );
    }
    assert!(Msg::variant("internal").is_none());
    assert!(Msg::variant("echo").is_none());
}

#[test]
fn fields() {
    let names = |wire: &str| -> Vec<&str> {
        let fields = Msg::variant(wire).unwrap().fields;
        fields.iter().map(|f| f.wire_name).collect()
    };
    assert_eq!(names("deleteRow"), ["rowId"]);
    assert_eq!(names("Matrix/AddCriteria"), ["names"]);
    assert_eq!(names("save"), ["WHY_NOW", "n", "WEIGHT"]);
    assert_eq!(names("fenced"), ["loop"]);
    assert!(names("inc").is_empty());
    assert!(names("wrap").is_empty());
    let save = Msg::variant("save").unwrap();
    assert_eq!(
        save.field("WHY_NOW"),
        Some(&StaticFieldTags {
            wire_name: "WHY_NOW",
            hint: Some("say why"),
            validates: None
        })
    );
    assert_eq!(
        save.field("WEIGHT").unwrap().validates,
        Some("v >= 0 && v <= 100")
    );
    assert_eq!(save.field("n").unwrap().hint, None);
}

/// A generic enum with the bounds the trait needs, and the crate path named explicitly.
#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "kebab-case", bound = "")]
#[agent(crate = "tea_agent_schema")]
pub enum Generic<T>
where
    T: Serialize + serde::de::DeserializeOwned + JsonSchema + Send + 'static,
{
    /// @intent("carry a value")
    CarryValue { value: T },
    #[serde(rename_all = "PascalCase")]
    Other { some_field: u8 },
}

#[test]
fn generic_enums_and_crate_path() {
    let names: Vec<_> = Generic::<i32>::variants()
        .iter()
        .map(|v| v.wire_name)
        .collect();
    assert_eq!(names, ["carry-value", "other"]);
    assert_eq!(
        Generic::<i32>::variants()[1].fields[0].wire_name,
        "SomeField"
    );
    assert_eq!(
        Generic::CarryValue { value: 1 }.variant_name(),
        "carry-value"
    );
    assert_eq!(
        Generic::<String>::variants()[0].annotations.intent,
        Some("carry a value")
    );
}

/// Every `rename_all` convention on variant names.
mod conventions {
    use super::*;

    macro_rules! convention {
        ($name:ident, $rule:literal, $expected:literal) => {
            #[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
            #[serde(tag = "type", rename_all = $rule)]
            pub enum $name {
                VeryTasty { some_field: u8 },
            }

            impl $name {
                fn check() {
                    assert_eq!($name::variants()[0].wire_name, $expected);
                    let value: $name = serde_json::from_value(json!({
                        "type": $expected, "some_field": 1
                    }))
                    .unwrap();
                    assert_eq!(value.variant_name(), $expected);
                }
            }
        };
    }

    convention!(Lower, "lowercase", "verytasty");
    convention!(Upper, "UPPERCASE", "VERYTASTY");
    convention!(Pascal, "PascalCase", "VeryTasty");
    convention!(Camel, "camelCase", "veryTasty");
    convention!(Snake, "snake_case", "very_tasty");
    convention!(ScreamingSnake, "SCREAMING_SNAKE_CASE", "VERY_TASTY");
    convention!(Kebab, "kebab-case", "very-tasty");
    convention!(ScreamingKebab, "SCREAMING-KEBAB-CASE", "VERY-TASTY");

    #[test]
    fn all_conventions() {
        Lower::check();
        Upper::check();
        Pascal::check();
        Camel::check();
        Snake::check();
        ScreamingSnake::check();
        Kebab::check();
        ScreamingKebab::check();
    }

    #[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
    #[serde(tag = "type", rename_all_fields = "SCREAMING-KEBAB-CASE")]
    pub enum Fields {
        A {
            some_field: u8,
            #[serde(rename(serialize = "out", deserialize = "in"))]
            other_field: u8,
        },
        #[serde(rename_all(deserialize = "camelCase"))]
        B { some_field: u8 },
    }

    #[test]
    fn field_conventions() {
        let names: Vec<Vec<&str>> = Fields::variants()
            .iter()
            .map(|v| v.fields.iter().map(|f| f.wire_name).collect())
            .collect();
        assert_eq!(names, [vec!["SOME-FIELD", "in"], vec!["someField"]]);
        let value: Fields = serde_json::from_value(json!({"type": "B", "someField": 1})).unwrap();
        assert_eq!(value.variant_name(), "B");
    }
}
