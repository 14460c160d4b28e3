use std::time::Duration;

use super::*;
use crate::plan::{Arrival, ExpandOptions, LoadedPlan, prepare_from_value};

fn plan(phases: serde_json::Value) -> LoadedPlan {
    let doc = serde_json::json!({
        "version": 1,
        "name": "shards",
        "seed": 3,
        "targets": {"sim": {"simulator": {"seed": 1}}},
        "workloads": {"chat": {"input_tokens": 32, "output_tokens": 8}},
        "defaults": {"target": "sim", "workload": "chat"},
        "phases": phases,
    });
    match prepare_from_value(doc, "test plan", &ExpandOptions::default()) {
        Ok(loaded) => loaded,
        Err(e) => panic!("test plan is invalid: {e}"),
    }
}

#[test]
fn worker_and_request_shares_sum_to_the_whole() {
    for count in 1..=16u32 {
        for total in 0..=64u64 {
            let shares: Vec<u64> = (0..count)
                .map(|i| ShardSpec::new(i, count).unwrap().share(total))
                .collect();
            assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {count}");
            // The remainder goes to the lowest indices: shares never grow with the index
            // and differ by at most one.
            assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
            assert!(shares[0] - shares[count as usize - 1] <= 1, "{shares:?}");
        }
    }
    let shares: Vec<u64> = (0..4)
        .map(|i| ShardSpec::new(i, 4).unwrap().share(10))
        .collect();
    assert_eq!(shares, [3, 3, 2, 2]);
    assert_eq!(ShardSpec::new(5, 8).unwrap().share(3), 0);
}

#[test]
fn closed_loads_split_into_workers_and_open_loads_into_rates() {
    for count in 1..=16u32 {
        for concurrency in 1..=64u32 {
            let workers: u32 = (0..count)
                .map(|i| {
                    match split_load(
                        &Load::Closed { concurrency },
                        ShardSpec::new(i, count).unwrap(),
                    ) {
                        Load::Closed { concurrency } => concurrency,
                        Load::Open { .. } | Load::Replay => panic!("a closed loop stays closed"),
                    }
                })
                .sum();
            assert_eq!(workers, concurrency);
        }
        let open = Load::Open {
            rps: 37.5,
            arrival: Arrival::Poisson,
            burstiness: None,
            max_concurrency: Some(3),
        };
        let mut rate = 0.0;
        for i in 0..count {
            match split_load(&open, ShardSpec::new(i, count).unwrap()) {
                Load::Open {
                    rps,
                    arrival,
                    max_concurrency,
                    ..
                } => {
                    rate += rps;
                    assert_eq!(arrival, Arrival::Poisson);
                    assert!(max_concurrency.is_some_and(|cap| cap >= 1));
                }
                Load::Closed { .. } | Load::Replay => panic!("an open loop stays open"),
            }
        }
        assert!((rate - 37.5).abs() < 1e-9, "{rate} over {count}");
    }
}

#[test]
fn request_bounds_sum_to_the_whole_and_follow_the_workers() {
    for count in 1..=16u32 {
        for concurrency in 1..=64u32 {
            for requests in [0u64, 1, 7, 64, 1000] {
                let closed = Load::Closed { concurrency };
                let mut total = 0;
                for i in 0..count {
                    let shard = ShardSpec::new(i, count).unwrap();
                    let share = request_share(&closed, requests, shard);
                    let workers = match split_load(&closed, shard) {
                        Load::Closed { concurrency } => concurrency,
                        Load::Open { .. } | Load::Replay => panic!("a closed loop stays closed"),
                    };
                    // A shard without workers could never send its requests.
                    assert!(workers > 0 || share == 0);
                    total += share;
                }
                assert_eq!(
                    total, requests,
                    "{requests} requests, c{concurrency}, {count} shards"
                );
            }
        }
    }
}

#[test]
fn shard_specs_parse_and_bad_ones_say_why() {
    let spec: ShardSpec = "2/5".parse().unwrap();
    assert_eq!(spec, ShardSpec { index: 2, count: 5 });
    assert_eq!(spec.to_string(), "2/5");
    let err = |s: &str| s.parse::<ShardSpec>().unwrap_err();
    assert!(
        err("5/5").contains("out of range for 5 shard(s)"),
        "{}",
        err("5/5")
    );
    assert!(err("0/0").contains("at least 1"));
    assert!(err("3").contains("expected I/N"));
    assert!(err("a/2").contains("the index `a`"));
    assert!(err("1/-2").contains("the count `-2`"));
    assert!(err("0/20000").contains("at most"));
}

#[test]
fn start_at_must_be_rfc3339() {
    let t = parse_start_at("2026-12-02T14:00:00+01:00").unwrap();
    assert_eq!(t.to_rfc3339(), "2026-12-02T13:00:00+00:00");
    assert!(parse_start_at("tomorrow").unwrap_err().contains("RFC 3339"));
}

