//! An agent that tries everything (`docs/guide.md` §Let an agent try everything; feature
//! `explore`), re-exported by `testing`: [`explore`] runs an app in this process (no socket; every agent call through the
//! same operation table and gate as LAP and MCP) under a generated agent, for a number of
//! cases of up to N steps each. At each step the agent reads the actions listed now and sends
//! one (sometimes one listed unavailable, or not listed, or `@humanOnly`, or with a payload just
//! outside its schema), its payload generated from the schema (`generate`: the synthesized
//! `payloadHint` widened with boundaries, unicode, the `@example`s and ids read from the
//! state); the human answers proposals (approves, rejects, approves an edit), dispatches
//! messages of their own and undoes the agent's commits. Every [`Property`] is checked after
//! every step.
//!
//! Runs are generated and shrunk by proptest, deterministically under a seed
//! ([`Explorer::seed`]); [`Explorer::persist`] keeps failing seeds under
//! `proptest-regressions/` (replayed first on the next run). A failure is reported on the
//! shrunk run ([`ExploreFailure`]): the property, the step, the run line by line and its
//! transcript, which `testing::replay` runs.
//!
//! ```no_run
//! # fn t<A: tea_agent_runtime::app::App>(app: A) -> Result<(), tea_agent_runtime::testing::ExploreError> {
//! let report = tea_agent_runtime::testing::explore(app).cases(10).steps(30).run()?;
//! report.assert_passed();
//! # Ok(()) }
//! ```
//!
//! Its runtime is its own, its clock paused (effects' timers cost no wall time): call
//! [`Explorer::run`] from a plain `#[test]`.

mod answers;
mod check;
mod generate;
mod human;
mod plan;
mod report;
mod run;

pub use report::{ExploreError, ExploreFailure, ExploreReport, Property};

use std::cell::{Cell, RefCell};

use proptest::test_runner::{
    Config, FileFailurePersistence, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner,
};

use crate::app::App;
use crate::config::HostConfig;
use crate::engine::session::{Transcript, TranscriptApp, TRANSCRIPT_FORMAT, TRANSCRIPT_VERSION};
use crate::engine::store::Stores;
use crate::ops::ServerOptions;
use crate::server::AgentServer;
use report::Violation;
use run::Ctx;

/// Explores `app` with the defaults ([`Explorer`]): 32 cases of up to 32 steps, seed 0, the
/// default [`HostConfig`] and [`ServerOptions`], no persistence.
pub fn explore<A: App>(app: A) -> Explorer<A> {
    Explorer {
        app,
        cases: 32,
        steps: 32,
        seed: 0,
        config: HostConfig::default(),
        options: ServerOptions::default(),
        persist: None,
    }
}

/// An exploration to run ([`explore`]), configured in a chain.
#[must_use = "an exploration does nothing until `run`"]
pub struct Explorer<A: App> {
    app: A,
    cases: u32,
    steps: usize,
    seed: u64,
    config: HostConfig,
    options: ServerOptions,
    persist: Option<&'static str>,
}

impl<A: App> std::fmt::Debug for Explorer<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Explorer")
            .field("cases", &self.cases)
            .field("steps", &self.steps)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

impl<A: App> Explorer<A> {
    /// How many runs (cases) to generate.
    pub fn cases(mut self, cases: u32) -> Self {
        self.cases = cases.max(1);
        self
    }

    /// The steps of a run, at most (each run has 1 to `steps`).
    pub fn steps(mut self, steps: usize) -> Self {
        self.steps = steps.max(1);
        self
    }

    /// The generator's seed: the same seed makes the same runs.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The host's configuration (its policy, action gates, budgets, …). Transcripts are
    /// always recorded: a failing run is reported as one.
    pub fn host_config(mut self, config: HostConfig) -> Self {
        self.config = config;
        self
    }

    /// The server's options. A server whose apps are paired (its mints start paired
    /// sessions, or only paired ones) is refused by [`Explorer::run`] with
    /// [`ExploreError::Paired`].
    pub fn server_options(mut self, options: ServerOptions) -> Self {
        self.options = options;
        self
    }

    /// Keeps failing seeds in `proptest-regressions/<name of source_file>.txt` under the
    /// working directory (the crate's, under `cargo test`; pass `file!()`), replayed first by
    /// the next run, and writes the shrunk run's transcript beside them
    /// (`<name>.transcript.json`).
    pub fn persist(mut self, source_file: &'static str) -> Self {
        self.persist = Some(source_file);
        self
    }

