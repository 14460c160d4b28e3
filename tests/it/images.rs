//! Images in chat requests (a workload's `images`, a dataset row's image files) against the
//! simulator over loopback: the prompt tokens it reports are the text's plus its per-image
//! rule, each record's body bytes are the bytes the server received, the same seed gives the
//! same images and requests differ, a dataset row's files are sent and a missing one is
//! refused with its row, a malformed image part gets a 400, and the plan checks.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use servebench::client::RequestRecord;
use servebench::plan::{Api, ImageFormat, Images, TokenizerSource, TokenizerSpec, Workload};
use servebench::report::Report;
use servebench::sim::images::image_tokens;
use servebench::sim::{SimConfig, serve};
use servebench::workload::{PromptInput, PromptSource, WorkloadContext};

fn servebench() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("servebench"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

fn recording_simulator() -> SimConfig {
    serde_json::from_str(
        r#"{"record_requests": true, "prefill_tok_s": 0, "decode_ms_per_token": 1}"#,
    )
    .unwrap()
}

/// A plan of one closed-loop phase of 8 requests against `base_url`.
fn plan(base_url: &str, workload: &str) -> String {
    format!(
        "version: 1
name: images
seed: 11
targets:
  sim: {{base_url: \"{base_url}\", model: sim}}
workloads:
  w: {workload}
phases:
  - {{name: p, target: sim, workload: w, concurrency: 2, requests: 8}}
"
    )
}

/// Runs `workload` against a fresh recording simulator: the report and, by request id, the
/// `content-length` each request arrived with.
async fn run(dir: &Path, workload: &str) -> (Report, BTreeMap<String, u64>) {
    let (addr, sim) = serve(recording_simulator()).await.unwrap();
    let yaml = plan(&format!("http://{addr}/v1"), workload);
    let report = crate::common::run_plan_text(dir, &yaml).await;
    let header = |headers: &[(String, String)], name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let received = sim
        .requests()
        .iter()
        .map(|seen| {
            let id = header(&seen.headers, "x-request-id").expect("an id");
            let length = header(&seen.headers, "content-length").expect("a length");
            (id, length.parse().unwrap())
        })
        .collect();
    sim.shutdown().await;
    (report, received)
}

fn by_index(report: &Report) -> Vec<RequestRecord> {
    let mut records = report.phases[0].request_timings.clone();
    records.sort_by_key(|r| r.request_index);
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_tokens_are_the_text_and_the_image_rule_and_body_bytes_are_what_arrived() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let text = "{input_tokens: 40, output_tokens: 4, tokenizer: simulator}";
    let (plain, _) = run(&dir.path().join("plain"), text).await;
    let with = "{input_tokens: 40, output_tokens: 4, tokenizer: simulator, \
                images: {count: 2, width: 300, height: 200, format: png, pool: 3}}";
    let (report, received) = run(&dir.path().join("images"), with).await;
    let phase = &report.phases[0];
    assert_eq!(phase.summary.errors, 0);
    // ceil(300/28)·ceil(200/28) = 11·8 tokens per image, two per request.
    let per_request = 2 * image_tokens(300, 200);
    assert_eq!(per_request, 176);
    let plain = by_index(&plain);
    let records = by_index(&report);
    assert_eq!(records.len(), 8);
    for (r, text_only) in records.iter().zip(&plain) {
        let served = r.prompt_tokens.expect("usage");
        assert_eq!(served, text_only.prompt_tokens.unwrap() + per_request);
        assert_eq!(r.planned_context_tokens, Some(served));
        assert_eq!(r.images, 2);
        assert_eq!(text_only.images, 0);
        let sent = r.sent_request_id.as_ref().unwrap_or(&r.request_id);
        assert_eq!(r.request_bytes, Some(received[sent]), "{sent}");
        // Two base64 PNGs of 300×200 make a body far longer than the text one.
        assert!(r.request_bytes.unwrap() > text_only.request_bytes.unwrap() + 2 * 1000);
    }
    let s = &phase.summary;
    assert_eq!(s.total_images, Some(16));
    let bytes: u64 = received.values().sum();
    assert_eq!(s.total_request_bytes, Some(bytes));
    let rate = |n: u64| n as f64 / s.elapsed;
    assert!((s.images_per_second.unwrap() - rate(16)).abs() < 1e-6);
    assert!((s.request_bytes_per_second.unwrap() - rate(bytes)).abs() < 1e-3);
    let figure = s
        .distribution(servebench::figure::Figure::RequestBytes)
        .unwrap();
    assert_eq!(figure.samples, 8);
    assert_eq!(figure.max, *received.values().max().unwrap() as f64);
}

fn source(images: Images, seed: u64) -> PromptSource {
    let workload = Workload {
        input_tokens: Some(servebench::plan::TokenCount::Fixed(32)),
        images: Some(images),
        ..Workload::default()
    };
    let context = WorkloadContext {
        api: Api::Chat,
        tokenizer: TokenizerSpec {
            source: TokenizerSource::Simulator,
            path: None,
            chat_template: None,
        },
        plan_dir: std::env::temp_dir(),
        seed,
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "sim".into(),
        text_salt: None,
    };
    PromptSource::new(&workload, &context).unwrap()
}

/// Request `index`'s image data URLs.
fn urls(source: &PromptSource, index: u64) -> Vec<String> {
    match source.prompt(index).input {
        PromptInput::Messages(messages) => messages
            .iter()
            .flat_map(|m| m.images.iter().map(|i| i.url.to_string()))
            .collect(),
        other => panic!("not chat messages: {other:?}"),
    }
}

#[test]
fn the_same_seed_gives_the_same_images_and_requests_differ() {
    let images = Images {
        count: None,
        width: 64,
        height: 64,
        format: ImageFormat::Jpeg,
        pool: Some(4),
    };
    let a = source(images.clone(), 1);
    let again = source(images.clone(), 1);
    let other = source(images, 2);
    for i in 0..8 {
        assert_eq!(urls(&a, i), urls(&again, i));
        assert_ne!(urls(&a, i), urls(&other, i));
        assert!(urls(&a, i)[0].starts_with("data:image/jpeg;base64,/9j/"));
    }
    // Four distinct images, in turn.
    assert_ne!(urls(&a, 0), urls(&a, 1));
    assert_ne!(urls(&a, 2), urls(&a, 3));
    assert_eq!(urls(&a, 0), urls(&a, 4));
}

fn write_png(path: &Path, width: u32, height: u32) {
    let file = std::fs::File::create(path).unwrap();
    let mut encoder = png::Encoder::new(file, width, height);
    encoder.set_color(png::ColorType::Grayscale);
    let mut writer = encoder.write_header().unwrap();
    writer
        .write_image_data(&vec![128; (width * height) as usize])
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_rows_image_files_are_sent_and_a_missing_one_is_refused_with_its_row() {
    let _exclusive = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("pics")).unwrap();
    write_png(&data.join("pics/wide.png"), 100, 30);
    // The same text with and without the image.
    std::fs::write(
        data.join("rows.jsonl"),
        "{\"prompt\": \"what is in the picture\"}\n\
         {\"prompt\": \"what is in the picture\", \"images\": [\"pics/wide.png\"]}\n",
    )
    .unwrap();
    let workload = format!(
        "{{dataset: {{path: \"{}\", format: jsonl}}, output_tokens: 4, tokenizer: simulator}}",
        data.join("rows.jsonl").display()
    );
    let (report, _) = run(&dir.path().join("run"), &workload).await;
    let records = by_index(&report);
    assert_eq!(report.phases[0].summary.errors, 0);
    let with = |n: u64| records.iter().filter(move |r| r.images == n);
    assert_eq!((with(0).count(), with(1).count()), (4, 4));
    let (plain, pictured) = (with(0).next().unwrap(), with(1).next().unwrap());
    assert!(with(0).all(|r| r.prompt_tokens == plain.prompt_tokens));
    assert!(with(1).all(|r| r.prompt_tokens == pictured.prompt_tokens));
    // ceil(100/28)·ceil(30/28) = 4·2.
    assert_eq!(
        pictured.prompt_tokens.unwrap(),
        plain.prompt_tokens.unwrap() + 8
    );
    assert_eq!(pictured.planned_context_tokens, pictured.prompt_tokens);

    // A row naming a file that is not there: its line and the path.
    std::fs::write(
        data.join("rows.jsonl"),
        "{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"images\": [\"pics/gone.jpg\"]}\n",
    )
    .unwrap();
    let yaml = plan("http://127.0.0.1:9/v1", &workload);
    std::fs::write(dir.path().join("plan.yaml"), yaml).unwrap();
    let out = servebench()
        .args(["run", "--quiet", "-o"])
        .arg(dir.path().join("out"))
        .arg(dir.path().join("plan.yaml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("rows.jsonl:2: cannot read image"),
        "{stderr}"
    );
    assert!(stderr.contains("pics/gone.jpg"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_image_part_gets_a_400() {
    let (addr, sim) = serve(recording_simulator()).await.unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let body = |url: &str| {
        serde_json::json!({
            "model": "sim",
            "max_tokens": 2,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": url}}
            ]}]
        })
    };
    for (url, want) in [
        ("https://example.com/cat.jpg", "data URL"),
        ("data:image/png;base64,!!!", "does not decode"),
        ("data:image/png;base64,aGVsbG8=", "no readable image"),
    ] {
        let response = http
            .post(format!("http://{addr}/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(body(url).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{url}");
        let text = response.text().await.unwrap();
        assert!(text.contains(want), "{url}: {text}");
    }
    sim.shutdown().await;
}

fn validate(dir: &Path, yaml: &str) -> (i32, String) {
    crate::common::validate_yaml(dir, yaml)
}

fn sim_plan(workload: &str, api: &str) -> String {
    crate::common::one_phase_sim_plan("images", workload, api)
}

#[test]
fn typos_and_bad_values_are_refused_at_their_key() {
    let dir = tempfile::tempdir().unwrap();
    let ok = sim_plan(
        "{input_tokens: 64, images: {count: {min: 1, max: 3}, width: 512, height: 512, format: png, pool: 8}}",
        "chat",
    );
    let (code, stderr) = validate(dir.path(), &ok);
    assert_eq!(code, 0, "{stderr}");
    let cases = [
        (
            "{input_tokens: 64, images: {width: 512, heigth: 512}}",
            "chat",
            "did you mean `height`?",
            "heigth",
        ),
        (
            "{input_tokens: 64, imgaes: {width: 512, height: 512}}",
            "chat",
            "did you mean `images`?",
            "imgaes",
        ),
        (
            "{input_tokens: 64, images: {width: 0, height: 512}}",
            "chat",
            "must be 1 to 8192 pixels",
            "0,",
        ),
        (
            "{input_tokens: 64, images: {width: 512, height: 512, format: gif}}",
            "chat",
            "jpeg",
            "gif",
        ),
        (
            "{input_tokens: 64, images: {width: 512, height: 512, pool: 0}}",
            "chat",
            "must be 1 to 4096 images",
            "0}",
        ),
        (
            "{input_tokens: 64, images: {width: 512, height: 512}}",
            "completions",
            "apply to `api: chat`",
            "images",
        ),
        (
            "{input_tokens: 64, images: {width: 512, height: 512}}",
            "embeddings",
            "apply to `api: chat`",
            "images",
        ),
    ];
    crate::common::assert_refused_at_their_key("images", &cases);
}
