//! Trends over the history's series, all pure: the noise model and change points, segments
//! split by work or deployment changes, measured conditions across a change, alerts'
//! lifecycle, and provenance changes between runs; capacity series by their intervals.

mod alerts;
mod analyse;
mod capacity;
mod conditions;
mod detect;
mod edivisive;
mod newest;
mod provenance;
mod shape;
mod split;
mod stats;
mod watch;

pub use stats::relative as relative_change;

pub use alerts::{AlertUpdate, Ranks, SAME_CHANGE, update_alerts};
pub use analyse::{analyse, analyse_each};
pub use conditions::{CACHE_RATIO_BOUND, ConditionChange, QUEUE_SHARE_BOUND};
pub use detect::change_points;
pub use provenance::{ProvenanceChange, provenance_changes};
pub use shape::{
    ChangePoint, Evidence, Level, Segment, SegmentStart, SeriesTrend, Verdict, eligible,
};
pub use split::{FoundBy, Settings, Split};
pub use watch::{DEFAULT_WATCH, Watch, rules};
