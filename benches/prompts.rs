//! Prompt generation cost per tokenizer source, and the client's throughput and timing with
//! a real workload's prompts against the zero-delay simulator.
//!
//! `cargo bench --bench prompts` runs all three parts; `-- rates`, `-- closed` or `-- open`
//! runs one.
//! - rates: prompts per CPU second (one core) for each tokenizer source at 128 … 128k tokens,
//!   sized by arithmetic, and for the local tokenizers also re-tokenized whole (the sizing
//!   used before) for comparison;
//! - closed: concurrency 64, 16 output tokens, 4,096- and 32-token prompts per tokenizer,
//!   through the prompt queue a `run` uses (`selftest::workload_closed_case`);
//! - open: 100 req/s, 4,096-token prompts, `builtin` against `simulator` counting: TTFT and
//!   send lag (`selftest::workload_open_case`), alternating the two, three rounds.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use servebench::plan::{Api, TokenCount, TokenizerSource, TokenizerSpec, Workload};
use servebench::selftest::{self, Quantiles};
use servebench::sim::{self, SimConfig};
use servebench::workload::{PromptQueue, PromptSource, Sizing, WorkloadContext};

const LENGTHS: [u32; 5] = [128, 1024, 4096, 16384, 131_072];
/// Rounds of the open-loop comparison.
const OPEN_ROUNDS: u32 = 3;
/// CPU time spent per cell of the rates table (at least one prompt).
const CELL_CPU: Duration = Duration::from_millis(400);

fn smollm() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizers/smollm2-135m")
}

fn context(source: TokenizerSource, base_url: &str) -> WorkloadContext {
    WorkloadContext {
        api: Api::Chat,
        tokenizer: TokenizerSpec {
            source,
            path: matches!(source, TokenizerSource::File)
                .then(|| smollm().join("tokenizer.json").display().to_string()),
            chat_template: None,
        },
        plan_dir: PathBuf::from("."),
        seed: 1,
        base_url: base_url.to_string(),
        model: "sim".into(),
        text_salt: None,
    }
}

fn workload(tokens: u32) -> Workload {
    Workload {
        input_tokens: Some(TokenCount::Fixed(tokens)),
        output_tokens: Some(TokenCount::Fixed(selftest::OUTPUT_TOKENS)),
        ignore_eos: Some(true),
        ..Workload::default()
    }
}

fn source(
    kind: TokenizerSource,
    tokens: u32,
    base_url: &str,
    runtime: &tokio::runtime::Runtime,
) -> PromptSource {
    let mut source = PromptSource::new(&workload(tokens), &context(kind, base_url))
        .unwrap_or_else(|e| panic!("{kind:?} {tokens}: {e}"));
    runtime
        .block_on(source.calibrate())
        .unwrap_or_else(|e| panic!("{kind:?} calibration: {e}"));
    source
}

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Prompts per CPU second on this thread, building prompts 1, 2, … (0 warms caches).
fn per_core(source: &PromptSource) -> f64 {
    let _ = source.prompt(0);
    let start = thread_cpu();
    let mut n = 0u64;
    while n == 0 || thread_cpu() - start < CELL_CPU {
        n += 1;
        std::hint::black_box(source.prompt(n));
    }
    n as f64 / (thread_cpu() - start).as_secs_f64()
}

fn kind_name(kind: TokenizerSource) -> &'static str {
    match kind {
        TokenizerSource::Simulator => "simulator",
        TokenizerSource::Builtin => "builtin",
        TokenizerSource::File => "file (SmolLM2)",
        TokenizerSource::Server => "server (/tokenize)",
    }
}

fn rates(runtime: &tokio::runtime::Runtime, base_url: &str) {
    println!("\n## Prompts per second, one core (chat, fixed length, arithmetic sizing)\n");
    print!("| tokenizer | sizing |");
    for n in LENGTHS {
        print!(" {n} |");
    }
    println!("\n|---|---|{}", "---:|".repeat(LENGTHS.len()));
    let kinds = [
        TokenizerSource::Simulator,
        TokenizerSource::Builtin,
        TokenizerSource::File,
        TokenizerSource::Server,
    ];
    for kind in kinds {
        for sizing in [Sizing::Arithmetic, Sizing::Retokenize] {
            let local_hf = matches!(kind, TokenizerSource::Builtin | TokenizerSource::File);
            if sizing == Sizing::Retokenize && !local_hf {
                continue;
            }
            print!("| {} | {sizing:?} |", kind_name(kind));
            for n in LENGTHS {
                let s = source(kind, n, base_url, runtime).with_sizing(sizing);
                print!(" {:.0} |", per_core(&s));
                use std::io::Write;
                let _ = std::io::stdout().flush();
            }
            println!();
        }
    }
}

