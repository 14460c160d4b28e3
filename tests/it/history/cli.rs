//! The `history` command and recording after `run`: where the store is by default, turning
//! it off, a store that cannot be used (a warning, never a lost report), and the outputs.

use std::path::Path;

use super::support::{list_runs, rich_sample, servebench, write_report};

const PLAN: &str = "\
version: 1
name: tiny
targets:
  sim: {simulator: {decode_ms_per_token: 1}}
workloads:
  chat: {input_tokens: 32, output_tokens: 8}
defaults: {target: sim, workload: chat}
phases:
  - {name: c1, concurrency: 1, requests: 5}
";

fn run_tiny(dir: &Path, out: &str, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let plan = dir.join("tiny.yaml");
    std::fs::write(&plan, PLAN).unwrap();
    let mut cmd = servebench();
    cmd.current_dir(dir)
        .args([
            "run",
            "--quiet",
            "--no-calibrate",
            "--no-latency-hint",
            "--out",
            out,
        ])
        .args(extra)
        .arg(&plan);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn a_run_records_beside_its_directory_unless_told_otherwise() {
    let _guard = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    let out = run_tiny(dir.path(), "runs/first", &[], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `-q` keeps the success line off stderr; the store shows the run.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("history: recorded"), "{stderr}");
    let default = dir.path().join("runs/history.sqlite");
    let runs = list_runs(default.to_str().unwrap(), &[]);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["complete"], true);

    // --no-history: nothing more.
    let out = run_tiny(dir.path(), "runs/second", &["--no-history"], &[]);
    assert!(out.status.success());
    assert_eq!(list_runs(default.to_str().unwrap(), &[]).len(), 1);

    // A run written elsewhere is recorded into the same store, which `history list` reads
    // from the same directory without being told where.
    let out = run_tiny(dir.path(), "elsewhere/x", &[], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.path().join("elsewhere/history.sqlite").exists());
    let listed = servebench()
        .current_dir(dir.path())
        .args(["history", "list", "--format", "json"])
        .output()
        .unwrap();
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");

    // The environment names another store; --history wins over it.
    let env_store = dir.path().join("env.sqlite");
    let out = run_tiny(
        dir.path(),
        "runs/third",
        &[],
        &[("SERVEBENCH_HISTORY", env_store.to_str().unwrap())],
    );
    assert!(out.status.success());
    assert_eq!(list_runs(env_store.to_str().unwrap(), &[]).len(), 1);
    let flag_store = dir.path().join("flag.sqlite");
    let out = run_tiny(
        dir.path(),
        "runs/fourth",
        &["--history", flag_store.to_str().unwrap()],
        &[("SERVEBENCH_HISTORY", env_store.to_str().unwrap())],
    );
    assert!(out.status.success());
    assert_eq!(list_runs(flag_store.to_str().unwrap(), &[]).len(), 1);
    assert_eq!(list_runs(env_store.to_str().unwrap(), &[]).len(), 1);

    // Each stored phase names the work it was asked (the same for every run of the plan)
    // and the run its provenance as compare reads it.
    let shown = |store: &Path| {
        let id = list_runs(store.to_str().unwrap(), &[])[0]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let out = servebench()
            .args(["history", "--history", store.to_str().unwrap()])
            .args(["show", &id, "--format", "json"])
            .output()
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (first, third) = (shown(&default), shown(&env_store));
    let work = &first["phases"][0]["work_sha256"];
    assert!(work.as_str().is_some_and(|w| w.len() == 64), "{first}");
    assert_eq!(work, &third["phases"][0]["work_sha256"]);
    assert!(
        first["summary"]["provenance"]["servebench version"].is_string(),
        "{}",
        first["summary"]["provenance"]
    );
}

#[test]
fn a_store_that_cannot_be_used_is_a_warning_and_the_report_stays() {
    let _guard = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("broken.sqlite");
    std::fs::write(
        &garbage,
        b"this is not a database, and it is long enough to matter....",
    )
    .unwrap();
    let out = run_tiny(
        dir.path(),
        "runs/a",
        &["--history", garbage.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "the run's own exit code");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the run was not recorded"),
        "{stderr}"
    );
    assert!(dir.path().join("runs/a/report.json").exists());
    assert_eq!(
        std::fs::read(&garbage).unwrap(),
        b"this is not a database, and it is long enough to matter...."
    );
}

#[test]
fn show_series_exclude_and_retain_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let store_arg = store.to_str().unwrap();
    let mut doc = rich_sample();
    let mut reports = Vec::new();
    for day in 1..=3 {
        doc["started_at"] = format!("2026-12-0{day}T10:00:00Z").into();
        reports.push(write_report(
            dir.path(),
            &format!("r{day}"),
            &doc,
            &format!("r{day}"),
        ));
    }
    let out = servebench()
        .args(["history", "record", "--history", store_arg])
        .args(&reports)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "r1\nr2\nr3\n");

    let history = |args: &[&str]| {
        servebench()
            .args(["history", "--history", store_arg])
            .args(args)
            .output()
            .unwrap()
    };
    let show = history(&["show", "r2"]);
    let json_of_r2: serde_json::Value =
        serde_json::from_slice(&history(&["show", "r2", "--format", "json"]).stdout).unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("# Run r2") && text.contains("| gateway-c4 |"),
        "{text}"
    );
    assert!(
        text.contains("client\\_bound") && text.contains("HTTP 503"),
        "{text}"
    );
    // Every time in one format; each figure in its unit, as report.md writes it.
    assert!(
        text.contains("- Started: 2026-12-02T10:00:00.000Z\n")
            && text.contains("- Finished: 2026-11-30T10:07:30.000Z\n"),
        "{text}"
    );
    show_columns_have_units(&text, &json_of_r2);
    let json: serde_json::Value =
        serde_json::from_slice(&history(&["show", "r2", "--format", "json"]).stdout).unwrap();
    assert_eq!(json["summary"]["id"], "r2");
    assert!(
        json["summary"]["provenance"]["host os"]
            .as_str()
            .is_some_and(|os| os.starts_with("linux")),
        "{}",
        json["summary"]["provenance"]
    );
    assert_eq!(json["phases"].as_array().unwrap().len(), 6);
    assert_eq!(history(&["show", "nope"]).status.code(), Some(2));

    assert!(
        history(&["exclude", "r2", "--reason", "noisy neighbour"])
            .status
            .success()
    );
    // A tag names one run of the plan: tagging another moves it.
    assert!(history(&["tag", "r1", "v1"]).status.success());
    assert!(history(&["tag", "r3", "v1"]).status.success());
    assert_eq!(history(&["tag", "nope", "v1"]).status.code(), Some(2));
    let tags: Vec<serde_json::Value> = list_runs(store_arg, &[])
        .iter()
        .map(|r| r["tags"].clone())
        .collect();
    assert_eq!(
        tags,
        [
            serde_json::json!([]),
            serde_json::json!([]),
            serde_json::json!(["v1"])
        ]
    );
    let series = |format: &str| {
        history(&[
            "series",
            "--plan",
            "gateway-demo",
            "--phase",
            "direct-c1",
            "--target",
            "direct",
            "--figure",
            "e2e.p99",
            "--format",
            format,
        ])
    };
    let md = String::from_utf8_lossy(&series("md").stdout).into_owned();
    assert!(md.contains("excluded: noisy neighbour"), "{md}");
    let csv_out = series("csv").stdout;
    let mut reader = csv::Reader::from_reader(csv_out.as_slice());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 3);
    let value: f64 = rows[0][2].parse().unwrap();
    assert_eq!(
        value,
        doc["phases"][0]["e2e"]["p99"].as_f64().unwrap(),
        "bit for bit"
    );
    // Every format says the unit: CSV and JSON the stored one, markdown as reports print it.
    assert_eq!(&rows[0][3], "s");
    assert!(md.contains("| Value (ms) | 95% interval (ms) |"), "{md}");
    let first: f64 = md
        .lines()
        .find(|l| l.starts_with("| r1 |"))
        .and_then(|l| l.split(" | ").nth(2))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!((first - value * 1000.0).abs() <= value * 10.0, "{md}");
    let json: serde_json::Value = serde_json::from_slice(&series("json").stdout).unwrap();
    assert_eq!(json["points"][1]["excluded"], "noisy neighbour");
    assert_eq!(json["unit"], "s");
    let bad = history(&[
        "series", "--plan", "p", "--phase", "x", "--target", "t", "--figure", "ttft",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    // A misspelt phase or target is an error with a did-you-mean, not an empty table.
    for (flag, typo, hint) in [
        ("--phase", "direct-c2", "did you mean `direct-c1`?"),
        ("--target", "drect", "did you mean `direct`?"),
    ] {
        let mut args = vec![
            "series",
            "--plan",
            "gateway-demo",
            "--phase",
            "direct-c1",
            "--target",
            "direct",
            "--figure",
            "e2e.p99",
        ];
        let at = args.iter().position(|a| *a == flag).unwrap() + 1;
        args[at] = typo;
        let out = history(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(hint), "{stderr}");
        assert!(out.stdout.is_empty());
    }

    let out_file = dir.path().join("list.json");
    assert!(
        history(&["list", "--format", "json", "-o", out_file.to_str().unwrap()])
            .status
            .success()
    );
    let listed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 3);

    let retained = history(&["retain", "--keep-last", "1"]);
    assert_eq!(String::from_utf8_lossy(&retained.stdout), "r1\nr2\n");
    assert_eq!(list_runs(store_arg, &[]).len(), 1);

    let export_dir = dir.path().join("export");
    let out = history(&["export", export_dir.to_str().unwrap()]);
    assert!(out.status.success());
    for table in ["runs", "phases", "figures", "errors", "alerts"] {
        let file = std::fs::File::open(export_dir.join(format!("{table}.parquet"))).unwrap();
        let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
        use parquet::file::reader::FileReader as _;
        let rows = reader.metadata().file_metadata().num_rows();
        let want = match table {
            "runs" => 1,
            "phases" => 6,
            "errors" => 2,
            "alerts" => 0,
            _ => rows.max(1),
        };
        assert_eq!(rows, want, "{table}");
    }
}

