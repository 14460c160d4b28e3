//! Prompt sizing by arithmetic against whole-prompt tokenization, for every tokenizer source,
//! the prompt queue's order and bounds, and the client-ceiling warning for costly prompts.

use std::path::PathBuf;

use servebench::plan::{
    Api, Conversation, Dataset, DatasetFormat, NormalLength, SharedPrefix, TokenCount,
    TokenizerSource, TokenizerSpec, Trace, Workload,
};
use servebench::sim::tokenizer::{count_chat_tokens, count_text_tokens};
use servebench::sim::{self, SimConfig};
use servebench::workload::{
    Prompt, PromptInput, PromptQueue, PromptSource, Sizing, WorkloadContext,
};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn smollm_dir() -> PathBuf {
    repo().join("tests/fixtures/tokenizers/smollm2-135m")
}

fn context(api: Api, source: TokenizerSource, seed: u64) -> WorkloadContext {
    let path = match source {
        TokenizerSource::File => Some(smollm_dir().join("tokenizer.json").display().to_string()),
        TokenizerSource::Simulator | TokenizerSource::Builtin | TokenizerSource::Server => None,
    };
    WorkloadContext {
        api,
        tokenizer: TokenizerSpec {
            source,
            path,
            chat_template: None,
        },
        plan_dir: repo().join("tests/fixtures/workload"),
        seed,
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "sim".into(),
        text_salt: None,
    }
}

/// Workloads of every synthetic shape, plus a dataset and a trace.
fn workloads() -> Vec<(&'static str, Workload)> {
    let fixed = |n: u32| Workload {
        input_tokens: Some(TokenCount::Fixed(n)),
        ..Workload::default()
    };
    vec![
        ("fixed 40", fixed(40)),
        ("fixed 333", fixed(333)),
        ("fixed 4096", fixed(4096)),
        (
            "normal",
            Workload {
                input_tokens: Some(TokenCount::Normal(NormalLength {
                    mean: 300.0,
                    stddev: 120.0,
                    min: Some(30),
                    max: None,
                })),
                ..Workload::default()
            },
        ),
        (
            "shared prefix",
            Workload {
                input_tokens: Some(TokenCount::Fixed(500)),
                shared_prefix: Some(SharedPrefix {
                    tokens: 200,
                    groups: 3,
                }),
                ..Workload::default()
            },
        ),
        (
            "conversation",
            Workload {
                input_tokens: Some(TokenCount::Fixed(60)),
                output_tokens: Some(TokenCount::Fixed(30)),
                conversation: Some(Conversation { turns: 3 }),
                ..Workload::default()
            },
        ),
        (
            "dataset",
            Workload {
                dataset: Some(Dataset {
                    path: "prompts.jsonl".into(),
                    format: DatasetFormat::Jsonl,
                    min_input_tokens: None,
                    max_input_tokens: None,
                    sample: None,
                    multi_turn: false,
                    generate: None,
                    rows: None,
                    seed: None,
                }),
                ..Workload::default()
            },
        ),
        (
            "trace",
            Workload {
                trace: Some(Trace {
                    path: "trace.jsonl".into(),
                    format: Default::default(),
                    time_scale: 1.0,
                    block_tokens: Some(100),
                }),
                ..Workload::default()
            },
        ),
    ]
}

