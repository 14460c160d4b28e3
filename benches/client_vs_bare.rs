//! servebench's client against a bare hyper streaming loop: the client-side CPU servebench
//! adds per request.
//!
//! `cargo bench --bench client_vs_bare` (optional positional args: requests per run
//! [100000], concurrency [8], pairs [5], prompt words [32], output tokens [16]).
//!
//! The embedded simulator runs with every delay at zero on loopback, on its own thread with a
//! current-thread runtime, and serves both sides. Each run is a closed loop at a fixed
//! concurrency for a fixed number of streamed chat requests, on a fresh current-thread
//! runtime on the main thread, each worker a task of its own (as `servebench run`'s closed
//! loop runs them):
//!
//! - A, servebench: `Client::send` (pooled keep-alive connections, request-id header, body
//!   built from the prompt, SSE framing, the chunk scan, timestamps, a full `RequestRecord`).
//! - B, bare: one hyper 1 HTTP/1.1 connection per worker over a `TcpStream` (`TCP_NODELAY`,
//!   as the client sets), POSTing the same JSON body (from `Client::request_body`, built
//!   once), reading the body to its end and looking for `data: [DONE]`; nothing else.
//!
//! **Measure: client CPU time per request** = (process CPU − simulator thread CPU) / requests,
//! from `CLOCK_PROCESS_CPUTIME_ID` and the simulator thread's `pthread_getcpuclockid` clock,
//! read just before and after the run's `block_on`. It counts every thread of the client
//! side (the runtime thread, and any helper thread a side might start), user and system
//! time, which is what "how much does servebench cost per request" asks; the share spent on
//! the runtime thread itself is printed as a check (100% when nothing else ran; a few percent
//! either way is the process clock's view of the busy simulator thread lagging by up to one
//! scheduler tick, which matters only for short runs).
//!
//! Why not wall-clock requests/s (printed, but not used for the ratio): with the server in the
//! same process on a 2-core machine, throughput is set by whichever thread is slower, here
//! the simulator, which spends more CPU per request than either client, and by whatever else
//! runs on the machine; both sides then reach about the same requests/s, and a wall-clock
//! ratio would compare the simulator with itself. CPU time is charged only while a side runs,
//! so on a quiet machine it shows the client's own cost. It is not immune to other load:
//! with the cores busy, cache misses and extra wakeups raised the bare side's figure by up to
//! 85% (BENCHMARKS.md), so quote quiet-machine ratios. Caveats: both sides run at the pace
//! the simulator sets (which decides how many events a read carries), and kernel loopback
//! work done in softirq context is charged to whichever thread the kernel runs it on, for
//! both sides alike.
//!
//! - C, servebench with a validated structured reply: `Client::send` of the same prompt with
//!   a `response_format: json_schema` in the body, the reply kept (every content delta
//!   appended, each chunk through the full parser) and checked against the schema as the
//!   runner's collector checks it (`ReplyCheck::check`: parse, validate). The simulator
//!   answers with JSON from the schema (about as many tokens as A's reply), so C − A is the
//!   client CPU a checked structured reply adds.
//!
//! Runs alternate (pair i runs A, B, C when i is even, C, B, A when odd) so drift in
//! machine load lands on every side; every run's figures, the per-pair ratios A/B and C/A
//! and the medians are printed. One unmeasured warmup run of each side comes first.

use std::net::SocketAddr;
use std::os::unix::thread::JoinHandleExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use servebench::client::{Api, Client, ClientConfig, Endpoint, ResolvedTimeouts, Sampling};
use servebench::metrics::reply_check::ReplyCheck;
use servebench::sim::{self, SimConfig};
use servebench::workload::{ChatMessage, Prompt, PromptInput};

