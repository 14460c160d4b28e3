//! Workload tests: prompt sizes, determinism, shared prefixes, datasets, traces, calibration.

use std::path::{Path, PathBuf};
use std::time::Duration;

use servebench::plan::{
    Api, ChoiceLength, Conversation, Dataset, DatasetFormat, LogNormalLength, NormalLength,
    SharedPrefix, TokenCount, TokenizerSource, TokenizerSpec, Trace, UniformLength, Workload,
};
use servebench::sim::tokenizer::{count_chat_tokens, count_text_tokens};
use servebench::workload::tokens::TokenizeDialect;
use servebench::workload::{ChatMessage, Prompt, PromptInput, PromptSource, WorkloadContext};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    repo().join("tests/fixtures/workload")
}

fn smollm_dir() -> PathBuf {
    repo().join("tests/fixtures/tokenizers/smollm2-135m")
}

fn context(api: Api, source: TokenizerSource, seed: u64) -> WorkloadContext {
    let (path, chat_template) = match source {
        TokenizerSource::File => (
            Some(smollm_dir().join("tokenizer.json").display().to_string()),
            Some(
                smollm_dir()
                    .join("chat_template.jinja")
                    .display()
                    .to_string(),
            ),
        ),
        TokenizerSource::Simulator | TokenizerSource::Builtin | TokenizerSource::Server => {
            (None, None)
        }
    };
    WorkloadContext {
        api,
        tokenizer: TokenizerSpec {
            source,
            path,
            chat_template,
        },
        plan_dir: fixtures(),
        seed,
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "sim".into(),
        text_salt: None,
    }
}

fn fixed(n: u32) -> Option<TokenCount> {
    Some(TokenCount::Fixed(n))
}

fn sim_count(prompt: &Prompt) -> u64 {
    match &prompt.input {
        PromptInput::Messages(m) => count_chat_tokens(m.iter().map(|m| m.content.as_str())),
        PromptInput::Text(t) => count_text_tokens(t),
        PromptInput::Batch { texts, .. } => texts.iter().map(|t| count_text_tokens(t)).sum(),
    }
}

fn first_content(prompt: &Prompt) -> &str {
    match &prompt.input {
        PromptInput::Messages(m) => m.last().map_or("", |m| m.content.as_str()),
        PromptInput::Text(t) => t,
        PromptInput::Batch { texts, .. } => texts.first().map_or("", String::as_str),
    }
}

fn take(source: &mut PromptSource, n: usize) -> Vec<Prompt> {
    (0..n).map(|_| source.next_prompt()).collect()
}

#[test]
fn simulator_counts_hit_fixed_targets_exactly() {
    for api in [Api::Chat, Api::Completions] {
        for target in [16u32, 128, 1000, 4096] {
            let workload = Workload {
                input_tokens: fixed(target),
                output_tokens: fixed(64),
                ..Workload::default()
            };
            let mut source =
                PromptSource::new(&workload, &context(api, TokenizerSource::Simulator, 7))
                    .expect("source");
            for prompt in take(&mut source, 20) {
                assert_eq!(sim_count(&prompt), u64::from(target), "{api:?} {target}");
                assert_eq!(prompt.planned_prompt_tokens, Some(u64::from(target)));
                assert_eq!(prompt.max_tokens, 64);
                assert_eq!(prompt.scheduled_at, None);
                match (&prompt.input, api) {
                    (PromptInput::Messages(m), Api::Chat) => assert_eq!(m.len(), 1),
                    (PromptInput::Text(_), Api::Completions) => {}
                    (other, api) => panic!("{api:?} got {other:?}"),
                }
            }
        }
    }
}