/// Counted outside the workload module: the SmolLM2 tokenizer (the built-in table is the
/// same file) over the built-in ChatML rendering, or SmolLM2's own template for `file`.
fn hf_count(source: TokenizerSource, prompt: &Prompt) -> u64 {
    static TOKENIZER: std::sync::OnceLock<tokenizers::Tokenizer> = std::sync::OnceLock::new();
    let tokenizer = TOKENIZER.get_or_init(|| {
        tokenizers::Tokenizer::from_file(smollm_dir().join("tokenizer.json")).expect("load")
    });
    let (text, special) = match (&prompt.input, source) {
        (PromptInput::Messages(m), TokenizerSource::File) => {
            let template =
                std::fs::read_to_string(smollm_dir().join("chat_template.jinja")).expect("read");
            let mut env = minijinja::Environment::new();
            env.add_template_owned("t", template).expect("compile");
            let text = env
                .get_template("t")
                .and_then(|t| {
                    t.render(minijinja::context! {messages => m, add_generation_prompt => true})
                })
                .expect("render");
            (text, false)
        }
        (PromptInput::Messages(m), _) => {
            let mut text = String::new();
            for m in m {
                text.push_str(&format!(
                    "<|im_start|>{}\n{}<|im_end|>\n",
                    m.role, m.content
                ));
            }
            text.push_str("<|im_start|>assistant\n");
            (text, false)
        }
        (PromptInput::Text(t), _) => (t.clone(), true),
        (PromptInput::Batch { .. }, _) => panic!("chat and completions prompts only"),
    };
    tokenizer.encode_fast(text, special).expect("encode").len() as u64
}

fn sim_count(prompt: &Prompt) -> u64 {
    match &prompt.input {
        PromptInput::Messages(m) => count_chat_tokens(m.iter().map(|m| m.content.as_str())),
        PromptInput::Text(t) => count_text_tokens(t),
        PromptInput::Batch { .. } => panic!("chat and completions prompts only"),
    }
}

/// Arithmetic sizing gives, prompt for prompt, what tokenizing every candidate whole gives
/// (the sizing the project always had): the same text and the same, exact, planned count.
fn assert_same_as_retokenizing(source: TokenizerSource, seeds: std::ops::Range<u64>, n: u64) {
    for api in [Api::Chat, Api::Completions] {
        for (name, workload) in workloads() {
            for seed in seeds.clone() {
                let ctx = context(api, source, seed);
                let fast = PromptSource::new(&workload, &ctx).expect("source");
                assert_eq!(
                    fast.sizing(),
                    Sizing::Arithmetic,
                    "{source:?} {api:?} {name}"
                );
                let reference = PromptSource::new(&workload, &ctx)
                    .expect("source")
                    .with_sizing(Sizing::Retokenize);
                for i in 0..n {
                    let (a, b) = (fast.prompt(i), reference.prompt(i));
                    assert_eq!(a, b, "{source:?} {api:?} {name} seed {seed} prompt {i}");
                    let planned = a.planned_prompt_tokens.expect("planned");
                    let counted = match source {
                        TokenizerSource::Simulator => sim_count(&a),
                        TokenizerSource::Builtin | TokenizerSource::File if i < 2 => {
                            hf_count(source, &a)
                        }
                        _ => planned,
                    };
                    assert_eq!(
                        planned, counted,
                        "{source:?} {api:?} {name} seed {seed} #{i}"
                    );
                }
            }
        }
    }
}

#[test]
fn arithmetic_sizing_is_exact_with_the_simulator_rules() {
    assert_same_as_retokenizing(TokenizerSource::Simulator, 0..12, 6);
}

#[test]
fn arithmetic_sizing_is_exact_with_the_builtin_table() {
    assert_same_as_retokenizing(TokenizerSource::Builtin, 0..3, 3);
}

#[test]
fn arithmetic_sizing_is_exact_with_a_tokenizer_file() {
    assert_same_as_retokenizing(TokenizerSource::File, 10..12, 3);
}

#[test]
fn many_seeds_and_lengths_hit_their_target_exactly() {
    for source in [
        TokenizerSource::Simulator,
        TokenizerSource::Builtin,
        TokenizerSource::File,
    ] {
        for api in [Api::Chat, Api::Completions] {
            let workload = Workload {
                input_tokens: Some(TokenCount::Uniform(servebench::plan::UniformLength {
                    min: 20,
                    max: 3000,
                })),
                ..Workload::default()
            };
            let ctx = context(api, source, 99);
            let fast = PromptSource::new(&workload, &ctx).expect("source");
            // Draws the same targets, so each prompt's planned count is its drawn target.
            let reference = PromptSource::new(&workload, &ctx)
                .expect("source")
                .with_sizing(Sizing::Retokenize);
            for i in 0..25 {
                let a = fast.prompt(i);
                assert_eq!(a, reference.prompt(i), "{source:?} {api:?} #{i}");
                let counted = match source {
                    TokenizerSource::Simulator => sim_count(&a),
                    _ => hf_count(source, &a),
                };
                assert_eq!(
                    a.planned_prompt_tokens,
                    Some(counted),
                    "{source:?} {api:?} #{i}"
                );
            }
        }
    }
}