fn arg(index: usize, default: u64) -> u64 {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .nth(index)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// This thread's user and system CPU time, in seconds.
fn thread_rusage_s() -> (f64, f64) {
    // SAFETY: all-zero bytes are a valid `rusage`, and it is a valid out-pointer.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (s(usage.ru_utime), s(usage.ru_stime))
}

fn clock_s(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The simulator on its own thread and current-thread runtime.
struct SimThread {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
    cpu_clock: libc::clockid_t,
}

impl SimThread {
    fn start() -> SimThread {
        let config = SimConfig {
            prefill_tok_s: Some(0.0),
            decode_ms_per_token: Some(0.0),
            decode_ms_per_running: Some(0.0),
            jitter: Some(0.0),
            max_running: Some(1 << 16),
            ..SimConfig::default()
        };
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("bench-sim".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async move {
                    let (addr, handle) = sim::serve(config).await.expect("simulator starts");
                    addr_tx.send(addr).expect("main thread waits");
                    let _ = stop_rx.await;
                    handle.shutdown().await;
                });
            })
            .expect("simulator thread");
        let addr = addr_rx.recv().expect("simulator address");
        assert!(addr.ip().is_loopback(), "the simulator listens on loopback");
        let mut cpu_clock: libc::clockid_t = 0;
        // SAFETY: the handle keeps the thread joinable, so its pthread_t is valid; `cpu_clock`
        // is a valid out-pointer.
        let rc = unsafe { libc::pthread_getcpuclockid(thread.as_pthread_t(), &mut cpu_clock) };
        assert_eq!(rc, 0, "pthread_getcpuclockid");
        SimThread {
            addr,
            stop,
            thread,
            cpu_clock,
        }
    }

    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

fn client_config(addr: SocketAddr, concurrency: usize) -> ClientConfig {
    ClientConfig {
        endpoint: Endpoint {
            base_url: format!("http://{addr}/v1"),
            ..Endpoint::default()
        },
        api: Api::Chat,
        model: "sim".into(),
        timeouts: ResolvedTimeouts {
            connect: Some(Duration::from_secs(10)),
            first_byte: Some(Duration::from_secs(30)),
            idle: Some(Duration::from_secs(30)),
            total: Some(Duration::from_secs(60)),
        },
        sampling: Sampling {
            ignore_eos: Some(true),
            ..Sampling::default()
        },
        max_connections: concurrency,
        ..ClientConfig::default()
    }
}

fn prompt_of(words: u64, output_tokens: u32) -> Prompt {
    let text: Vec<&str> = ["alpha", "beta", "gamma", "delta"]
        .iter()
        .cycle()
        .take(words as usize)
        .copied()
        .collect();
    Prompt {
        input: PromptInput::Messages(vec![ChatMessage::new("user", text.join(" "))]),
        planned_prompt_tokens: None,
        max_tokens: output_tokens,
        expected: None,
        scheduled_at: None,
        archetype: None,
        model: None,
        session: None,
    }
}

/// The schema side C's requests carry: an object of a few short fields, about as many
/// tokens as A's reply.
fn structured_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "required": ["name", "age", "ok"],
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 99},
            "ok": {"type": "boolean"}
        }
    })
}

/// Side C's client: A's, with the schema in the body and every reply kept.
fn structured_config(addr: SocketAddr, concurrency: usize) -> ClientConfig {
    let mut config = client_config(addr, concurrency);
    config.sampling.ignore_eos = None;
    config.body.insert(
        "response_format".into(),
        serde_json::json!({"type": "json_schema",
            "json_schema": {"name": "bench", "schema": structured_schema()}}),
    );
    config.keep_replies = true;
    config
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Servebench,
    Bare,
    Structured,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::Servebench => "A servebench",
            Side::Bare => "B bare hyper",
            Side::Structured => "C structured",
        }
    }
}

#[derive(Clone)]
struct Setup {
    addr: SocketAddr,
    requests: u64,
    concurrency: usize,
    prompt: Prompt,
    output_tokens: u64,
    /// The JSON body servebench sends for `prompt`, for the bare side.
    body: Bytes,
}

/// Hands out request indices to the workers of one run.
struct Counter {
    next: AtomicU64,
    end: u64,
}

impl Counter {
    fn new(end: u64) -> Arc<Self> {
        Arc::new(Counter {
            next: AtomicU64::new(0),
            end,
        })
    }

    fn take(&self) -> Option<u64> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        (n < self.end).then_some(n)
    }
}

/// Runs `concurrency` workers, each a task of its own, to their end: how `servebench run`'s
/// closed loop drives its workers. (In one task, joined, every wake-up would poll every
/// worker's whole future again.)
async fn run_workers<W, F>(concurrency: usize, worker: W)
where
    W: Fn() -> F,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        tasks.spawn(worker());
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("worker");
    }
}

