//! Dataset and trace workloads: their prompts, lengths, filters and schedules, and clear
//! errors for bad files.

use super::*;

fn dataset_workload(path: &str, format: DatasetFormat) -> Workload {
    Workload {
        dataset: Some(Dataset {
            path: path.into(),
            format,
            min_input_tokens: None,
            max_input_tokens: None,
            sample: None,
            multi_turn: false,
            generate: None,
            rows: None,
            seed: None,
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
