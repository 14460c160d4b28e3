//! Writing the seeds' formats: anvil documents per phase and seed 004's gateway layout, round
//! trips on the seeds, and a real run written as anvil and read back.

use serde_json::Value;
use servebench::figure::Figure;

use super::*;

const SEED_002: &str = "tests/fixtures/seeds/002_7f8743b500e818d3.txt";
const ANVIL_SCHEMA: &str = "tests/fixtures/anvil.schema.json";

/// Equal in every field, numbers to 1e-9 (relative above 1); `order` also checks that every
/// object lists its keys in the same order.
fn assert_same(expected: &Value, actual: &Value, path: &str, order: bool) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let ek: Vec<&String> = e.keys().collect();
            let ak: Vec<&String> = a.keys().collect();
            if order {
                assert_eq!(ek, ak, "keys of {path}");
            } else {
                let (mut es, mut as_) = (ek.clone(), ak.clone());
                es.sort();
                as_.sort();
                assert_eq!(es, as_, "keys of {path}");
            }
            for (k, v) in e {
                assert_same(v, &a[k], &format!("{path}/{k}"), order);
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            assert_eq!(e.len(), a.len(), "length of {path}");
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                assert_same(x, y, &format!("{path}[{i}]"), order);
            }
        }
        (Value::Number(e), Value::Number(a)) => {
            let (x, y) = (e.as_f64().unwrap(), a.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-9 * x.abs().max(1.0),
                "{path}: expected {x}, found {y}"
            );
        }
        _ => assert_eq!(expected, actual, "{path}"),
    }
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