#[test]
fn simulator_counts_hit_sampled_targets_exactly() {
    let lengths = [
        TokenCount::Normal(NormalLength {
            mean: 300.0,
            stddev: 80.0,
            min: Some(50),
            max: Some(600),
        }),
        TokenCount::LogNormal(LogNormalLength {
            median: 200.0,
            sigma: 0.5,
            min: None,
            max: Some(2000),
        }),
        TokenCount::Uniform(UniformLength { min: 40, max: 900 }),
        TokenCount::Choice(ChoiceLength {
            values: vec![64, 256, 1024],
            weights: Some(vec![1.0, 2.0, 1.0]),
        }),
    ];
    for api in [Api::Chat, Api::Completions] {
        for length in &lengths {
            let workload = Workload {
                input_tokens: Some(length.clone()),
                output_tokens: Some(TokenCount::Uniform(UniformLength { min: 10, max: 20 })),
                ..Workload::default()
            };
            let mut source =
                PromptSource::new(&workload, &context(api, TokenizerSource::Simulator, 3))
                    .expect("source");
            let prompts = take(&mut source, 40);
            let mut distinct = std::collections::BTreeSet::new();
            for prompt in &prompts {
                let planned = prompt.planned_prompt_tokens.expect("planned");
                assert_eq!(sim_count(prompt), planned, "{api:?} {length:?}");
                assert!((10..=20).contains(&prompt.max_tokens));
                distinct.insert(planned);
            }
            assert!(distinct.len() > 1, "{length:?} drew one length only");
            if let TokenCount::Choice(c) = length {
                assert!(distinct.iter().all(|p| c.values.contains(&(*p as u32))));
            }
            if let TokenCount::Normal(_) = length {
                assert!(distinct.iter().all(|p| (50..=600).contains(p)));
            }
        }
    }
}

#[test]
fn default_lengths_and_tiny_targets() {
    let mut source = PromptSource::new(
        &Workload::default(),
        &context(Api::Chat, TokenizerSource::Simulator, 0),
    )
    .expect("source");
    let p = source.next_prompt();
    assert_eq!(p.planned_prompt_tokens, Some(512));
    assert_eq!(p.max_tokens, 256);
    // Chat: 4 nonce words + 4 + 3 template tokens is the floor.
    let err = PromptSource::new(
        &Workload {
            input_tokens: fixed(5),
            ..Workload::default()
        },
        &context(Api::Chat, TokenizerSource::Simulator, 0),
    )
    .err()
    .expect("too small");
    assert!(
        err.to_string()
            .contains("input_tokens 5 is below the 11 tokens"),
        "{err}"
    );
}