/// `history show`'s phase table: one unit per column, named in its heading, TPOT beside
/// TTFT and E2E, and the stored value (in JSON with its unit) converted to it.
fn show_columns_have_units(text: &str, json_of_r2: &serde_json::Value) {
    let head = text.lines().find(|l| l.starts_with("| Phase |")).unwrap();
    assert!(
        head.ends_with(
            "| ttft.p50 (ms) | ttft.p99 (ms) | tpot.p50 (ms) | e2e.p99 (ms) | \
             output\\_tokens\\_per\\_second (tok/s) | error\\_rate (%) |"
        ),
        "{head}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("| gateway-c4 |"))
        .unwrap();
    let cells: Vec<&str> = row.trim_matches(['|', ' ']).split(" | ").collect();
    assert_eq!(cells.len(), 12, "{row}");
    for cell in &cells[6..] {
        assert!(
            cell.parse::<f64>().is_ok(),
            "a bare number under its unit: {row}"
        );
    }
    let ttft_p50: f64 = cells[6].parse().unwrap();
    let stored = json_of_r2["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "gateway-c4")
        .and_then(|p| p["figures"].as_array())
        .and_then(|f| f.iter().find(|f| f["figure"] == "ttft.p50"))
        .unwrap()
        .clone();
    assert_eq!(stored["unit"], "s");
    let seconds = stored["value"].as_f64().unwrap();
    assert!(
        (ttft_p50 - seconds * 1000.0).abs() <= seconds * 1000.0 * 0.01,
        "{ttft_p50} ms for {seconds} s"
    );
}