async fn run_servebench(setup: &Arc<Setup>) {
    let client =
        Arc::new(Client::new(client_config(setup.addr, setup.concurrency)).expect("client"));
    let counter = Counter::new(setup.requests);
    let origin = Instant::now();
    run_workers(setup.concurrency, || {
        let (client, counter, setup) = (client.clone(), counter.clone(), setup.clone());
        async move {
            while let Some(index) = counter.take() {
                let record = client.send(index, &setup.prompt, origin).await;
                assert!(record.is_ok(), "request failed: {:?}", record.error);
                assert_eq!(record.output_tokens, Some(setup.output_tokens));
            }
        }
    })
    .await;
}

async fn run_structured(setup: &Arc<Setup>) {
    let client =
        Arc::new(Client::new(structured_config(setup.addr, setup.concurrency)).expect("client"));
    let check = Arc::new(ReplyCheck::new(Some(&structured_schema())).expect("schema"));
    let counter = Counter::new(setup.requests);
    let origin = Instant::now();
    run_workers(setup.concurrency, || {
        let (client, counter, setup) = (client.clone(), counter.clone(), setup.clone());
        let check = check.clone();
        async move {
            while let Some(index) = counter.take() {
                let mut record = client.send(index, &setup.prompt, origin).await;
                assert!(record.is_ok(), "request failed: {:?}", record.error);
                check.check(&mut record);
                assert_eq!(record.valid, Some(true), "{:?}", record.reply);
            }
        }
    })
    .await;
}

async fn bare_worker(setup: Arc<Setup>, counter: Arc<Counter>) {
    let done = memchr::memmem::Finder::new(b"data: [DONE]");
    let stream = tokio::net::TcpStream::connect(setup.addr)
        .await
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let host = setup.addr.to_string();
    // The tail of the previous frame, so a marker split across frames is still found.
    let mut carry: Vec<u8> = Vec::with_capacity(64);
    while counter.take().is_some() {
        sender.ready().await.expect("connection ready");
        let request = Request::builder()
            .method(Method::POST)
            .uri("/v1/chat/completions")
            .header(hyper::header::HOST, host.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(setup.body.clone()))
            .expect("request");
        let response = sender.send_request(request).await.expect("response");
        assert_eq!(response.status(), StatusCode::OK);
        let mut body = response.into_body();
        let mut found = false;
        carry.clear();
        while let Some(frame) = body.frame().await {
            let frame = frame.expect("body frame");
            let Some(data) = frame.data_ref() else {
                continue;
            };
            if found {
                continue;
            }
            if done.find(data).is_some() {
                found = true;
                continue;
            }
            carry.extend_from_slice(&data[..data.len().min(16)]);
            if done.find(&carry).is_some() {
                found = true;
                continue;
            }
            carry.clear();
            carry.extend_from_slice(&data[data.len().saturating_sub(16)..]);
        }
        assert!(found, "stream ended without data: [DONE]");
    }
}

async fn run_bare(setup: &Arc<Setup>) {
    let counter = Counter::new(setup.requests);
    run_workers(setup.concurrency, || {
        bare_worker(setup.clone(), counter.clone())
    })
    .await;
}

struct Figures {
    cpu_us_per_request: f64,
    /// Share of the client CPU spent on the runtime's own (main) thread.
    runtime_thread_share: f64,
    /// The runtime thread's user and system (kernel) time.
    runtime_user_us_per_request: f64,
    runtime_system_us_per_request: f64,
    sim_cpu_us_per_request: f64,
    requests_per_s: f64,
}

fn run_once(side: Side, setup: &Arc<Setup>, sim: &SimThread) -> Figures {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rusage_0 = thread_rusage_s();
    let (process_0, sim_0, thread_0, wall_0) = (
        clock_s(libc::CLOCK_PROCESS_CPUTIME_ID),
        clock_s(sim.cpu_clock),
        clock_s(libc::CLOCK_THREAD_CPUTIME_ID),
        Instant::now(),
    );
    match side {
        Side::Servebench => runtime.block_on(run_servebench(setup)),
        Side::Bare => runtime.block_on(run_bare(setup)),
        Side::Structured => runtime.block_on(run_structured(setup)),
    }
    let (process_1, sim_1, thread_1, wall) = (
        clock_s(libc::CLOCK_PROCESS_CPUTIME_ID),
        clock_s(sim.cpu_clock),
        clock_s(libc::CLOCK_THREAD_CPUTIME_ID),
        wall_0.elapsed().as_secs_f64(),
    );
    let rusage_1 = thread_rusage_s();
    drop(runtime);
    let n = setup.requests as f64;
    let client_s = (process_1 - process_0) - (sim_1 - sim_0);
    Figures {
        cpu_us_per_request: client_s / n * 1e6,
        runtime_thread_share: (thread_1 - thread_0) / client_s,
        runtime_user_us_per_request: (rusage_1.0 - rusage_0.0) / n * 1e6,
        runtime_system_us_per_request: (rusage_1.1 - rusage_0.1) / n * 1e6,
        sim_cpu_us_per_request: (sim_1 - sim_0) / n * 1e6,
        requests_per_s: n / wall,
    }
}

