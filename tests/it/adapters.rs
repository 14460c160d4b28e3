//! Adapter (LoRA) mixes over loopback: plans/adapter-mix.yaml against a simulator serving two
//! adapters with a load delay and one resident at a time. Each request's model as the server
//! received it, the shares against the weights, the load delay in the TTFT of exactly the
//! requests that waited for a load, figures by model in json, md, HTML and Parquet, and the
//! simulator's own `/v1/models`, `/metrics` and 404s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use servebench::client::RequestRecord;
use servebench::report::Report;
use servebench::sim::{SeenRequest, SimConfig, serve};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const WEIGHTS: [(&str, f64); 3] = [("base", 0.6), ("adapter-a", 0.3), ("adapter-b", 0.1)];
const LOAD: Duration = Duration::from_millis(300);

/// The example plan's simulator settings, with `set` applied, serving the target's model.
fn example_simulator(set: &[&str]) -> SimConfig {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let options = servebench::plan::ExpandOptions {
        set,
        ..Default::default()
    };
    let loaded = servebench::plan::prepare(&root().join("plans/adapter-mix.yaml"), &options)
        .expect("the example plan loads");
    let target = &loaded.plan.targets["sim"];
    let mut config = target.simulator.clone().expect("a simulator target");
    config.model.clone_from(&target.model);
    config.record_requests = Some(true);
    config
}

/// plans/adapter-mix.yaml against `url` with `set` overrides; the report.
async fn run_example(url: &str, out: &Path, set: &[&str]) -> Report {
    let mut options = crate::common::quiet_run_options(root().join("plans/adapter-mix.yaml"), out);
    options.expand.target_overrides = vec![format!("sim={url}")];
    options.expand.set = set.iter().map(|s| s.to_string()).collect();
    servebench::runner::run(options).await.unwrap();
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    crate::common::assert_valid_report(&serde_json::from_str(&text).unwrap());
    serde_json::from_str(&text).unwrap()
}

/// A counter's value in Prometheus text.
fn counter(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
}