#[test]
fn same_seed_same_prompts_other_seed_other_prompts() {
    let workload = Workload {
        input_tokens: Some(TokenCount::Uniform(UniformLength { min: 50, max: 500 })),
        ..Workload::default()
    };
    let run = |seed| {
        let mut s = PromptSource::new(
            &workload,
            &context(Api::Chat, TokenizerSource::Simulator, seed),
        )
        .expect("source");
        take(&mut s, 30)
    };
    let a = run(11);
    assert_eq!(a, run(11));
    let b = run(12);
    assert_ne!(a, b);
    assert!(a.iter().zip(&b).all(|(x, y)| x.input != y.input));
    // Every request starts differently (the nonce defeats prefix caching).
    let firsts: std::collections::BTreeSet<_> = a
        .iter()
        .map(|p| {
            first_content(p)
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(firsts.len(), a.len());
}

#[test]
fn shared_prefix_is_identical_within_a_group_and_differs_across() {
    let (tokens, target) = (300usize, 450u64);
    let workload = Workload {
        input_tokens: fixed(target as u32),
        shared_prefix: Some(SharedPrefix {
            tokens: tokens as u32,
            groups: 3,
        }),
        ..Workload::default()
    };
    for api in [Api::Chat, Api::Completions] {
        let mut source = PromptSource::new(&workload, &context(api, TokenizerSource::Simulator, 5))
            .expect("source");
        let prompts = take(&mut source, 30);
        let mut prefixes = std::collections::BTreeMap::<String, usize>::new();
        let mut suffixes = std::collections::BTreeSet::new();
        for p in &prompts {
            assert_eq!(sim_count(p), target);
            assert_eq!(p.planned_prompt_tokens, Some(target));
            let words: Vec<&str> = first_content(p).split_whitespace().collect();
            *prefixes.entry(words[..tokens].join(" ")).or_default() += 1;
            suffixes.insert(words[tokens..].join(" "));
        }
        assert_eq!(prefixes.len(), 3, "{api:?}: three groups, all used");
        assert!(prefixes.values().all(|n| *n >= 2));
        assert_eq!(suffixes.len(), prompts.len(), "suffixes are unique");
        // Different groups differ from their first token on.
        let firsts: std::collections::BTreeSet<_> = prefixes
            .keys()
            .map(|k| k.split(' ').next().unwrap_or("").to_string())
            .collect();
        assert!(firsts.len() >= 2);
    }
}

#[test]
fn conversation_turns_extend_the_previous_turn() {
    let workload = Workload {
        input_tokens: fixed(100),
        output_tokens: fixed(30),
        conversation: Some(Conversation { turns: 3 }),
        ..Workload::default()
    };
    let mut source = PromptSource::new(
        &workload,
        &context(Api::Chat, TokenizerSource::Simulator, 1),
    )
    .expect("source");
    let prompts = take(&mut source, 6);
    let messages = |p: &Prompt| match &p.input {
        PromptInput::Messages(m) => m.clone(),
        PromptInput::Text(_) | PromptInput::Batch { .. } => panic!("chat expected"),
    };
    for conv in prompts.chunks(3) {
        assert_eq!(conv[0].planned_prompt_tokens, Some(100));
        for pair in conv.windows(2) {
            let (a, b) = (messages(&pair[0]), messages(&pair[1]));
            assert_eq!(b.len(), a.len() + 2);
            assert_eq!(&b[..a.len()], &a[..]);
            assert_eq!(b[a.len()].role, "assistant");
            assert_eq!(count_text_tokens(&b[a.len()].content), 30);
        }
        for p in conv {
            assert_eq!(sim_count(p), p.planned_prompt_tokens.expect("planned"));
        }
    }
    assert_ne!(messages(&prompts[0])[0], messages(&prompts[3])[0]);
}

/// Renders SmolLM2's template and counts with `tokenizers` directly, independently of the
/// workload module's own counter.
struct Reference {
    tokenizer: tokenizers::Tokenizer,
    env: minijinja::Environment<'static>,
}

impl Reference {
    fn new() -> Self {
        let tokenizer =
            tokenizers::Tokenizer::from_file(smollm_dir().join("tokenizer.json")).expect("load");
        let source =
            std::fs::read_to_string(smollm_dir().join("chat_template.jinja")).expect("template");
        let mut env = minijinja::Environment::new();
        env.add_template_owned("t", source).expect("compile");
        Reference { tokenizer, env }
    }

    fn count(&self, prompt: &Prompt) -> u64 {
        let text = match &prompt.input {
            PromptInput::Messages(m) => self
                .env
                .get_template("t")
                .and_then(|t| {
                    t.render(minijinja::context! {messages => m, add_generation_prompt => true})
                })
                .expect("render"),
            PromptInput::Text(t) => t.clone(),
            PromptInput::Batch { .. } => panic!("chat and completions prompts only"),
        };
        let special = matches!(prompt.input, PromptInput::Text(_));
        self.tokenizer
            .encode_fast(text, special)
            .expect("encode")
            .len() as u64
    }
}

#[test]
fn tokenizer_file_targets_within_one_percent() {
    let reference = Reference::new();
    for api in [Api::Chat, Api::Completions] {
        for target in [128u32, 512, 4096, 16384] {
            let workload = Workload {
                input_tokens: fixed(target),
                ..Workload::default()
            };
            let mut source = PromptSource::new(&workload, &context(api, TokenizerSource::File, 9))
                .expect("source");
            for prompt in take(&mut source, 2) {
                let counted = reference.count(&prompt);
                let gap = counted.abs_diff(u64::from(target)) as f64 / f64::from(target);
                assert!(gap <= 0.01, "{api:?} {target}: counted {counted}");
                assert_eq!(prompt.planned_prompt_tokens, Some(counted));
                // With the served model's own tokenizer the fit is exact.
                assert_eq!(counted, u64::from(target), "{api:?}");
            }
        }
    }
}

#[test]
fn builtin_table_sizes_prompts_for_its_chatml_template() {
    let workload = Workload {
        input_tokens: fixed(300),
        ..Workload::default()
    };
    let source = PromptSource::new(&workload, &context(Api::Chat, TokenizerSource::Builtin, 2))
        .expect("source");
    let p = source.prompt(0);
    assert_eq!(p.planned_prompt_tokens, Some(300));
    assert!(source.tokenizer_description().contains("built-in"));
}

#[test]
fn file_tokenizer_errors_name_the_file() {
    let mut ctx = context(Api::Chat, TokenizerSource::File, 0);
    ctx.tokenizer.path = Some("missing/tokenizer.json".into());
    let err = PromptSource::new(&Workload::default(), &ctx)
        .err()
        .expect("missing");
    assert!(err.to_string().contains("missing/tokenizer.json"), "{err}");

    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("tokenizer.json");
    std::fs::write(&bad, "{\"not\": \"a tokenizer\"}").expect("write");
    ctx.tokenizer.path = Some(bad.display().to_string());
    let err = PromptSource::new(&Workload::default(), &ctx)
        .err()
        .expect("bad");
    assert!(
        err.to_string()
            .contains("not a Hugging Face tokenizer.json"),
        "{err}"
    );
}

fn dataset_workload(path: &str, format: DatasetFormat) -> Workload {
    Workload {
        dataset: Some(Dataset {
            path: path.into(),
            format,
            min_input_tokens: None,
            max_input_tokens: None,
            sample: None,
            multi_turn: false,
        }),
        ..Workload::default()
    }
}

fn sha256_of(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).expect("read")))
}