fn fmt_q(q: &Option<Quantiles>) -> String {
    q.map_or("-".into(), |q| {
        format!("{:.3} / {:.3} / {:.3}", q.p50, q.p99, q.max)
    })
}

fn closed(runtime: &tokio::runtime::Runtime) {
    println!("\n## Concurrency 64, zero-delay simulator, 16 output tokens\n");
    println!(
        "| prompt | tokenizer | requests/s | client CPU per request, ms | prompt CPU per prompt, ms | waits for a prompt |"
    );
    println!("|---|---|---:|---:|---:|---:|");
    let cases = [
        (4096, TokenizerSource::Simulator),
        (4096, TokenizerSource::Builtin),
        (4096, TokenizerSource::File),
        (32, TokenizerSource::Simulator),
        (32, TokenizerSource::Builtin),
    ];
    for (tokens, kind) in cases {
        let queue = Arc::new(PromptQueue::start(
            source(kind, tokens, "http://127.0.0.1:9/v1", runtime),
            servebench::scheduler::prompt_depth(&servebench::scheduler::Load::Closed {
                concurrency: 64,
            }),
        ));
        let case = selftest::workload_closed_case(
            64,
            &queue,
            tokens,
            Duration::from_millis(500),
            Duration::from_secs(3),
        )
        .expect("case runs");
        let stats = queue.stats();
        println!(
            "| {tokens} | {} | {:.0} | {:.4} | {:.4} | {} of {} |",
            kind_name(kind),
            case.requests_per_s,
            case.client_cpu_s / case.requests.max(1) as f64 * 1e3,
            stats.cpu_s_per_prompt * 1e3,
            stats.waits,
            stats.taken,
        );
    }
}

fn open(runtime: &tokio::runtime::Runtime) {
    println!("\n## Open loop, 100 req/s constant, 4,096-token prompts, 10 s after 1 s warmup\n");
    println!(
        "| round | tokenizer | requests | errors | TTFT p50 / p99 / max, ms | send lag p50 / p99 / max, ms | waits for a prompt |"
    );
    println!("|---:|---|---:|---:|---|---|---:|");
    // Alternating, so that the host's noise falls on both alike.
    let rounds = (0..OPEN_ROUNDS).flat_map(|r| {
        [
            (r, TokenizerSource::Simulator),
            (r, TokenizerSource::Builtin),
        ]
    });
    for (round, kind) in rounds {
        let queue = Arc::new(PromptQueue::start(
            source(kind, 4096, "http://127.0.0.1:9/v1", runtime),
            servebench::scheduler::prompt_depth(&servebench::scheduler::Load::Open {
                rps: 100.0,
                arrival: servebench::plan::Arrival::Constant,
                burstiness: None,
                max_concurrency: None,
            }),
        ));
        let timing = selftest::workload_open_case(
            100.0,
            &queue,
            Duration::from_secs(1),
            Duration::from_secs(10),
        )
        .expect("case runs");
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            round + 1,
            kind_name(kind),
            timing.requests,
            timing.errors,
            fmt_q(&timing.ttft_ms),
            fmt_q(&timing.send_lag_ms),
            timing.prompt_waits
        );
    }
}

fn main() {
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |part: &str| only.is_empty() || only.iter().any(|a| a == part);
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let (_hint, hint) = servebench::wakeup::request_if(true);
    println!(
        "load average at start: {}CPU wake-latency hint: {:?}",
        load(),
        hint.status
    );
    let started = Instant::now();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    if wants("rates") {
        // A simulator for the `server` source's /tokenize calibration.
        let (addr, handle) = runtime
            .block_on(sim::serve(SimConfig::default()))
            .expect("simulator");
        rates(&runtime, &format!("http://{addr}/v1"));
        runtime.block_on(handle.shutdown());
    }
    if wants("closed") {
        selftest::raise_nofile_limit();
        closed(&runtime);
    }
    if wants("open") {
        open(&runtime);
    }
    println!(
        "\nload average at end: {}({:.0} s)",
        load(),
        started.elapsed().as_secs_f64()
    );
}
