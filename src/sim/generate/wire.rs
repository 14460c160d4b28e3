//! The wire format of a generation: SSE chunk heads, usage and timings objects, the tail.

use std::sync::atomic::Ordering::Relaxed;

use bytes::BufMut;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{GenSpec, Generation, MidFault, ToolPlan, json_inner};
use crate::sim::api::Api;
use crate::sim::state::Shared;
use crate::sim::{ReasoningField, UsagePlacement};

/// Per-request pre-serialized SSE pieces: an event is `prefix + words + suffix`.
pub(super) struct Templates {
    pub(super) head: String,
    pub(super) content_prefix: Vec<u8>,
    pub(super) reasoning_prefix: Vec<u8>,
    pub(super) suffix: &'static [u8],
    /// A tool call's first event: the call's id and name, and the arguments' opening.
    pub(super) first_content_prefix: Option<Vec<u8>>,
    /// A tool call's last event: the arguments' closing, then the suffix.
    pub(super) last_suffix: Option<&'static [u8]>,
    /// Responses API: the hex part of the response's and items' ids.
    pub(super) response_id: String,
}

impl Templates {
    /// The request's event pieces, for its API and (chat) its tool call.
    pub(super) fn new(spec: &GenSpec, shared: &Shared) -> Self {
        let head = chunk_head(spec, shared);
        let reasoning_key = match shared.settings.reasoning_field {
            ReasoningField::ReasoningContent => "reasoning_content",
            ReasoningField::Reasoning => "reasoning",
        };
        let response_id = format!(
            "{:016x}",
            crate::sim::rng::mix64(shared.settings.seed ^ spec.seq)
        );
        if let (Api::Chat, Some(tool)) = (spec.api, &spec.tool_call) {
            return Self::tool_call(head, reasoning_key, tool, response_id);
        }
        let (content_prefix, reasoning_prefix, suffix): (String, String, &'static [u8]) = match spec.api {
            Api::Responses => (
                format!(
                    "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"item_id\":\"msg_{response_id}\",\"output_index\":0,\"content_index\":0,\"delta\":\""
                ),
                format!(
                    "event: response.reasoning_text.delta\ndata: {{\"type\":\"response.reasoning_text.delta\",\"item_id\":\"rs_{response_id}\",\"output_index\":0,\"content_index\":0,\"delta\":\""
                ),
                b"\"}\n\n",
            ),
            Api::Messages => (
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"".to_string(),
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"".to_string(),
                b"\"}}\n\n",
            ),
            Api::Chat => (
                format!(r#"data: {head}[{{"index":0,"delta":{{"content":""#),
                format!(r#"data: {head}[{{"index":0,"delta":{{"{reasoning_key}":""#),
                b"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
            ),
            Api::Completions => (
                format!(r#"data: {head}[{{"index":0,"text":""#),
                format!(r#"data: {head}[{{"index":0,"text":""#),
                b"\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}]}\n\n",
            ),
        };
        Templates {
            head,
            content_prefix: content_prefix.into_bytes(),
            reasoning_prefix: reasoning_prefix.into_bytes(),
            suffix,
            first_content_prefix: None,
            last_suffix: None,
            response_id,
        }
    }

    /// A chat reply that is a tool call: its first event names the call, the rest carry its
    /// arguments' words, and the last closes them.
    fn tool_call(head: String, reasoning_key: &str, tool: &ToolPlan, response_id: String) -> Self {
        let (before, _) = tool.arguments_around();
        let first_content_prefix = format!(
            r#"data: {head}[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"{}","type":"function","function":{{"name":{},"arguments":"{}"#,
            tool.id,
            serde_json::Value::String(tool.name.clone()),
            json_inner(&before)
        );
        let content_prefix = format!(
            r#"data: {head}[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":""#
        );
        let reasoning_prefix = format!(r#"data: {head}[{{"index":0,"delta":{{"{reasoning_key}":""#);
        Templates {
            head,
            content_prefix: content_prefix.into_bytes(),
            reasoning_prefix: reasoning_prefix.into_bytes(),
            suffix: b"\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
            first_content_prefix: Some(first_content_prefix.into_bytes()),
            last_suffix: Some(&b"\\\"}\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n"[..]),
            response_id,
        }
    }
}

fn chunk_head(spec: &GenSpec, shared: &Shared) -> String {
    let (prefix, object) = match (spec.api, spec.stream) {
        (Api::Chat, true) => ("chatcmpl", "chat.completion.chunk"),
        (Api::Chat, false) => ("chatcmpl", "chat.completion"),
        (Api::Completions, _) => ("cmpl", "text_completion"),
        (Api::Responses, _) => ("resp", "response"),
        (Api::Messages, _) => ("msg", "message"),
    };
    format!(
        r#"{{"id":"{prefix}-{:016x}","object":"{object}","created":{},"model":{},"choices":"#,
        crate::sim::rng::mix64(shared.settings.seed ^ spec.seq),
        spec.created_unix_s,
        match &spec.adapter {
            Some(adapter) => Value::String(adapter.clone()).to_string(),
            None => shared.settings.model_json.clone(),
        }
    )
}

impl Generation {
    /// The model the reply names: the adapter asked for, or the served model.
    fn reply_model(&self) -> &str {
        self.spec
            .adapter
            .as_deref()
            .unwrap_or(&self.shared.settings.model)
    }

    pub(super) fn usage_json(&self) -> Value {
        let completion = self.emitted();
        json!({
            "prompt_tokens": self.spec.prompt_tokens,
            "total_tokens": self.spec.prompt_tokens + completion,
            "completion_tokens": completion,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": self.usage_reasoning_tokens()},
        })
    }

    /// The usage's reasoning count: what streamed, or 0 under `zero_reasoning_usage`.
    fn usage_reasoning_tokens(&self) -> u64 {
        if self.shared.settings.zero_reasoning_usage {
            0
        } else {
            self.emitted_reasoning
        }
    }

    /// The `metrics` object the usage carries: vLLM's timing when asked for, and its
    /// speculative-decoding acceptance when a draft model decodes (vLLM sends that one
    /// whenever its per-request spec-decode metrics are on).
    fn metrics_json(&self, end: Instant) -> Option<Value> {
        let mut metrics = self
            .shared
            .settings
            .vllm_metrics
            .then(|| self.vllm_metrics_json(end));
        if let Some(draft) = &self.draft {
            let object = metrics.get_or_insert_with(|| json!({}));
            object["speculative_decoding"] = draft.metrics_json();
        }
        metrics
    }

    /// llama.cpp's `timings` object, from this generation's actual schedule.
    pub(super) fn timings_json(&self, end: Instant) -> Value {
        let prompt_n = self.spec.prompt_tokens - self.cached_tokens;
        let prompt_ms = (self.prefill_end - self.prefill_start).as_secs_f64() * 1000.0;
        let predicted_n = self.emitted();
        let predicted_ms = end
            .saturating_duration_since(self.prefill_end)
            .as_secs_f64()
            * 1000.0;
        let per = |ms: f64, n: u64| if n > 0 { ms / n as f64 } else { 0.0 };
        let rate = |ms: f64, n: u64| {
            if ms > 0.0 {
                n as f64 * 1000.0 / ms
            } else {
                0.0
            }
        };
        json!({
            "cache_n": self.cached_tokens,
            "prompt_n": prompt_n,
            "prompt_ms": prompt_ms,
            "prompt_per_token_ms": per(prompt_ms, prompt_n),
            "prompt_per_second": rate(prompt_ms, prompt_n),
            "predicted_n": predicted_n,
            "predicted_ms": predicted_ms,
            "predicted_per_token_ms": per(predicted_ms, predicted_n),
            "predicted_per_second": rate(predicted_ms, predicted_n),
        })
    }

    /// vLLM's per-request `metrics`: queue from arrival to the prefill's start, time to first
    /// token from there, generation from the first token to the last.
    pub(super) fn vllm_metrics_json(&self, end: Instant) -> Value {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let queue_ms = ms(self
            .prefill_start
            .saturating_duration_since(self.spec.received));
        let ttft_ms = ms(self
            .prefill_end
            .saturating_duration_since(self.prefill_start));
        let generation_ms = ms(end.saturating_duration_since(self.prefill_end));
        let emitted = self.emitted();
        let mean_itl = (emitted > 1).then(|| generation_ms / (emitted - 1) as f64);
        let inference_s = (ttft_ms + generation_ms) / 1000.0;
        json!({
            "time_to_first_token_ms": ttft_ms,
            "generation_time_ms": generation_ms,
            "queue_time_ms": queue_ms,
            "mean_itl_ms": mean_itl,
            "tokens_per_second": (inference_s > 0.0).then(|| emitted as f64 / inference_s),
        })
    }

    pub(super) fn chunk_object(&self, choices: Value) -> serde_json::Map<String, Value> {
        let (prefix, object) = match self.spec.api {
            Api::Chat => ("chatcmpl", "chat.completion.chunk"),
            Api::Completions => ("cmpl", "text_completion"),
            Api::Responses => ("resp", "response"),
            Api::Messages => ("msg", "message"),
        };
        let object = if self.spec.stream {
            object
        } else {
            match self.spec.api {
                Api::Chat => "chat.completion",
                Api::Completions => "text_completion",
                Api::Responses => "response",
                Api::Messages => "message",
            }
        };
        let mut map = serde_json::Map::new();
        map.insert(
            "id".into(),
            Value::String(format!(
                "{prefix}-{:016x}",
                crate::sim::rng::mix64(self.shared.settings.seed ^ self.spec.seq)
            )),
        );
        map.insert("object".into(), Value::String(object.into()));
        map.insert("created".into(), json!(self.spec.created_unix_s));
        map.insert("model".into(), Value::String(self.reply_model().into()));
        map.insert("choices".into(), choices);
        map
    }

    pub(super) fn put_event(&mut self, value: &serde_json::Map<String, Value>) {
        self.buf.put_slice(b"data: ");
        self.buf
            .put_slice(Value::Object(value.clone()).to_string().as_bytes());
        self.buf.put_slice(b"\n\n");
    }

    /// A Responses API response object with this status and usage (`null` while running).
    pub(super) fn response_object(&self, status: &str, usage: Value) -> Value {
        let id = &self.templates.response_id;
        let output = if status == "in_progress" {
            json!([])
        } else {
            json!([{"type": "message", "id": format!("msg_{id}"), "status": "completed",
                "role": "assistant", "content": [{"type": "output_text",
                "text": self.content_text, "annotations": []}]}])
        };
        let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
        json!({
            "id": format!("resp_{id}"),
            "object": "response",
            "created_at": self.spec.created_unix_s,
            "status": status,
            "model": self.reply_model(),
            "output": output,
            "incomplete_details": incomplete,
            "usage": usage,
        })
    }

    /// The Responses API's usage object.
    fn responses_usage(&self) -> Value {
        let completion = self.emitted();
        json!({
            "input_tokens": self.spec.prompt_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": self.usage_reasoning_tokens()},
            "total_tokens": self.spec.prompt_tokens + completion,
        })
    }

    /// `response.completed` (or `response.incomplete` at `max_output_tokens`) for a stream;
    /// the response object otherwise.
    fn put_responses_tail(&mut self) {
        let status = match self.spec.finish_reason {
            "length" => "incomplete",
            _ => "completed",
        };
        let response = self.response_object(status, self.responses_usage());
        if !self.spec.stream {
            let mut text = response.to_string();
            if self.fault_fired && matches!(self.spec.fault, Some((MidFault::Malformed, _))) {
                text.truncate(text.len() / 2);
            }
            self.buf.put_slice(text.as_bytes());
        } else if !self.spec.missing_done {
            let kind = format!("response.{status}");
            let event = json!({"type": kind, "response": response});
            self.buf
                .put_slice(format!("event: {kind}\ndata: {event}\n\n").as_bytes());
        }
    }

    /// The Messages API's usage: `input_tokens` leaves out the tokens read from the cache.
    fn messages_usage(&self, output_tokens: u64) -> Value {
        json!({
            "input_tokens": self.spec.prompt_tokens - self.cached_tokens,
            "cache_read_input_tokens": self.cached_tokens,
            "output_tokens": output_tokens,
        })
    }

    /// A Messages API message object with this content and usage.
    fn message_object(&self, content: Value, stop_reason: Value, usage: Value) -> Value {
        json!({
            "id": format!("msg_{}", self.templates.response_id),
            "type": "message",
            "role": "assistant",
            "content": content,
            "model": self.reply_model(),
            "stop_reason": stop_reason,
            "stop_sequence": null,
            "usage": usage,
        })
    }

    /// `message_start` and the text block's start, as the first token goes out.
    pub(super) fn put_message_start(&mut self) {
        let message = self.message_object(json!([]), Value::Null, self.messages_usage(0));
        let start = json!({"type": "message_start", "message": message});
        let block = json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}});
        self.buf.put_slice(
            format!(
                "event: message_start\ndata: {start}\n\nevent: content_block_start\ndata: {block}\n\n"
            )
            .as_bytes(),
        );
    }

    /// The block's stop, `message_delta` with the totals and `message_stop` for a stream; the
    /// message object otherwise.
    fn put_messages_tail(&mut self) {
        let stop_reason = match self.spec.finish_reason {
            "length" => "max_tokens",
            _ => "end_turn",
        };
        let usage = self.messages_usage(self.emitted());
        if !self.spec.stream {
            let content = json!([{"type": "text", "text": self.content_text}]);
            let mut text = self
                .message_object(content, json!(stop_reason), usage)
                .to_string();
            if self.fault_fired && matches!(self.spec.fault, Some((MidFault::Malformed, _))) {
                text.truncate(text.len() / 2);
            }
            self.buf.put_slice(text.as_bytes());
            return;
        }
        let stop = json!({"type": "content_block_stop", "index": 0});
        let delta = json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": usage});
        self.buf.put_slice(
            format!(
                "event: content_block_stop\ndata: {stop}\n\nevent: message_delta\ndata: {delta}\n\n"
            )
            .as_bytes(),
        );
        if !self.spec.missing_done {
            self.buf
                .put_slice(b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
        }
    }

    /// The tool call's JSON pieces: the call as a chat message holds it, and as logged.
    fn tool_call_json(&self) -> Option<(Value, crate::sim::SimToolCall)> {
        let tool = self.spec.tool_call.as_ref()?;
        let (before, after) = tool.arguments_around();
        let arguments = format!("{before}{}{after}", self.content_text);
        let wire = json!({"id": tool.id, "type": "function",
            "function": {"name": tool.name, "arguments": arguments}});
        let seen = crate::sim::SimToolCall {
            id: tool.id.clone(),
            name: tool.name.clone(),
            arguments,
        };
        Some((wire, seen))
    }

    /// Finish chunk, usage, timings and `[DONE]` for a stream; the whole JSON otherwise.
    pub(super) fn write_tail(&mut self) {
        let end = Instant::now();
        match self.spec.api {
            Api::Responses => self.put_responses_tail(),
            Api::Messages => self.put_messages_tail(),
            Api::Chat | Api::Completions => {
                let settings = &self.shared.settings;
                let with_usage = settings.usage != UsagePlacement::None
                    && (self.spec.include_usage || !self.spec.stream);
                let timings = settings.llama_timings.then(|| self.timings_json(end));
                // vLLM sends its per-request metrics with the usage, and only there.
                let metrics = self.metrics_json(end);
                if self.spec.stream {
                    self.put_stream_tail(with_usage, timings, metrics);
                } else {
                    self.put_body_tail(with_usage, timings, metrics);
                }
            }
        }
        self.end_tail(end);
    }

    /// A chat or completions stream's finish chunk, its usage (in that chunk or one of its
    /// own) and `[DONE]`.
    fn put_stream_tail(
        &mut self,
        with_usage: bool,
        timings: Option<Value>,
        metrics: Option<Value>,
    ) {
        let finish_reason = self.spec.finish_reason;
        let finish_choice = match self.spec.api {
            Api::Chat => json!([{"index": 0, "delta": {}, "logprobs": null,
                "finish_reason": finish_reason}]),
            Api::Completions => json!([{"index": 0, "text": "", "logprobs": null,
                "finish_reason": finish_reason, "stop_reason": null}]),
            Api::Responses | Api::Messages => {
                unreachable!("the typed events' tails are written apart")
            }
        };
        let mut finish = self.chunk_object(finish_choice);
        let usage_placement = self.shared.settings.usage;
        let separate = with_usage && usage_placement == UsagePlacement::Separate;
        if with_usage && usage_placement == UsagePlacement::FinishChunk {
            finish.insert("usage".into(), self.usage_json());
            if let Some(metrics) = &metrics {
                finish.insert("metrics".into(), metrics.clone());
            }
        }
        if let (false, Some(timings)) = (separate, &timings) {
            finish.insert("timings".into(), timings.clone());
        }
        self.put_event(&finish);
        if separate {
            let mut usage = self.chunk_object(json!([]));
            usage.insert("usage".into(), self.usage_json());
            if let Some(metrics) = &metrics {
                usage.insert("metrics".into(), metrics.clone());
            }
            if let Some(timings) = timings {
                usage.insert("timings".into(), timings);
            }
            self.put_event(&usage);
        }
        if !self.spec.missing_done {
            self.buf.put_slice(b"data: [DONE]\n\n");
        }
    }

    /// A chat or completions reply's whole JSON body (cut in half by a malformed fault).
    fn put_body_tail(&mut self, with_usage: bool, timings: Option<Value>, metrics: Option<Value>) {
        let finish_reason = self.spec.finish_reason;
        let choice = match self.spec.api {
            Api::Chat => json!([{"index": 0, "message": self.chat_message(), "logprobs": null,
                "finish_reason": finish_reason}]),
            Api::Completions => json!([{"index": 0, "text": self.content_text,
                "logprobs": null, "finish_reason": finish_reason, "stop_reason": null}]),
            Api::Responses | Api::Messages => {
                unreachable!("the typed events' tails are written apart")
            }
        };
        let mut body = self.chunk_object(choice);
        if with_usage {
            body.insert("usage".into(), self.usage_json());
            if let Some(metrics) = metrics {
                body.insert("metrics".into(), metrics);
            }
        }
        if let Some(timings) = timings {
            body.insert("timings".into(), timings);
        }
        let mut text = Value::Object(body).to_string();
        if self.fault_fired && matches!(self.spec.fault, Some((MidFault::Malformed, _))) {
            text.truncate(text.len() / 2);
        }
        self.buf.put_slice(text.as_bytes());
    }

    /// A chat reply's message: its text or tool call, and its reasoning.
    fn chat_message(&self) -> serde_json::Map<String, Value> {
        let mut message = serde_json::Map::new();
        message.insert("role".into(), json!("assistant"));
        match self.tool_call_json() {
            Some((call, _)) => {
                message.insert("content".into(), Value::Null);
                message.insert("tool_calls".into(), json!([call]));
            }
            None => {
                message.insert("content".into(), json!(self.content_text));
            }
        }
        if self.spec.reasoning_tokens > 0 {
            let key = match self.shared.settings.reasoning_field {
                ReasoningField::ReasoningContent => "reasoning_content",
                ReasoningField::Reasoning => "reasoning",
            };
            message.insert(key.into(), json!(self.reasoning_text));
        }
        message
    }

    /// Counters, the request log and the send timestamps, once the tail is written.
    fn end_tail(&mut self, end: Instant) {
        let finish_reason = self.spec.finish_reason;
        let counters = &self.shared.counters;
        match finish_reason {
            "length" => counters.finished_length.fetch_add(1, Relaxed),
            _ => counters.finished_stop.fetch_add(1, Relaxed),
        };
        counters
            .e2e
            .observe(end.saturating_duration_since(self.spec.received));
        self.last_chunk = Some(end);
        if let Some(log) = &self.shared.requests {
            let mut log = log.lock().unwrap_or_else(|poison| poison.into_inner());
            if let Some(seen) = log.iter_mut().rev().find(|r| r.seq == self.spec.seq) {
                match self.tool_call_json() {
                    Some((_, call)) => {
                        seen.reply = Some(String::new());
                        seen.reply_tool_call = Some(call);
                    }
                    None => seen.reply = Some(self.content_text.clone()),
                }
            }
        }
        self.finish();
    }
}
