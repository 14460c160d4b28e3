//! A stored row as the series model reads it, for the readers and the writers alike: the
//! trust verdict's name, the time format, and a series point from a row.

use super::super::HistoryError;
use super::super::series::{Conditions, PhaseFacts, Point};
use super::sql::Cell;
use crate::metrics::trust::TrustVerdict;

pub fn trust_name(verdict: TrustVerdict) -> &'static str {
    match verdict {
        TrustVerdict::Trusted => "trusted",
        TrustVerdict::ClientBound => "client_bound",
    }
}

pub(super) fn trust_named(name: &str) -> Option<TrustVerdict> {
    [TrustVerdict::Trusted, TrustVerdict::ClientBound]
        .into_iter()
        .find(|v| trust_name(*v) == name)
}

/// An RFC 3339 time as the store keeps it: UTC, milliseconds, `Z` (so text order is time
/// order); `None` when it does not parse.
pub fn normalize_time(text: &str) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(text.trim()).ok()?;
    Some(
        t.with_timezone(&chrono::Utc)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    )
}

/// What a point's row says in a column of its own table's (column 7 and after).
pub(super) struct PointFacts {
    pub client_bound: bool,
    pub conditions: Conditions,
}

/// The phase's facts from a row whose columns 0-1 are the run's id and start, 5-6 the work
/// and deployment hashes, and 8-10 the phase's or search's `partial` and the run's
/// `complete` and `excluded`: the figures' and the searches' series queries both select them
/// so.
pub(super) fn phase_facts(
    r: &[Cell],
    bad: &dyn Fn() -> HistoryError,
    facts: PointFacts,
) -> Result<PhaseFacts, HistoryError> {
    Ok(PhaseFacts {
        run: r[0].string().ok_or_else(bad)?,
        started_at: r[1].string().ok_or_else(bad)?,
        work: r[5].string().unwrap_or_default(),
        deployment: r[6].string().ok_or_else(bad)?,
        client_bound: facts.client_bound,
        partial: r[8].bool().ok_or_else(bad)? || !r[9].bool().ok_or_else(bad)?,
        excluded: r[10].string(),
        conditions: facts.conditions,
    })
}

/// A point's value and interval from columns 2-4 of the same rows.
pub(super) fn point(
    r: &[Cell],
    bad: &dyn Fn() -> HistoryError,
    phase: std::sync::Arc<PhaseFacts>,
) -> Result<Point, HistoryError> {
    Ok(Point::new(
        phase,
        r[2].real().ok_or_else(bad)?,
        r[3].real().zip(r[4].real()),
    ))
}

/// A `WHERE` clause keeping `plan`'s rows by `column`, and its parameter; nothing for every
/// plan.
pub(super) fn plan_filter(column: &str, plan: Option<&str>) -> (String, Vec<Cell>) {
    match plan {
        Some(plan) => (format!("WHERE {column} = $1"), vec![Cell::from(plan)]),
        None => (String::new(), Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::normalize_time;

    #[test]
    fn times_are_kept_in_utc_so_text_order_is_time_order() {
        assert_eq!(
            normalize_time("2026-12-01T08:00:00+02:00").as_deref(),
            Some("2026-12-01T06:00:00.000Z")
        );
        assert_eq!(
            normalize_time("2026-12-01T06:00:00.123456Z").as_deref(),
            Some("2026-12-01T06:00:00.123Z")
        );
        assert_eq!(normalize_time("unknown"), None);
        assert_eq!(normalize_time("20261201-093000"), None);
    }
}
