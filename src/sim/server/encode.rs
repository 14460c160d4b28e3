//! Embeddings and rerank: one JSON answer after the prompt's prefill time, no decoding.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::generation::{Injected, inject_fault};
use super::response::{
    Reply, echo_request_id, error_response, json_response, model_not_served, read_body,
};
use crate::sim::rng::{STREAM_TIMING, SimRng, mix64};
use crate::sim::settings::Settings;
use crate::sim::state::Shared;
use crate::sim::tokenizer::count_text_tokens;

/// Which encoding endpoint was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encode {
    Embeddings,
    Rerank,
}

/// `input`: one string or a list of strings.
#[derive(Deserialize)]
#[serde(untagged)]
enum Texts {
    One(String),
    Many(Vec<String>),
}

/// A rerank document: a string or `{text}` (Cohere, Jina).
#[derive(Deserialize)]
#[serde(untagged)]
enum Document {
    Text(String),
    Object { text: String },
}

#[derive(Deserialize)]
struct EncodeRequest {
    model: Option<String>,
    input: Option<Texts>,
    query: Option<String>,
    documents: Option<Vec<Document>>,
    top_n: Option<usize>,
}

pub(super) async fn encode(
    shared: Arc<Shared>,
    reset: &AtomicBool,
    request: Request<Incoming>,
    what: Encode,
) -> Reply {
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let seq = shared.next_seq.fetch_add(1, Relaxed) + 1;
    shared.counters.requests_total.fetch_add(1, Relaxed);
    let body = match read_body(request).await {
        Ok(body) => body,
        Err(response) => return Ok(response),
    };
    let parsed: EncodeRequest = match serde_json::from_slice(&body) {
        Ok(parsed) => parsed,
        Err(err) => {
            let message = format!("invalid JSON body: {err}");
            return Ok(error_response(StatusCode::BAD_REQUEST, &message));
        }
    };
    if let Some(response) = model_not_served(&shared.settings, parsed.model.as_deref()) {
        return Ok(response);
    }
    let (query, texts) = match inputs(parsed.input, parsed.query, parsed.documents, what) {
        Ok(inputs) => inputs,
        Err(message) => return Ok(error_response(StatusCode::BAD_REQUEST, message)),
    };
    let prompt_tokens = match prompt_tokens(&shared.settings, query.as_deref(), &texts) {
        Ok(tokens) => tokens,
        Err(message) => return Ok(error_response(StatusCode::BAD_REQUEST, &message)),
    };
    if let Injected::Reply(reply) = inject_fault(
        &shared,
        reset,
        seq,
        request_id.as_deref(),
        (false, crate::sim::api::Api::Completions),
        0,
    ) {
        return reply;
    }
    // A slot, then the single prefill lane, as a generation's prefill takes them.
    let _permit = shared.slots.clone().acquire_owned().await;
    prefill(&shared, seq, prompt_tokens).await;
    let settings = &shared.settings;
    let usage = json!({"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens});
    let value = match what {
        Encode::Embeddings => embeddings(settings, &texts, usage),
        Encode::Rerank => rerank(
            settings,
            seq,
            (&query.unwrap_or_default(), &texts, parsed.top_n),
            usage,
        ),
    };
    let mut response = json_response(StatusCode::OK, &value);
    echo_request_id(&mut response, request_id.as_deref());
    Ok(response)
}

/// The request's prompt tokens over every text, or why they do not fit the context.
fn prompt_tokens(
    settings: &Settings,
    query: Option<&str>,
    texts: &[String],
) -> Result<u64, String> {
    let query_tokens = query.map_or(0, count_text_tokens);
    // A rerank model reads each query–document pair as one sequence.
    let lengths: Vec<u64> = texts
        .iter()
        .map(|t| query_tokens + count_text_tokens(t))
        .collect();
    if let Some(&longest) = lengths.iter().max()
        && longest > settings.max_model_len
    {
        return Err(format!(
            "This model's maximum context length is {} tokens. However, your request has {longest} input tokens.",
            settings.max_model_len
        ));
    }
    Ok(lengths.iter().sum())
}

/// The prompt's prefill time, in turn on the single prefill lane.
async fn prefill(shared: &Shared, seq: u64, prompt_tokens: u64) {
    let settings = &shared.settings;
    shared
        .counters
        .prompt_tokens
        .fetch_add(prompt_tokens, Relaxed);
    let prefill_s = prompt_tokens as f64
        * settings.prefill_s_per_token
        * SimRng::new(settings.seed, seq, STREAM_TIMING).jitter_factor(settings.jitter);
    if prefill_s > 0.0 {
        let end = {
            let mut busy_until = shared
                .prefill_busy_until
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            let end = (*busy_until).max(Instant::now()) + crate::sim::generate::seconds(prefill_s);
            *busy_until = end;
            end
        };
        tokio::time::sleep_until(end).await;
    }
}

/// The embeddings answer: a seeded vector per text.
fn embeddings(settings: &Settings, texts: &[String], usage: Value) -> Value {
    let dim = settings.embedding_dim as usize;
    let data: Vec<_> = texts
        .iter()
        .enumerate()
        .map(|(index, text)| {
            json!({"object": "embedding", "index": index, "embedding": vector(settings.seed, text, dim)})
        })
        .collect();
    json!({"object": "list", "model": settings.model, "data": data, "usage": usage})
}

/// The rerank answer: the documents by seeded relevance to the query, best first, the
/// first `top_n` of them.
fn rerank(
    settings: &Settings,
    seq: u64,
    (query, texts, top_n): (&str, &[String], Option<usize>),
    usage: Value,
) -> Value {
    let mut results: Vec<(usize, f64)> = texts
        .iter()
        .enumerate()
        .map(|(index, text)| (index, relevance(settings.seed, query, text)))
        .collect();
    results.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    results.truncate(top_n.unwrap_or(results.len()));
    let results: Vec<_> = results
        .iter()
        .map(|(index, score)| json!({"index": index, "relevance_score": score}))
        .collect();
    json!({"id": format!("rerank-{seq:016x}"), "model": settings.model, "results": results, "usage": usage})
}

/// The query (rerank) and the texts to encode, or why the request is bad.
fn inputs(
    input: Option<Texts>,
    query: Option<String>,
    documents: Option<Vec<Document>>,
    what: Encode,
) -> Result<(Option<String>, Vec<String>), &'static str> {
    let texts = match what {
        Encode::Embeddings => match input {
            Some(Texts::One(text)) => vec![text],
            Some(Texts::Many(texts)) => texts,
            None => return Err("`input` must be a string or a list of strings"),
        },
        Encode::Rerank => {
            if query.is_none() {
                return Err("`query` must be a string");
            }
            documents
                .ok_or("`documents` must be a list of strings or {text} objects")?
                .into_iter()
                .map(|d| match d {
                    Document::Text(text) | Document::Object { text } => text,
                })
                .collect()
        }
    };
    if texts.is_empty() || texts.iter().any(|t| t.trim().is_empty()) {
        return Err("every input must be a non-empty string");
    }
    Ok((query, texts))
}

/// A unit vector from the seed and the text: equal texts get equal vectors.
fn vector(seed: u64, text: &str, dim: usize) -> Vec<f32> {
    let mut rng = SimRng::new(
        seed,
        crate::hash::fnv1a_64(text.as_bytes()),
        STREAM_TIMING + 8,
    );
    let raw: Vec<f64> = (0..dim).map(|_| rng.next_f64() * 2.0 - 1.0).collect();
    let norm = raw
        .iter()
        .map(|x| x * x)
        .sum::<f64>()
        .sqrt()
        .max(f64::MIN_POSITIVE);
    raw.iter().map(|x| (x / norm) as f32).collect()
}

/// A score in [0, 1) from the seed, the query and the document.
fn relevance(seed: u64, query: &str, document: &str) -> f64 {
    let key =
        crate::hash::fnv1a_64(query.as_bytes()) ^ mix64(crate::hash::fnv1a_64(document.as_bytes()));
    SimRng::new(seed, key, STREAM_TIMING + 9).next_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_unit_length_and_deterministic() {
        let a = vector(7, "one two", 64);
        assert_eq!(a, vector(7, "one two", 64));
        assert_ne!(a, vector(8, "one two", 64));
        assert_ne!(a, vector(7, "one three", 64));
        let norm: f64 = a.iter().map(|x| f64::from(*x) * f64::from(*x)).sum();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
    }
}
