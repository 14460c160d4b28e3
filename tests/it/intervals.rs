//! Percentile intervals: the seeds' request timings against an independent computation
//! (`tests/fixtures/intervals/percentile_intervals.py`, exact binomial CDF in Python).

use std::path::PathBuf;

use serde_json::Value;
use servebench::figure::Figure;
use servebench::metrics::{Distribution, Interval, interval_ranks};
use servebench::report::read_report;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn expected() -> Value {
    let text = std::fs::read_to_string(root().join("tests/fixtures/intervals/expected.json"))
        .expect("expected.json (regenerate with the script next to it)");
    serde_json::from_str(&text).expect("JSON")
}

fn check_interval(what: &str, actual: Option<Interval>, expected: &Value) {
    match (actual, expected) {
        (None, Value::Null) => {}
        (Some(i), Value::Object(e)) => {
            assert_eq!(i.rank_lo, e["rank_lo"].as_u64().unwrap(), "{what} rank_lo");
            assert_eq!(i.rank_hi, e["rank_hi"].as_u64().unwrap(), "{what} rank_hi");
            // The very order statistics, bit for bit.
            assert_eq!(
                i.lo.to_bits(),
                e["lo"].as_f64().unwrap().to_bits(),
                "{what} lo"
            );
            assert_eq!(
                i.hi.to_bits(),
                e["hi"].as_f64().unwrap().to_bits(),
                "{what} hi"
            );
            assert!(i.coverage >= 0.95, "{what} coverage {}", i.coverage);
        }
        (a, e) => panic!("{what}: servebench {a:?}, independent computation {e}"),
    }
}

#[test]
fn seed_000_and_002_intervals_match_the_independent_computation() {
    let expected = expected();
    for (seed, per_metric) in expected["seeds"].as_object().unwrap() {
        let path = root().join(format!("tests/fixtures/seeds/{seed}.txt"));
        let report = read_report(&path).expect("seed reads");
        let s = &report.phases[0].summary;
        let dists: [(&str, Option<Distribution>); 4] = [
            ("ttft", s.distribution(Figure::Ttft).copied()),
            ("tpot", s.distribution(Figure::Tpot).copied()),
            ("e2e", s.distribution(Figure::E2e).copied()),
            (
                "mean_inter_token_latency_ms",
                s.distribution(Figure::MeanInterTokenLatency).copied(),
            ),
        ];
        for (metric, d) in dists {
            let e = &per_metric[metric];
            let d = d.unwrap_or_else(|| panic!("{seed} {metric}: no distribution"));
            assert_eq!(d.samples, e["samples"].as_u64().unwrap(), "{seed} {metric}");
            let ci = d.ci95.expect("latency distributions carry intervals");
            let e = &e["intervals"];
            check_interval(&format!("{seed} {metric} p50"), ci.p50, &e["p50"]);
            check_interval(&format!("{seed} {metric} p95"), ci.p95, &e["p95"]);
            check_interval(&format!("{seed} {metric} p99"), ci.p99, &e["p99"]);
        }
        // The seeds are small: a median interval exists, the tails have none.
        let ttft = s.distribution(Figure::Ttft).unwrap().ci95.unwrap();
        assert!(ttft.p50.is_some() && ttft.p95.is_none() && ttft.p99.is_none());
    }
}

#[test]
fn ranks_match_the_exact_binomial_for_many_sample_sizes() {
    let expected = expected();
    let rows = expected["ranks"].as_array().unwrap();
    assert!(rows.len() > 300);
    for row in rows {
        let n = row["n"].as_u64().unwrap();
        let p = match row["q"].as_str().unwrap() {
            "p50" => 0.50,
            "p95" => 0.95,
            "p99" => 0.99,
            other => panic!("quantile {other}"),
        };
        let want = row["ranks"]
            .as_array()
            .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()));
        let got = interval_ranks(n, p).map(|(l, u, _)| (l, u));
        assert_eq!(got, want, "n={n} p={p}");
    }
}

#[test]
fn intervals_are_written_to_the_report_and_read_back() {
    let path = root().join("tests/fixtures/seeds/000_adbc5efdce65c6e3.txt");
    let report = read_report(&path).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    let ci = &json["phases"][0]["ttft"]["ci95"];
    assert_eq!(ci["p50"]["rank_lo"], 4);
    // Too few samples for a two-sided p99 interval: said with null, not left out.
    assert!(ci.get("p99").is_some_and(Value::is_null));
    // Distributions without intervals (and older reports) leave the key out.
    assert!(json["phases"][0]["input_tokens"].get("ci95").is_none());
}
