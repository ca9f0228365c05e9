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
//! ([`Explorer::seed`]; case `i` from the seed and `i` alone, so [`Explorer::workers`] spreads
//! the cases over threads without changing the report); [`Explorer::persist`] keeps failing seeds under
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
mod workers;

pub use report::{ExploreError, ExploreFailure, ExploreReport, Property};

use crate::app::App;
use crate::config::HostConfig;
use crate::ops::ServerOptions;
use workers::{Board, Setup, Worker};

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
        workers: 1,
        copy_app: None,
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
    workers: usize,
    /// How a worker gets its own app ([`Explorer::workers`], when the app is `Clone`).
    copy_app: Option<fn(&A) -> A>,
}

impl<A: App> std::fmt::Debug for Explorer<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Explorer")
            .field("cases", &self.cases)
            .field("steps", &self.steps)
            .field("seed", &self.seed)
            .field("workers", &self.workers)
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
    /// case passing. With [`Explorer::workers`], cases run on that many threads; the report is
    /// the same as on one (the lowest failing case's).
    pub fn run(self) -> Result<ExploreReport, ExploreError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(ExploreError::InsideRuntime);
        }
        paired(&self.options)?;
        let name = self.app.name().to_string();
        let persist = self.persist.map(|source| {
            // proptest names the file by a `&'static str`: one short path per exploration.
            let path: &'static str = Box::leak(regressions(source, "txt").into_boxed_str());
            (source, path)
        });
        let setup = Setup {
            config: self.config,
            options: self.options,
            cases: self.cases,
            steps: self.steps,
            seed: self.seed,
            persist,
        };
        let copies: Vec<A> = match self.copy_app {
            Some(copy) => (1..self.workers.min(self.cases as usize))
                .map(|_| copy(&self.app))
                .collect(),
            None => Vec::new(),
        };
        let first = Worker::new(self.app, &setup)?;
        if !first.ctx.has_variants() {
            return Err(ExploreError::NothingToSend(first.skipped.join("; ")));
        }
        let skipped = first.skipped.clone();
        let kept = first.replay_kept(&setup);
        let outcome = if matches!(kept.failure, Ok(None)) {
            let board = Board::new();
            std::thread::scope(|scope| {
                let others: Vec<_> = copies
                    .into_iter()
                    .map(|app| {
                        let (setup, board) = (&setup, &board);
                        scope.spawn(move || -> Result<(), ExploreError> {
                            Worker::new(app, setup)?.work(setup, board);
                            Ok(())
                        })
                    })
                    .collect();
                first.work(&setup, &board);
                others
                    .into_iter()
                    // A worker's panic goes on as the first worker's would, on this thread.
                    .try_for_each(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            })?;
            board.outcome()
        } else {
            kept
        };
        let failure = outcome.failure?;
        if let (Some(failure), Some((source, _))) = (&failure, setup.persist) {
            write_transcript(source, failure);
        }
        Ok(ExploreReport {
            app: name,
            seed: setup.seed,
            cases: setup.cases,
            steps_per_case: setup.steps,
            properties: Property::ALL.to_vec(),
            skipped,
            failure,
            steps_run: outcome.steps,
            checks: Property::ALL.into_iter().zip(outcome.checks).collect(),
        })
    }
}

impl<A: App + Clone> Explorer<A> {
    /// Runs the cases on `workers` threads (at most one per case), each with its own copy of
    /// the app, runtime and server: about `workers` times the steps per second on as many
    /// cores. The runs and the report do not depend on it. The default is 1.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self.copy_app = Some(A::clone);
        self
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