#[test]
fn jsonl_dataset_prompts_messages_lengths_and_sha() {
    let workload = dataset_workload("prompts.jsonl", DatasetFormat::Jsonl);
    let mut source = PromptSource::new(
        &workload,
        &context(Api::Chat, TokenizerSource::Simulator, 0),
    )
    .expect("source");
    assert_eq!(
        source.dataset_sha256(),
        Some(sha256_of(&fixtures().join("prompts.jsonl")).as_str())
    );
    let prompts = take(&mut source, 5);
    match &prompts[1].input {
        PromptInput::Messages(m) => {
            assert_eq!(m.len(), 2);
            assert_eq!(m[0].role, "system");
        }
        PromptInput::Text(_) | PromptInput::Batch { .. } => panic!("chat expected"),
    }
    assert_eq!(prompts[1].max_tokens, 32);
    assert_eq!(prompts[2].max_tokens, 16);
    assert_eq!(prompts[0].max_tokens, 256);
    for p in &prompts {
        assert_eq!(Some(sim_count(p)), p.planned_prompt_tokens);
    }
    assert_eq!(prompts[4], prompts[0], "the dataset cycles");

    // Completions: messages become their contents, one paragraph each.
    let source = PromptSource::new(
        &workload,
        &context(Api::Completions, TokenizerSource::Simulator, 0),
    )
    .expect("source");
    assert_eq!(
        source.prompt(1).input,
        PromptInput::Text("You are terse.\n\nName three sorting algorithms.".into())
    );
}

#[test]
fn dataset_filter_and_seeded_sample() {
    let mut workload = dataset_workload("prompts.jsonl", DatasetFormat::Jsonl);
    if let Some(d) = workload.dataset.as_mut() {
        d.min_input_tokens = Some(10);
        d.max_input_tokens = Some(45);
    }
    let source = PromptSource::new(
        &workload,
        &context(Api::Completions, TokenizerSource::Simulator, 0),
    )
    .expect("source");
    // Completions count words: the lines have 11, 7, 5 and 42.
    let planned: Vec<u64> = (0..4)
        .map(|i| source.prompt(i).planned_prompt_tokens.expect("planned"))
        .collect();
    assert_eq!(planned, [11, 42, 11, 42]);

    let mut workload = dataset_workload("prompts.jsonl", DatasetFormat::Jsonl);
    if let Some(d) = workload.dataset.as_mut() {
        d.sample = Some(2);
    }
    let order = |seed| {
        let s = PromptSource::new(
            &workload,
            &context(Api::Chat, TokenizerSource::Simulator, seed),
        )
        .expect("source");
        (0..4).map(|i| s.prompt(i).input).collect::<Vec<_>>()
    };
    let a = order(1);
    assert_eq!(a, order(1));
    assert_eq!(a[0], a[2], "a sample of 2 cycles every 2 prompts");
    assert!(
        (2..40).any(|seed| order(seed)[..2] != a[..2]),
        "the seed changes the sample"
    );

    if let Some(d) = workload.dataset.as_mut() {
        d.sample = Some(10);
    }
    let err = PromptSource::new(
        &workload,
        &context(Api::Chat, TokenizerSource::Simulator, 0),
    )
    .err()
    .expect("too few");
    assert!(err.to_string().contains("sample 10"), "{err}");
}

#[test]
fn sharegpt_takes_first_human_turn_and_reply_length() {
    let workload = dataset_workload("sharegpt.json", DatasetFormat::Sharegpt);
    let source = PromptSource::new(
        &workload,
        &context(Api::Chat, TokenizerSource::Simulator, 0),
    )
    .expect("source");
    let p0 = source.prompt(0);
    assert_eq!(first_content(&p0), "What is a token?");
    assert_eq!(p0.max_tokens, 13);
    let p1 = source.prompt(1);
    assert_eq!(first_content(&p1), "Why batch requests?");
    assert_eq!(p1.max_tokens, 5);
    // The entry with no reply is skipped: two entries cycle.
    assert_eq!(source.prompt(2), p0);
    assert!(
        source
            .planned_tokens_description()
            .contains("2 of 2 entries")
    );
}

