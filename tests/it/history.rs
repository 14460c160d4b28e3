//! The results history's trends: the detection rates the noise model promises, over seeded
//! synthetic series recorded run by run into a store.

use servebench::history::synthetic::{Shape, replay};
use servebench::history::trend::Settings;

const STEP: Shape = Shape {
    runs: 30,
    level: 0.8,
    noise: 0.05,
    step: Some((20, 0.15)),
};

const FLAT: Shape = Shape { step: None, ..STEP };

/// Seeds 1–200: the same ones BENCHMARKS.md reports.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=200;

#[test]
fn a_15_percent_step_opens_one_alert_by_run_23_and_none_before_run_20() {
    let settings = Settings::default();
    let mut good = 0;
    for seed in SEEDS {
        let alerts = replay(&STEP, seed, &settings, None);
        let early = alerts.iter().any(|a| a.opened_by < 20);
        let timely = alerts
            .iter()
            .any(|a| (20..=23).contains(&a.opened_by) && (19..=21).contains(&a.change_at));
        if timely && !early {
            good += 1;
        }
    }
    assert!(good >= 190, "{good} of 200 seeds opened an alert by run 23 and none before 20");
}

#[test]
fn noise_alone_raises_an_alert_in_at_most_2_percent_of_series() {
    let settings = Settings::default();
    let raised = SEEDS
        .filter(|&seed| !replay(&FLAT, seed, &settings, None).is_empty())
        .count();
    assert!(raised <= 4, "{raised} of 200 noise-only series raised an alert");
}

#[test]
fn a_client_bound_run_in_the_middle_changes_nothing() {
    let settings = Settings::default();
    for seed in 1..=40 {
        for shape in [STEP, FLAT] {
            assert_eq!(
                replay(&shape, seed, &settings, Some(12)),
                replay(&shape, seed, &settings, None),
                "seed {seed}"
            );
        }
    }
}
