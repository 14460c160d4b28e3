//! The newest runs' test: whether the last few runs of a stretch left its level, looked at
//! after every run, so a step shows within three or four runs of being made.
//!
//! The full test (E-divisive candidates, Student's t over every split) spends its
//! false-alarm budget on every split of the series at every run; a nightly needs the newest
//! split most. Here only the newest 3–4 runs are tested against the level before them, at a
//! looser p than the full test, and only once that level has runs enough to know its noise.
//! One or two odd runs still never make a change: the step must fit best (least squares)
//! with at least `min_points` runs after it.

use super::split::{FoundBy, Settings, Split, is_blip};
use super::stats::{mean, moments, relative, t_test};

/// The newest runs of `values[from..]` as a new level: the tail of `min_points..=newest_runs`
/// runs a single step fits best after (least squares), when Student's t against the runs
/// before it (at least `newest_min_base`) gives p ≤ `newest_max_p`, the level moves by at
/// least the minimum effect, and the tail is no blip that came back.
pub fn newest_change(values: &[f64], from: usize, settings: &Settings) -> Option<Split> {
    let n = values.len();
    if best_tail(&values[from..], settings.newest_runs)? < settings.min_points {
        return None;
    }
    (settings.min_points.max(1)..=settings.newest_runs)
        .filter(|&k| n >= from + settings.newest_min_base.max(2) + k)
        .map(|k| {
            let (before, after) = (&values[from..n - k], &values[n - k..]);
            Split {
                at: n - k,
                before: mean(before),
                after: mean(after),
                p_value: t_test(before, after),
                left_runs: before.len(),
                right_runs: k,
                found_by: FoundBy::NewestRuns,
            }
        })
        .filter(|s| {
            s.p_value <= settings.newest_max_p
                && relative(s.before, s.after).abs() >= settings.min_effect
                && starts_level(values[s.at], s)
                && !is_blip(values, from, s.at, n, settings.min_points)
        })
        .min_by(|a, b| a.p_value.total_cmp(&b.p_value))
}

/// Whether a tail's first run is nearer its new level than the level before: a tail that
/// starts with a run at the old level does not start where the step is.
fn starts_level(first: f64, split: &Split) -> bool {
    (first - split.after).abs() < (first - split.before).abs()
}

/// How many of the newest runs (1..=`most`) a single step fits best after, by least squares.
fn best_tail(values: &[f64], most: usize) -> Option<usize> {
    let n = values.len();
    let sse = |k: usize| moments(&values[..n - k]).1 + moments(&values[n - k..]).1;
    (1..=most.min(n.saturating_sub(1))).min_by(|&a, &b| sse(a).total_cmp(&sse(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Twelve runs at 100 with ±1% noise, then `tail`.
    fn after_twelve(tail: &[f64]) -> Vec<f64> {
        let quiet = [
            100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 100.8, 99.2, 100.3, 99.7, 100.6, 99.4,
        ];
        quiet.iter().chain(tail).copied().collect()
    }

    #[test]
    fn three_new_runs_after_a_long_level_are_a_change() {
        let v = after_twelve(&[112.0, 111.0, 113.0]);
        let s = newest_change(&v, 0, &Settings::default()).expect("a change");
        assert_eq!((s.at, s.left_runs, s.right_runs), (12, 12, 3));
        assert!((s.after - 112.0).abs() < 1e-9);
        assert!(s.p_value < 0.001, "{s:?}");
        assert_eq!(s.found_by, FoundBy::NewestRuns);
    }

    #[test]
    fn the_tail_a_step_fits_best_after_is_taken() {
        // Four new runs: the tail of four fits better than the tail of three.
        let v = after_twelve(&[112.0, 111.0, 113.0, 112.5]);
        let s = newest_change(&v, 0, &Settings::default()).expect("a change");
        assert_eq!(s.at, 12);
        assert_eq!(s.right_runs, 4);
    }

    #[test]
    fn a_short_level_before_is_not_enough_to_know_its_noise() {
        let v = after_twelve(&[112.0, 111.0, 113.0]);
        // From run 4 on, the level before the new runs has 8 runs: fewer than 10.
        assert_eq!(newest_change(&v, 4, &Settings::default()), None);
        assert!(newest_change(&v, 2, &Settings::default()).is_some());
    }

    #[test]
    fn one_or_two_odd_runs_are_not_a_change() {
        assert_eq!(
            newest_change(&after_twelve(&[130.0]), 0, &Settings::default()),
            None
        );
        // Two odd runs: with the run before them, three runs 20% up at p ≈ 0.001, but the
        // step fits best after two.
        let v = after_twelve(&[130.0, 131.0]);
        assert_eq!(best_tail(&v, 4), Some(2));
        assert_eq!(newest_change(&v, 0, &Settings::default()), None);
        // One odd run and two back at the level: the three are too spread to be a level,
        // though their mean is 10% up.
        let v = after_twelve(&[130.0, 100.0, 101.0]);
        assert!(relative(mean(&v[..12]), mean(&v[12..])) >= 0.10);
        assert_eq!(newest_change(&v, 0, &Settings::default()), None);
    }

    #[test]
    fn a_blip_that_came_back_is_not_a_change_whichever_tail_is_tried() {
        // Two slow runs and a fast one: the tail of three returns (a blip); the tail of
        // four starts with a fast run, so the step does not fit best there.
        let v = after_twelve(&[150.0, 150.5, 100.2]);
        assert!(is_blip(&v, 0, 12, 15, 3));
        assert_eq!(newest_change(&v, 0, &Settings::default()), None);
        let mut longer = v.clone();
        longer.push(100.1);
        assert_eq!(newest_change(&longer, 0, &Settings::default()), None);
        // Three slow runs are a level.
        let v = after_twelve(&[150.0, 150.5, 149.8]);
        assert!(!is_blip(&v, 0, 12, 15, 3));
        assert_eq!(
            newest_change(&v, 0, &Settings::default()).map(|s| s.at),
            Some(12)
        );
    }

    #[test]
    fn a_significant_step_below_the_minimum_effect_is_not_a_change() {
        let v = after_twelve(&[104.0, 104.2, 103.8]);
        let s = Settings::default();
        assert_eq!(newest_change(&v, 0, &s), None);
        let loose = Settings {
            min_effect: 0.02,
            ..s
        };
        assert!(newest_change(&v, 0, &loose).is_some());
    }
}