#[test]
fn sharegpt_multi_turn_keeps_each_conversation_in_order_with_its_recorded_replies() {
    let mut workload = dataset_workload("sharegpt-multi.json", DatasetFormat::Sharegpt);
    workload.dataset.as_mut().unwrap().multi_turn = true;
    let source = PromptSource::new(
        &workload,
        &context(Api::Chat, TokenizerSource::Simulator, 0),
    )
    .expect("source");
    let messages = |i: u64| match source.prompt(i).input {
        PromptInput::Messages(m) => m
            .into_iter()
            .map(|m| format!("{}: {}", m.role, m.content))
            .collect::<Vec<_>>(),
        other => panic!("chat prompts carry messages, got {other:?}"),
    };
    // Conversation m1: three turns, each with the system prompt and the earlier exchanges.
    assert_eq!(
        messages(0),
        [
            "system: You are a terse assistant.",
            "user: What is a KV cache?"
        ]
    );
    assert_eq!(messages(1).len(), 4);
    assert_eq!(
        messages(2)[4],
        "assistant: It grows with every token of every running request."
    );
    assert_eq!(messages(2)[5], "user: And prefix caching?");
    // m2: two user messages before one reply are one turn; the unanswered turn is dropped.
    assert_eq!(messages(3), ["user: Name a serving engine."]);
    assert_eq!(
        messages(4)[2],
        "user: Another one?\n\nWith a C++ core, please."
    );
    // Five requests in all, then the file again; output lengths are the recorded replies'.
    assert_eq!(source.prompt(5), source.prompt(0));
    assert_eq!(
        source.prompt(3).max_tokens,
        1,
        "\"vLLM.\" is one simulator token"
    );

    // A sample counts conversations, and keeps each one's turns together and in order.
    workload.dataset.as_mut().unwrap().sample = Some(1);
    let sampled = PromptSource::new(
        &workload,
        &context(Api::Chat, TokenizerSource::Simulator, 7),
    )
    .expect("source");
    let lengths: Vec<usize> = (0..6)
        .map(|i| match sampled.prompt(i).input {
            PromptInput::Messages(m) => m.len(),
            _ => 0,
        })
        .collect();
    assert!(
        lengths == [2, 4, 6, 2, 4, 6] || lengths == [1, 3, 1, 3, 1, 3],
        "one whole conversation, repeated: {lengths:?}"
    );

    // JSONL carries its history in `messages`: multi_turn is refused there.
    let mut jsonl = dataset_workload("prompts.jsonl", DatasetFormat::Jsonl);
    jsonl.dataset.as_mut().unwrap().multi_turn = true;
    let err = PromptSource::new(&jsonl, &context(Api::Chat, TokenizerSource::Simulator, 0))
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("multi_turn reads ShareGPT"), "{err}");
}

#[test]
fn bad_datasets_fail_with_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = |d: &Path| {
        let mut c = context(Api::Chat, TokenizerSource::Simulator, 0);
        c.plan_dir = d.to_path_buf();
        c
    };
    let cases = [
        ("empty.jsonl", "\n\n", "no usable entries"),
        (
            "bad.jsonl",
            "{\"prompt\": \"ok\"}\n{\"prompt\": 3}\n",
            "bad.jsonl:2: `prompt` must be a string",
        ),
        (
            "broken.jsonl",
            "{\"prompt\": \"ok\"}\n\n{oops\n",
            "broken.jsonl:3: invalid JSON",
        ),
        (
            "neither.jsonl",
            "{\"text\": \"x\"}\n",
            "neither.jsonl:1: needs a `prompt` string",
        ),
        (
            "roles.jsonl",
            "{\"messages\": [{\"role\": \"user\"}]}\n",
            "roles.jsonl:1: `messages` must be",
        ),
    ];
    for (name, text, expected) in cases {
        std::fs::write(dir.path().join(name), text).expect("write");
        let err = PromptSource::new(
            &dataset_workload(name, DatasetFormat::Jsonl),
            &ctx(dir.path()),
        )
        .err()
        .expect("error");
        assert!(err.to_string().contains(expected), "{name}: {err}");
    }
    let err = PromptSource::new(
        &dataset_workload("nope.jsonl", DatasetFormat::Jsonl),
        &ctx(dir.path()),
    )
    .err()
    .expect("missing");
    assert!(err.to_string().contains("nope.jsonl: cannot read"), "{err}");

    std::fs::write(dir.path().join("s.json"), "[{\"conversations\": 5}]").expect("write");
    let err = PromptSource::new(
        &dataset_workload("s.json", DatasetFormat::Sharegpt),
        &ctx(dir.path()),
    )
    .err()
    .expect("sharegpt");
    assert!(
        err.to_string()
            .contains("s.json: entry 1: needs a `conversations` array"),
        "{err}"
    );
    std::fs::write(dir.path().join("t.json"), "[\n{\"conversations\": [}\n]").expect("write");
    let err = PromptSource::new(
        &dataset_workload("t.json", DatasetFormat::Sharegpt),
        &ctx(dir.path()),
    )
    .err()
    .expect("sharegpt syntax");
    assert!(err.to_string().contains("t.json:2:"), "{err}");
}

