//! Planted bugs, found and shrunk: an `update` that panics on an empty title, a gate that lets a
//! dispatch through while listing it unavailable, an invariant broken by a double add; and a
//! sound app that passes, with its failing runs replayed by `testing::replay`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{explore, ExploreError, ExploreReport, Property};
use crate::app::App;
use crate::config::{ActionGates, HostConfig};
#[cfg(feature = "pairing")]
use crate::ops::ServerOptions;
use crate::AgentMsg;

#[derive(Clone, Default, Serialize, Deserialize, JsonSchema)]
struct Notes {
    notes: Vec<Note>,
    next_id: u32,
    /// @redact
    key: String,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Note {
    id: u32,
    title: String,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @intent("add a note") @example({"type":"add","title":"milk"})
    Add { title: String },
    /// @intent("delete a note") @requiresConfirm
    Delete { id: u32 },
    /// @intent("clear every note") @routeGated("size(state.notes) > 0", "there is nothing to clear")
    Clear,
    /// @intent("set the key") @humanOnly
    SetKey { key: String },
}

/// Which bug the app carries.
#[derive(Clone, Copy, PartialEq)]
enum Bug {
    None,
    /// `update` panics on an empty title.
    PanicOnEmptyTitle,
    /// An add numbers two notes with the same id (its invariant says ids are unique).
    DuplicateIds,
}

#[derive(Clone)]
struct NotesApp(Bug);

impl App for NotesApp {
    type State = Notes;
    type Msg = Msg;
    type Effect = ();

    fn name(&self) -> &str {
        "planted"
    }

    fn init(&self) -> (Notes, Vec<()>) {
        let state = Notes {
            key: "sk-initial-secret".into(),
            ..Notes::default()
        };
        (state, vec![])
    }

    fn update(&self, state: &mut Notes, msg: Msg) -> Vec<()> {
        match msg {
            Msg::Add { title } => {
                if self.0 == Bug::PanicOnEmptyTitle && title.is_empty() {
                    panic!("a note needs a title");
                }
                if self.0 != Bug::DuplicateIds || state.notes.is_empty() {
                    state.next_id += 1;
                }
                state.notes.push(Note {
                    id: state.next_id,
                    title,
                });
            }
            Msg::Delete { id } => state.notes.retain(|n| n.id != id),
            Msg::Clear => state.notes.clear(),
            Msg::SetKey { key } => state.key = key,
        }
        vec![]
    }

    fn invariant(&self, state: &Notes) -> Result<(), String> {
        let mut ids: Vec<u32> = state.notes.iter().map(|n| n.id).collect();
        ids.sort_unstable();
        ids.dedup();
        match ids.len() == state.notes.len() {
            true => Ok(()),
            false => Err(format!("two notes share an id: {:?}", ids)),
        }
    }
}

fn failure_of(report: &ExploreReport) -> &super::ExploreFailure {
    report
        .failure
        .as_ref()
        .unwrap_or_else(|| panic!("no failure found: {report:?}"))
}

#[test]
fn a_sound_app_passes_every_property() {
    let report = explore(NotesApp(Bug::None))
        .cases(12)
        .steps(24)
        .run()
        .unwrap();
    report.assert_passed();
    assert_eq!(report.properties, Property::ALL.to_vec());
    assert!(report.steps_run >= 12, "{}", report.steps_run);
    // Every property was put to the test, not only listed.
    for property in Property::ALL {
        assert!(
            report.checked(property) > 0,
            "{property} never checked: {:?}",
            report.checks
        );
    }
}

#[test]
fn an_update_that_panics_on_an_empty_title_is_found_and_shrunk() {
    let report = explore(NotesApp(Bug::PanicOnEmptyTitle))
        .cases(16)
        .steps(16)
        .run()
        .unwrap();
    let failure = failure_of(&report);
    assert_eq!(failure.property, Property::UpdateNeverPanics, "{failure}");
    assert!(failure.run.len() <= 3, "{failure}");
    assert!(failure.detail.contains("a note needs a title"), "{failure}");
    // The minimal run is a transcript that `testing::replay` runs: the panic again.
    let transcript = crate::testing::read_transcript(&failure.transcript_json()).unwrap();
    let replayed = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(crate::testing::replay(
            NotesApp(Bug::PanicOnEmptyTitle),
            &transcript,
        ))
        .unwrap();
    assert!(replayed.matches(), "{:?}", replayed.differences());
    let text = serde_json::to_string(&replayed).unwrap();
    assert!(
        text.contains("update panicked: a note needs a title"),
        "{text}"
    );
}

#[test]
fn a_gate_that_lets_an_unavailable_dispatch_through_is_found_and_shrunk() {
    // The planted bug: the gate only advises, so `clear` is listed unavailable and applied.
    let config = HostConfig {
        action_gates: ActionGates::Advisory,
        ..HostConfig::default()
    };
    let report = explore(NotesApp(Bug::None))
        .host_config(config)
        .cases(32)
        .steps(16)
        .run()
        .unwrap();
    let failure = failure_of(&report);
    assert_eq!(failure.property, Property::GateTellsTheTruth, "{failure}");
    assert!(failure.run.len() <= 3, "{failure}");
}

#[test]
fn a_broken_invariant_is_found_and_shrunk() {
    let report = explore(NotesApp(Bug::DuplicateIds))
        .cases(32)
        .steps(16)
        .run()
        .unwrap();
    let failure = failure_of(&report);
    assert_eq!(failure.property, Property::InvariantHolds, "{failure}");
    assert!(failure.run.len() <= 3, "{failure}");
}

#[test]
fn the_same_seed_makes_the_same_report() {
    let run = || {
        explore(NotesApp(Bug::PanicOnEmptyTitle))
            .cases(8)
            .steps(8)
            .seed(7)
            .run()
            .unwrap()
    };
    let (a, b) = (run(), run());
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        serde_json::to_value(&b).unwrap()
    );
}