fn print_run(label: &str, side: Side, figures: &Figures) {
    println!(
        "{label:>7} {:<13} client CPU {:>6.2} us/req ({:>3.0}% on the runtime thread: user {:>5.2}, system {:>5.2})   simulator CPU {:>6.2} us/req   {:>6.0} req/s",
        side.label(),
        figures.cpu_us_per_request,
        figures.runtime_thread_share * 100.0,
        figures.runtime_user_us_per_request,
        figures.runtime_system_us_per_request,
        figures.sim_cpu_us_per_request,
        figures.requests_per_s
    );
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn main() {
    let requests = arg(0, 100_000).max(1);
    let concurrency = arg(1, 8).max(1) as usize;
    let pairs = arg(2, 5).max(1);
    let words = arg(3, 32);
    let output_tokens = arg(4, 16).max(1);
    let sim = SimThread::start();
    let prompt = prompt_of(words, output_tokens as u32);
    let body = Client::new(client_config(sim.addr, concurrency))
        .expect("client")
        .request_body(&prompt);
    let setup = Setup {
        addr: sim.addr,
        requests,
        concurrency,
        prompt,
        output_tokens,
        body: Bytes::from(body),
    };
    println!(
        "client_vs_bare: {requests} streamed chat requests per run, concurrency {concurrency}, \
         {words}-word prompts, {output_tokens} output tokens, {pairs} pairs; simulator with zero \
         delays on {} (own thread); each side on a current-thread runtime",
        sim.addr
    );
    println!("body: {} bytes", setup.body.len());
    let warm = Arc::new(Setup {
        requests: requests.min(5_000),
        ..setup.clone()
    });
    let setup = Arc::new(setup);
    for side in [Side::Servebench, Side::Bare, Side::Structured] {
        print_run("warmup", side, &run_once(side, &warm, &sim));
    }
    let mut ratios = Vec::new();
    let (mut a_all, mut b_all, mut c_all, mut c_ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for pair in 0..pairs {
        let mut order = [Side::Servebench, Side::Bare, Side::Structured];
        if pair % 2 == 1 {
            order.reverse();
        }
        let (mut a, mut b, mut c) = (0.0, 0.0, 0.0);
        for side in order {
            let figures = run_once(side, &setup, &sim);
            print_run(&format!("pair {}", pair + 1), side, &figures);
            match side {
                Side::Servebench => a = figures.cpu_us_per_request,
                Side::Bare => b = figures.cpu_us_per_request,
                Side::Structured => c = figures.cpu_us_per_request,
            }
        }
        let ratio = a / b;
        println!(
            "{:>7} ratio A/B {ratio:.2} (A − B = {:.2} us/req), C/A {:.2} (C − A = {:.2} us/req)",
            format!("pair {}", pair + 1),
            a - b,
            c / a,
            c - a
        );
        ratios.push(ratio);
        c_ratios.push(c / a);
        a_all.push(a);
        b_all.push(b);
        c_all.push(c);
    }
    sim.stop();
    let ratio_list: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    let (a_median, b_median) = (median(&mut a_all), median(&mut b_all));
    println!(
        "client CPU per request, median: A servebench {a_median:.2} us, B bare {b_median:.2} us \
         (A − B = {:.2} us)",
        a_median - b_median
    );
    println!(
        "ratios A/B: [{}]   median ratio A/B: {:.2}",
        ratio_list.join(", "),
        median(&mut ratios)
    );
    let c_median = median(&mut c_all);
    println!(
        "C structured, checked: median {c_median:.2} us/req (C − A = {:.2} us), median ratio \
         C/A {:.2}",
        c_median - a_median,
        median(&mut c_ratios)
    );
}
