//! The run's records: closed Parquet parts holding every request, read back field by field;
//! a journal that holds only what no closed part holds yet; and a run killed with SIGKILL
//! rebuilt by `servebench recover` from its parts and journal.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use servebench::client::RequestRecord;
use servebench::report::Report;
use servebench::report::formats::records::{Manifest, RecordRow, Window, sha256_file};
use servebench::runner::run;

const PLAN: &str = "version: 1\nname: t\nseed: 3\ntargets:\n  sim:\n    simulator: {max_running: 256, prefill_tok_s: 1000000, decode_ms_per_token: 1, decode_ms_per_running: 0, faults: [{kind: status, status: 503, probability: 0.1}]}\nworkloads:\n  w:\n    input_tokens: 64\n    output_tokens: 8\n    ignore_eos: true\ndefaults: {target: sim, workload: w}\nphases:\n";

fn write_plan(dir: &Path, phases: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, format!("{PLAN}{phases}")).unwrap();
    path
}

/// The journal files that hold records no closed part holds, in order: the segments kept
/// for parts not yet closed (`journal-000007.jsonl`), then the open `journal.jsonl`.
fn journal_tail(dir: &Path) -> Vec<PathBuf> {
    let closed = Manifest::read(&dir.join("requests")).unwrap().parts.len();
    let mut segments: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            let part = name.strip_prefix("journal-")?.strip_suffix(".jsonl")?;
            Some((part.parse().ok()?, path))
        })
        .filter(|(part, _)| *part >= closed)
        .collect();
    segments.sort();
    let mut files: Vec<PathBuf> = segments.into_iter().map(|(_, path)| path).collect();
    files.push(dir.join("journal.jsonl"));
    files
}

/// Every complete record line of the journal files that no closed part holds, as rows
/// (shard left empty).
fn journal_rows(dir: &Path) -> Vec<RecordRow> {
    let text: String = journal_tail(dir)
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect();
    text.split_inclusive('\n')
        .filter(|line| line.ends_with('\n'))
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|value| value.get("request_index").is_some())
        .map(|value| {
            let window = match value["window"].as_str().unwrap() {
                "warmup" => Window::Warmup,
                _ => Window::Measured,
            };
            RecordRow {
                phase: value["phase"].as_str().unwrap().to_string(),
                window,
                shard: None,
                record: serde_json::from_value(value).unwrap(),
            }
        })
        .collect()
}

/// Every row of the parts the manifest lists.
fn parquet_rows(dir: &Path) -> Vec<RecordRow> {
    crate::common::record_rows(dir)
}

/// Each part the manifest lists exists, holds the rows and hash it says; their row counts.
fn checked_parts(dir: &Path) -> Vec<u64> {
    let parts_dir = dir.join("requests");
    let manifest = Manifest::read(&parts_dir).unwrap();
    for (index, part) in manifest.parts.iter().enumerate() {
        assert_eq!(part.file, format!("part-{index:06}.parquet"));
        let path = parts_dir.join(&part.file);
        assert_eq!(sha256_file(&path).unwrap(), part.sha256, "{}", part.file);
        let rows = servebench::report::formats::records::read_records(&path)
            .unwrap()
            .count();
        assert_eq!(rows as u64, part.rows, "{}", part.file);
    }
    manifest.parts.iter().map(|p| p.rows).collect()
}

