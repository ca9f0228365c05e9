//! The cases of an exploration, spread over worker threads. Each worker has its own runtime
//! (its clock paused), its own server on its own copy of the app, and takes the next case not
//! yet taken. Case `i`'s runs are generated from the seed and `i` alone, so which worker runs
//! it, and how many workers there are, changes nothing: the report is the one of the lowest
//! failing case, shrunk by the worker that found it.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use proptest::test_runner::{
    Config, FailurePersistence, FileFailurePersistence, PersistedSeed, RngAlgorithm, TestCaseError,
    TestError, TestRng, TestRunner,
};

use super::plan;
use super::report::{ExploreError, ExploreFailure, Violation};
use super::run::Ctx;
use crate::app::App;
use crate::config::HostConfig;
use crate::engine::session::{Transcript, TranscriptApp, TRANSCRIPT_FORMAT, TRANSCRIPT_VERSION};
use crate::engine::store::Stores;
use crate::ops::ServerOptions;
use crate::server::AgentServer;

/// What every worker is given.
pub(super) struct Setup {
    pub(super) config: HostConfig,
    pub(super) options: ServerOptions,
    pub(super) cases: u32,
    pub(super) steps: usize,
    pub(super) seed: u64,
    /// `proptest-regressions/<source file's stem>.txt`, when failing seeds are kept.
    pub(super) persist: Option<(&'static str, &'static str)>,
}

/// How a case ended: its shrunk failure, if any, or why it could not run.
type CaseEnd = Result<Option<ExploreFailure>, ExploreError>;

/// What the workers share: the next case to take, the lowest failure found so far, and the
/// counts of the cases run.
pub(super) struct Board {
    next: AtomicU32,
    failed: Mutex<Option<(u32, CaseEnd)>>,
    steps: AtomicU64,
    checks: Mutex<[u64; 8]>,
}

/// How the cases ended.
pub(super) struct Outcome {
    pub(super) failure: CaseEnd,
    pub(super) steps: u64,
    pub(super) checks: [u64; 8],
}

impl Board {
    pub(super) fn new() -> Self {
        Board {
            next: AtomicU32::new(0),
            failed: Mutex::new(None),
            steps: AtomicU64::new(0),
            checks: Mutex::new([0; 8]),
        }
    }

    /// The next case to run, while none below it failed.
    fn take(&self, cases: u32) -> Option<u32> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let below_failure = match &*self.failed.lock().unwrap_or_else(|p| p.into_inner()) {
            Some((failed, _)) => i < *failed,
            None => true,
        };
        (i < cases && below_failure).then_some(i)
    }

    /// Records case `i`'s failure (or why it could not run), kept when it is the lowest.
    fn fail(&self, i: u32, failure: CaseEnd) {
        let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        if failed.as_ref().is_none_or(|(lowest, _)| i < *lowest) {
            *failed = Some((i, failure));
        }
    }

    fn count(&self, steps: u64, checks: [u64; 8]) {
        self.steps.fetch_add(steps, Ordering::Relaxed);
        add_checks(
            &mut self.checks.lock().unwrap_or_else(|p| p.into_inner()),
            checks,
        );
    }

    pub(super) fn outcome(self) -> Outcome {
        let checks = *self.checks.lock().unwrap_or_else(|p| p.into_inner());
        let failed = self.failed.into_inner().unwrap_or_else(|p| p.into_inner());
        Outcome {
            failure: failed.map_or(Ok(None), |(_, f)| f),
            steps: self.steps.into_inner(),
            checks,
        }
    }
}

/// One worker: its runtime, its server and what the generator knows of the app.
pub(super) struct Worker<A: App> {
    runtime: tokio::runtime::Runtime,
    server: AgentServer<A>,
    pub(super) ctx: Ctx<A>,
    /// The variants the generator skips, each with why.
    pub(super) skipped: Vec<String>,
}

