//! Client over loopback against a scripted HTTP/1.1 server: dialects, timings, every error kind.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use servebench::client::{
    Api, Client, ClientConfig, Endpoint, ErrorKind, OutputTokenSource, RequestRecord,
    ResolvedTimeouts, Sampling,
};
use servebench::workload::{ChatMessage, Prompt, PromptInput};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One step of a scripted response.
#[derive(Clone)]
enum Step {
    /// Raw bytes, written as they are.
    Raw(Vec<u8>),
    /// One HTTP chunk of a chunked body.
    Chunk(Vec<u8>),
    /// The chunked body's terminator; the connection stays open for the next request.
    End,
    Sleep(Duration),
    /// Close with a TCP reset.
    Reset,
}

fn sse_headers() -> Step {
    Step::Raw(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec(),
    )
}

fn chunk(s: &str) -> Step {
    Step::Chunk(s.as_bytes().to_vec())
}

fn data(json: &str) -> Step {
    chunk(&format!("data: {json}\n\n"))
}

fn sleep_ms(ms: u64) -> Step {
    Step::Sleep(Duration::from_millis(ms))
}

fn plain_response(status: &str, extra_headers: &str, body: &str) -> Vec<Step> {
    vec![
        Step::Raw(
            format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra_headers}\r\n{body}",
                body.len()
            )
            .into_bytes(),
        ),
        // Content-Length bodies end the exchange; keep the connection for the next request.
    ]
}

/// A scripted server: each request gets the next script (the last one repeats).
struct ScriptServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
    connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ScriptServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ScriptServer {
    async fn start(scripts: Vec<Vec<Step>>) -> ScriptServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let queue = Arc::new(Mutex::new(VecDeque::from(scripts)));
        let (req, conns) = (requests.clone(), connections.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                conns.fetch_add(1, Ordering::SeqCst);
                let (queue, req) = (queue.clone(), req.clone());
                tokio::spawn(async move { serve_connection(socket, queue, req).await });
            }
        });
        ScriptServer {
            addr,
            requests,
            connections,
            task,
        }
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("lock").clone()
    }
}

async fn serve_connection(
    mut socket: TcpStream,
    queue: Arc<Mutex<VecDeque<Vec<Step>>>>,
    requests: Arc<Mutex<Vec<String>>>,
) {
    socket.set_nodelay(true).expect("nodelay");
    loop {
        let Some(request) = read_request(&mut socket).await else {
            return;
        };
        requests.lock().expect("lock").push(request);
        let script = {
            let mut q = queue.lock().expect("lock");
            if q.len() > 1 {
                q.pop_front()
            } else {
                q.front().cloned()
            }
        };
        let Some(script) = script else { return };
        for step in script {
            let written = match step {
                Step::Raw(bytes) => socket.write_all(&bytes).await,
                Step::Chunk(bytes) => {
                    let mut framed = format!("{:x}\r\n", bytes.len()).into_bytes();
                    framed.extend_from_slice(&bytes);
                    framed.extend_from_slice(b"\r\n");
                    socket.write_all(&framed).await
                }
                Step::End => socket.write_all(b"0\r\n\r\n").await,
                Step::Sleep(d) => {
                    tokio::time::sleep(d).await;
                    Ok(())
                }
                Step::Reset => {
                    let _ = socket.set_zero_linger();
                    return;
                }
            };
            if written.is_err() {
                return;
            }
        }
    }
}

/// Read one request (headers and a Content-Length body); `None` at EOF.
async fn read_request(socket: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let header_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    Some(String::from_utf8_lossy(&buf[..header_end + length]).into_owned())
}

