//! A real AIPerf export: AIPerf (from PyPI, installed by tests/real/aiperf-setup.sh) runs
//! against `servebench sim`, its `profile_export_aiperf.json` is imported into a series, and
//! compared with a servebench run of the same workload against the same server on the
//! figures both define. Locally it skips with one line until AIPerf is installed; with `CI`
//! set it fails instead.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use servebench::history::{Location, OpenMode, Store, open};

use super::support::servebench;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn aiperf() -> Option<PathBuf> {
    let venv = crate::real_support::real_dir().join("aiperf-venv");
    let bin = venv.join("bin/aiperf");
    if venv.join("stamp").exists() && bin.exists() {
        return Some(bin);
    }
    let why = format!(
        "AIPerf is not installed at {} (bash tests/real/aiperf-setup.sh)",
        bin.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped: a real AIPerf export: {why}");
    None
}

/// A Hugging Face cache holding the test tokenizer as `local/smollm2-135m`, so AIPerf loads
/// it offline (its loader reads only the hub's cache layout when offline).
fn tokenizer_cache(dir: &Path) -> PathBuf {
    let home = dir.join("hf");
    let repo = home.join("hub/models--local--smollm2-135m");
    let commit = "0".repeat(40);
    let snapshot = repo.join("snapshots").join(&commit);
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), &commit).unwrap();
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizers/smollm2-135m");
    for file in ["tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(source.join(file), snapshot.join(file)).unwrap();
    }
    home
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_sim(port: u16) -> Killed {
    let child = servebench()
        .args(["sim", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the simulator did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Killed(child)
}

const REQUESTS: u32 = 40;
const CONCURRENCY: u32 = 4;

#[test]
fn a_real_aiperf_export_imports_and_compares_with_servebench_on_shared_figures() {
    let Some(aiperf) = aiperf() else {
        return;
    };
    let _guard = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _sim = start_sim(port);
    let artifacts = dir.path().join("aiperf");
    let out = Command::new(&aiperf)
        .args([
            "profile",
            "-m",
            "sim",
            "--url",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--endpoint-type", "chat", "--streaming"])
        .args(["--concurrency", &CONCURRENCY.to_string()])
        .args(["--request-count", &REQUESTS.to_string()])
        .args([
            "--synthetic-input-tokens-mean",
            "512",
            "--output-tokens-mean",
            "128",
        ])
        .args(["--tokenizer", "local/smollm2-135m", "--ui-type", "none"])
        .arg("--artifact-dir")
        .arg(&artifacts)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", tokenizer_cache(dir.path()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "aiperf failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let export = artifacts.join("profile_export_aiperf.json");

    let history = dir.path().join("history.sqlite");
    let plan = dir.path().join("same.yaml");
    std::fs::write(
        &plan,
        format!(
            "version: 1\nname: same\ntargets:\n  sim: {{base_url: 'http://127.0.0.1:{port}/v1', model: sim}}\n\
             workloads:\n  chat: {{input_tokens: 512, output_tokens: 128}}\n\
             defaults: {{target: sim, workload: chat}}\n\
             phases:\n  - {{name: c{CONCURRENCY}, concurrency: {CONCURRENCY}, requests: {REQUESTS}}}\n"
        ),
    )
    .unwrap();
    let run = servebench()
        .args([
            "run",
            "--quiet",
            "--no-calibrate",
            "--no-latency-hint",
            "--history",
        ])
        .arg(&history)
        .arg("--out")
        .arg(dir.path().join("run"))
        .arg(&plan)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let phase = format!("c{CONCURRENCY}");
    let import = servebench()
        .args(["history", "import", "--history"])
        .arg(&history)
        .arg(&export)
        .args(["--plan", "same", "--phase", &phase, "--target", "sim"])
        .output()
        .unwrap();
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );

    let store = open(&Location::Sqlite(history), OpenMode::Existing).unwrap();
    let runs = store.runs(&Default::default()).unwrap();
    let run_of = |source: &str| {
        let id = &runs.iter().find(|r| r.source.name() == source).unwrap().id;
        store.run(id).unwrap().rows.phases.remove(0)
    };
    let (ours, theirs) = (run_of("servebench"), run_of("aiperf"));
    assert_eq!(theirs.requests, i64::from(REQUESTS));
    let value = |phase: &servebench::history::record::PhaseRow, name: &str| {
        phase
            .figures
            .iter()
            .find(|f| f.figure == name)
            .map(|f| f.value)
    };
    let names = |phase: &servebench::history::record::PhaseRow| -> BTreeSet<String> {
        phase.figures.iter().map(|f| f.figure.clone()).collect()
    };
    let shared: BTreeSet<String> = names(&ours)
        .intersection(&names(&theirs))
        .cloned()
        .collect();
    for must in [
        "ttft.p50",
        "tpot.p50",
        "e2e.p50",
        "output_tokens_per_second",
        "requests",
    ] {
        assert!(shared.contains(must), "{must} not shared: {shared:?}");
    }
    // Both clients timed the same server: decode-bound figures agree within a factor of two
    // (AIPerf's Python client adds its own overhead, so TTFT is only printed).
    for figure in &shared {
        let (a, b) = (
            value(&ours, figure).unwrap(),
            value(&theirs, figure).unwrap(),
        );
        eprintln!("{figure}: servebench {a} aiperf {b}");
    }
    for figure in ["tpot.p50", "e2e.p50"] {
        let ratio = value(&theirs, figure).unwrap() / value(&ours, figure).unwrap();
        assert!(
            (0.5..2.0).contains(&ratio),
            "{figure}: aiperf / servebench = {ratio}"
        );
    }
}