#[test]
fn workers_change_neither_the_runs_nor_the_report() {
    // A failure among later cases, so the workers race to it: the lowest failing case wins.
    let run = |workers| {
        explore(NotesApp(Bug::DuplicateIds))
            .cases(24)
            .steps(12)
            .seed(3)
            .workers(workers)
            .run()
            .unwrap()
    };
    let one = run(1);
    assert!(one.failure.is_some(), "{one:?}");
    for workers in [2, 3] {
        let many = run(workers);
        assert_eq!(
            serde_json::to_value(&one).unwrap(),
            serde_json::to_value(&many).unwrap(),
            "{workers} workers"
        );
    }
    // Every case of a passing exploration runs, whichever worker takes it.
    let sound = |workers| {
        explore(NotesApp(Bug::None))
            .cases(9)
            .steps(10)
            .workers(workers)
            .run()
            .unwrap()
    };
    let (a, b) = (sound(1), sound(2));
    a.assert_passed();
    assert_eq!((a.steps_run, &a.checks), (b.steps_run, &b.checks));
}

#[cfg(feature = "pairing")]
#[test]
fn a_paired_app_is_refused() {
    let mut options = ServerOptions::default();
    options.pairing.mint_paired = true;
    let err = explore(NotesApp(Bug::None))
        .server_options(options)
        .run()
        .unwrap_err();
    assert!(matches!(err, ExploreError::Paired(_)), "{err}");
    assert!(
        err.to_string().contains("runs the app in this process"),
        "{err}"
    );
    let mut relay = ServerOptions::default();
    relay.pairing.hosted_mints = false;
    let err = explore(NotesApp(Bug::None))
        .server_options(relay)
        .run()
        .unwrap_err();
    assert!(err.to_string().contains("only relays paired apps"), "{err}");
}

#[test]
fn a_call_inside_a_runtime_is_refused() {
    let inside = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async { explore(NotesApp(Bug::None)).run().unwrap_err() });
    assert_eq!(inside, ExploreError::InsideRuntime);
}

#[derive(Clone, Default, Serialize, Deserialize, JsonSchema)]
struct Blobs {
    items: Vec<serde_json::Value>,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum BlobMsg {
    /// @intent("store anything")
    Put { value: serde_json::Value },
    /// @intent("store anything, shown how") @example({"type":"putShown","value":{"k":[1,2]}})
    PutShown { value: serde_json::Value },
}

struct BlobApp;

impl App for BlobApp {
    type State = Blobs;
    type Msg = BlobMsg;
    type Effect = ();

    fn init(&self) -> (Blobs, Vec<()>) {
        (Blobs::default(), vec![])
    }

    fn update(&self, state: &mut Blobs, msg: BlobMsg) -> Vec<()> {
        match msg {
            BlobMsg::Put { value } | BlobMsg::PutShown { value } => state.items.push(value),
        }
        vec![]
    }
}

#[test]
fn a_schema_the_generator_does_not_understand_takes_examples_or_is_skipped() {
    let report = explore(BlobApp).cases(4).steps(8).run().unwrap();
    report.assert_passed();
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert!(
        report.skipped[0]
            .starts_with("put: field `value` has a schema the generator does not understand"),
        "{:?}",
        report.skipped
    );
}

/// Leaks its `@redact` key through the affordances hook (whose output reaches agents as it is),
/// or starts an effect that never ends.
struct Leaky {
    effect_never_ends: bool,
}

impl App for Leaky {
    type State = Notes;
    type Msg = Msg;
    type Effect = ();

    fn init(&self) -> (Notes, Vec<()>) {
        NotesApp(Bug::None).init()
    }

    fn update(&self, state: &mut Notes, msg: Msg) -> Vec<()> {
        let started = matches!(msg, Msg::Add { .. }) && self.effect_never_ends;
        NotesApp(Bug::None).update(state, msg);
        match started {
            true => vec![()],
            false => vec![],
        }
    }

    // Deaf to its cancellation and to its session's end.
    #[allow(clippy::manual_async_fn)]
    fn run_effect(
        &self,
        _: (),
        _: crate::app::EffectContext<Msg>,
    ) -> impl std::future::Future<Output = Result<(), crate::app::EffectError>> + Send + 'static
    {
        async {
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }
    }

    fn affordances(&self, state: &Notes) -> Option<Vec<Msg>> {
        (!self.effect_never_ends).then(|| {
            vec![Msg::Add {
                title: state.key.clone(),
            }]
        })
    }
}

#[test]
fn a_redacted_value_leaked_by_a_hook_is_found() {
    let report = explore(Leaky {
        effect_never_ends: false,
    })
    .cases(8)
    .steps(8)
    .run()
    .unwrap();
    let failure = failure_of(&report);
    assert_eq!(
        failure.property,
        Property::NoRedactedValueReachesTheAgent,
        "{failure}"
    );
    assert!(failure.detail.contains("sk-initial-secret"), "{failure}");
    assert!(failure.run.len() <= 3, "{failure}");
}

#[test]
fn an_effect_that_outlives_its_session_is_found() {
    let report = explore(Leaky {
        effect_never_ends: true,
    })
    .cases(2)
    .steps(4)
    .run()
    .unwrap();
    let failure = failure_of(&report);
    assert_eq!(
        failure.property,
        Property::NoEffectOutlivesItsSession,
        "{failure}"
    );
    assert!(failure.run.len() <= 3, "{failure}");
}
