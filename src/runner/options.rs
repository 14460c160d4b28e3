//! What a run is asked to do, why it can fail, and what it leaves behind.

use std::path::PathBuf;

use crate::plan::{ExpandOptions, PlanErrors};
use crate::report::Report;
use crate::schedule::ShardSpec;
use crate::scheduler::progress::ProgressMode;

/// What `servebench run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// A plan file, or a `report.json` whose embedded plan is run again.
    pub plan: PathBuf,
    pub expand: ExpandOptions,
    /// Default: `runs/<plan-name>-<UTC timestamp>/`.
    pub out_dir: Option<PathBuf>,
    /// Run only these phases (by name), in plan order.
    pub only: Vec<String>,
    pub dry_run: bool,
    pub progress: ProgressMode,
    /// Measure the client ceiling before the first phase (`run --no-calibrate` skips it).
    pub calibrate: bool,
    /// Hold the kernel's request to keep idle CPUs quick to wake for the whole run
    /// (`run --no-latency-hint` skips it); see [`crate::wakeup`].
    pub latency_hint: bool,
    /// Keep the runtime's workers polling instead of parking for the whole run
    /// (`run --busy-poll`); see [`crate::scheduler::BusyPoll`].
    pub busy_poll: bool,
    // Sharded runs (src/schedule/shard.rs).
    /// `--shard I/N`: run this shard's share of every phase.
    pub shard: Option<ShardSpec>,
    /// `--start-at`: start each phase at this time plus its planned offset.
    pub start_at: Option<chrono::DateTime<chrono::Utc>>,
    /// `--salt`: this salt instead of a fresh one (the same prompts as the run that used it).
    pub salt: Option<String>,
    /// Bounds for long windows: records kept, rolling summaries.
    pub long_run: LongRunOptions,
}

impl RunOptions {
    /// `run -q`: only warnings, errors and the `report:` line reach the console.
    pub fn quiet(&self) -> bool {
        self.progress == ProgressMode::Quiet
    }
}

/// How a long window stays bounded and watchable.
#[derive(Debug, Clone)]
pub struct LongRunOptions {
    /// Records a phase's report keeps in full (`run --keep-records`); a longer phase keeps a
    /// seeded sample of this many and computes its figures over all of them.
    pub keep_records: usize,
    /// How often a rolling summary line goes to the journal (`run --summary-every`).
    pub summary_every: std::time::Duration,
    /// Records per closed Parquet part (`run --part-rows`): the journal holds at most about
    /// this many records, those no closed part holds yet.
    pub part_rows: u64,
}

impl Default for LongRunOptions {
    fn default() -> Self {
        LongRunOptions {
            keep_records: super::collect::DEFAULT_KEEP_RECORDS,
            summary_every: std::time::Duration::from_secs(60),
            part_rows: crate::report::formats::records::DEFAULT_PART_ROWS,
        }
    }
}

/// Why a run did not produce a complete report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    InvalidPlan(#[from] PlanErrors),
    /// Bad arguments or environment, found before any request was sent.
    #[error("{0}")]
    InvalidInput(String),
    /// The run could not go on (a simulator did not start, the report could not be written).
    #[error("{0}")]
    Failed(String),
    /// A phase's target went down and the phase ended (`target down at 3.1 s (connection
    /// refused)`): the run stops with a partial report, which the history records as such.
    #[error("{0}")]
    TargetDown(String),
}

impl RunError {
    pub fn exit_code(&self) -> crate::exit::Exit {
        match self {
            RunError::InvalidPlan(_) | RunError::InvalidInput(_) => crate::exit::Exit::InvalidInput,
            RunError::Failed(_) | RunError::TargetDown(_) => crate::exit::Exit::RunFailed,
        }
    }
}

/// What a finished (or interrupted) run left behind.
#[derive(Debug)]
pub struct RunOutcome {
    /// `None` for `--dry-run`.
    pub report_path: Option<PathBuf>,
    pub report: Option<Report>,
    pub interrupted: bool,
    /// Why the run stopped early when a phase's target went down (the report is partial).
    pub target_down: Option<String>,
}
