//! What a report says about phases whose records are a sample, and the thinning of
//! per-request charts so a page stays small whatever the run's length.

use crate::report::model::{PhaseResult, Report};

/// Points a per-request chart draws per phase at most.
pub const CHART_POINTS: usize = 4_000;

/// "sampled 50 of 1500 requests" for a phase whose records are a sample.
pub fn sampled(p: &PhaseResult) -> Option<String> {
    let kept = p.records.as_ref()?;
    Some(format!("sampled {} of {} requests", kept.kept, kept.total))
}

/// One line per sampled phase, for the phases section.
pub fn notes(report: &Report) -> Vec<String> {
    report
        .phases
        .iter()
        .filter_map(|p| {
            let what = sampled(p)?;
            Some(format!(
                "Phase {}: per-request records {what} ({}); its figures cover every request, \
                 per-request charts and drift windows use the sample.",
                p.header.phase,
                p.records.as_ref().map_or("", |k| k.sampling.as_str())
            ))
        })
        .collect()
}

/// At most `max` of `points`, by an even stride, always keeping the lowest and the highest
/// `y` (the extremes a reader looks for).
pub fn thin(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max || max < 3 {
        return points.to_vec();
    }
    let extreme = |better: fn(f64, f64) -> bool| {
        (0..points.len())
            .reduce(|a, b| {
                if better(points[b].1, points[a].1) {
                    b
                } else {
                    a
                }
            })
            .unwrap_or(0)
    };
    let (low, high) = (extreme(|a, b| a < b), extreme(|a, b| a > b));
    let stride = points.len().div_ceil(max - 2);
    (0..points.len())
        .filter(|&i| i % stride == 0 || i == low || i == high)
        .map(|i| points[i])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_the_extremes_and_the_bound() {
        let points: Vec<(f64, f64)> = (0..10_001)
            .map(|i| (f64::from(i), f64::from((i * 37) % 1000)))
            .collect();
        let mut spiky = points.clone();
        spiky[4_321].1 = 1e6;
        spiky[7_777].1 = -5.0;
        let thinned = thin(&spiky, 100);
        assert!(thinned.len() <= 100, "{}", thinned.len());
        assert!(thinned.contains(&(4_321.0, 1e6)) && thinned.contains(&(7_777.0, -5.0)));
        assert_eq!(thin(&points[..50], 100).len(), 50);
    }
}
