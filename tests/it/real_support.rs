//! Real engines for the integration tests: the venvs `tests/real/setup.sh` installs, child
//! processes on loopback that are killed on drop, and the skip-or-fail rule.
//!
//! A test that needs a real engine calls [`RealEngines::find`]. When the venv is missing it
//! prints one `skipped:` line and the test returns; with `CI` set it panics instead, so CI
//! never passes by skipping (as the headless Chromium test does).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::real_otlp::OtlpReceiver;

/// How long a server may take to load and answer `/health` (model load is ~3 s; CI is busy).
const START_DEADLINE: Duration = Duration::from_secs(120);

/// vLLM imports torch in two processes and profiles the model before it answers: about 40 s
/// on an idle 2-core machine, several times that beside a build.
const VLLM_START_DEADLINE: Duration = Duration::from_secs(600);

/// How long vLLM may take to stop (the launcher gives it 20 s before it kills it).
const VLLM_STOP_GRACE: Duration = Duration::from_secs(30);

/// What tests/real/setup.sh installed, by path.
#[derive(Debug, Clone)]
pub struct RealEngines {
    pub python: PathBuf,
    pub model: PathBuf,
    pub vllm_router: PathBuf,
    pub sglang_router: PathBuf,
}

/// `SERVEBENCH_REAL_DIR`, else `${XDG_CACHE_HOME:-$HOME/.cache}/servebench/real` (setup.sh's
/// default).
pub fn real_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SERVEBENCH_REAL_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    cache.join("servebench/real")
}

impl RealEngines {
    /// The installed engines, or `None` after printing why (locally); panics when `CI` is set.
    pub fn find(what: &str) -> Option<RealEngines> {
        let dir = real_dir();
        let venv = dir.join("venv/bin");
        let engines = RealEngines {
            python: venv.join("python"),
            model: dir.join("models/SmolLM2-135M-Instruct.Q4_1.gguf"),
            vllm_router: venv.join("vllm-router"),
            sglang_router: venv.join("sglang-router"),
        };
        let missing = [
            dir.join("stamp"),
            engines.python.clone(),
            engines.model.clone(),
            engines.vllm_router.clone(),
            engines.sglang_router.clone(),
        ]
        .into_iter()
        .find(|p| !p.exists());
        let Some(missing) = missing else {
            return Some(engines);
        };
        skip(what, &missing);
        None
    }
}

/// Print the one `skipped:` line for `what`, whose `missing` path setup.sh would have made;
/// panics instead when `CI` is set.
fn skip(what: &str, missing: &Path) {
    let message = format!("skipped: {what} is not installed; run tests/real/setup.sh");
    assert!(
        std::env::var_os("CI").is_none(),
        "{message} (CI is set, so this test must run; {} is missing)",
        missing.display()
    );
    println!("{message}");
}

/// llama-cpp-python's OpenAI server as tests/real/setup.sh installed it: its own venv (its
/// FastAPI and Starlette pins are not the routers'), and the same model as llama.cpp's tests.
#[derive(Debug, Clone)]
pub struct LlamaCppPython {
    pub python: PathBuf,
    pub model: PathBuf,
}

impl LlamaCppPython {
    /// The installed server, or `None` after printing why (locally); panics when `CI` is set.
    pub fn find(what: &str) -> Option<LlamaCppPython> {
        let dir = real_dir();
        let found = LlamaCppPython {
            python: dir.join("llama-cpp-python-venv/bin/python"),
            model: dir.join("models/SmolLM2-135M-Instruct.Q4_1.gguf"),
        };
        let missing = [dir.join("stamp"), found.python.clone(), found.model.clone()]
            .into_iter()
            .find(|p| !p.exists());
        let Some(missing) = missing else {
            return Some(found);
        };
        skip(what, &missing);
        None
    }
}

/// vLLM's OpenAI server (CPU build) as tests/real/setup.sh installed it: its own venv and
/// SmolLM2-135M-Instruct converted from the GGUF into a Hugging Face folder.
#[derive(Debug, Clone)]
pub struct Vllm {
    pub python: PathBuf,
    pub model: PathBuf,
}