fn report(dir: &Path) -> Report {
    let text = std::fs::read_to_string(dir.join("report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn by_index(mut records: Vec<RequestRecord>) -> Vec<RequestRecord> {
    records.sort_by_key(|r| r.request_index);
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parquet_holds_every_request_field_by_field() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        "  - {name: first, concurrency: 4, requests: 60, warmup: {requests: 6}}\n  - {name: second, concurrency: 2, requests: 30}\n",
    );
    let out = dir.path().join("out");
    let mut options = crate::common::quiet_run_options(plan, &out);
    options.long_run.part_rows = 25;
    run(options).await.unwrap();

    let rows = parquet_rows(&out);
    assert_eq!(rows.len(), 96, "warmup and measured requests, one row each");
    assert_eq!(
        checked_parts(&out),
        [25, 25, 25, 21],
        "a part every 25 rows"
    );
    assert!(
        journal_rows(&out).is_empty(),
        "every record is in a closed part: the journal keeps none"
    );
    let journal = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    for phase in ["first", "second"] {
        assert!(
            journal.contains(&format!(r#""phase":"{phase}""#)),
            "the journal keeps each phase's facts: {journal}"
        );
    }
    assert!(
        rows.iter().any(|r| r.record.error.is_some()),
        "errors are kept"
    );
    let report = report(&out);
    for phase in &report.phases {
        let measured: Vec<RequestRecord> = rows
            .iter()
            .filter(|r| r.phase == phase.header.phase && r.window == Window::Measured)
            .map(|r| r.record.clone())
            .collect();
        assert_eq!(by_index(measured), by_index(phase.request_timings.clone()));
    }
    assert_no_leftovers(&out);
    csv_matches_parquet(&out.join("requests/part-000000.parquet"), &report, &rows);

    // A report.json holding a sample of each phase's records: compare still bootstraps
    // every request, read from the parts.
    compare_reads_every_record(&out, report, &rows);
}

/// No part still being written and no journal of an unfinished window is left behind.
fn assert_no_leftovers(out: &Path) {
    let leftovers: Vec<_> = crate::common::files_under(out)
        .into_iter()
        .map(|(path, _)| path)
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".partial") || name.starts_with("journal-")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `compare` of a report.json that keeps 5 records a phase counts every measured request of
/// the parts (`rows`): latencies the successful ones, rates every one.
fn compare_reads_every_record(out: &Path, mut sampled: Report, rows: &[RecordRow]) {
    for phase in &mut sampled.phases {
        phase.request_timings.truncate(5);
    }
    let path = out.join("report.json");
    std::fs::write(&path, serde_json::to_string(&sampled).unwrap()).unwrap();
    let compared = std::process::Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["compare", "--format", "json"])
        .args([&path, &path])
        .output()
        .unwrap();
    assert!(compared.status.success());
    let comparison: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
    let samples: Vec<&serde_json::Value> = comparison["phases"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m.get("samples").filter(|s| !s.is_null()))
        .collect();
    // Latencies count the successful requests, rates every one.
    let ok = rows
        .iter()
        .filter(|r| r.phase == "first" && r.window == Window::Measured && r.record.is_ok())
        .count();
    assert!(samples.iter().any(|s| s[0] == ok && s[1] == ok));
    assert!(
        samples
            .iter()
            .all(|s| s[0] == s[1] && (s[0] == ok || s[0] == 60)),
        "every measured request of `first`: {samples:?}"
    );
}

/// The per-request CSV has the Parquet file's columns, in its order, with the same values.
fn csv_matches_parquet(parquet: &Path, report: &Report, rows: &[RecordRow]) {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let file = std::fs::File::open(parquet).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let parquet_columns: Vec<String> = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let text = servebench::report::formats::csv::render_requests(report);
    let mut csv = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = csv.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(header, parquet_columns);
    for needed in [
        "connect_ms",
        "tls_ms",
        "server_prompt_ms",
        "sent_request_id",
    ] {
        assert!(header.iter().any(|h| h == needed), "{needed}");
    }
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let csv_rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    let measured: Vec<&RecordRow> = rows
        .iter()
        .filter(|r| r.window == Window::Measured)
        .collect();
    assert_eq!(csv_rows.len(), measured.len());
    for row in &csv_rows {
        let id = &row[col("request_id")];
        let record = &measured
            .iter()
            .find(|r| r.record.request_id == id)
            .expect("every CSV row is a Parquet row")
            .record;
        assert_eq!(row[col("e2e_ms")].parse::<f64>().unwrap(), record.e2e_ms);
        assert_eq!(&row[col("sent_request_id")], record.sent_id());
        let connect = record.connect_ms.map(|v| v.to_string()).unwrap_or_default();
        assert_eq!(&row[col("connect_ms")], connect.as_str());
    }
}

/// Record lines in every journal file now (segments first, then the open file, so a
/// rotation between reads can only hide lines, never count them twice).
fn journal_record_lines(dir: &Path) -> usize {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name.starts_with("journal-") && name.ends_with(".jsonl")
    });
    files.sort();
    files.push(dir.join("journal.jsonl"));
    files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .matches("\"request_index\"")
                .count()
        })
        .sum()
}

const PART_ROWS: usize = 50;