/// Every violation of tests/fixtures/anvil.schema.json.
fn anvil_schema_errors(doc: &Value) -> Vec<String> {
    let schema = json_file(Path::new(ANVIL_SCHEMA));
    let validator = jsonschema::validator_for(&schema).expect("the anvil schema compiles");
    validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

fn report_stdout(args: &[&str]) -> (Option<i32>, String, String) {
    let out = servebench().arg("report").args(args).output().expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn seeds_000_and_002_round_trip_through_anvil() {
    for seed in [SEED_000, SEED_002] {
        let (code, stdout, stderr) = report_stdout(&[seed, "--format", "anvil"]);
        assert_eq!(code, Some(0), "{seed}: {stderr}");
        let written: Value = serde_json::from_str(&stdout).expect("anvil JSON");
        let original = json_file(Path::new(seed));
        assert_same(&original, &written, seed, true);
        assert!(
            anvil_schema_errors(&original).is_empty(),
            "{seed} does not match the schema inferred from it"
        );
    }
}

#[test]
fn the_anvil_reader_keeps_what_it_does_not_use() {
    // A variant of seed 000 with a failure the document lists without timings, and a label
    // servebench has no field for.
    let mut doc = json_file(Path::new(SEED_000));
    doc["failed"] = 1.into();
    doc["requests"] = 17.into();
    doc["failures"] = serde_json::json!([{"error": "HTTP 500", "request_index": 16}]);
    doc["tier"] = "gold".into();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("failed.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).expect("write");

    let read = report::read_report(&path).expect("read");
    assert_eq!(read.metadata["tier"], "gold");
    assert_eq!(read.metadata["max_context_tokens"], 131072);
    // Recomputed fields and nulls are not copied into the metadata.
    for derived in ["completed", "requests", "context_distribution", "manifest"] {
        assert!(!read.metadata.contains_key(derived), "{derived}");
    }
    let (code, stdout, stderr) = report_stdout(&[path.to_str().unwrap(), "--format", "anvil"]);
    assert_eq!(code, Some(0), "{stderr}");
    let written: Value = serde_json::from_str(&stdout).expect("json");
    assert_same(&doc, &written, "failed", false);
}

#[test]
fn seed_004_round_trips_through_gateway() {
    let (code, stdout, stderr) = report_stdout(&[SEED_004, "--format", "gateway"]);
    assert_eq!(code, Some(0), "{stderr}");
    let written: Value = serde_json::from_str(&stdout).expect("gateway JSON");
    let original = json_file(Path::new(SEED_004));
    // Seed 004 lists one phase's keys in another order; values must match everywhere.
    assert_same(&original, &written, "004", false);
    assert_eq!(
        written["phases"][13]["input_tokens"]["min"],
        Value::from(533)
    );
    assert_eq!(
        written["notes"][0],
        "First coverage and rechecks are both retained. Some shapes triggered runtime JIT."
    );
}

#[test]
fn anvil_writes_one_document_per_phase_into_a_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = write_json(dir.path(), "report.json", &sample_report(1.0));
    let out = dir.path().join("anvil");
    let (code, _, stderr) = report_stdout(&[
        input.to_str().unwrap(),
        "--format",
        "anvil",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 6, "{names:?}");
    assert!(names.contains(&"burst-5rps.anvil.json".to_string()));

    // The open-loop phase with three failures: counts, the failure list, no concurrency.
    let burst = json_file(&out.join("burst-5rps.anvil.json"));
    let errors = anvil_schema_errors(&burst);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert_eq!(burst["requests"], 24);
    assert_eq!(burst["completed"], 21);
    assert_eq!(burst["failed"], 3);
    assert_eq!(burst["request_timings"].as_array().unwrap().len(), 21);
    assert_eq!(burst["concurrency"], Value::Null);
    assert_eq!(burst["run_id"], "gateway-demo-20261130T100000Z-burst-5rps");
    let kinds: Vec<&str> = burst["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["stream_broken", "rate_limited", "stream_broken"]);
    assert_eq!(burst["failures"][1]["status"], 429);
    // Labels the plan's metadata does not state are null, not guessed.
    assert_eq!(burst["gpu"], Value::Null);
    assert_eq!(burst["serve_flags"]["thinking_mode"], Value::Null);
    assert_eq!(burst["engine"], "vllm 0.26");
    assert_eq!(burst["base_url"], "http://127.0.0.1:9000/v1");

    // --phase picks one document for stdout.
    let (code, stdout, stderr) = report_stdout(&[
        input.to_str().unwrap(),
        "--format",
        "anvil",
        "--phase",
        "gateway-c4",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(doc["concurrency"], 4);
    assert_eq!(doc["completed"], 24);
}

#[test]
fn anvil_refuses_what_it_cannot_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = write_json(dir.path(), "report.json", &sample_report(1.0));
    let input = input.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &[input, "--format", "anvil"],
            "this report has 6 (direct-c1, gateway-c1",
        ),
        (
            &[input, "--format", "anvil", "--phase", "gateway-c8"],
            "no phase named \"gateway-c8\"; the report's phases are: direct-c1,",
        ),
        (
            &[SEED_004, "--format", "anvil", "--phase", "direct-c1"],
            "phase \"direct-c1\" has no request records",
        ),
        (
            &[input, "--format", "md", "--phase", "direct-c1"],
            "--phase applies to --format anvil only",
        ),
    ];
    for (args, expect) in cases {
        let (code, stdout, stderr) = report_stdout(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
}

#[test]
fn gateway_takes_run_labels_from_metadata() {
    let report = sample_report(1.0);
    let doc = servebench::report::formats::gateway_out::document(&report);
    assert_eq!(doc.engine.as_deref(), Some("vllm 0.26"));
    // Both targets serve demo-model; nothing states the hardware, precision or method.
    assert_eq!(doc.model.as_deref(), Some("demo-model"));
    assert_eq!(
        (doc.hardware, doc.precision, doc.method),
        (None, None, None)
    );
    assert_eq!(doc.phases.len(), 6);
    let burst = &doc.phases[5];
    assert_eq!((burst.requests, burst.success, burst.errors), (24, 21, 3));
    assert_eq!(burst.concurrency, None);
}

#[test]
fn gateway_percentiles_interpolate_linearly_whatever_the_run_used() {
    let mut report = sample_report(1.0);
    report.timing_methodology.percentile_method = PercentileMethod::NearestRank;
    // A stale summary must not leak through: the writer recomputes from the records.
    report.phases[2].summary.figures.set(Figure::Ttft, None);
    let ttft_s: Vec<f64> = report.phases[2]
        .request_timings
        .iter()
        .filter_map(|r| r.ttft_ms)
        .map(|v| v / 1000.0)
        .collect();
    let linear = dist(&ttft_s).expect("ttft");
    let doc = servebench::report::formats::gateway_out::document(&report);
    let ttft = doc.phases[2].ttft.as_ref().expect("ttft written");
    assert_eq!((ttft.p50, ttft.p99), (linear.p50, linear.p99));
    let nearest =
        servebench::metrics::distribution(&ttft_s, PercentileMethod::NearestRank).expect("ttft");
    assert_ne!(
        ttft.p99, nearest.p99,
        "the sample's p99 differs between the methods"
    );
}

/// `plans/capacity-reasoning.yaml` as written, its simulator target pointed at an in-process
/// simulator with the plan's settings but faster decoding, so the run takes about a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_reasoning_run_writes_valid_anvil_that_reads_back_the_same() {
    let _exclusive = crate::common::exclusive_run().await;
    let plan_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/capacity-reasoning.yaml");
    let loaded = servebench::plan::prepare(&plan_path, &Default::default()).expect("plan");
    let mut sim = loaded.plan.targets["server"]
        .simulator
        .clone()
        .expect("the plan's target is a simulator");
    sim.decode_ms_per_token = Some(0.5);
    sim.decode_ms_per_running = Some(0.02);
    let (addr, handle) = servebench::sim::serve(sim).await.expect("simulator");

    let out = tempfile::tempdir().expect("tempdir");
    let options = servebench::runner::RunOptions {
        expand: servebench::plan::ExpandOptions {
            target_overrides: vec![format!("server=http://{addr}/v1")],
            ..Default::default()
        },
        ..crate::common::quiet_run_options(plan_path, out.path())
    };
    servebench::runner::run(options).await.expect("run");
    handle.shutdown().await;

    let run_report: Report =
        serde_json::from_value(json_file(&out.path().join("report.json"))).expect("report");
    let phase = &run_report.phases[0];
    assert_eq!(phase.summary.requests, 16);

    let docs = servebench::report::formats::anvil_out::documents(&run_report, None)
        .expect("anvil documents");
    assert_eq!(docs.len(), 1);
    let text = servebench::report::formats::anvil_out::render(&docs[0].1);
    let doc: Value = serde_json::from_str(&text).expect("json");
    let errors = anvil_schema_errors(&doc);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert_eq!(doc["base_url"], format!("http://{addr}/v1"));
    assert_eq!(doc["measurement_protocol"], "capacity-v4-reasoning");
    assert_eq!(doc["serve_flags"]["reasoning_effort"], "low");
    assert_eq!(doc["context_tokens"], 4096);
    assert_eq!(doc["max_tokens"], 512);
    assert!(doc["metrics"]["reasoning_chunks"].as_u64().unwrap() > 0);

    let anvil_path = out.path().join("capacity-c16.anvil.json");
    std::fs::write(&anvil_path, &text).expect("write");
    let back = report::read_report(&anvil_path).expect("read the anvil document back");
    let mut expected = serde_json::to_value(&phase.summary).expect("summary");
    let actual = serde_json::to_value(&back.phases[0].summary).expect("summary");
    // The seeds' request timings have no field for the largest inter-chunk gap, cached
    // tokens or the request's body size; everything else comes back.
    for dropped in [
        "max_inter_chunk_ms",
        "cached_tokens",
        "request_bytes",
        "total_request_bytes",
        "request_bytes_per_second",
    ] {
        assert_eq!(actual.get(dropped), None, "{dropped}");
        expected.as_object_mut().expect("an object").remove(dropped);
    }
    assert_eq!(actual["cached_token_ratio"], Value::Null);
    expected["cached_token_ratio"] = Value::Null;
    // Nor the usage's reasoning tokens: they come back counted from the reasoning deltas
    // (one token each from the simulator), the same tokens, every request counted.
    let counted = actual["reasoning"]["counted_from_stream"].clone();
    assert_eq!(counted, actual["reasoning"]["requests"]);
    assert_eq!(expected["reasoning"]["counted_from_stream"], 0);
    expected["reasoning"]["counted_from_stream"] = counted;
    assert_same(&expected, &actual, "summary", false);
}