impl Vllm {
    /// The installed server, or `None` after printing why (locally); panics when `CI` is set.
    pub fn find(what: &str) -> Option<Vllm> {
        let dir = real_dir();
        let found = Vllm {
            python: dir.join("vllm-venv/bin/python"),
            model: dir.join("models/SmolLM2-135M-Instruct-hf"),
        };
        let missing = [
            dir.join("stamp"),
            found.python.clone(),
            found.model.join("config.json"),
        ]
        .into_iter()
        .find(|p| !p.exists());
        let Some(missing) = missing else {
            return Some(found);
        };
        skip(what, &missing);
        None
    }
}

/// What a vLLM server is started to serve: one model serves either generation or embeddings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VllmRunner {
    /// Chat, completions and `/v1/responses`, with prefix caching and per-request metrics.
    Generate,
    /// `/v1/embeddings`: the same model converted to a pooling model.
    Embed,
    /// Chat with n-gram speculative decoding ([`NGRAM_SPECULATIVE_CONFIG`]) and its
    /// per-request acceptance in each response (`--per-request-spec-decode-metrics`).
    Speculative,
}

/// The n-gram proposer the speculative server drafts with: up to 3 tokens a step, looked up
/// from 1- to 3-token matches in the prompt and the output so far.
pub const NGRAM_SPECULATIVE_CONFIG: &str =
    r#"{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":1}"#;

/// vLLM's OpenAI server on loopback through `tests/real/vllm_server.py`, which stops the
/// server and its engine process when the test drops this (or dies). It exports a span per
/// request to an OTLP receiver of its own (`--otlp-traces-endpoint`).
pub struct VllmServer {
    process: ChildProcess,
    /// Dropped after the server, whose exporter sends its last spans as it stops.
    pub traces: OtlpReceiver,
    /// `http://127.0.0.1:PORT`
    pub root: String,
    /// How long from spawning the launcher to `/health` answering.
    pub started_in: Duration,
}

/// The model name the tests' vLLM serves.
pub const VLLM_MODEL: &str = "smollm2-135m-instruct";

impl VllmServer {
    pub async fn start(vllm: &Vllm, runner: VllmRunner) -> VllmServer {
        let started = Instant::now();
        let traces = OtlpReceiver::start(&vllm.python).await;
        let mut command = Command::new(&vllm.python);
        command
            .arg(repo_path("tests/real/vllm_server.py"))
            .arg("--model")
            .arg(&vllm.model)
            .args(["--served-model-name", VLLM_MODEL])
            .args(["--host", "127.0.0.1", "--port", "0"])
            .arg("--exit-on-stdin-eof")
            // Room for the tests' longest session histories; the default (8192) would
            // reserve KV cache for nothing.
            .args(["--max-model-len", "4096"])
            .args(["--otlp-traces-endpoint", &traces.endpoint]);
        if runner == VllmRunner::Embed {
            command.arg("--embed");
        }
        if runner == VllmRunner::Speculative {
            command
                .args(["--speculative-config", NGRAM_SPECULATIVE_CONFIG])
                .args(["--per-request-spec-decode-metrics", "summary"]);
        }
        let mut process = ChildProcess::spawn("vllm", command, true);
        let root = process.listening_root_within(VLLM_START_DEADLINE).await;
        VllmServer {
            process,
            traces,
            root,
            started_in: started.elapsed(),
        }
    }

    pub fn base_url(&self) -> String {
        format!("{}/v1", self.root)
    }
}

impl Drop for VllmServer {
    /// Stopped before the test lets go of the suite's lock: the launcher stops the API
    /// server, which stops its engine process, so none of them still holds a core when the
    /// next test starts.
    fn drop(&mut self) {
        self.process.stop_within(VLLM_STOP_GRACE);
    }
}

