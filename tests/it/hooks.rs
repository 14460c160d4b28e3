//! Phase hooks end to end: cache resets against the simulator, a failing reset against a
//! server without the endpoint.

use std::path::Path;

use servebench::runner::{RunOptions, run};

fn options(plan: &Path, out: &Path) -> RunOptions {
    crate::common::quiet_run_options(plan.to_path_buf(), out)
}

fn journal(dir: &Path) -> Vec<serde_json::Value> {
    crate::common::records_and_journal(dir)
}

fn report(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_before_each_phase_makes_its_first_request_cold() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "version: 1\nname: hooks\nseed: 3\ntargets:\n  sim:\n    simulator: {max_running: 8, prefill_tok_s: 1000000, decode_ms_per_token: 1, prefix_cache: {capacity_tokens: 100000, block_tokens: 16}}\nworkloads:\n  w:\n    input_tokens: 320\n    shared_prefix: {tokens: 256, groups: 1}\n    output_tokens: 2\n    ignore_eos: true\ndefaults: {target: sim, workload: w, before: [{reset_prefix_cache: true}]}\nphases:\n  - {name: a, concurrency: 1, requests: 5}\n  - {name: b, concurrency: 1, requests: 5}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    run(options(&plan, &out)).await.unwrap();
    let lines = journal(&out);
    for phase in ["a", "b"] {
        let cached: Vec<u64> = lines
            .iter()
            .filter(|l| l["phase"] == phase && l.get("cached_tokens").is_some())
            .map(|l| l["cached_tokens"].as_u64().unwrap_or(0))
            .collect();
        assert_eq!(cached.len(), 5, "{phase}: {cached:?}");
        assert_eq!(cached[0], 0, "{phase} starts cold: {cached:?}");
        assert!(
            cached[1..].iter().all(|&c| c > 0),
            "{phase} warms: {cached:?}"
        );
    }
    let value = report(&out);
    for phase in value["phases"].as_array().unwrap() {
        let hooks = phase["hooks"].as_array().unwrap();
        assert_eq!(hooks.len(), 1, "{phase}");
        assert_eq!(hooks[0]["when"], "before");
        assert_eq!(hooks[0]["outcome"], "ok");
        assert!(
            hooks[0]["action"]
                .as_str()
                .unwrap()
                .ends_with("/reset_prefix_cache")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_against_a_server_without_the_endpoint_fails_the_run() {
    let _exclusive = crate::common::exclusive_run().await;
    // A loopback server answering 404 to everything.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        format!("version: 1\nname: hooks\nseed: 3\ntargets:\n  t:\n    base_url: http://{addr}/v1\n    model: m\nworkloads:\n  w:\n    input_tokens: 32\n    output_tokens: 2\ndefaults: {{target: t, workload: w}}\nphases:\n  - {{name: a, concurrency: 1, requests: 1, before: [{{reset_prefix_cache: true}}]}}\n"),
    )
    .unwrap();
    let out = dir.path().join("out");
    let error = run(options(&plan, &out)).await.unwrap_err();
    assert_eq!(
        error.exit_code(),
        servebench::exit::Exit::RunFailed,
        "{error}"
    );
    let message = error.to_string();
    let url = format!("http://{addr}/reset_prefix_cache");
    assert!(
        message.contains(&url) && message.contains("404"),
        "{message}"
    );
    let value = report(&out);
    let hook = &value["phases"][0]["hooks"][0];
    assert_eq!(hook["outcome"], "failed");
    assert!(hook["detail"].as_str().unwrap().contains("404"), "{hook}");
}