fn config(base_url: String) -> ClientConfig {
    ClientConfig {
        endpoint: Endpoint {
            base_url,
            api_key: Some("sk-test-secret-123".into()),
            headers: vec![("X-Bench".into(), "yes".into())],
            ..Endpoint::default()
        },
        api: Api::Chat,
        model: "test-model".into(),
        timeouts: ResolvedTimeouts {
            connect: Some(Duration::from_secs(2)),
            first_byte: Some(Duration::from_secs(5)),
            idle: Some(Duration::from_secs(5)),
            total: Some(Duration::from_secs(10)),
        },
        body: serde_json::from_str(r#"{"reasoning_effort":"low"}"#).expect("json"),
        sampling: Sampling {
            temperature: Some(0.0),
            ignore_eos: Some(true),
            min_tokens: None,
            seed: None,
        },
        max_connections: 1,
        ..ClientConfig::default()
    }
}

fn chat_prompt() -> Prompt {
    Prompt {
        input: PromptInput::Messages(vec![ChatMessage::new("user", "Say hi")]),
        planned_prompt_tokens: Some(12),
        max_tokens: 16,
        expected: None,
        scheduled_at: None,
        archetype: None,
        model: None,
        session: None,
    }
}

async fn run_one(scripts: Vec<Vec<Step>>, cfg: impl FnOnce(&mut ClientConfig)) -> RequestRecord {
    let server = ScriptServer::start(scripts).await;
    let mut c = config(server.base_url());
    cfg(&mut c);
    let client = Client::new(c).expect("client");
    client.send(0, &chat_prompt(), Instant::now()).await
}

fn expect_error(record: &RequestRecord, kind: ErrorKind) -> &str {
    let err = record
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("expected {kind:?}, got ok: {record:?}"));
    assert_eq!(err.kind, kind, "{err:?}");
    let json = serde_json::to_string(record).expect("serializable");
    assert!(!json.contains("sk-test-secret-123"));
    &err.message
}

const ROLE: &str = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
const USAGE_7_5: &str = r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}}"#;