/// A tokenizer whose pre-tokenizer does not split words: no arithmetic, prompts re-tokenized
/// and still exact.
#[test]
fn a_tokenizer_without_word_splits_is_re_tokenized_and_still_exact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(smollm_dir().join("tokenizer.json")).expect("read"),
    )
    .expect("json");
    json["pre_tokenizer"] = serde_json::json!({
        "type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false
    });
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, json.to_string()).expect("write");
    let tokenizer = tokenizers::Tokenizer::from_file(&path).expect("load");
    let workload = Workload {
        input_tokens: Some(TokenCount::Fixed(120)),
        ..Workload::default()
    };
    let mut ctx = context(Api::Completions, TokenizerSource::File, 3);
    ctx.tokenizer.path = Some(path.display().to_string());
    let source = PromptSource::new(&workload, &ctx).expect("source");
    assert_eq!(source.sizing(), Sizing::Retokenize);
    for i in 0..5 {
        let p = source.prompt(i);
        let PromptInput::Text(text) = &p.input else {
            panic!("completions prompt");
        };
        let counted = tokenizer
            .encode_fast(text.as_str(), true)
            .expect("encode")
            .len() as u64;
        assert_eq!(p.planned_prompt_tokens, Some(counted));
    }
}

#[tokio::test]
async fn server_tokenizer_sizes_by_arithmetic_exactly_against_tokenize() {
    let (addr, handle) = sim::serve(SimConfig::default()).await.expect("simulator");
    let http = reqwest::Client::new();
    for api in [Api::Chat, Api::Completions] {
        // Datasets are natural text, which the calibrated model only approximates.
        for (name, workload) in workloads().into_iter().filter(|(n, _)| *n != "dataset") {
            let mut ctx = context(api, TokenizerSource::Server, 5);
            ctx.base_url = format!("http://{addr}/v1");
            let mut source = PromptSource::new(&workload, &ctx).expect("source");
            source.calibrate().await.expect("calibrates");
            assert_eq!(source.sizing(), Sizing::Arithmetic, "{api:?} {name}");
            let mut reference = PromptSource::new(&workload, &ctx)
                .expect("source")
                .with_sizing(Sizing::Retokenize);
            reference.calibrate().await.expect("calibrates");
            assert_eq!(reference.sizing(), Sizing::Retokenize);
            for i in 0..4 {
                let p = source.prompt(i);
                assert_eq!(p, reference.prompt(i), "{api:?} {name} #{i}");
                // The calibrated model counts the line breaks between turns of a completions
                // conversation, which the simulator does not.
                if api == Api::Completions && name == "conversation" {
                    continue;
                }
                let body = match &p.input {
                    PromptInput::Messages(m) => {
                        serde_json::json!({"model": "sim", "messages": m, "add_generation_prompt": true})
                    }
                    PromptInput::Text(t) => serde_json::json!({"model": "sim", "prompt": t}),
                    PromptInput::Batch { .. } => panic!("chat and completions prompts only"),
                };
                let answer: serde_json::Value = http
                    .post(format!("http://{addr}/tokenize"))
                    .header("content-type", "application/json")
                    .body(body.to_string())
                    .send()
                    .await
                    .expect("tokenize")
                    .text()
                    .await
                    .map(|t| serde_json::from_str(&t).expect("json"))
                    .expect("body");
                assert_eq!(
                    p.planned_prompt_tokens,
                    answer["count"].as_u64(),
                    "{api:?} {name} #{i}"
                );
            }
        }
    }
    handle.shutdown().await;
}

