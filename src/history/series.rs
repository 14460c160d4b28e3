//! The series model: which series a stored figure belongs to, one run's point of it, the
//! conditions measured beside it, and the alerts kept about it.

use std::sync::Arc;

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

/// One run's value of a series. What the run's phase says of every figure of it (run,
/// start, hashes, verdicts, conditions) is held once per phase and shared by its points: a
/// plan's thousand runs of 80 figures a phase read as 80 points per phase, not 80 copies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    #[serde(flatten)]
    pub phase: SharedFacts,
    /// In the figure's unit as report.json writes it.
    pub value: f64,
    /// The within-run 95% interval when the figure has one.
    pub interval: Option<(f64, f64)>,
    /// A percentile's point: the run's own quantiles at q − `late_share` and q +
    /// `late_share`, how far the client's lateness could have moved it. A trend keeps it only
    /// while it lies within a tenth of the minimum effect of the value (`trend::analyse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_band: Option<(f64, f64)>,
    /// A capacity series' point: whether its search answered or gave only a lower bound or
    /// nothing it could place (neither enters detection); `None` for a phase's figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchAnswer>,
}

impl Point {
    pub fn new(phase: Arc<PhaseFacts>, value: f64, interval: Option<(f64, f64)>) -> Point {
        Point {
            phase: SharedFacts(phase),
            value,
            interval,
            late_band: None,
            search: None,
        }
    }

    /// The phase's facts for this point alone (copied when other points share them).
    pub fn facts_mut(&mut self) -> &mut PhaseFacts {
        Arc::make_mut(&mut self.phase.0)
    }
}

/// A point reads its phase's facts as its own (`point.run`, `point.client_bound`).
impl std::ops::Deref for Point {
    type Target = PhaseFacts;

    fn deref(&self) -> &PhaseFacts {
        &self.phase.0
    }
}

/// What a run's phase (or search) says of every point of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseFacts {
    pub run: RunId,
    /// RFC 3339, the run's start; points are in this order.
    pub started_at: String,
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
}

/// Shared phase facts, written as the facts themselves (serde's own `Arc` support would
/// rebuild serde and everything on it with another feature).
#[derive(Debug, Clone, PartialEq)]
pub struct SharedFacts(pub Arc<PhaseFacts>);

impl Serialize for SharedFacts {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(to)
    }
}

impl<'de> Deserialize<'de> for SharedFacts {
    fn deserialize<D: serde::Deserializer<'de>>(from: D) -> Result<SharedFacts, D::Error> {
        PhaseFacts::deserialize(from).map(|facts| SharedFacts(Arc::new(facts)))
    }
}

/// Conditions measured beside the figures, which can explain a change in them: the ones
/// `compare` reads.
pub use crate::metrics::conditions::Conditions;

/// Where an alert stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AlertState {
    Open,
    Acknowledged,
    Resolved,
    /// Its change moved more than two eligible runs: a newer alert (`superseded_by`) took it
    /// over, acknowledgement included.
    Superseded,
}

impl AlertState {
    /// Open or acknowledged: the change still stands.
    pub fn live(&self) -> bool {
        matches!(self, AlertState::Open | AlertState::Acknowledged)
    }
}

/// One series an alert's change moved: a phase's figure (or a search's `capacity`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Moved {
    pub phase: String,
    pub figure: String,
    /// This series' own change point, within two eligible runs of the alert's.
    pub change_at: RunId,
    /// Its levels either side.
    pub before: f64,
    pub after: f64,
}

impl Moved {
    pub fn relative(&self) -> f64 {
        super::trend::relative_change(self.before, self.after)
    }
}

/// One change of a plan against one target that someone should look at: every watched
/// series that moved within two eligible runs of the same run, worse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub id: i64,
    pub plan: String,
    pub target: String,
    /// The first eligible run at which the change showed.
    pub opened_by: RunId,
    /// The change point: the first run of the new level (most of its series agree on it).
    pub change_at: RunId,
    /// The series it moved, by phase and figure.
    pub moved: Vec<Moved>,
    pub state: AlertState,
    /// The run whose change brought the levels back (`None` when more runs or an exclusion
    /// showed it was not a change).
    pub resolved_by: Option<RunId>,
    /// The newest run when it was resolved or superseded.
    pub closed_at: Option<RunId>,
    pub superseded_by: Option<i64>,
    /// The acknowledgement's reason.
    pub note: Option<String>,
    /// Numbers of the per-figure alerts of an older store that it took over; `history ack`
    /// still accepts them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub former_ids: Vec<i64>,
}

impl Alert {
    /// What it moved of this series, if it moved it.
    pub fn moved_in(&self, key: &SeriesKey) -> Option<&Moved> {
        (self.plan == key.plan && self.target == key.target)
            .then(|| {
                self.moved
                    .iter()
                    .find(|m| m.phase == key.phase && m.figure == key.figure)
            })
            .flatten()
    }

    /// Whether `history ack N` means it.
    pub fn answers_to(&self, number: i64) -> bool {
        self.id == number || self.former_ids.contains(&number)
    }

    /// Its phases, in the order first moved.
    pub fn phases(&self) -> Vec<&str> {
        let mut phases: Vec<&str> = Vec::new();
        for m in &self.moved {
            if !phases.contains(&m.phase.as_str()) {
                phases.push(&m.phase);
            }
        }
        phases
    }
}