fn trace_workload(path: &str, time_scale: f64, block_tokens: Option<u32>) -> Workload {
    Workload {
        trace: Some(Trace {
            path: path.into(),
            format: Default::default(),
            time_scale,
            block_tokens,
        }),
        ..Workload::default()
    }
}

#[test]
fn trace_schedule_lengths_and_shared_blocks() {
    let workload = trace_workload("trace.jsonl", 0.5, Some(100));
    for api in [Api::Completions, Api::Chat] {
        let mut source = PromptSource::new(&workload, &context(api, TokenizerSource::Simulator, 4))
            .expect("source");
        let ms = Duration::from_millis;
        assert_eq!(
            source.arrival_schedule(),
            Some(&[ms(0), ms(125), ms(125), ms(500)][..])
        );
        assert_eq!(source.request_limit(), Some(4));
        assert_eq!(
            source.dataset_sha256(),
            Some(sha256_of(&fixtures().join("trace.jsonl")).as_str())
        );
        let prompts = take(&mut source, 5);
        let inputs = [1200u64, 700, 1100, 300];
        let outputs = [20u32, 10, 15, 5];
        for (i, p) in prompts.iter().take(4).enumerate() {
            assert_eq!(sim_count(p), inputs[i]);
            assert_eq!(p.planned_prompt_tokens, Some(inputs[i]));
            assert_eq!(p.max_tokens, outputs[i]);
            assert_eq!(p.scheduled_at, source.arrival_schedule().map(|s| s[i]));
        }
        let words = |p: &Prompt| -> Vec<String> {
            first_content(p)
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        let (a, b, c, d) = (
            words(&prompts[0]),
            words(&prompts[1]),
            words(&prompts[2]),
            words(&prompts[3]),
        );
        // Hash 0 is shared by the first three; hash 1 by the first and third.
        assert_eq!(a[..100], b[..100]);
        assert_eq!(a[..200], c[..200]);
        assert_ne!(a[100..200], b[100..200]);
        assert_ne!(a[200..300], c[200..300]);
        assert_ne!(a[..100], d[..100]);
        // The second pass repeats the prompts, shifted by span + mean gap.
        assert_eq!(prompts[4].input, prompts[0].input);
        assert_eq!(prompts[4].scheduled_at, Some(ms(500) + ms(500) / 3));
    }
}

#[test]
fn bad_traces_fail_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ctx = context(Api::Completions, TokenizerSource::Simulator, 0);
    ctx.plan_dir = dir.path().to_path_buf();
    let cases = [
        ("e.jsonl", "", "has no entries"),
        (
            "m.jsonl",
            "{\"timestamp\": 0, \"input_length\": 10}\n",
            "m.jsonl:1: expected {timestamp",
        ),
        (
            "z.jsonl",
            "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": []}\n{\"timestamp\": 5, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}\n",
            "z.jsonl:2: input_length and output_length must be at least 1",
        ),
    ];
    for (name, text, expected) in cases {
        std::fs::write(dir.path().join(name), text).expect("write");
        let err = PromptSource::new(&trace_workload(name, 1.0, None), &ctx)
            .err()
            .expect("error");
        assert!(err.to_string().contains(expected), "{name}: {err}");
    }
    let err = PromptSource::new(&trace_workload("trace.jsonl", 0.0, None), &{
        let mut c = ctx.clone();
        c.plan_dir = fixtures();
        c
    })
    .err()
    .expect("scale");
    assert!(
        err.to_string()
            .contains("time_scale must be a positive number"),
        "{err}"
    );
}

