//! Metrics: seed reports recomputed from their own request timings, percentiles, summaries.

use std::path::PathBuf;

use serde_json::Value;
use servebench::client::{
    ErrorKind, OutputTokenSource, RequestError, RequestRecord, derive_record_fields,
};
use servebench::figure::Figure;
use servebench::metrics::{anvil_metrics, distribution, percentile, summarize};
use servebench::plan::{PercentileMethod, Slo};

fn seed(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/seeds")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("seed fixture readable");
    serde_json::from_str(&text).expect("seed fixture is JSON")
}

fn close(actual: f64, expected: f64) -> bool {
    actual == expected || (actual - expected).abs() <= 1e-9 * expected.abs().max(actual.abs())
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// A record with only the raw measurements of a seed `request_timings` entry; derived fields
/// are left for `derive_record_fields`.
fn raw_record(t: &Value) -> RequestRecord {
    RequestRecord {
        request_index: t["request_index"].as_u64().expect("request_index"),
        e2e_ms: num(t, "e2e_ms").expect("e2e_ms"),
        ttft_ms: num(t, "ttft_ms"),
        time_to_first_output_ms: num(t, "time_to_first_output_ms"),
        prompt_tokens: t["prompt_tokens"].as_u64(),
        planned_context_tokens: t["planned_context_tokens"].as_u64(),
        output_tokens: t["output_tokens"].as_u64(),
        output_token_source: match t["output_token_source"].as_str() {
            Some("usage") => Some(OutputTokenSource::Usage),
            Some("counted") => Some(OutputTokenSource::Counted),
            Some(other) => panic!("unknown output_token_source {other}"),
            None => None,
        },
        content_chunks: t["content_chunks"].as_u64().expect("content_chunks"),
        reasoning_chunks: t["reasoning_chunks"].as_u64().expect("reasoning_chunks"),
        ..RequestRecord::default()
    }
}

fn check_seed(name: &str) {
    let doc = seed(name);
    let timings = doc["request_timings"].as_array().expect("request_timings");
    assert!(!timings.is_empty());
    let mut records = Vec::new();
    for t in timings {
        let mut r = raw_record(t);
        derive_record_fields(&mut r);
        // Every derived per-request field is reproduced from the raw measurements.
        for (key, ours) in [
            ("generation_ms", r.generation_ms),
            ("visible_generation_ms", r.visible_generation_ms),
            ("decode_tok_s", r.decode_tok_s),
            ("mean_inter_token_latency_ms", r.mean_inter_token_latency_ms),
            ("effective_prefill_tok_s", r.effective_prefill_tok_s),
        ] {
            let theirs = num(t, key).expect(key);
            let ours = ours.unwrap_or_else(|| panic!("{name}: {key} not derived"));
            assert!(close(ours, theirs), "{name}: {key}: {ours} vs {theirs}");
        }
        records.push(r);
    }
    let wall_clock_ms = num(&doc, "wall_clock_ms").expect("wall_clock_ms");
    let ours = anvil_metrics(&records, wall_clock_ms, PercentileMethod::NearestRank);
    let ours = serde_json::to_value(&ours).expect("serializable");
    let theirs = doc["metrics"].as_object().expect("metrics block");
    let ours = ours.as_object().expect("object");
    // Same field set, then every figure.
    let mut their_keys: Vec<&String> = theirs.keys().collect();
    let mut our_keys: Vec<&String> = ours.keys().collect();
    their_keys.sort();
    our_keys.sort();
    assert_eq!(our_keys, their_keys, "{name}: metrics field names");
    let mut compared = 0;
    for (key, expected) in theirs {
        if key == "prefix_cache_hit_avg" {
            continue; // from the server's Prometheus metrics, not from records
        }
        let actual = &ours[key];
        match (actual, expected) {
            (Value::Number(a), Value::Number(e)) => {
                let (a, e) = (a.as_f64().expect("f64"), e.as_f64().expect("f64"));
                assert!(close(a, e), "{name}: {key}: ours {a}, seed {e}");
            }
            _ => assert_eq!(actual, expected, "{name}: {key}"),
        }
        compared += 1;
    }
    assert_eq!(compared, theirs.len() - 1);
}

#[test]
fn seed_000_metrics_recomputed_from_request_timings() {
    check_seed("000_adbc5efdce65c6e3.txt");
}

#[test]
fn seed_002_metrics_recomputed_from_request_timings() {
    check_seed("002_7f8743b500e818d3.txt");
}

/// Seed 004 publishes percentiles only; samples built to the order statistics its figures
/// imply must give those figures under linear interpolation, and not under nearest rank.
#[test]
fn seed_004_input_token_percentiles_are_linear_interpolation() {
    let doc = seed("004_00b102e15ffdad6e.txt");
    let phase = &doc["phases"][0];
    assert_eq!(phase["phase"], "direct-c1");
    assert_eq!(phase["requests"], 35);
    let published = &phase["input_tokens"];
    // 35 samples: x[17] = 538 (p50), x[32] = x[33] = 542 (p95 at index 32.3), x[34] = 544
    // (p99 at index 33.66: 542 + 0.66·2 = 543.32).
    let mut x: Vec<f64> = vec![533.0; 10];
    x.extend(std::iter::repeat_n(536.0, 7));
    x.extend(std::iter::repeat_n(538.0, 13));
    x.extend([540.0, 541.0, 542.0, 542.0, 544.0]);
    assert_eq!(x.len(), 35);
    let d = distribution(&x, PercentileMethod::Linear).expect("non-empty");
    for (key, ours) in [
        ("p50", d.p50),
        ("p95", d.p95),
        ("p99", d.p99),
        ("min", d.min),
        ("max", d.max),
    ] {
        let theirs = num(published, key).expect(key);
        assert!(
            close(ours, theirs),
            "input_tokens.{key}: {ours} vs {theirs}"
        );
    }
    let nearest = distribution(&x, PercentileMethod::NearestRank).expect("non-empty");
    assert!(!close(nearest.p99, num(published, "p99").expect("p99")));

    // gateway-c1: p95 540.3 (index 32.3 between 540 and 541), p99 541.
    let phase = &doc["phases"][1];
    let published = &phase["input_tokens"];
    let mut x: Vec<f64> = vec![533.0; 5];
    x.extend(std::iter::repeat_n(538.0, 27));
    x.extend([540.0, 541.0, 541.0]);
    let d = distribution(&x, PercentileMethod::Linear).expect("non-empty");
    assert!(
        close(d.p95, num(published, "p95").expect("p95")),
        "{}",
        d.p95
    );
    assert!(
        close(d.p99, num(published, "p99").expect("p99")),
        "{}",
        d.p99
    );
}

/// Seed 004's rates: `output_tokens_per_second = Σ output_tokens / elapsed` and
/// `request_rate = requests / elapsed`, elapsed from first start to last end.
#[test]
fn seed_004_rates_follow_from_elapsed() {
    let doc = seed("004_00b102e15ffdad6e.txt");
    let mut checked = 0;
    for phase in doc["phases"].as_array().expect("phases") {
        let requests = phase["requests"].as_u64().expect("requests");
        let elapsed_s = num(phase, "elapsed").expect("elapsed");
        let output_tokens = num(&phase["output_tokens"], "min").expect("min") as u64;
        if num(&phase["output_tokens"], "max") != Some(output_tokens as f64) || phase["errors"] != 0
        {
            continue; // only phases with a fixed output length pin Σ output_tokens
        }
        // Closed loop at concurrency 1 back to back; the last request ends at `elapsed`.
        let n = requests as usize;
        let span_ms = elapsed_s * 1000.0 / n as f64;
        let records: Vec<RequestRecord> = (0..n)
            .map(|i| RequestRecord {
                request_index: i as u64,
                start_offset_ms: i as f64 * span_ms,
                e2e_ms: if i + 1 == n {
                    elapsed_s * 1000.0 - i as f64 * span_ms
                } else {
                    span_ms
                },
                output_tokens: Some(output_tokens),
                ..RequestRecord::default()
            })
            .collect();
        let s = summarize(&records, PercentileMethod::Linear, None);
        let name = phase["phase"].as_str().unwrap_or("?");
        assert!(close(s.elapsed, elapsed_s), "{name}: elapsed {}", s.elapsed);
        let tps = num(phase, "output_tokens_per_second").expect("tps");
        assert!(
            (s.output_tokens_per_second - tps).abs() <= 1e-9 * tps,
            "{name}: {} vs {tps}",
            s.output_tokens_per_second
        );
        let rate = num(phase, "request_rate").expect("rate");
        assert!((s.request_rate - rate).abs() <= 1e-9 * rate, "{name}");
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} phases checked");
}

fn slo_of(value: Value) -> Slo {
    serde_json::from_value(value).expect("an slo")
}

fn record(index: u64, start_ms: f64, ttft_ms: f64, e2e_ms: f64, out: u64) -> RequestRecord {
    let mut r = RequestRecord {
        request_index: index,
        request_id: format!("r-{index}"),
        start_offset_ms: start_ms,
        time_to_first_output_ms: Some(ttft_ms),
        ttft_ms: Some(ttft_ms),
        e2e_ms,
        prompt_tokens: Some(100),
        output_tokens: Some(out),
        output_token_source: Some(OutputTokenSource::Usage),
        content_chunks: out,
        ..RequestRecord::default()
    };
    derive_record_fields(&mut r);
    r
}

fn failed(index: u64, start_ms: f64, e2e_ms: f64, kind: ErrorKind) -> RequestRecord {
    RequestRecord {
        request_index: index,
        start_offset_ms: start_ms,
        e2e_ms,
        error: Some(RequestError::new(kind, None, "x")),
        ..RequestRecord::default()
    }
}

#[test]
fn summary_on_hand_built_records() {
    let mut records = vec![
        record(0, 0.0, 100.0, 1100.0, 11),    // tpot 100 ms
        record(1, 500.0, 200.0, 700.0, 6),    // tpot 100 ms
        record(2, 1000.0, 300.0, 3300.0, 31), // tpot 100 ms, ends at 4300
        failed(3, 1200.0, 50.0, ErrorKind::RateLimited),
        failed(4, 1300.0, 5000.0, ErrorKind::IdleTimeout), // ends at 6300: last end
        failed(5, 1400.0, 10.0, ErrorKind::RateLimited),
    ];
    records[0].cached_tokens = Some(50);
    records[1].cached_tokens = Some(0);
    let slo = slo_of(serde_json::json!({"ttft": {"max": "250ms"}, "e2e": {"max": "2s"}}));
    let s = summarize(&records, PercentileMethod::Linear, Some(&slo));
    assert_eq!((s.requests, s.success, s.errors), (6, 3, 3));
    assert!(close(s.elapsed, 6.3));
    assert!(close(s.request_rate, 6.0 / 6.3));
    assert_eq!(s.total_output_tokens, 48);
    assert!(close(s.output_tokens_per_second, 48.0 / 6.3));
    let ttft = s.distribution(Figure::Ttft).copied().expect("ttft");
    assert!(close(ttft.p50, 0.2) && close(ttft.min, 0.1) && close(ttft.max, 0.3));
    assert!(close(ttft.mean, 0.2));
    assert_eq!(ttft.samples, 3);
    let tpot = s.distribution(Figure::Tpot).copied().expect("tpot");
    assert!(close(tpot.p99, 0.1), "{tpot:?}");
    let e2e = s.distribution(Figure::E2e).copied().expect("e2e");
    assert!(close(e2e.max, 3.3));
    assert_eq!(s.errors_by_kind.get(&ErrorKind::RateLimited), Some(&2));
    assert_eq!(s.errors_by_kind.get(&ErrorKind::IdleTimeout), Some(&1));
    assert_eq!(s.errors_by_kind.len(), 2);
    // Only requests 0 and 1 report cached tokens: 50 / 200.
    assert!(close(s.cached_token_ratio.expect("ratio"), 0.25));
    assert_eq!(
        s.output_token_sources.get(&OutputTokenSource::Usage),
        Some(&3)
    );
    // Goodput: request 0 (ttft 100, e2e 1100) and 1 (200, 700) meet it; 2 misses both.
    let g = s.goodput.expect("goodput");
    assert_eq!(g.requests, 2);
    assert!(close(g.fraction, 2.0 / 6.0));
    assert!(close(g.request_rate, 2.0 / 6.3));

    // A TPOT objective of 50 ms fails everyone.
    let slo = slo_of(serde_json::json!({"tpot": {"max": "50ms"}}));
    let s = summarize(&records, PercentileMethod::Linear, Some(&slo));
    assert_eq!(s.goodput.expect("goodput").requests, 0);
    assert_eq!(
        summarize(&records, PercentileMethod::Linear, None).goodput,
        None
    );
}

#[test]
fn the_old_and_new_slo_spellings_give_the_same_goodput() {
    // TTFT 40–430 ms, e2e 0.3–2.25 s, one to seven output tokens, a failure every tenth.
    let records: Vec<RequestRecord> = (0..40u64)
        .map(|i| {
            let (ttft, e2e) = (40.0 + 10.0 * i as f64, 300.0 + 50.0 * i as f64);
            match i % 10 {
                9 => failed(i, i as f64 * 20.0, e2e, ErrorKind::HttpStatus),
                _ => record(i, i as f64 * 20.0, ttft, e2e, 1 + i % 7),
            }
        })
        .collect();
    let old = slo_of(serde_json::json!({"ttft": "300ms", "tpot": "200ms", "e2e": "1.6s"}));
    let new = slo_of(serde_json::json!({
        "ttft": {"max": "300ms"}, "tpot": {"max": "200ms"}, "e2e": {"max": "1.6s"},
    }));
    let goodput = |slo: &Slo| {
        let s = summarize(&records, PercentileMethod::Linear, Some(slo));
        s.goodput.expect("goodput")
    };
    assert_eq!(goodput(&old), goodput(&new));
    // The definition, written out: succeeded, TTFT and e2e within, TPOT within or absent.
    let within = records
        .iter()
        .filter(|r| r.is_ok() && r.ttft_ms.unwrap() <= 300.0 && r.e2e_ms <= 1600.0)
        .filter(|r| r.tpot_ms.is_none_or(|t| t <= 200.0))
        .count() as u64;
    assert!(0 < within && within < 36, "{within}: the limits must cut");
    assert_eq!(goodput(&new).requests, within);
    // A request is held to each figure's loosest limit: a tighter p50 beside the same p99
    // changes nothing.
    let percentiles = slo_of(serde_json::json!({
        "ttft": {"p50": "100ms", "p99": "300ms"}, "tpot": {"p95": "200ms"}, "e2e": {"max": "1.6s"},
    }));
    assert_eq!(goodput(&percentiles), goodput(&new));
}

#[test]
fn summary_of_nothing_is_empty_not_nan() {
    let s = summarize(&[], PercentileMethod::NearestRank, None);
    assert_eq!(s.requests, 0);
    assert_eq!(s.elapsed, 0.0);
    assert_eq!(s.request_rate, 0.0);
    assert_eq!(s.distribution(Figure::Ttft), None);
    assert_eq!(s.cached_token_ratio, None);
}

#[test]
fn percentile_methods_differ_as_documented() {
    let x: Vec<f64> = (1..=20).map(f64::from).collect();
    // nearest rank: x[ceil(0.95·20) − 1] = x[18] = 19; linear: index 18.05 → 19.05.
    assert_eq!(percentile(&x, 0.95, PercentileMethod::NearestRank), 19.0);
    assert!(close(percentile(&x, 0.95, PercentileMethod::Linear), 19.05));
    assert_eq!(distribution(&[], PercentileMethod::Linear), None);
    assert_eq!(
        distribution(&[f64::NAN, 2.0], PercentileMethod::Linear).map(|d| d.samples),
        Some(1)
    );
}