impl<A: App> Worker<A> {
    /// A runtime with its clock paused and a server of `app` on it, its sessions in a memory
    /// store (which keeps the undo records the human's undo needs).
    pub(super) fn new(app: A, setup: &Setup) -> Result<Self, ExploreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .map_err(|e| ExploreError::Setup(e.to_string()))?;
        let mut config = setup.config.clone();
        config.transcripts = true;
        let server = runtime
            .block_on(
                AgentServer::builder(app)
                    .host_config(config)
                    .options(setup.options.clone())
                    .stores(&Stores::in_memory())
                    .build(),
            )
            .map_err(|e| ExploreError::Setup(e.to_string()))?;
        let (ctx, skipped) = Ctx::new(server.state().clone());
        Ok(Worker {
            runtime,
            server,
            ctx,
            skipped,
        })
    }

    /// Replays the failing seeds kept by earlier runs (before any new case, as proptest
    /// does): the failure of the first that still fails.
    pub(super) fn replay_kept(&self, setup: &Setup) -> Outcome {
        let Some((source, path)) = setup.persist else {
            return Outcome {
                failure: Ok(None),
                steps: 0,
                checks: [0; 8],
            };
        };
        let config = Config {
            cases: 0,
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct(path))),
            source_file: Some(source),
            ..shrinking()
        };
        self.run_cases(
            TestRunner::new_with_rng(config, case_rng(setup.seed, 0)),
            setup,
        )
    }

    /// Runs cases until none is left (or one below the next failed).
    pub(super) fn work(&self, setup: &Setup, board: &Board) {
        while let Some(i) = board.take(setup.cases) {
            let config = Config {
                cases: 1,
                // A new failing seed is kept; the kept ones were replayed already.
                failure_persistence: setup.persist.map(|(_, path)| {
                    Box::new(SaveOnly(FileFailurePersistence::Direct(path)))
                        as Box<dyn FailurePersistence>
                }),
                source_file: setup.persist.map(|(source, _)| source),
                ..shrinking()
            };
            let rng = case_rng(setup.seed, u64::from(i) + 1);
            let outcome = self.run_cases(TestRunner::new_with_rng(config, rng), setup);
            board.count(outcome.steps, outcome.checks);
            if !matches!(outcome.failure, Ok(None)) {
                board.fail(i, outcome.failure);
            }
        }
    }

    /// Runs `runner`'s cases; a failing one is shrunk and run again for its lines and its
    /// transcript.
    fn run_cases(&self, mut runner: TestRunner, setup: &Setup) -> Outcome {
        let steps = Cell::new(0u64);
        let checks = Cell::new([0u64; 8]);
        let last: RefCell<Option<Violation>> = RefCell::new(None);
        let ran = runner.run(&plan::runs(setup.steps), |plans| {
            let case = self.runtime.block_on(self.ctx.case(&plans, false));
            steps.set(steps.get() + case.steps);
            let mut sum = checks.get();
            add_checks(&mut sum, case.checks);
            checks.set(sum);
            match case.violation {
                None => Ok(()),
                Some(v) => {
                    let text = v.to_string();
                    *last.borrow_mut() = Some(v);
                    Err(TestCaseError::fail(text))
                }
            }
        });
        let failure = match ran {
            Ok(()) => Ok(None),
            Err(TestError::Abort(why)) => Err(ExploreError::Setup(why.to_string())),
            Err(TestError::Fail(_, minimal)) => {
                let case = self.runtime.block_on(self.ctx.case(&minimal, true));
                let violation = case.violation.or_else(|| last.borrow_mut().take());
                Ok(violation.map(|v| ExploreFailure {
                    property: v.property,
                    step: v.step,
                    detail: v.detail,
                    run: case.lines,
                    transcript: case.transcript.unwrap_or_else(|| empty(&self.server)),
                }))
            }
        };
        Outcome {
            failure,
            steps: steps.get(),
            checks: checks.get(),
        }
    }
}

/// Adds the counts of checks `more` (indexed as `Property::ALL`) to `sum`.
fn add_checks(sum: &mut [u64; 8], more: [u64; 8]) {
    sum.iter_mut().zip(more).for_each(|(s, c)| *s += c);
}

/// The shrinking limits of every runner.
fn shrinking() -> Config {
    Config {
        max_shrink_iters: 1024,
        max_shrink_time: 120_000,
        failure_persistence: None,
        source_file: None,
        ..Config::default()
    }
}

/// The generator of case `case` (0: the replay of kept seeds) under `seed`.
fn case_rng(seed: u64, case: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&case.to_le_bytes());
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// A transcript of no entries (the shrunk run could not start a session).
fn empty<A: App>(server: &AgentServer<A>) -> Transcript {
    let app = server.host().app();
    Transcript {
        format: TRANSCRIPT_FORMAT.into(),
        version: TRANSCRIPT_VERSION,
        app: TranscriptApp::new(
            app.name().into(),
            app.version().into(),
            server.host().catalog().schema_hash().into(),
        ),
        session_id: String::new(),
        tid: None,
        dropped: 0,
        entries: Vec::new(),
    }
}

/// A case's runner keeps a new failing seed in the file but does not replay the file's seeds:
/// [`Worker::replay_kept`] replays them once, before any case.
#[derive(Debug, Clone, PartialEq)]
struct SaveOnly(FileFailurePersistence);

impl FailurePersistence for SaveOnly {
    fn load_persisted_failures2(&self, _: Option<&'static str>) -> Vec<PersistedSeed> {
        Vec::new()
    }

    fn save_persisted_failure2(
        &mut self,
        source_file: Option<&'static str>,
        seed: PersistedSeed,
        shrunken_value: &dyn std::fmt::Debug,
    ) {
        self.0
            .save_persisted_failure2(source_file, seed, shrunken_value);
    }

    fn box_clone(&self) -> Box<dyn FailurePersistence> {
        Box::new(self.clone())
    }

    fn eq(&self, other: &dyn FailurePersistence) -> bool {
        other
            .as_any()
            .downcast_ref::<SaveOnly>()
            .is_some_and(|o| o == self)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
