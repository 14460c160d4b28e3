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

mod calibration;
mod sources;

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