// ---- /tokenize calibration against a scripted loopback server ----

/// The scripted server's tokenizer: whitespace words, `<s>` BOS when special tokens are on,
/// and a chat template of 6 fixed tokens plus 3 per message.
fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

fn scripted_chat_count(messages: &[ChatMessage]) -> u64 {
    6 + messages.iter().map(|m| 3 + words(&m.content)).sum::<u64>()
}

fn render_llama(messages: &[serde_json::Value]) -> String {
    let mut out = String::from("<s> system preamble here\n");
    for m in messages {
        let role = m["role"].as_str().unwrap_or("");
        let content = m["content"].as_str().unwrap_or("");
        out.push_str(&format!("<|{role}|> \n{content}\n<|end|>\n"));
    }
    out.push_str("<|assistant|>\n");
    out
}

fn respond(llama: bool, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
    use serde_json::json;
    let tokens = |n: u64| json!((0..n).collect::<Vec<u64>>());
    match (llama, path) {
        (false, "/tokenize") => {
            let n = if let Some(p) = body.get("prompt").and_then(|p| p.as_str()) {
                let special = body
                    .get("add_special_tokens")
                    .and_then(|a| a.as_bool())
                    .unwrap_or(true);
                words(p) + u64::from(special)
            } else if let Some(m) = body.get("messages") {
                let messages: Vec<ChatMessage> =
                    serde_json::from_value(m.clone()).unwrap_or_default();
                scripted_chat_count(&messages)
            } else {
                return (400, json!({"error": "prompt or messages"}));
            };
            (
                200,
                json!({"count": n, "max_model_len": 8192, "tokens": tokens(n)}),
            )
        }
        (true, "/tokenize") => {
            // llama.cpp ignores fields it does not know and tokenizes `content`.
            let content = body.get("content").and_then(|c| c.as_str()).unwrap_or("");
            let special = body
                .get("add_special")
                .and_then(|a| a.as_bool())
                .unwrap_or(false);
            (
                200,
                json!({"tokens": tokens(words(content) + u64::from(special))}),
            )
        }
        (true, "/apply-template") => {
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            (200, json!({"prompt": render_llama(&messages)}))
        }
        _ => (404, json!({"error": "not found"})),
    }
}