    /// Runs the exploration: the report of the first failing property (shrunk), or of every
    /// case passing.
    pub fn run(self) -> Result<ExploreReport, ExploreError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(ExploreError::InsideRuntime);
        }
        paired(&self.options)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .map_err(|e| ExploreError::Setup(e.to_string()))?;
        let name = self.app.name().to_string();
        let mut config = self.config;
        config.transcripts = true;
        let server = runtime
            .block_on(
                AgentServer::builder(self.app)
                    .host_config(config)
                    .options(self.options)
                    .stores(&Stores::in_memory())
                    .build(),
            )
            .map_err(|e| ExploreError::Setup(e.to_string()))?;
        let (ctx, skipped) = Ctx::new(server.state().clone());
        if !ctx.has_variants() {
            return Err(ExploreError::NothingToSend(skipped.join("; ")));
        }
        let mut proptest = Config {
            cases: self.cases,
            max_shrink_iters: 1024,
            max_shrink_time: 120_000,
            failure_persistence: None,
            source_file: None,
            ..Config::default()
        };
        if let Some(source) = self.persist {
            // proptest names the file by a `&'static str`: one short path per exploration.
            let path: &'static str = Box::leak(regressions(source, "txt").into_boxed_str());
            proptest.failure_persistence = Some(Box::new(FileFailurePersistence::Direct(path)));
            proptest.source_file = Some(source);
        }
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&self.seed.to_le_bytes());
        let mut runner =
            TestRunner::new_with_rng(proptest, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
        let steps_run = Cell::new(0u64);
        let checks = Cell::new([0u64; 8]);
        let last: RefCell<Option<Violation>> = RefCell::new(None);
        let outcome = runner.run(&plan::runs(self.steps), |plans| {
            let case = runtime.block_on(ctx.case(&plans, false));
            steps_run.set(steps_run.get() + case.steps);
            let mut sum = checks.get();
            sum.iter_mut().zip(case.checks).for_each(|(s, c)| *s += c);
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
        let failure = match outcome {
            Ok(()) => None,
            Err(TestError::Abort(why)) => return Err(ExploreError::Setup(why.to_string())),
            Err(TestError::Fail(_, minimal)) => {
                let case = runtime.block_on(ctx.case(&minimal, true));
                let violation = case.violation.or_else(|| last.borrow_mut().take());
                violation.map(|v| ExploreFailure {
                    property: v.property,
                    step: v.step,
                    detail: v.detail,
                    run: case.lines,
                    transcript: case.transcript.unwrap_or_else(|| empty(&server)),
                })
            }
        };
        if let (Some(failure), Some(source)) = (&failure, self.persist) {
            write_transcript(source, failure);
        }
        Ok(ExploreReport {
            app: name,
            seed: self.seed,
            cases: self.cases,
            steps_per_case: self.steps,
            properties: Property::ALL.to_vec(),
            skipped,
            failure,
            steps_run: steps_run.get(),
            checks: Property::ALL.into_iter().zip(checks.get()).collect(),
        })
    }
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

/// [`ExploreError::Paired`] when the server's options pair its apps.
fn paired(options: &ServerOptions) -> Result<(), ExploreError> {
    #[cfg(feature = "pairing")]
    {
        if options.pairing.mint_paired {
            return Err(ExploreError::Paired(
                "PairingOptions::mint_paired: its mints start paired sessions".into(),
            ));
        }
        if !options.pairing.hosted_mints {
            return Err(ExploreError::Paired(
                "PairingOptions::hosted_mints is off: it only relays paired apps".into(),
            ));
        }
    }
    #[cfg(not(feature = "pairing"))]
    let _ = options;
    Ok(())
}

/// `proptest-regressions/<source file's name>.<extension>`, under the working directory (the
/// crate's, under `cargo test`).
fn regressions(source: &str, extension: &str) -> String {
    let stem = std::path::Path::new(source)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("explore");
    format!("proptest-regressions/{stem}.{extension}")
}

/// Writes the shrunk run's transcript to `proptest-regressions/<source file's name>.transcript.json`
/// under the working directory (the crate's, under `cargo test`). A failure to write is
/// reported on standard error: the report holds the transcript anyway.
fn write_transcript(source: &str, failure: &ExploreFailure) {
    let path = regressions(source, "transcript.json");
    let written = std::fs::create_dir_all("proptest-regressions")
        .and_then(|()| std::fs::write(&path, failure.transcript_json() + "\n"));
    if let Err(e) = written {
        eprintln!("explore: the failing run's transcript was not written to {path:?}: {e}");
    }
}

#[cfg(test)]
mod tests;
