//! `/tokenize` calibration against a scripted loopback server.

use super::*;

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
