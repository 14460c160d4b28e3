//! The series model: which series a stored figure belongs to, one run's point of it, the
//! conditions measured beside it, and the alerts kept about it.

use serde::{Deserialize, Serialize};

pub use super::searches::SearchAnswer;

/// The store's id of a run: the report's `run_id`, made unique by the store if one repeats.
pub type RunId = String;

/// Which series a point belongs to: one figure of one phase of one plan against one target,
/// or a capacity search's capacity (`phase` the search, `figure` [`super::searches::CAPACITY`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeriesKey {
    /// `report.plan.name`.
    pub plan: String,
    /// The phase's name (a search's, for its capacity).
    pub phase: String,
    /// The phase's target name.
    pub target: String,
    /// A figure path as compare and gates write it: `ttft.p99`, `output_tokens_per_second`,
    /// `error_rate` (`report::model::figure_path`).
    pub figure: String,
}

/// One run's value of a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub run: RunId,
    /// RFC 3339, the run's start; points are in this order.
    pub started_at: String,
    /// In the figure's unit as report.json writes it.
    pub value: f64,
    /// The within-run 95% interval when the figure has one.
    pub interval: Option<(f64, f64)>,
    /// sha256 of the asked-for work (`phase.work_sha256`).
    pub work: String,
    /// sha256 of the deployment labels and the target's identity (engine, version, model):
    /// a change starts a segment.
    pub deployment: String,
    /// The phase's trust verdict was client-bound.
    pub client_bound: bool,
    /// The phase or the run was partial.
    pub partial: bool,
    /// A user excluded the run, with this reason.
    pub excluded: Option<String>,
    pub conditions: Conditions,
    /// A capacity series' point: whether its search answered or gave only a lower bound or
    /// nothing it could place (neither enters detection); `None` for a phase's figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchAnswer>,
}

/// Conditions measured beside the figures, which can explain a change in them: the ones
/// `compare` reads.
pub use crate::metrics::conditions::Conditions;

/// Where an alert stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AlertState {
    Open,
    Acknowledged,
    Resolved,
}

/// A change point in a series that someone should look at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub id: i64,
    pub key: SeriesKey,
    /// The first run after the change point.
    pub opened_by: RunId,
    /// The change point: the first run of the new level.
    pub change_at: RunId,
    /// Segment means either side.
    pub before: f64,
    pub after: f64,
    pub state: AlertState,
    pub resolved_by: Option<RunId>,
    /// The acknowledgement's reason.
    pub note: Option<String>,
}