fn reasoning_content(field: &str, text: &str) -> String {
    format!(r#"{{"choices":[{{"index":0,"delta":{{"{field}":"{text}"}}}}]}}"#)
}

fn content(text: &str) -> String {
    format!(r#"{{"choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]}}"#)
}

#[tokio::test]
async fn vllm_chat_with_reasoning_content() {
    let script = vec![
        sse_headers(),
        data(ROLE),
        sleep_ms(20),
        data(&reasoning_content("reasoning_content", "Think")),
        data(&reasoning_content("reasoning_content", "ing")),
        sleep_ms(40),
        data(&content("Hi")),
        sleep_ms(10),
        data(&content(" there")),
        data(r#"{"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}"#),
        data(USAGE_7_5),
        data("[DONE]"),
        Step::End,
    ];
    let server = ScriptServer::start(vec![script]).await;
    let client = Client::new(config(server.base_url()))
        .expect("client")
        .with_request_id_prefix("run42");
    let origin = Instant::now();
    let r = client.send(3, &chat_prompt(), origin).await;
    assert!(r.is_ok(), "{:?}", r.error);
    assert_eq!(r.request_index, 3);
    assert_eq!(r.request_id, "run42-3");
    assert_eq!(
        (r.prompt_tokens, r.output_tokens, r.cached_tokens),
        (Some(7), Some(5), Some(4))
    );
    assert_eq!(r.output_token_source, Some(OutputTokenSource::Usage));
    assert_eq!((r.reasoning_chunks, r.content_chunks), (2, 3));
    assert_eq!(r.planned_context_tokens, Some(12));
    let tfo = r.time_to_first_output_ms.expect("first output");
    let ttft = r.ttft_ms.expect("ttft");
    assert!((20.0..60.0).contains(&tfo), "tfo {tfo}");
    assert!((60.0..100.0).contains(&ttft), "ttft {ttft}");
    assert!(tfo < ttft && ttft <= r.e2e_ms);
    assert!(r.max_inter_chunk_ms.expect("gap") >= 40.0);
    // Derived fields are filled: 4 tokens after the first.
    let g = r.generation_ms.expect("generation");
    assert!((g - (r.e2e_ms - tfo)).abs() < 1e-9);
    assert!((r.tpot_ms.expect("tpot") - (r.e2e_ms - ttft) / 4.0).abs() < 1e-9);
    assert!(r.start_offset_ms >= 0.0 && r.start_offset_ms < 50.0);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert!(request.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"));
    let lower = request.to_ascii_lowercase();
    assert!(lower.contains("authorization: bearer sk-test-secret-123\r\n"));
    // The header carries a UUID derived from the readable id, which the record keeps too.
    let sent = servebench::client::uuid_for("run42-3");
    assert_eq!(r.sent_request_id.as_deref(), Some(sent.as_str()));
    assert!(
        lower.contains(&format!("x-request-id: {sent}\r\n")),
        "{lower}"
    );
    assert!(lower.contains("x-bench: yes\r\n"));
    let body: serde_json::Value =
        serde_json::from_str(&request[request.find("\r\n\r\n").expect("body") + 4..])
            .expect("JSON body");
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["max_tokens"], 16);
    assert_eq!(body["ignore_eos"], true);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["reasoning_effort"], "low");
    assert_eq!(body["messages"][0]["content"], "Say hi");
}

#[tokio::test]
async fn reasoning_dialect_gives_first_output_before_ttft() {
    let script = vec![
        sse_headers(),
        data(ROLE),
        sleep_ms(20),
        data(&reasoning_content("reasoning", "hm")),
        sleep_ms(30),
        data(&content("ok")),
        data(USAGE_7_5),
        data("[DONE]"),
        Step::End,
    ];
    let r = run_one(vec![script], |_| {}).await;
    assert!(r.is_ok(), "{:?}", r.error);
    assert_eq!((r.reasoning_chunks, r.content_chunks), (1, 1));
    assert!(r.time_to_first_output_ms.expect("tfo") + 20.0 <= r.ttft_ms.expect("ttft"));
}

#[tokio::test]
async fn llama_cpp_null_role_content_and_usage_on_finish_chunk() {
    let script = vec![
        sse_headers(),
        data(
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}],"object":"chat.completion.chunk"}"#,
        ),
        sleep_ms(30),
        data(&content("a")),
        data(&content("b")),
        data(
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}"#,
        ),
        data("[DONE]"),
        Step::End,
    ];
    let r = run_one(vec![script], |_| {}).await;
    assert!(r.is_ok(), "{:?}", r.error);
    assert_eq!(
        (r.prompt_tokens, r.output_tokens, r.cached_tokens),
        (Some(9), Some(2), None)
    );
    assert_eq!(r.reasoning_chunks, 0);
    // The null-content role chunk is not output.
    assert!(r.ttft_ms.expect("ttft") >= 30.0);
    assert_eq!(r.time_to_first_output_ms, r.ttft_ms);
}