async fn get(url: &str) -> String {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Which requests wait for a load, in the order they were sent: an adapter not among the
/// `max_resident` most recently used ones is loaded, evicting the least recently used.
fn expected_loads(models: &[&str], max_resident: usize) -> Vec<bool> {
    let mut resident: Vec<&str> = Vec::new();
    models
        .iter()
        .map(|&model| {
            if model == "base" {
                return false;
            }
            let loaded = match resident.iter().position(|&m| m == model) {
                Some(i) => {
                    resident.remove(i);
                    false
                }
                None => {
                    if resident.len() == max_resident {
                        resident.remove(0);
                    }
                    true
                }
            };
            resident.push(model);
            loaded
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_use_adapter_waits_its_load_and_the_shares_follow_the_weights() {
    let _exclusive = crate::common::exclusive_run().await;
    let (addr, sim) = serve(example_simulator(&[])).await.unwrap();
    let url = format!("http://{addr}/v1");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let report = run_example(&url, &out, &[]).await;
    let phase = &report.phases[0];
    assert_eq!(phase.summary.errors, 0);
    assert_eq!(phase.request_timings.len(), 100);

    assert_records_name_the_models_sent(&sim.requests(), &phase.request_timings);
    let mut records = phase.request_timings.clone();
    records.sort_by_key(|r| r.request_index);
    let models: Vec<&str> = records
        .iter()
        .map(|r| r.model.as_deref().expect("every record names its model"))
        .collect();

    // Shares: within 2 percentage points of the weights over 100 requests.
    for (name, weight) in WEIGHTS {
        let share = models.iter().filter(|&&m| m == name).count() as f64 / 100.0;
        assert!(
            (share - weight).abs() <= 0.02 + 1e-9,
            "{name}: share {share}, weight {weight}"
        );
        let by_model = phase.models.iter().find(|m| m.model == name).unwrap();
        assert!((by_model.share - share).abs() < 1e-9);
    }

    // Loads: each counted by the server.
    let load_count = assert_loaded_requests_waited(&records, &models);
    let metrics = get(&format!("http://{addr}/metrics")).await;
    assert_eq!(
        counter(&metrics, "servebench_sim:lora_adapter_loads_total"),
        load_count as f64
    );
    assert_eq!(
        counter(&metrics, "servebench_sim:lora_adapter_evictions_total"),
        (load_count - 1) as f64
    );
    assert!(metrics.contains("max_lora=\"1\""), "{metrics}");

    // The figures by model: base never waits, each adapter's slowest TTFT holds a load.
    let ttft_max = |name: &str| {
        let m = phase.models.iter().find(|m| m.model == name).unwrap();
        m.figures.get(servebench::figure::Figure::Ttft).unwrap().max
    };
    assert!(ttft_max("base") < LOAD.as_secs_f64());
    assert!(ttft_max("adapter-a") >= LOAD.as_secs_f64());
    assert!(ttft_max("adapter-b") >= LOAD.as_secs_f64());
    let requests: u64 = phase.models.iter().map(|m| m.requests).sum();
    assert_eq!(requests, 100);

    // The same breakdown in markdown and HTML, and the model in every Parquet row.
    assert_reports_break_down_by_model(&out, &records);

    // `compare` sets each model beside the same model: its own requests and TTFT.
    assert_compare_by_model(&report);
    sim.shutdown().await;
}

/// Each record's model is the one its request carried to the server.
fn assert_records_name_the_models_sent(requests: &[SeenRequest], records: &[RequestRecord]) {
    let seen: BTreeMap<String, Option<String>> = requests
        .iter()
        .map(|s| {
            let id = s.headers.iter().find(|(k, _)| k == "x-request-id");
            (
                id.map(|(_, v)| v.clone()).unwrap_or_default(),
                s.model.clone(),
            )
        })
        .collect();
    assert_eq!(seen.len(), 100);
    for r in records {
        let sent = r.sent_request_id.as_ref().unwrap_or(&r.request_id);
        assert_eq!(seen[sent], r.model, "{sent}");
    }
}

/// One request at a time: exactly the requests that found their adapter unloaded waited the
/// load delay, the first use of each adapter among them. Returns how many loaded.
fn assert_loaded_requests_waited(records: &[RequestRecord], models: &[&str]) -> usize {
    let loads = expected_loads(models, 1);
    for name in ["adapter-a", "adapter-b"] {
        let first = models.iter().position(|&m| m == name).unwrap();
        assert!(loads[first], "the first {name} request loads it");
    }
    let load_ms = LOAD.as_secs_f64() * 1e3;
    for ((record, model), loaded) in records.iter().zip(models).zip(&loads) {
        let ttft = record.ttft_ms.expect("a TTFT");
        if *loaded {
            assert!(
                ttft >= load_ms,
                "{model} #{} loaded: TTFT {ttft} ms",
                record.request_index
            );
        } else {
            assert!(
                ttft < load_ms - 100.0,
                "{model} #{}: TTFT {ttft} ms",
                record.request_index
            );
        }
    }
    let load_count = loads.iter().filter(|l| **l).count();
    assert!(load_count >= 2);
    load_count
}

/// The markdown's and HTML's by-model sections, and each Parquet row's model.
fn assert_reports_break_down_by_model(out: &Path, records: &[RequestRecord]) {
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = md.split("## By model").nth(1).expect("a By model section");
    for (name, _) in WEIGHTS {
        assert!(section.contains(&format!("| mix | {name} |")), "{section}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("id=\"by-model\""),
        "no by-model section in the HTML"
    );
    let rows = crate::common::record_rows(out);
    let row_models: BTreeMap<u64, Option<String>> = rows
        .iter()
        .map(|r| (r.record.request_index, r.record.model.clone()))
        .collect();
    for r in records {
        assert_eq!(
            row_models[&r.request_index], r.model,
            "#{}",
            r.request_index
        );
    }
}

/// `compare` of the report with itself: each model beside the same model.
fn assert_compare_by_model(report: &Report) {
    let phase = &report.phases[0];
    let cmp = servebench::report::compare::compare("a", report, "b", report, &[]);
    let names: Vec<&str> = cmp.phases.iter().map(|p| p.phase.as_str()).collect();
    assert_eq!(
        names,
        ["mix", "mix [base]", "mix [adapter-a]", "mix [adapter-b]"]
    );
    for (compared, model) in cmp.phases[1..].iter().zip(&phase.models) {
        let metric = |name: &str| compared.metrics.iter().find(|m| m.metric == name).unwrap();
        let requests = Some(model.requests as f64);
        assert_eq!(
            (metric("requests").base, metric("requests").new),
            (requests, requests)
        );
        let p99 = model
            .figures
            .get(servebench::figure::Figure::Ttft)
            .unwrap()
            .p99;
        assert_eq!(metric("ttft.p99").new, Some(p99), "{}", compared.phase);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_room_for_both_adapters_each_loads_once() {
    let _exclusive = crate::common::exclusive_run().await;
    let set = ["max_resident=2", "requests=40"];
    let (addr, sim) = serve(example_simulator(&set)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = run_example(&format!("http://{addr}/v1"), dir.path(), &set).await;
    let phase = &report.phases[0];
    assert_eq!(phase.summary.errors, 0);
    let waited: Vec<_> = phase
        .request_timings
        .iter()
        .filter(|r| r.ttft_ms.unwrap() >= LOAD.as_secs_f64() * 1e3)
        .map(|r| r.model.clone().unwrap())
        .collect();
    let mut sorted = waited.clone();
    sorted.sort();
    assert_eq!(sorted, ["adapter-a", "adapter-b"], "{waited:?}");
    let metrics = get(&format!("http://{addr}/metrics")).await;
    assert_eq!(
        counter(&metrics, "servebench_sim:lora_adapter_loads_total"),
        2.0
    );
    assert_eq!(
        counter(&metrics, "servebench_sim:lora_adapter_evictions_total"),
        0.0
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn the_simulator_lists_its_adapters_and_refuses_other_names() {
    let (addr, sim) = serve(example_simulator(&[])).await.unwrap();
    let models: serde_json::Value =
        serde_json::from_str(&get(&format!("http://{addr}/v1/models")).await).unwrap();
    let listed: Vec<(&str, &serde_json::Value)> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), &m["parent"]))
        .collect();
    assert_eq!(
        listed,
        [
            ("base", &serde_json::Value::Null),
            ("adapter-a", &serde_json::json!("base")),
            ("adapter-b", &serde_json::json!("base")),
        ]
    );
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let ask = |model: &str| {
        let body = serde_json::json!({
            "model": model,
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 2,
        });
        http.post(format!("http://{addr}/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let refused = ask("adapter-c").await.unwrap();
    assert_eq!(refused.status(), 404);
    let body: serde_json::Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "model_not_found");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("`adapter-a`"), "{message}");
    // A reply names the adapter asked for, as vLLM's does.
    for model in ["adapter-b", "base"] {
        let served = ask(model).await.unwrap();
        assert_eq!(served.status(), 200);
        let body: serde_json::Value = serde_json::from_str(&served.text().await.unwrap()).unwrap();
        assert_eq!(body["model"], model, "{body}");
    }
    let body = serde_json::json!({
        "model": "adapter-a",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 3,
        "stream": true,
    });
    let stream = http
        .post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let chunks: Vec<serde_json::Value> = stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(!chunks.is_empty(), "{stream}");
    assert!(chunks.iter().all(|c| c["model"] == "adapter-a"), "{stream}");
    sim.shutdown().await;
}

#[test]
fn validate_refuses_bad_mixes_at_their_key() {
    let check = |fixture: &str, wants: &[&str]| {
        let out = Command::new(assert_cmd::cargo::cargo_bin!("servebench"))
            .current_dir(root())
            .args(["validate", &format!("tests/fixtures/invalid/{fixture}")])
            .assert()
            .failure();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        for want in wants {
            assert!(stderr.contains(want), "{fixture}: no {want:?} in\n{stderr}");
        }
    };
    check(
        "models-shares-not-100.yaml",
        &[
            "the shares sum to 95%, not 100%",
            "models-shares-not-100.yaml:14:5",
        ],
    );
    check(
        "models-unknown-adapter.yaml",
        &[
            "does not serve `adapter-c`",
            "did you mean `adapter-a`?",
            "models-unknown-adapter.yaml:14:41",
        ],
    );
    check(
        "models-bad-share.yaml",
        &["a share must be above 0% and at most 100%, found 0%"],
    );
}
