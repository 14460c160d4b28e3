//! Two runs' capacity searches set side by side: a capacity is a bracket with an interval,
//! so a change is called only when the two intervals do not overlap.

use serde::Serialize;

use crate::report::model::search::SearchResult;
pub use crate::report::model::search::{CapacityVerdict, by_intervals};

/// One search present in both reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityChange {
    pub search: String,
    pub base: Option<f64>,
    pub new: Option<f64>,
    pub base_interval: [Option<f64>; 2],
    pub new_interval: [Option<f64>; 2],
    /// `(new − base) / base` of the capacities themselves.
    pub relative: Option<f64>,
    pub verdict: CapacityVerdict,
    /// Why a side cannot be compared, when one cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The searches both reports ran, by name, in the new report's order.
pub fn compare_capacities(base: &[SearchResult], new: &[SearchResult]) -> Vec<CapacityChange> {
    new.iter()
        .filter_map(|n| {
            let b = base.iter().find(|b| b.phase == n.phase)?;
            Some(compare_one(b, n))
        })
        .collect()
}

fn compare_one(base: &SearchResult, new: &SearchResult) -> CapacityChange {
    let relative = base
        .capacity
        .zip(new.capacity)
        .filter(|(b, _)| *b != 0.0)
        .map(|(b, n)| (n - b) / b);
    let why = [("base", base), ("new", new)]
        .iter()
        .find_map(|(side, s)| not_comparable(s).map(|why| format!("{side}: {why}")));
    let verdict = match (closed(base), closed(new)) {
        _ if why.is_some() => CapacityVerdict::NotComparable,
        (Some(b), Some(n)) => by_intervals(b, n),
        _ => CapacityVerdict::Overlapping,
    };
    CapacityChange {
        search: new.phase.clone(),
        base: base.capacity,
        new: new.capacity,
        base_interval: base.capacity_interval,
        new_interval: new.capacity_interval,
        relative,
        verdict,
        why,
    }
}

/// The interval when both ends are known.
fn closed(s: &SearchResult) -> Option<[f64; 2]> {
    match s.capacity_interval {
        [Some(lo), Some(hi)] => Some([lo, hi]),
        _ => None,
    }
}

fn not_comparable(s: &SearchResult) -> Option<String> {
    if s.lower_bound {
        return Some(format!("only a lower bound ({})", s.stop_reason));
    }
    if s.capacity.is_none() {
        return Some("no passing probe".to_string());
    }
    closed(s)
        .is_none()
        .then(|| format!("the bracket is open ({})", s.stop_reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::SearchLoad;

    fn search(capacity: f64, interval: [Option<f64>; 2]) -> SearchResult {
        SearchResult {
            phase: "capacity".into(),
            load: SearchLoad::Rate,
            capacity: Some(capacity),
            lower_bound: false,
            capacity_interval: interval,
            goodput: None,
            bracket: interval,
            start: None,
            stop_reason: "precision reached".into(),
            stop: None,
            probes: Vec::new(),
            work_sha256: None,
        }
    }

    fn verdict(base: &SearchResult, new: &SearchResult) -> CapacityVerdict {
        compare_capacities(std::slice::from_ref(base), std::slice::from_ref(new))[0].verdict
    }

    #[test]
    fn a_change_is_called_only_when_the_intervals_part() {
        let base = search(12.0, [Some(12.0), Some(13.0)]);
        let higher = search(14.0, [Some(14.0), Some(15.0)]);
        let lower = search(10.0, [Some(10.0), Some(11.5)]);
        let overlapping = search(12.5, [Some(12.5), Some(13.5)]);
        assert_eq!(verdict(&base, &higher), CapacityVerdict::Higher);
        assert_eq!(verdict(&base, &lower), CapacityVerdict::Lower);
        assert_eq!(verdict(&base, &overlapping), CapacityVerdict::Overlapping);
        let c = &compare_capacities(&[base], &[higher])[0];
        assert!((c.relative.unwrap() - 2.0 / 12.0).abs() < 1e-12);
    }

    #[test]
    fn a_lower_bound_or_an_open_bracket_is_not_compared() {
        let base = search(12.0, [Some(12.0), Some(13.0)]);
        let mut bound = search(4.0, [Some(4.0), None]);
        bound.lower_bound = true;
        bound.stop_reason = "stopped: client-bound at 8 req/s".into();
        let c = &compare_capacities(std::slice::from_ref(&base), &[bound])[0];
        assert_eq!(c.verdict, CapacityVerdict::NotComparable);
        assert!(c.why.as_deref().unwrap().contains("client-bound"), "{c:?}");
        let open = search(160.0, [Some(160.0), None]);
        assert_eq!(verdict(&base, &open), CapacityVerdict::NotComparable);
        let mut other = search(12.0, [Some(12.0), Some(13.0)]);
        other.phase = "other".into();
        assert!(compare_capacities(&[base], &[other]).is_empty());
    }
}