#[tokio::test]
async fn the_queue_gives_the_sources_order_with_any_thread_count() {
    let workload = Workload {
        input_tokens: Some(TokenCount::Uniform(servebench::plan::UniformLength {
            min: 20,
            max: 400,
        })),
        ..Workload::default()
    };
    let ctx = context(Api::Chat, TokenizerSource::Builtin, 8);
    let mut reference = PromptSource::new(&workload, &ctx).expect("source");
    let expected: Vec<Prompt> = (0..60).map(|_| reference.next_prompt()).collect();
    for threads in [1, 3] {
        let queue =
            PromptQueue::with_threads(PromptSource::new(&workload, &ctx).expect("s"), 8, threads);
        for (i, want) in expected.iter().enumerate() {
            let got = queue.next().await;
            assert_eq!(&got, want, "{threads} threads, prompt {i}");
            // Lanes are bounded: never more built than taken plus what the lanes hold, one
            // batch waiting to go in and the rest of the batch being read, per lane.
            let stats = queue.stats();
            let held = stats.threads * (stats.lane_depth.div_ceil(stats.batch) + 2) * stats.batch;
            assert!(stats.built <= stats.taken + held as u64, "{stats:?}");
        }
        assert_eq!(queue.stats().taken, 60);
    }
}

#[test]
fn long_prompts_are_held_within_the_byte_budget() {
    let workload = Workload {
        input_tokens: Some(TokenCount::Fixed(131_072)),
        ..Workload::default()
    };
    let ctx = context(Api::Chat, TokenizerSource::Builtin, 1);
    let queue = PromptQueue::start(PromptSource::new(&workload, &ctx).expect("source"), 8192);
    let stats = queue.stats();
    // About 0.6 MB a prompt: the lanes hold at most the budget's worth, not 8,192.
    let per_prompt = 131_072 * 4;
    assert!(
        stats.lane_depth * stats.threads
            <= servebench::workload::queue::BYTE_BUDGET / per_prompt + stats.threads,
        "{stats:?}"
    );
    assert!(stats.cpu_s_per_prompt > 0.0, "{stats:?}");
}

/// A workload the client cannot feed is named before the phase runs; a phase of a few requests,
/// whose prompts are all built before it starts, is not. (Durations, not counts, bound the
/// warned phases: their request counts are not known beforehand.)
#[test]
fn costly_prompts_at_a_high_rate_trigger_the_headroom_warning() {
    let _guard = crate::common::exclusive_run_blocking();
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"version: 1
name: costly-prompts
targets:
  sim:
    simulator: {{prefill_tok_s: 0, decode_ms_per_token: 0, max_model_len: 1000000}}
workloads:
  huge:
    input_tokens: 131072
    output_tokens: 4
    tokenizer: {{source: file, path: "{}"}}
phases:
  - name: flood
    target: sim
    workload: huge
    rate: {{rps: 5000, arrival: constant}}
    duration: 20ms
  - name: closed
    target: sim
    workload: huge
    concurrency: 2
    duration: 200ms
  - name: few
    target: sim
    workload: huge
    rate: {{rps: 5000, arrival: constant}}
    requests: 2
"#,
        smollm_dir().join("tokenizer.json").display()
    );
    let plan_path = dir.path().join("plan.yaml");
    std::fs::write(&plan_path, plan).expect("write plan");
    let output = assert_cmd::Command::cargo_bin("servebench")
        .expect("binary")
        .args(["run", "--quiet", "--no-latency-hint", "--output"])
        .arg(dir.path().join("out"))
        .arg(&plan_path)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: phase `flood`: its prompts (workload `huge`, tokenizer file")
            && stderr.contains("at 5000 requests/s the client, not the server, would set the pace"),
        "{stderr}"
    );
    // A closed loop has no rate to compare with: its prompts are slower than the client.
    assert!(
        stderr.contains("warning: phase `closed`: its prompts (workload `huge`")
            && stderr.contains("below the client's own ceiling"),
        "{stderr}"
    );
    // Two requests at the same rate: both prompts are built before the phase starts.
    assert!(
        !stderr.contains("warning: phase `few`: its prompts"),
        "{stderr}"
    );
}
