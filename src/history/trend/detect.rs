//! Change points in one stretch of comparable runs, as Hunter (Fleming et al., 2023) and
//! Apache Otava find them: E-divisive splits inside sliding windows at a relaxed
//! significance give the candidates, then the weakest candidate is dropped, one at a time,
//! until every change left is significant against its neighbours' run-to-run noise and at
//! least the minimum effect. The newest runs after the last change get a test of their own
//! ([`super::newest`]), so a step shows within three or four runs.

use std::collections::BTreeSet;

use super::edivisive::best_split;
use super::newest::newest_change;
use super::split::{FoundBy, Settings, Split, SquaredError, blip_with};
use super::stats::{mean, t_test};

/// The significant changes in `values`, in order.
pub fn change_points(values: &[f64], settings: &Settings) -> Vec<Split> {
    // Candidates are found at ten times the final p-value, as Otava's first pass does, so a
    // change that only shows across a window's edge still becomes a candidate.
    let relaxed = (settings.max_p * 10.0).min(0.05);
    let mut candidates = BTreeSet::new();
    let window = settings.window.max(2 * settings.min_points);
    let mut start = 0;
    while start < values.len() {
        let end = (start + window).min(values.len());
        bisect(
            values,
            start,
            end,
            relaxed,
            settings.min_points,
            &mut candidates,
        );
        if end == values.len() {
            break;
        }
        start += window / 2;
    }
    let mut at: Vec<usize> = candidates.into_iter().collect();
    // E-divisive's split favours balanced halves; each change is moved to where a step
    // between its neighbours fits best (least squares), then tested again, until it stays.
    // A candidate is moved before it is tested, so one found a few runs off its step is not
    // dropped for the noise it straddles.
    for _ in 0..MAX_REFINE {
        let refined = refine(values, &at, settings.min_points);
        let kept: Vec<usize> = merge(values, refined, settings)
            .iter()
            .map(|s| s.at)
            .collect();
        if kept == at {
            break;
        }
        at = kept;
    }
    let mut splits = merge(values, at, settings);
    let from = splits.last().map_or(0, |s| s.at);
    if let Some(newest) = newest_change(values, from, settings) {
        // The last change's new level now ends where the newest runs begin.
        let mut at: Vec<usize> = splits.iter().map(|s| s.at).collect();
        at.push(newest.at);
        let found: Vec<FoundBy> = splits.iter().map(|s| s.found_by).collect();
        splits = splits_at(values, &at);
        for (split, by) in splits.iter_mut().zip(found) {
            split.found_by = by;
        }
        if let Some(last) = splits.last_mut() {
            last.found_by = FoundBy::NewestRuns;
        }
    }
    splits
}

/// The change at each of `at` (in order) between its neighbouring changes' levels.
fn splits_at(values: &[f64], at: &[usize]) -> Vec<Split> {
    (0..at.len())
        .map(|i| {
            let lo = if i == 0 { 0 } else { at[i - 1] };
            let hi = at.get(i + 1).copied().unwrap_or(values.len());
            let (left, right) = (&values[lo..at[i]], &values[at[i]..hi]);
            Split {
                at: at[i],
                before: mean(left),
                after: mean(right),
                p_value: t_test(left, right),
                left_runs: left.len(),
                right_runs: right.len(),
                found_by: FoundBy::Levels,
            }
        })
        .collect()
}

/// Rounds of moving and testing the changes again.
const MAX_REFINE: usize = 4;