/// A free loopback port (the OS's choice; closed again before the child binds it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A child process with its output in a log file; killed on drop, and its log printed when
/// the test is failing.
pub struct ChildProcess {
    name: String,
    child: Child,
    /// Held open: the llama.cpp launcher stops when its stdin closes, so it never outlives
    /// the test binary even if the binary is killed.
    stdin: Option<ChildStdin>,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl ChildProcess {
    /// Start `command` with stderr (and stdout unless `keep_stdout`) to a log file.
    pub fn spawn(name: &str, mut command: Command, keep_stdout: bool) -> ChildProcess {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let stdout = if keep_stdout {
            Stdio::piped()
        } else {
            Stdio::from(file.try_clone().expect("log file"))
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(Stdio::from(file))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({command:?}): {e}"));
        let stdin = child.stdin.take();
        ChildProcess {
            name: name.to_string(),
            child,
            stdin,
            log,
            _dir: dir,
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Close the child's stdin (a launcher run with `--exit-on-stdin-eof` then stops its
    /// server) and wait up to `grace` for it to exit; dropping kills it after that.
    fn stop_within(&mut self, grace: Duration) {
        self.stdin.take();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Panic with the log when the process has exited.
    fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "{} exited ({status}) before it was ready; its log:\n{}",
                self.name,
                self.log_text()
            );
        }
    }

    /// The `http://HOST:PORT` of the launcher's `listening http://…` line, which it prints
    /// once the model is loaded and it accepts connections; the rest of its standard output
    /// (the engine's own log) goes to the log file with its stderr. Needs `keep_stdout`.
    async fn listening_root(&mut self) -> String {
        self.listening_root_within(START_DEADLINE).await
    }

    /// [`ChildProcess::listening_root`] with its own deadline.
    pub async fn listening_root_within(&mut self, deadline: Duration) -> String {
        let stdout = self.child.stdout.take().expect("piped stdout");
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.log)
            .expect("log file");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening ") {
                    let _ = tx.send(url.trim().to_string());
                }
                let _ = writeln!(log, "{line}");
            }
        });
        let root = tokio::task::spawn_blocking(move || rx.recv_timeout(deadline))
            .await
            .unwrap();
        match root {
            Ok(root) => root,
            Err(_) => {
                self.assert_running();
                panic!(
                    "{} printed no `listening` line within {deadline:?}; its log:\n{}",
                    self.name,
                    self.log_text()
                );
            }
        }
    }

    /// Poll `url` until it answers 200, failing with the log at the deadline.
    pub async fn wait_healthy(&mut self, url: &str) {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            self.assert_running();
            if let Ok(response) = http.get(url).send().await
                && response.status().is_success()
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not answer {url} within {START_DEADLINE:?}; its log:\n{}",
                self.name,
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl ChildProcess {
    /// SIGKILL, and reap it: a server that dies with no chance to close its connections.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "----- {} log ({}) -----\n{}----- end of {} log -----",
                self.name,
                self.log.display(),
                self.log_text(),
                self.name
            );
        }
    }
}

/// llama.cpp's HTTP server with SmolLM2-135M-Instruct, sized for a 2-core machine.
pub struct LlamaServer {
    process: ChildProcess,
    /// `http://127.0.0.1:PORT`
    pub root: String,
}

impl LlamaServer {
    /// Two threads, four slots (so concurrency 4 is served at once), `ctx_per_slot` tokens
    /// of context each, `/metrics` on.
    pub async fn start(engines: &RealEngines, ctx_per_slot: u32) -> LlamaServer {
        Self::start_with(engines, ctx_per_slot, &[]).await
    }

    /// [`LlamaServer::start`] that also serves `/v1/embeddings` (mean pooling).
    pub async fn start_embeddings(engines: &RealEngines, ctx_per_slot: u32) -> LlamaServer {
        Self::start_with(engines, ctx_per_slot, &["--embeddings"]).await
    }

    async fn start_with(engines: &RealEngines, ctx_per_slot: u32, extra: &[&str]) -> LlamaServer {
        let slots = 4;
        let mut command = Command::new(&engines.python);
        command
            .arg(repo_path("tests/real/llama_server.py"))
            .arg("--model")
            .arg(&engines.model)
            .args(["--host", "127.0.0.1", "--port", "0", "--threads", "2"])
            .arg("--exit-on-stdin-eof")
            .args(["--parallel", &slots.to_string()])
            .args(["--ctx-size", &(ctx_per_slot * slots).to_string()])
            .args(extra);
        let mut process = ChildProcess::spawn("llama-server", command, true);
        let root = process.listening_root().await;
        process.wait_healthy(&format!("{root}/health")).await;
        LlamaServer { process, root }
    }

