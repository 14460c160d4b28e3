//! The server's own timing of a request, read from the chunk that carries it.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

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

/// A chunk's top-level `timings` (llama.cpp) or `metrics` (vLLM) object's figures, by
/// [`FIGURE_KEYS`], read in the chunk's one parse. Any shape is accepted: a server's odd timing
/// loses the timing, not the chunk; anything but an object is none.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct TimingsObject(
    Option<[Option<f64>; 5]>,
    /// vLLM's `speculative_decoding` member, when it holds its shape.
    pub(super) Option<crate::client::SpecDecoding>,
);

/// [`FigureKey`]'s place for vLLM's `speculative_decoding` member, after the figures.
const SPEC_DECODING_AT: usize = FIGURE_KEYS.len();

/// The figures either server's object may hold: llama.cpp's prompt and generation time, and
/// vLLM's queue, scheduling-to-first-token and generation time.
const FIGURE_KEYS: [&str; 5] = [
    "prompt_ms",
    "predicted_ms",
    "queue_time_ms",
    "time_to_first_token_ms",
    "generation_time_ms",
];

impl<'de> Deserialize<'de> for TimingsObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TimingsObject;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TimingsObject, A::Error> {
                let mut figures = [None; 5];
                let mut spec = None;
                while let Some(FigureKey(at)) = map.next_key()? {
                    match at {
                        Some(SPEC_DECODING_AT) => spec = map.next_value::<Spec>()?.0,
                        Some(at) => figures[at] = map.next_value::<Figure>()?.0,
                        None => map.next_value::<IgnoredAny>().map(drop)?,
                    }
                }
                Ok(TimingsObject(Some(figures), spec))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<TimingsObject, A::Error> {
                FigureVisitor
                    .visit_seq(seq)
                    .map(|_| TimingsObject(None, None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<TimingsObject, E> {
                Ok(TimingsObject(None, None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<TimingsObject, E> {
                Ok(TimingsObject(None, None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<TimingsObject, E> {
                Ok(TimingsObject(None, None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<TimingsObject, E> {
                Ok(TimingsObject(None, None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<TimingsObject, E> {
                Ok(TimingsObject(None, None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<TimingsObject, E> {
                Ok(TimingsObject(None, None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A key's place in [`FIGURE_KEYS`], read without copying it.
struct FigureKey(Option<usize>);

impl<'de> Deserialize<'de> for FigureKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = FigureKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<FigureKey, E> {
                let at = FIGURE_KEYS.iter().position(|k| *k == key);
                Ok(FigureKey(at.or(
                    (key == "speculative_decoding").then_some(SPEC_DECODING_AT),
                )))
            }
        }
        d.deserialize_str(V)
    }
}

/// `speculative_decoding`'s value: vLLM's object, or none.
struct Spec(Option<crate::client::SpecDecoding>);

impl<'de> Deserialize<'de> for Spec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::client::spec_decode::lenient_spec_decoding(d).map(Spec)
    }
}

/// One figure: a finite, non-negative number; anything else is no figure.
struct Figure(Option<f64>);

impl<'de> Deserialize<'de> for Figure {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = d.deserialize_any(FigureVisitor)?;
        Ok(Figure(value.filter(|x| x.is_finite() && *x >= 0.0)))
    }
}

struct FigureVisitor;

impl<'de> Visitor<'de> for FigureVisitor {
    type Value = Option<f64>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Option<f64>, E> {
        Ok(Some(x))
    }
    fn visit_u64<E: de::Error>(self, x: u64) -> Result<Option<f64>, E> {
        Ok(Some(x as f64))
    }
    fn visit_i64<E: de::Error>(self, x: i64) -> Result<Option<f64>, E> {
        Ok(Some(x as f64))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<f64>, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<f64>, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<f64>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<f64>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<f64>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// The server's timing from a chunk's `timings` and `metrics` objects: llama.cpp's when
/// present (it has no queue figure), else vLLM's; `None` when the chunk has neither object.
pub(super) fn server_timings(
    timings: Option<TimingsObject>,
    metrics: Option<&TimingsObject>,
) -> Option<ServerTimings> {
    if let Some([prompt_ms, predicted_ms, ..]) = timings.and_then(|t| t.0) {
        return Some(ServerTimings {
            queue_ms: None,
            prompt_ms,
            predicted_ms,
        });
    }
    let [.., queue_ms, prompt_ms, predicted_ms] = metrics.and_then(|m| m.0)?;
    Some(ServerTimings {
        queue_ms,
        prompt_ms,
        predicted_ms,
    })
}
