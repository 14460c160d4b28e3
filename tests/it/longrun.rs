//! Long runs in bounded memory, end to end against the simulator: a phase longer than the
//! kept records holds a sample, its figures still cover every request (checked against the
//! journal), and rolling summary lines go to the journal.

use std::path::{Path, PathBuf};
use std::time::Duration;

use servebench::client::RequestRecord;
use servebench::figure::Figure;
use servebench::plan::PercentileMethod;
use servebench::report::Report;
use servebench::runner::{LongRunOptions, RunOptions, run};

fn options(dir: &Path, phases: &str, long_run: LongRunOptions) -> RunOptions {
    let plan = dir.join("plan.yaml");
    let yaml = format!(
        "version: 1\nname: long\nseed: 5\ntargets:\n  sim:\n    simulator: {{max_running: 64, prefill_tok_s: 1000000, decode_ms_per_token: 0, decode_ms_per_running: 0, jitter: 0.5}}\nworkloads:\n  w:\n    input_tokens: 64\n    output_tokens: 4\n    ignore_eos: true\ndefaults: {{target: sim, workload: w}}\nphases:\n{phases}"
    );
    std::fs::write(&plan, yaml).unwrap();
    RunOptions {
        long_run,
        ..crate::common::quiet_run_options(plan, &dir.join("out"))
    }
}

fn read_report(out: &Path) -> (serde_json::Value, Report) {
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    (value.clone(), serde_json::from_value(value).unwrap())
}

fn journal(out: &Path) -> Vec<serde_json::Value> {
    crate::common::records_and_journal(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phase_past_the_bound_keeps_a_sample_and_exact_figures() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let long_run = LongRunOptions {
        keep_records: 50,
        ..LongRunOptions::default()
    };
    let phases = "  - {name: many, concurrency: 8, requests: 1500, warmup: {requests: 80}}\n  - {name: few, concurrency: 2, requests: 30}\n";
    run(options(dir.path(), phases, long_run)).await.unwrap();
    let out = dir.path().join("out");
    let (value, report) = read_report(&out);
    crate::common::assert_valid_report(&value);

    let many = &report.phases[0];
    assert_eq!(many.request_timings.len(), 50);
    assert_eq!(many.summary.requests, 1500);
    let kept = many.records.as_ref().expect("a sampled phase says so");
    assert_eq!((kept.kept, kept.total), (50, 1500));
    assert!(
        many.request_timings
            .windows(2)
            .all(|w| w[0].request_index < w[1].request_index)
    );
    // The warmup, past the bound too, is still counted in full.
    assert_eq!(many.warmup.requests, 80);

    // Every figure equals the one computed from all the phase's records in the journal.
    let records: Vec<RequestRecord> = journal(&out)
        .into_iter()
        .filter(|l| l["phase"] == "many" && l["window"] == "measured")
        .map(|l| serde_json::from_value(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1500);
    let full = servebench::metrics::summarize(&records, PercentileMethod::Linear, None);
    for (got, want) in [Figure::Ttft, Figure::E2e, Figure::OutputTokens].map(|f| {
        (
            many.summary.distribution(f).copied(),
            full.distribution(f).copied(),
        )
    }) {
        let (got, want) = (got.unwrap(), want.unwrap());
        for (a, b) in [
            (got.p50, want.p50),
            (got.p95, want.p95),
            (got.p99, want.p99),
            (got.min, want.min),
            (got.max, want.max),
        ] {
            assert_eq!(a.to_bits(), b.to_bits());
        }
        assert_eq!(got.ci95, want.ci95);
        assert!((got.mean - want.mean).abs() <= 1e-12 * want.mean.abs());
    }
    assert_eq!(many.summary.total_output_tokens, full.total_output_tokens);
    assert_eq!(many.summary.elapsed, full.elapsed);

    // A small phase is unchanged: every record, no note.
    let few = &report.phases[1];
    assert_eq!(few.request_timings.len(), 30);
    assert!(few.records.is_none() && value["phases"][1].get("records").is_none());

    // The column files are gone; the markdown says the records are a sample.
    let hidden: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains("sampled 50 of 1500"), "{markdown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_summaries_go_to_the_journal() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let long_run = LongRunOptions {
        summary_every: Duration::from_millis(200),
        ..LongRunOptions::default()
    };
    let phases = "  - {name: soak, rate: {rps: 40, arrival: constant}, duration: 2s}\n";
    run(options(dir.path(), phases, long_run)).await.unwrap();
    let out = dir.path().join("out");
    let lines = journal(&out);
    let summaries: Vec<&serde_json::Value> =
        lines.iter().filter_map(|l| l.get("summary")).collect();
    assert!(summaries.len() >= 2, "{} summaries", summaries.len());
    let records = lines.iter().filter(|l| l.get("request_index").is_some());
    let facts = lines.iter().filter(|l| l.get("phase_facts").is_some());
    assert_eq!(
        records.count() + summaries.len() + facts.count(),
        lines.len()
    );
    let mut last_total = 0;
    for s in &summaries {
        assert_eq!(s["phase"], "soak");
        assert_eq!(s["window"], "measured");
        let total = s["requests_total"].as_u64().unwrap();
        assert!(total >= last_total);
        last_total = total;
        assert!(s["remaining_s"].as_f64().unwrap() <= 2.0);
        assert_eq!(s["errors"], 0);
        assert!(s["error_rate"].as_f64().is_some());
    }
    assert!(last_total > 0);
    // The report still holds every record and nothing of the summaries.
    let (_, report) = read_report(&out);
    assert_eq!(
        report.phases[0].request_timings.len() as u64,
        report.phases[0].summary.requests
    );
}