    pub fn base_url(&self) -> String {
        format!("{}/v1", self.root)
    }

    /// Kill the server with SIGKILL (a crash, mid-request).
    pub fn kill(&mut self) {
        self.process.kill();
    }
}

/// llama-cpp-python's OpenAI server (FastAPI on uvicorn) with SmolLM2-135M-Instruct: one
/// request at a time (the server holds a lock around the model; waiting requests queue).
pub struct LlamaCppPythonServer {
    process: ChildProcess,
    /// `http://127.0.0.1:PORT`
    pub root: String,
}

impl LlamaCppPythonServer {
    /// Two threads, 4096 tokens of context, uvicorn's keep-alive timeout `keep_alive_s`
    /// (uvicorn's default, 5 s, when `None`).
    pub async fn start(server: &LlamaCppPython, keep_alive_s: Option<f64>) -> LlamaCppPythonServer {
        let mut command = Command::new(&server.python);
        command
            .arg(repo_path("tests/real/llama_cpp_python_server.py"))
            .arg("--model")
            .arg(&server.model)
            .args(["--host", "127.0.0.1", "--port", "0", "--threads", "2"])
            .args(["--ctx-size", "4096"])
            .arg("--exit-on-stdin-eof");
        if let Some(seconds) = keep_alive_s {
            command.args(["--keep-alive", &seconds.to_string()]);
        }
        let mut process = ChildProcess::spawn("llama-cpp-python", command, true);
        let root = process.listening_root().await;
        // No `/health`: the model list answers once the app serves.
        process.wait_healthy(&format!("{root}/v1/models")).await;
        LlamaCppPythonServer { process, root }
    }

    pub fn base_url(&self) -> String {
        format!("{}/v1", self.root)
    }

    /// What the server has logged so far (uvicorn's access log and llama-cpp-python's
    /// verbose output: one prompt count per request).
    pub fn log_text(&self) -> String {
        self.process.log_text()
    }
}

/// The two routers under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouterKind {
    Vllm,
    Sglang,
}

impl RouterKind {
    /// The package, as the skip line names it.
    pub fn package(self) -> &'static str {
        match self {
            RouterKind::Vllm => "vllm-router",
            RouterKind::Sglang => "sglang-router",
        }
    }
}

/// A router in front of `workers`, with its own Prometheus port (so two never collide).
pub struct Router {
    _process: ChildProcess,
    pub root: String,
    /// The router's own Prometheus endpoint.
    pub metrics_url: String,
}

impl Router {
    pub async fn start(
        engines: &RealEngines,
        kind: RouterKind,
        policy: &str,
        workers: &[String],
    ) -> Router {
        let port = free_port();
        let prometheus_port = free_port();
        let (name, mut command) = match kind {
            RouterKind::Vllm => ("vllm-router", Command::new(&engines.vllm_router)),
            RouterKind::Sglang => {
                let mut c = Command::new(&engines.sglang_router);
                c.arg("launch");
                ("sglang-router", c)
            }
        };
        command
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--policy", policy])
            .args(["--prometheus-port", &prometheus_port.to_string()])
            .args(["--prometheus-host", "127.0.0.1"])
            .args(["--worker-startup-check-interval", "1"])
            .arg("--worker-urls")
            .args(workers);
        let mut process = ChildProcess::spawn(name, command, false);
        let root = format!("http://127.0.0.1:{port}");
        process.wait_healthy(&format!("{root}/health")).await;
        Router {
            _process: process,
            root,
            metrics_url: format!("http://127.0.0.1:{prometheus_port}/metrics"),
        }
    }
}

pub fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Collects failed checks so one run shows every one of them, then fails with the list.
#[derive(Default)]
pub struct Checks {
    failures: Vec<String>,
}

impl Checks {
    pub fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }

    pub fn finish(self, context: &str) {
        assert!(
            self.failures.is_empty(),
            "{context}: {} check(s) failed:\n  - {}",
            self.failures.len(),
            self.failures.join("\n  - ")
        );
    }
}