/// Each change moved to the split between its neighbours with the smallest squared error,
/// searched over every split; a change whose best split leaves fewer than `min_points` runs
/// on a side is dropped, never moved to meet the minimum (the runs after a step are where
/// it is, and two slow runs are not yet three).
fn refine(values: &[f64], at: &[usize], min_points: usize) -> Vec<usize> {
    let sse = SquaredError::new(values);
    // Left to right, each between its moved left neighbour and its unmoved right one, so the
    // changes stay in order.
    let mut moved: Vec<usize> = Vec::with_capacity(at.len());
    for i in 0..at.len() {
        let lo = moved.last().copied().unwrap_or(0);
        let hi = at.get(i + 1).copied().unwrap_or(values.len());
        let best = (lo + 1..hi).min_by(|&a, &b| {
            (sse.of(lo, a) + sse.of(a, hi)).total_cmp(&(sse.of(lo, b) + sse.of(b, hi)))
        });
        if let Some(best) = best.filter(|&b| b >= lo + min_points && b + min_points <= hi) {
            moved.push(best);
        }
    }
    moved
}

/// Split `values[a..b]` where E-divisive says, recursively, while the split is significant.
fn bisect(
    values: &[f64],
    a: usize,
    b: usize,
    max_p: f64,
    min_points: usize,
    out: &mut BTreeSet<usize>,
) {
    let Some(offset) = best_split(&values[a..b], min_points) else {
        return;
    };
    let significant = |tau: usize| t_test(&values[a..tau], &values[tau..b]) <= max_p;
    // E-divisive favours balanced halves and can miss a step among the last few runs, the
    // one a nightly series most needs found; the least-squares split is the second try.
    let tau = Some(a + offset)
        .filter(|&tau| significant(tau))
        .or_else(|| {
            refine(&values[a..b], &[offset], min_points)
                .first()
                .map(|&t| a + t)
                .filter(|&tau| significant(tau))
        });
    if let Some(tau) = tau {
        out.insert(tau);
        bisect(values, a, tau, max_p, min_points, out);
        bisect(values, tau, b, max_p, min_points, out);
    }
}

