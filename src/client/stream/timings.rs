//! The server's own timing of a request, read from the chunk that carries it.

use serde::Deserialize;

/// What a server says it spent on one request.
///
/// llama.cpp's server sends `timings` (`prompt_ms`, `predicted_ms`, `prompt_n`,
/// `predicted_n`, …) on its last streamed chunk. vLLM started with
/// `--enable-per-request-metrics` sends `metrics` (`queue_time_ms`, `time_to_first_token_ms`
/// from scheduling, `generation_time_ms`) on its usage chunk. SGLang reports `queue_time` only
/// in its native `/generate` API's `meta_info`, not in its OpenAI-compatible stream. TGI's
/// timing headers (`x-queue-time`, …) come only with non-streamed responses: a stream's headers
/// leave before the work is done. So for those servers this stays empty.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ServerTimings {
    /// Waiting in the engine's scheduler queue (vLLM).
    pub queue_ms: Option<f64>,
    pub prompt_ms: Option<f64>,
    pub predicted_ms: Option<f64>,
}

impl ServerTimings {
    /// Queue (when reported), prompt and generation time, when the last two are known.
    pub fn total_ms(&self) -> Option<f64> {
        Some(self.queue_ms.unwrap_or(0.0) + self.prompt_ms? + self.predicted_ms?)
    }
}

#[derive(Debug, Default, Deserialize)]
struct TimingsEvent {
    #[serde(default)]
    timings: Option<Timings>,
    #[serde(default)]
    metrics: Option<VllmMetrics>,
}

/// vLLM's per-request `metrics`; any field may be `null`.
#[derive(Debug, Default, Deserialize)]
struct VllmMetrics {
    #[serde(default)]
    queue_time_ms: Option<f64>,
    #[serde(default)]
    time_to_first_token_ms: Option<f64>,
    #[serde(default)]
    generation_time_ms: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
struct Timings {
    #[serde(default)]
    prompt_ms: Option<f64>,
    #[serde(default)]
    predicted_ms: Option<f64>,
}

/// llama.cpp's `timings` or vLLM's `metrics`, read only from chunks that carry no text (the
/// last chunk, or the usage chunk), so the per-token path pays nothing.
pub(super) fn server_timings(data: &[u8]) -> Option<ServerTimings> {
    // Built once: making a searcher costs more than searching a chunk with it.
    static KEYS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 2]> =
        std::sync::LazyLock::new(|| {
            [
                memchr::memmem::Finder::new(b"\"timings\""),
                memchr::memmem::Finder::new(b"\"metrics\""),
            ]
        });
    KEYS.iter().find_map(|key| key.find(data))?;
    let event: TimingsEvent = serde_json::from_slice(data).ok()?;
    let finite = |v: Option<f64>| v.filter(|x| x.is_finite() && *x >= 0.0);
    if let Some(timings) = event.timings {
        return Some(ServerTimings {
            queue_ms: None,
            prompt_ms: finite(timings.prompt_ms),
            predicted_ms: finite(timings.predicted_ms),
        });
    }
    let metrics = event.metrics?;
    Some(ServerTimings {
        queue_ms: finite(metrics.queue_time_ms),
        prompt_ms: finite(metrics.time_to_first_token_ms),
        predicted_ms: finite(metrics.generation_time_ms),
    })
}