#[test]
fn phases_are_planned_back_to_back_with_the_drain_allowance() {
    let loaded = plan(serde_json::json!([
        {"name": "a", "concurrency": 2, "duration": "10s", "warmup": {"duration": "5s"}, "cooldown": "3s"},
        {"name": "b", "rate": {"rps": 4}, "duration": "20s"},
        {"name": "c", "concurrency": 1, "requests": 10},
    ]));
    let phases = resolve(&loaded.plan).unwrap();
    let offsets = planned_offsets(&phases).unwrap();
    let a = Duration::from_secs(5 + 10 + 3) + DRAIN_ALLOWANCE;
    assert_eq!(
        offsets,
        [
            Duration::ZERO,
            a,
            a + Duration::from_secs(20) + DRAIN_ALLOWANCE
        ]
    );
}

#[test]
fn start_at_refuses_phases_of_unknown_length_but_the_last() {
    let loaded = plan(serde_json::json!([
        {"name": "by-count", "concurrency": 2, "requests": 10},
        {"name": "count-warmup", "concurrency": 2, "duration": "5s", "warmup": {"requests": 4}},
        {"name": "last", "concurrency": 1, "requests": 10},
    ]));
    let phases = resolve(&loaded.plan).unwrap();
    let err = planned_offsets(&phases).unwrap_err();
    assert!(
        err.contains("phase `by-count` is bounded only by a request count"),
        "{err}"
    );
    assert!(
        err.contains("phase `count-warmup` has a warmup bounded only by a request count"),
        "{err}"
    );
    assert!(!err.contains("`last`"), "{err}");
}

#[test]
fn split_phases_share_requests_and_may_run_nothing() {
    let loaded = plan(serde_json::json!([
        {"name": "c3", "concurrency": 3, "requests": 7},
    ]));
    let phase = resolve(&loaded.plan).unwrap().remove(0);
    let parts: Vec<_> = (0..4)
        .map(|i| split_phase(phase.clone(), ShardSpec::new(i, 4).unwrap()))
        .collect();
    let requests: Vec<_> = parts.iter().map(|p| p.requests).collect();
    // Three workers over four shards: the requests go to the three shards with a worker.
    assert_eq!(requests, [Some(3), Some(2), Some(2), Some(0)]);
    let idle: Vec<bool> = parts.iter().map(runs_nothing).collect();
    assert_eq!(idle, [false, false, false, true]);
    assert!(!runs_nothing(&phase));
}

#[test]
fn plan_digest_survives_a_json_round_trip_and_tells_plans_apart() {
    let loaded = plan(serde_json::json!([{"name": "c1", "concurrency": 1, "requests": 4}]));
    let sha = plan_sha256(&loaded.plan);
    assert_eq!(sha.len(), 64);
    let text = serde_json::to_string(&loaded.plan).unwrap();
    let again: crate::plan::Plan = serde_json::from_str(&text).unwrap();
    assert_eq!(plan_sha256(&again), sha);
    let other = plan(serde_json::json!([{"name": "c1", "concurrency": 2, "requests": 4}]));
    assert_ne!(plan_sha256(&other.plan), sha);
}

#[test]
fn trace_replays_refuse_to_be_split() {
    let loaded = plan(serde_json::json!([{"name": "replay", "concurrency": 1, "requests": 4}]));
    let mut phases = resolve(&loaded.plan).unwrap();
    phases[0].load = Load::Replay;
    let err = check_shardable(&phases, ShardSpec::new(0, 2).unwrap()).unwrap_err();
    assert!(err.contains("trace replay phases cannot be split"), "{err}");
    assert!(err.contains(": replay;"), "{err}");
    assert!(check_shardable(&phases, ShardSpec::new(0, 1).unwrap()).is_ok());
}

#[test]
fn one_description_covers_phases_shard_and_planned_starts() {
    let loaded = plan(serde_json::json!([
        {"name": "a", "concurrency": 3, "duration": "10s"},
        {"name": "b", "concurrency": 1, "duration": "5s"},
        {"name": "c", "concurrency": 2, "duration": "5s"},
    ]));
    let start_at = parse_start_at("2026-12-02T14:00:00Z").unwrap();
    let only = vec!["a".to_string(), "b".to_string()];
    let schedule = Schedule::new(
        &loaded.plan,
        &ScheduleOptions {
            only: &only,
            shard: Some(ShardSpec::new(1, 2).unwrap()),
            start_at: Some(start_at),
        },
    )
    .unwrap();
    let text = schedule.describe();
    assert!(text.starts_with("plan shards — 2 phase(s)\n"), "{text}");
    assert!(
        text.contains("  1. a → target sim (route sim), workload chat: concurrency 1, 10s\n"),
        "{text}"
    );
    assert!(
        text.contains("shard 1/2: the loads above are this shard's share; phases with no workers"),
        "{text}"
    );
    assert!(
        text.contains("  b starts at 2026-12-02T14:00:40Z\n"),
        "{text}"
    );
    assert!(!text.contains(" c "), "{text}");
    let err = Schedule::new(
        &loaded.plan,
        &ScheduleOptions {
            only: &["nope".to_string()],
            ..ScheduleOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err,
        "--phase: no phase named `nope`; the plan's phases are: a, b, c"
    );
}