/// Drop the weakest change (one above `max_p` or a blip, else the smallest effect below
/// `min_effect`) and test its neighbours again, until every change passes.
fn merge(values: &[f64], mut at: Vec<usize>, settings: &Settings) -> Vec<Split> {
    let sse = SquaredError::new(values);
    loop {
        let splits = splits_at(values, &at);
        // Of the changes that fail, the one whose removal costs the fit least goes first:
        // a spurious change next to a real one shortens the real one's level and can leave
        // it the higher p-value of the two.
        let blip = |i: usize| {
            let lo = if i == 0 { 0 } else { at[i - 1] };
            let hi = at.get(i + 1).copied().unwrap_or(values.len());
            blip_with(values, &sse, (lo, at[i], hi), settings.min_points)
        };
        let weakest = splits
            .iter()
            .enumerate()
            .filter(|&(i, s)| s.p_value > settings.max_p || blip(i))
            .min_by(|a, b| a.1.fit_cost().total_cmp(&b.1.fit_cost()));
        let drop = match weakest {
            Some((i, _)) => i,
            None if splits.is_empty() => return splits,
            None => {
                let smallest = splits
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.relative().abs() < settings.min_effect)
                    .min_by(|a, b| a.1.relative().abs().total_cmp(&b.1.relative().abs()));
                match smallest {
                    Some((i, _)) => i,
                    None => return splits,
                }
            }
        };
        at.remove(drop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(before: &[f64], after: &[f64]) -> Vec<f64> {
        before.iter().chain(after).copied().collect()
    }

    #[test]
    fn a_clear_step_is_one_change_at_its_first_run() {
        let v = step(
            &[100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 100.2],
            &[120.0, 121.0, 119.0],
        );
        let cps = change_points(&v, &Settings::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].at, 7);
        assert!((cps[0].after - 120.0).abs() < 1e-9);
        assert!(cps[0].p_value < 0.001);
    }

    #[test]
    fn a_step_smaller_than_the_minimum_effect_is_not_a_change() {
        // 3% and utterly regular: significant, but below the 5% minimum.
        let v = step(&[100.0; 10], &[103.0; 10]);
        assert!(change_points(&v, &Settings::default()).is_empty());
        let loose = Settings {
            min_effect: 0.01,
            ..Settings::default()
        };
        assert_eq!(change_points(&v, &loose).len(), 1);
    }

    #[test]
    fn two_runs_at_a_new_level_are_not_yet_a_change() {
        let v = step(&[100.0, 101.0, 99.0, 100.5, 99.5, 100.0], &[130.0, 131.0]);
        assert!(change_points(&v, &Settings::default()).is_empty());
    }

    /// Seeded series with a 15% step at their 20th run and 5% noise, seen at run 23.
    fn step_at_20(seed: u64) -> Vec<f64> {
        let shape = crate::history::synthetic::Shape {
            runs: 23,
            level: 0.8,
            noise: 0.05,
            step: Some((20, 0.15)),
        };
        crate::history::synthetic::values(&shape, seed)
    }

    #[test]
    fn a_candidate_off_its_step_is_moved_before_it_is_tested() {
        // E-divisive's first split of this series falls at run 17, where the t-test finds no
        // change; moved to the least-squares split first, it is the step at run 20.
        let v = step_at_20(77);
        assert_eq!(best_split(&v, 3), Some(16));
        let at: Vec<usize> = change_points(&v, &Settings::default())
            .iter()
            .map(|s| s.at)
            .collect();
        assert_eq!(at, vec![19]);
    }

    #[test]
    fn a_spurious_change_beside_a_real_one_is_dropped_first() {
        // Runs 17–19 are low by chance: the candidates at 17 and 20 both fail against each
        // other, and the one whose removal costs the fit least (17) must go first; the step
        // then stands, within a run of where it was made (run 21 is high as well).
        let v = step_at_20(102);
        let at: Vec<usize> = change_points(&v, &Settings::default())
            .iter()
            .map(|s| s.at)
            .collect();
        assert_eq!(at.len(), 1, "{at:?}");
        assert!(at[0].abs_diff(19) <= 1, "{at:?}");
    }

    #[test]
    fn the_newest_runs_show_a_step_before_the_full_test_does() {
        // Seed 2 at run 22: three runs at the new level, p ≈ 0.0016 against the level
        // before, short of the full test's 0.001 and within the newest runs' 0.01.
        let v = &step_at_20(2)[..22];
        let full_only = Settings {
            newest_max_p: 0.0,
            ..Settings::default()
        };
        assert!(change_points(v, &full_only).is_empty());
        let cps = change_points(v, &Settings::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!((cps[0].at, cps[0].found_by), (19, FoundBy::NewestRuns));
        assert!(cps[0].p_value > 0.001 && cps[0].p_value <= 0.01, "{cps:?}");
        // A run later the full test sees it too.
        let later = change_points(&step_at_20(2), &Settings::default());
        assert_eq!(later.len(), 1, "{later:?}");
        assert_eq!((later[0].at, later[0].found_by), (19, FoundBy::Levels));
    }

    #[test]
    fn crowded_candidates_stay_in_order_when_moved() {
        // Many candidates a run or two apart (a long noisy history): moving each must not
        // carry it past its neighbour.
        let v: Vec<f64> = (0..60)
            .map(|i| 100.0 + f64::from((i * 37 % 11) as u8) * if i % 7 < 3 { 3.0 } else { -2.0 })
            .collect();
        let at: Vec<usize> = (3..57).step_by(2).collect();
        let moved = refine(&v, &at, 3);
        assert!(moved.windows(2).all(|w| w[0] < w[1]), "{moved:?}");
        assert!(moved.iter().all(|&m| m < v.len()));
        change_points(&v, &Settings::default());
    }

    #[test]
    fn finds_two_steps_in_a_long_series() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let mut v = Vec::new();
        for level in [0.0, 30.0, 0.0] {
            for _ in 0..8 {
                v.extend(base.iter().map(|b| b + level));
            }
        }
        let at: Vec<usize> = change_points(&v, &Settings::default())
            .iter()
            .map(|s| s.at)
            .collect();
        assert_eq!(at, vec![40, 80]);
    }
}