async fn scripted_server(llama: bool) -> (String, tokio::task::JoinHandle<()>) {
    use http_body_util::{BodyExt, Full};
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let handle = tokio::spawn(async move {
        // Calibration makes a handful of requests; the task is aborted after the test.
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| async move {
                        let path = req.uri().path().to_string();
                        let bytes = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let body: serde_json::Value =
                            serde_json::from_slice(&bytes).unwrap_or_default();
                        let (status, value) = respond(llama, &path, &body);
                        let mut response =
                            hyper::Response::new(Full::new(bytes::Bytes::from(value.to_string())));
                        *response.status_mut() =
                            hyper::StatusCode::from_u16(status).unwrap_or_default();
                        Ok::<_, std::convert::Infallible>(response)
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (format!("http://{addr}/v1"), handle)
}

#[tokio::test]
async fn tokenize_calibration_openai_style() {
    let (base_url, server) = scripted_server(false).await;
    for api in [Api::Chat, Api::Completions] {
        let mut ctx = context(api, TokenizerSource::Server, 8);
        ctx.base_url = base_url.clone();
        let workload = Workload {
            input_tokens: fixed(700),
            ..Workload::default()
        };
        let mut source = PromptSource::new(&workload, &ctx).expect("source");
        source.calibrate().await.expect("calibrate");
        let cal = source.calibration().expect("calibrated").clone();
        assert_eq!(cal.dialect, TokenizeDialect::OpenAiStyle);
        assert_eq!(
            (
                cal.text_base_tokens,
                cal.chat_fixed_tokens,
                cal.chat_message_tokens
            ),
            (1, 6, 3)
        );
        assert!((cal.content_ratio - 1.0).abs() < 1e-9);
        for p in take(&mut source, 5) {
            let served = match &p.input {
                PromptInput::Messages(m) => scripted_chat_count(m),
                PromptInput::Text(t) => words(t) + 1,
                PromptInput::Batch { .. } => panic!("chat and completions prompts only"),
            };
            assert_eq!(served, 700, "{api:?}");
            assert_eq!(p.planned_prompt_tokens, Some(700));
        }
    }
    server.abort();
}

#[tokio::test]
async fn tokenize_calibration_llama_cpp() {
    let (base_url, server) = scripted_server(true).await;
    let mut ctx = context(Api::Chat, TokenizerSource::Server, 8);
    ctx.base_url = base_url;
    let workload = Workload {
        input_tokens: fixed(300),
        ..Workload::default()
    };
    let mut source = PromptSource::new(&workload, &ctx).expect("source");
    source.calibrate().await.expect("calibrate");
    let cal = source.calibration().expect("calibrated").clone();
    assert_eq!(cal.dialect, TokenizeDialect::LlamaCpp);
    // `<s> system preamble here` + `<|assistant|>` + BOS = 6 fixed; `<|user|>`, `<|end|>` = 2.
    assert_eq!((cal.chat_fixed_tokens, cal.chat_message_tokens), (6, 2));
    let p = source.next_prompt();
    let PromptInput::Messages(m) = &p.input else {
        panic!("chat expected")
    };
    let rendered = render_llama(
        &serde_json::to_value(m)
            .expect("json")
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    assert_eq!(words(&rendered) + 1, 300);
    assert_eq!(p.planned_prompt_tokens, Some(300));
    server.abort();
}

#[tokio::test]
async fn tokenize_calibration_fails_clearly_without_endpoint() {
    let (base_url, server) = scripted_server(true).await;
    // Neither shape answers under a wrong root.
    let mut ctx = context(Api::Chat, TokenizerSource::Server, 0);
    ctx.base_url = format!("{base_url}/elsewhere");
    let mut source = PromptSource::new(&Workload::default(), &ctx).expect("source");
    let err = source.calibrate().await.expect_err("fails");
    assert!(err.to_string().contains("/tokenize"), "{err}");
    server.abort();
}

#[test]
fn wrong_tokenizer_misses_and_is_flagged() {
    // Sized for the built-in ChatML template, served by SmolLM2's template with its default
    // system prompt: the server sees more tokens than planned.
    let reference = Reference::new();
    let workload = Workload {
        input_tokens: fixed(128),
        ..Workload::default()
    };
    let source = PromptSource::new(&workload, &context(Api::Chat, TokenizerSource::Builtin, 0))
        .expect("source");
    let pairs: Vec<(u64, u64)> = (0..4)
        .map(|i| {
            let p = source.prompt(i);
            (
                p.planned_prompt_tokens.expect("planned"),
                reference.count(&p),
            )
        })
        .collect();
    assert!(pairs.iter().all(|(planned, served)| served > planned));
    let check = servebench::workload::PromptTokenCheck::new(pairs, source.prompt_tolerance())
        .expect("pairs");
    assert!(!check.within_tolerance());
    let warning = check
        .warning(&source.tokenizer_description())
        .expect("warning");
    assert!(warning.contains("planned 128.0"), "{warning}");
    assert!(warning.contains("built-in BPE"), "{warning}");
}

#[test]
fn tokenizer_resolution_order() {
    use servebench::plan::Target;
    use servebench::workload::resolve_tokenizer;
    let spec = |source| TokenizerSpec {
        source,
        path: None,
        chat_template: None,
    };
    let sim_target = Target {
        simulator: Some(Default::default()),
        ..Target::default()
    };
    let remote = Target {
        base_url: Some("http://127.0.0.1:8000/v1".into()),
        ..Target::default()
    };
    let plain = Workload::default();
    assert_eq!(
        resolve_tokenizer(&plain, &sim_target).source,
        TokenizerSource::Simulator
    );
    assert_eq!(
        resolve_tokenizer(&plain, &remote).source,
        TokenizerSource::Builtin
    );
    let remote_server = Target {
        tokenizer: Some(spec(TokenizerSource::Server)),
        ..remote.clone()
    };
    assert_eq!(
        resolve_tokenizer(&plain, &remote_server).source,
        TokenizerSource::Server
    );
    let with_file = Workload {
        tokenizer: Some(spec(TokenizerSource::File)),
        ..Workload::default()
    };
    assert_eq!(
        resolve_tokenizer(&with_file, &remote_server).source,
        TokenizerSource::File
    );
}