#[test]
fn sigkill_mid_phase_then_recover_rebuilds_the_report_and_the_parquet() {
    let _exclusive = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        "  - {name: first, concurrency: 4, requests: 40}\n  - {name: long, concurrency: 4, duration: 120s, warmup: {requests: 8}}\n",
    );
    let out = dir.path().join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["run", "--quiet", "--no-calibrate", "--part-rows"])
        .arg(PART_ROWS.to_string())
        .arg("--output")
        .arg(&out)
        .arg(&plan)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    kill_after_eight_parts(child, &out);

    // What the killed run left: its closed parts, then the journal's tail.
    let closed = parquet_rows(&out);
    assert!(
        checked_parts(&out)
            .iter()
            .all(|&rows| rows == PART_ROWS as u64)
    );
    let mut left = closed.clone();
    left.extend(journal_rows(&out));

    let recovered = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .arg("recover")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&recovered.stdout);
    assert!(
        recovered.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&recovered.stderr)
    );
    assert_eq!(
        parquet_rows(&out),
        left,
        "the parts and the journal's rows, exactly"
    );
    checked_parts(&out);
    assert!(
        journal_rows(&out).is_empty(),
        "every record is in a part now"
    );

    let report = assert_partial_report(&out, &left, &stdout);

    // Recovering again adds nothing twice; a rebuilt phase past `--keep-records` keeps a
    // sample and the same figures, over every record.
    recover_again_keeping_a_sample(&out, &report, &left);
}

/// The recovered report: partial, its first phase whole, and the killed phase's records
/// exactly the measured ones of `left`, the parts and the journal's tail.
fn assert_partial_report(out: &Path, left: &[RecordRow], stdout: &str) -> Report {
    let long_measured: Vec<RequestRecord> = left
        .iter()
        .filter(|r| r.phase == "long" && r.window == Window::Measured)
        .map(|r| r.record.clone())
        .collect();
    let report = report(out);
    assert!(report.span.partial);
    let names: Vec<&str> = report
        .phases
        .iter()
        .map(|p| p.header.phase.as_str())
        .collect();
    assert_eq!(names, ["first", "long"]);
    assert_eq!(report.phases[0].request_timings.len(), 40);
    assert!(!report.phases[0].partial);
    let long = &report.phases[1];
    assert!(long.partial);
    assert_eq!(long.summary.requests as usize, long_measured.len());
    assert_eq!(
        by_index(long.request_timings.clone()),
        by_index(long_measured)
    );
    assert_eq!(long.warmup.requests, 8);
    assert!(stdout.contains(&format!("phase `long`: {} measured", long.summary.requests)));
    assert!(out.join("report.md").exists() && out.join("report.html").exists());
    report
}

/// Kills the run (SIGKILL: nothing runs after it) once eight parts are closed, polling
/// (bounded) with the journal's size sampled throughout: it holds at most the open part's
/// rows, those in flight to the writer (at most a part's) and the one being appended: never
/// more than two parts' worth and two.
fn kill_after_eight_parts(mut child: std::process::Child, out: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut most_lines = 0;
    while Manifest::read(&out.join("requests")).map_or(0, |m| m.parts.len()) < 8 {
        assert!(Instant::now() < deadline, "the long phase never got going");
        most_lines = most_lines.max(journal_record_lines(out));
        assert!(
            most_lines <= 2 * PART_ROWS + 2,
            "the journal held {most_lines} records"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(journal_record_lines(out) <= 2 * PART_ROWS + 2);
}

/// A second `recover` with `--keep-records 50`, of the report with its last phase dropped:
/// the parts keep exactly `left`, and the rebuilt phase a sample with `report`'s figures.
fn recover_again_keeping_a_sample(out: &Path, report: &Report, left: &[RecordRow]) {
    let long = &report.phases[1];
    let mut killed = report.clone();
    killed.phases.truncate(1);
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string(&killed).unwrap(),
    )
    .unwrap();
    let again = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["recover", "--keep-records", "50"])
        .arg(out)
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(parquet_rows(out), left);
    let sampled = self::report(out);
    let rebuilt = &sampled.phases[1];
    assert_eq!(rebuilt.request_timings.len(), 50);
    let kept = rebuilt.records.as_ref().expect("a sampled phase says so");
    assert_eq!((kept.kept, kept.total), (50, long.summary.requests));
    // Percentiles, counts and intervals are equal; a tallied mean may differ in its last
    // bit (another summation order), so numbers are compared to 12 significant digits.
    assert_eq!(
        to_12_digits(serde_json::to_value(&rebuilt.summary).unwrap()),
        to_12_digits(serde_json::to_value(&long.summary).unwrap())
    );
}