#[tokio::test]
async fn completions_api_with_counted_tokens_when_no_usage() {
    let script = vec![
        sse_headers(),
        data(r#"{"choices":[{"index":0,"text":""}]}"#),
        data(r#"{"choices":[{"index":0,"text":"one"}]}"#),
        data(r#"{"choices":[{"index":0,"text":" two"}]}"#),
        data(r#"{"choices":[{"index":0,"text":" three","finish_reason":"stop"}]}"#),
        data("[DONE]"),
        Step::End,
    ];
    let server = ScriptServer::start(vec![script]).await;
    let mut cfg = config(server.base_url());
    cfg.api = Api::Completions;
    let client = Client::new(cfg).expect("client");
    let prompt = Prompt {
        input: PromptInput::Text("Count:".into()),
        planned_prompt_tokens: None,
        max_tokens: 3,
        expected: None,
        scheduled_at: None,
        archetype: None,
        model: None,
        session: None,
    };
    let r = client.send(0, &prompt, Instant::now()).await;
    assert!(r.is_ok(), "{:?}", r.error);
    assert_eq!(r.output_tokens, Some(3));
    assert_eq!(r.output_token_source, Some(OutputTokenSource::Counted));
    assert_eq!(r.prompt_tokens, None);
    assert_eq!(r.content_chunks, 3);
    let request = &server.requests()[0];
    assert!(request.starts_with("POST /v1/completions "));
    assert!(request.contains(r#""prompt":"Count:""#));
}

#[tokio::test]
async fn multi_token_chunks_use_usage_tokens_for_per_token_latency() {
    let mut script = vec![sse_headers(), data(ROLE), sleep_ms(10)];
    for _ in 0..4 {
        script.push(data(&content("two words")));
        script.push(sleep_ms(10));
    }
    script.push(data(
        r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":12}}"#,
    ));
    script.push(data("[DONE]"));
    script.push(Step::End);
    let r = run_one(vec![script], |_| {}).await;
    assert!(r.is_ok(), "{:?}", r.error);
    assert_eq!((r.content_chunks, r.output_tokens), (4, Some(12)));
    let per_token = (r.e2e_ms - r.ttft_ms.expect("ttft")) / 11.0;
    assert!((r.tpot_ms.expect("tpot") - per_token).abs() < 1e-9);
    assert!((r.mean_inter_token_latency_ms.expect("itl") - per_token).abs() < 1e-9);
}

#[tokio::test]
async fn events_split_across_writes_mid_line_and_mid_utf8() {
    let body = format!(
        "data: {ROLE}\r\n\r\ndata: {}\r\n\r\n: comment\r\ndata: {}\r\n\r\ndata: {USAGE_7_5}\r\n\r\ndata: [DONE]\r\n\r\n",
        content("日本"),
        content("🦀")
    );
    let bytes = body.as_bytes();
    let mut script = vec![sse_headers()];
    // Three-byte writes split lines, CRLFs and UTF-8 sequences.
    for piece in bytes.chunks(3) {
        script.push(Step::Chunk(piece.to_vec()));
    }
    script.push(Step::End);
    let r = run_one(vec![script], |_| {}).await;
    assert!(r.is_ok(), "{:?}", r.error);
    assert_eq!(r.content_chunks, 2);
    assert_eq!(r.output_tokens, Some(5));
}

/// Events one socket read delivers share that read's timestamp: a whole stream written at
/// once has its first token at its end. Events that came in separate reads keep their own.
#[tokio::test]
async fn events_of_one_read_share_its_timestamp() {
    let framed = |events: &[String]| {
        let mut bytes = Vec::new();
        for event in events {
            let payload = format!("data: {event}\n\n");
            bytes.extend_from_slice(format!("{:x}\r\n{payload}\r\n", payload.len()).as_bytes());
        }
        bytes
    };
    let usage = r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3}}"#;
    let events = [
        ROLE,
        &content("a"),
        &content("b"),
        &content("c"),
        usage,
        "[DONE]",
    ];
    let mut all_at_once =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    all_at_once.extend(framed(&events.map(str::to_string)));
    all_at_once.extend_from_slice(b"0\r\n\r\n");
    let r = run_one(vec![vec![Step::Raw(all_at_once)]], |_| {}).await;
    assert!(r.is_ok(), "{:?}", r.error);
    assert_eq!(r.content_chunks, 3);
    assert_eq!(r.ttft_ms, Some(r.e2e_ms), "{r:?}");
    assert_eq!(r.max_inter_chunk_ms, Some(0.0), "{r:?}");
    // No time between its tokens, so no decode rate (not the client's parsing speed).
    assert_eq!(r.decode_tok_s, None, "{r:?}");

    let apart = vec![
        sse_headers(),
        Step::Raw(framed(&[ROLE.to_string(), content("a")])),
        sleep_ms(30),
        Step::Raw(framed(&[
            content("b"),
            content("c"),
            usage.to_string(),
            "[DONE]".into(),
        ])),
        Step::End,
    ];
    let r = run_one(vec![apart], |_| {}).await;
    assert!(r.is_ok(), "{:?}", r.error);
    let ttft = r.ttft_ms.expect("ttft");
    assert!(r.e2e_ms - ttft >= 30.0, "{r:?}");
    assert!(r.max_inter_chunk_ms.expect("gap") >= 30.0, "{r:?}");
}

#[tokio::test]
async fn ttft_matches_a_known_server_delay() {
    let script = vec![
        sse_headers(),
        data(ROLE),
        sleep_ms(50),
        data(&content("x")),
        data(r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#),
        data("[DONE]"),
        Step::End,
    ];
    let server = ScriptServer::start(vec![script]).await;
    let client = Client::new(config(server.base_url())).expect("client");
    for i in 0..5 {
        let r = client.send(i, &chat_prompt(), Instant::now()).await;
        assert!(r.is_ok(), "{:?}", r.error);
        let ttft = r.ttft_ms.expect("ttft");
        assert!((50.0..80.0).contains(&ttft), "ttft {ttft}");
        // One output token: no per-token figures.
        assert_eq!((r.tpot_ms, r.decode_tok_s), (None, None));
    }
    // Keep-alive: the connection was reused.
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn connect_refused_is_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let client = Client::new(config(format!("http://{addr}/v1"))).expect("client");
    let r = client.send(0, &chat_prompt(), Instant::now()).await;
    expect_error(&r, ErrorKind::Connect);
    assert_eq!(r.ttft_ms, None);
    assert!(r.e2e_ms >= 0.0);
}

#[tokio::test]
async fn http_500_keeps_a_body_excerpt() {
    let long = "x".repeat(1000);
    let body = format!(r#"{{"error":{{"message":"engine dead {long}"}}}}"#);
    let r = run_one(
        vec![plain_response("500 Internal Server Error", "", &body)],
        |_| {},
    )
    .await;
    let message = expect_error(&r, ErrorKind::HttpStatus);
    assert!(
        message.contains("500") && message.contains("engine dead"),
        "{message}"
    );
    assert!(message.chars().count() < 260, "{message}");
    assert_eq!(r.error.as_ref().and_then(|e| e.status), Some(500));
}

#[tokio::test]
async fn http_429_is_rate_limited_with_retry_after() {
    let r = run_one(
        vec![plain_response(
            "429 Too Many Requests",
            "retry-after: 3\r\n",
            r#"{"error":{"message":"slow down"}}"#,
        )],
        |_| {},
    )
    .await;
    let message = expect_error(&r, ErrorKind::RateLimited);
    assert!(message.contains("retry-after: 3"), "{message}");
    assert!(message.contains("slow down"), "{message}");
    assert_eq!(r.error.as_ref().and_then(|e| e.status), Some(429));
}

#[tokio::test]
async fn reset_mid_stream_is_stream_broken() {
    let script = vec![
        sse_headers(),
        data(ROLE),
        data(&content("a")),
        sleep_ms(20),
        Step::Reset,
    ];
    let r = run_one(vec![script], |_| {}).await;
    expect_error(&r, ErrorKind::StreamBroken);
    // What was seen before the break is kept.
    assert_eq!(r.content_chunks, 1);
    assert!(r.ttft_ms.is_some());
}

#[tokio::test]
async fn stall_beyond_idle_timeout_is_idle_timeout() {
    let script = vec![sse_headers(), data(&content("a")), sleep_ms(2000)];
    let r = run_one(vec![script], |c| {
        c.timeouts.idle = Some(Duration::from_millis(100));
    })
    .await;
    expect_error(&r, ErrorKind::IdleTimeout);
    assert!((100.0..1000.0).contains(&r.e2e_ms), "{}", r.e2e_ms);
}

#[tokio::test]
async fn slow_headers_are_first_byte_timeout() {
    let mut script = vec![sleep_ms(2000)];
    script.push(sse_headers());
    let r = run_one(vec![script], |c| {
        c.timeouts.first_byte = Some(Duration::from_millis(100));
    })
    .await;
    expect_error(&r, ErrorKind::FirstByteTimeout);
    assert!((100.0..1000.0).contains(&r.e2e_ms), "{}", r.e2e_ms);
}

#[tokio::test]
async fn long_stream_beyond_total_is_total_timeout() {
    let mut script = vec![sse_headers()];
    for _ in 0..100 {
        script.push(data(&content("t")));
        script.push(sleep_ms(20));
    }
    let r = run_one(vec![script], |c| {
        c.timeouts.total = Some(Duration::from_millis(200));
        c.timeouts.idle = Some(Duration::from_millis(1000));
    })
    .await;
    expect_error(&r, ErrorKind::TotalTimeout);
    assert!((200.0..1000.0).contains(&r.e2e_ms), "{}", r.e2e_ms);
    assert!(r.content_chunks >= 3);
}

#[tokio::test]
async fn malformed_json_is_malformed_event() {
    let script = vec![
        sse_headers(),
        data(&content("a")),
        data(r#"{"choices":[{"delta":{"content":"#),
        data("[DONE]"),
        Step::End,
    ];
    let r = run_one(vec![script], |_| {}).await;
    expect_error(&r, ErrorKind::MalformedEvent);
}

#[tokio::test]
async fn event_over_size_cap_is_malformed_event() {
    let big = content(&"y".repeat(10_000));
    let script = vec![sse_headers(), data(&big), data("[DONE]"), Step::End];
    let server = ScriptServer::start(vec![script]).await;
    let client = Client::new(config(server.base_url()))
        .expect("client")
        .with_max_event_bytes(4096);
    let r = client.send(0, &chat_prompt(), Instant::now()).await;
    let message = expect_error(&r, ErrorKind::MalformedEvent);
    assert!(message.contains("4096"), "{message}");
}

#[tokio::test]
async fn clean_end_without_done_is_missing_done() {
    let script = vec![
        sse_headers(),
        data(&content("a")),
        data(USAGE_7_5),
        Step::End,
    ];
    let r = run_one(vec![script], |_| {}).await;
    expect_error(&r, ErrorKind::MissingDone);
    assert_eq!(r.output_tokens, Some(5));
}

#[tokio::test]
async fn error_object_in_stream_or_200_body_is_error_object() {
    let script = vec![
        sse_headers(),
        data(&content("a")),
        data(r#"{"error":{"message":"KV cache exhausted","type":"InternalError","code":500}}"#),
        Step::End,
    ];
    let r = run_one(vec![script], |_| {}).await;
    let message = expect_error(&r, ErrorKind::ErrorObject);
    assert_eq!(message, "KV cache exhausted");

    // llama.cpp: an `error:` SSE field.
    let script = vec![
        sse_headers(),
        data(&content("a")),
        chunk(
            "error: {\"code\":400,\"message\":\"context size exceeded\",\"type\":\"invalid_request_error\"}\n\n",
        ),
        Step::End,
    ];
    let r = run_one(vec![script], |_| {}).await;
    let message = expect_error(&r, ErrorKind::ErrorObject);
    assert_eq!(message, "context size exceeded");

    let r = run_one(
        vec![plain_response(
            "200 OK",
            "",
            r#"{"object":"error","message":"model not loaded"}"#,
        )],
        |_| {},
    )
    .await;
    let message = expect_error(&r, ErrorKind::ErrorObject);
    assert!(message.contains("model not loaded"), "{message}");
}

#[tokio::test]
async fn cancel_in_flight_is_cancelled() {
    let script = vec![sse_headers(), data(&content("a")), sleep_ms(5000)];
    let server = ScriptServer::start(vec![script]).await;
    let client = Client::new(config(server.base_url())).expect("client");
    let r = client
        .send_cancellable(0, &chat_prompt(), Instant::now(), async {
            tokio::time::sleep(Duration::from_millis(100)).await;
        })
        .await;
    expect_error(&r, ErrorKind::Cancelled);
    assert_eq!(r.content_chunks, 1);
    assert!((100.0..1000.0).contains(&r.e2e_ms));
}

#[tokio::test]
async fn concurrent_requests_each_get_their_own_record() {
    let script = vec![
        sse_headers(),
        sleep_ms(20),
        data(&content("a")),
        data(&content("b")),
        data(r#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}}"#),
        data("[DONE]"),
        Step::End,
    ];
    let server = ScriptServer::start(vec![script]).await;
    let mut cfg = config(server.base_url());
    cfg.max_connections = 8;
    let client = Arc::new(Client::new(cfg).expect("client"));
    let origin = Instant::now();
    let prompt = chat_prompt();
    let futures = (0..8).map(|i| {
        let client = client.clone();
        let prompt = prompt.clone();
        async move { client.send(i, &prompt, origin).await }
    });
    let records = futures_util::future::join_all(futures).await;
    let mut ids: Vec<&str> = records.iter().map(|r| r.request_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 8);
    for r in &records {
        assert!(r.is_ok(), "{:?}", r.error);
        assert_eq!(r.output_tokens, Some(2));
    }
    let summary =
        servebench::metrics::summarize(&records, servebench::plan::PercentileMethod::Linear, None);
    assert_eq!(
        (
            summary.requests,
            summary.success,
            summary.total_output_tokens
        ),
        (8, 8, 16)
    );
}

#[tokio::test]
async fn request_id_header_forms_and_empty_400() {
    use servebench::client::{RequestIdFormat, RequestIdSettings};
    let ok = || {
        let mut script = vec![sse_headers(), data(&content("x")), data("[DONE]")];
        script.push(Step::End);
        script
    };
    // plain, then a renamed header, then none; the last request gets an empty 400.
    let server = ScriptServer::start(vec![
        ok(),
        ok(),
        ok(),
        plain_response("400 Bad Request", "", ""),
    ])
    .await;
    let send = |settings: RequestIdSettings| {
        let mut cfg = config(server.base_url());
        cfg.endpoint.request_id = settings;
        Client::new(cfg)
            .expect("client")
            .with_request_id_prefix("r")
    };
    let origin = Instant::now();
    let plain = send(RequestIdSettings {
        format: RequestIdFormat::Plain,
        ..RequestIdSettings::default()
    });
    let r = plain.send(1, &chat_prompt(), origin).await;
    assert!(r.is_ok(), "{:?}", r.error);
    assert_eq!(r.sent_request_id, None);
    assert_eq!(r.sent_id(), "r-1");
    let renamed = send(RequestIdSettings {
        header: "x-correlation-id".parse().expect("name"),
        format: RequestIdFormat::Uuid,
    });
    let r = renamed.send(2, &chat_prompt(), origin).await;
    assert!(r.is_ok(), "{:?}", r.error);
    let off = send(RequestIdSettings {
        format: RequestIdFormat::Off,
        ..RequestIdSettings::default()
    });
    let r = off.send(3, &chat_prompt(), origin).await;
    assert!(r.is_ok(), "{:?}", r.error);
    assert_eq!(r.sent_request_id, None);

    let requests: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.to_ascii_lowercase())
        .collect();
    assert!(
        requests[0].contains("x-request-id: r-1\r\n"),
        "{}",
        requests[0]
    );
    let uuid = servebench::client::uuid_for("r-2");
    assert!(
        requests[1].contains(&format!("x-correlation-id: {uuid}\r\n"))
            && !requests[1].contains("x-request-id"),
        "{}",
        requests[1]
    );
    assert!(!requests[2].contains("x-request-id"), "{}", requests[2]);

    // An empty 4xx says so and names the headers a server may have rejected.
    let r = plain.send(4, &chat_prompt(), origin).await;
    let error = r.error.expect("HTTP 400");
    assert_eq!(error.status, Some(400));
    assert!(
        error.message.contains("empty response body"),
        "{}",
        error.message
    );
    assert!(
        error
            .message
            .contains("x-request-id, authorization, X-Bench"),
        "{}",
        error.message
    );
}