fn to_12_digits(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Number(n) => Value::String(format!("{:.11e}", n.as_f64().unwrap())),
        Value::Array(items) => Value::Array(items.into_iter().map(to_12_digits).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, to_12_digits(v))).collect())
        }
        other => other,
    }
}

#[test]
fn recover_skips_a_torn_line_and_lines_that_are_not_records() {
    // Also an older run's directory: one journal with every record, and no parts.
    let _exclusive = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        "  - {name: only, concurrency: 2, requests: 12}\n",
    );
    let out = dir.path().join("out");
    let ran = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["run", "--quiet", "--no-calibrate", "--output"])
        .arg(&out)
        .arg(&plan)
        .output()
        .unwrap();
    assert!(ran.status.success());
    // A finished run's report, as if killed before its only phase was written: phases gone.
    let mut early = report(&out);
    early.phases.clear();
    early.span.finished_at = None;
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string(&early).unwrap(),
    )
    .unwrap();
    let whole_journal: String = crate::common::records_and_journal(&out)
        .iter()
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(out.join("journal.jsonl"), whole_journal).unwrap();
    std::fs::remove_dir_all(out.join("requests")).unwrap();
    let mut journal = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    journal.insert_str(0, "{\"summary\":{\"phase\":\"only\",\"requests\":3}}\n");
    journal.push_str("{\"phase\":\"only\",\"window\":\"measured\",\"request_in");
    let torn_line = journal.lines().count();
    std::fs::write(out.join("journal.jsonl"), journal).unwrap();

    let recovered = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .arg("recover")
        .arg(&out)
        .output()
        .unwrap();
    assert!(recovered.status.success());
    let stderr = String::from_utf8_lossy(&recovered.stderr);
    assert!(
        stderr.contains(&format!("line {torn_line}: torn by the kill")),
        "{stderr}"
    );
    assert_eq!(
        stderr.lines().count(),
        1,
        "the summary line is skipped silently: {stderr}"
    );
    let report = report(&out);
    assert_eq!(report.phases[0].summary.requests, 12);
    assert_eq!(parquet_rows(&out).len(), 12);
    assert_eq!(
        checked_parts(&out),
        [12],
        "the journal's records make one part"
    );

    std::fs::remove_file(out.join("journal.jsonl")).unwrap();
    std::fs::remove_dir_all(out.join("requests")).unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .arg("recover")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("(no journal.jsonl)"));
}

/// DuckDB reads every row back with the same values (skips locally with one line until
/// tests/real/setup.sh has installed it; runs under CI).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duckdb_reads_every_row_with_the_same_values() {
    let Some(engines) = crate::real_support::RealEngines::find("DuckDB") else {
        return;
    };
    let has_duckdb = Command::new(&engines.python)
        .args(["-c", "import duckdb"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_duckdb {
        let message = "skipped: DuckDB is not installed; run tests/real/setup.sh";
        assert!(std::env::var_os("CI").is_none(), "{message} (CI is set)");
        println!("{message}");
        return;
    }
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        "  - {name: only, concurrency: 4, requests: 40, warmup: {requests: 4}}\n",
    );
    let out = dir.path().join("out");
    run(crate::common::quiet_run_options(plan, &out))
        .await
        .unwrap();
    let script = r#"
import duckdb, json, sys
rows = duckdb.execute(
    'select request_id, phase, "window", shard, e2e_ms, ttft_ms, output_tokens, '
    'error_kind, error_status, new_connection from read_parquet(?) order by request_id, "window"',
    [sys.argv[1]],
).fetchall()
print(json.dumps(rows))
"#;
    let read = Command::new(&engines.python)
        .args(["-c", script])
        .arg(out.join("requests/part-000000.parquet"))
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let from_duckdb: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    let mut rows = parquet_rows(&out);
    rows.sort_by(|a, b| a.record.request_id.cmp(&b.record.request_id));
    let expected: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let e = r.record.error.as_ref();
            serde_json::json!([
                r.record.request_id,
                r.phase,
                r.window.as_str(),
                r.shard,
                r.record.e2e_ms,
                r.record.ttft_ms,
                r.record.output_tokens,
                e.map(|e| serde_json::to_value(e.kind).unwrap()),
                e.and_then(|e| e.status),
                r.record.new_connection,
            ])
        })
        .collect();
    assert_eq!(expected.len(), 44);
    assert_eq!(from_duckdb, serde_json::Value::Array(expected));
}
