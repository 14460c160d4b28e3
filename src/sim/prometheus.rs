//! Live counters and gauges of a simulator, and their Prometheus text form (vLLM's names).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// vLLM's bucket bounds for `vllm:time_to_first_token_seconds`.
const TTFT_BUCKETS_S: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
/// vLLM's bucket bounds for `vllm:e2e_request_latency_seconds`.
const E2E_BUCKETS_S: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

#[derive(Debug)]
pub(crate) struct Histogram {
    bounds_s: &'static [f64],
    /// Per-bucket (not cumulative) counts; the last slot is `+Inf`.
    counts: Vec<AtomicU64>,
    sum_ns: AtomicU64,
}

impl Histogram {
    fn new(bounds_s: &'static [f64]) -> Self {
        Histogram {
            bounds_s,
            counts: (0..=bounds_s.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: Duration) {
        let seconds = value.as_secs_f64();
        let slot = self
            .bounds_s
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(self.bounds_s.len());
        self.counts[slot].fetch_add(1, Relaxed);
        self.sum_ns
            .fetch_add(u64::try_from(value.as_nanos()).unwrap_or(u64::MAX), Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str, labels: &str) {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} histogram");
        let mut cumulative = 0u64;
        for (index, count) in self.counts.iter().enumerate() {
            cumulative += count.load(Relaxed);
            let le = match self.bounds_s.get(index) {
                Some(bound) => format!("{bound:?}"),
                None => "+Inf".to_string(),
            };
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}.0");
        }
        let sum_s = self.sum_ns.load(Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_count{{{labels}}} {cumulative}.0");
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum_s:?}");
    }
}

#[derive(Debug)]
pub(crate) struct Counters {
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    pub in_flight: AtomicU64,
    pub max_running: AtomicU64,
    pub max_in_flight: AtomicU64,
    pub requests_total: AtomicU64,
    pub finished_stop: AtomicU64,
    pub finished_length: AtomicU64,
    pub finished_abort: AtomicU64,
    /// Slots aborted requests kept (`leak_aborted_slots`).
    pub leaked_slots: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    pub prefix_queries: AtomicU64,
    pub prefix_hits: AtomicU64,
    pub evicted_blocks: AtomicU64,
    pub preemptions: AtomicU64,
    pub faults_injected: AtomicU64,
    pub ttft: Histogram,
    pub e2e: Histogram,
    /// A draft model decodes: the `spec_decode` counters are exported.
    pub speculative: std::sync::atomic::AtomicBool,
    pub spec_drafts: AtomicU64,
    pub spec_draft_tokens: AtomicU64,
    pub spec_accepted_tokens: AtomicU64,
}

impl Counters {
    pub fn new() -> Self {
        let zero = || AtomicU64::new(0);
        Counters {
            running: zero(),
            waiting: zero(),
            in_flight: zero(),
            max_running: zero(),
            max_in_flight: zero(),
            requests_total: zero(),
            finished_stop: zero(),
            finished_length: zero(),
            finished_abort: zero(),
            leaked_slots: zero(),
            prompt_tokens: zero(),
            generation_tokens: zero(),
            prefix_queries: zero(),
            prefix_hits: zero(),
            evicted_blocks: zero(),
            preemptions: zero(),
            faults_injected: zero(),
            ttft: Histogram::new(TTFT_BUCKETS_S),
            e2e: Histogram::new(E2E_BUCKETS_S),
            speculative: std::sync::atomic::AtomicBool::new(false),
            spec_drafts: zero(),
            spec_draft_tokens: zero(),
            spec_accepted_tokens: zero(),
        }
    }

    /// Prometheus text exposition (format 0.0.4), with vLLM's metric names.
    pub fn render(&self, model: &str) -> String {
        let labels = format!("model_name=\"{}\"", escape_label(model));
        let mut out = String::with_capacity(4096);
        for (name, kind, help, value) in self.scalars() {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "{name}{{{labels}}} {}.0", value.load(Relaxed));
        }
        let _ = writeln!(
            out,
            "# HELP vllm:request_success_total Count of successfully processed requests."
        );
        let _ = writeln!(out, "# TYPE vllm:request_success_total counter");
        for (reason, value) in [
            ("stop", &self.finished_stop),
            ("length", &self.finished_length),
            ("abort", &self.finished_abort),
        ] {
            let _ = writeln!(
                out,
                "vllm:request_success_total{{finished_reason=\"{reason}\",{labels}}} {}.0",
                value.load(Relaxed)
            );
        }
        self.ttft.render(
            &mut out,
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            &labels,
        );
        self.e2e.render(
            &mut out,
            "vllm:e2e_request_latency_seconds",
            "Histogram of end to end request latency in seconds.",
            &labels,
        );
        if self.speculative.load(Relaxed) {
            self.render_spec_decode(&mut out, &labels);
        }
        out
    }

    /// vLLM's `spec_decode` counters: verify steps, draft tokens proposed and accepted.
    fn render_spec_decode(&self, out: &mut String, labels: &str) {
        for (name, help, value) in [
            (
                "vllm:spec_decode_num_drafts_total",
                "Number of spec decoding drafts.",
                &self.spec_drafts,
            ),
            (
                "vllm:spec_decode_num_draft_tokens_total",
                "Number of draft tokens.",
                &self.spec_draft_tokens,
            ),
            (
                "vllm:spec_decode_num_accepted_tokens_total",
                "Number of accepted tokens.",
                &self.spec_accepted_tokens,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} counter");
            let _ = writeln!(out, "{name}{{{labels}}} {}.0", value.load(Relaxed));
        }
    }

    /// The single-valued series, in exposition order: name, type, help, value.
    fn scalars(&self) -> [(&'static str, &'static str, &'static str, &AtomicU64); 9] {
        [
            (
                "vllm:num_requests_running",
                "gauge",
                "Number of requests in model execution batches.",
                &self.running,
            ),
            (
                "vllm:num_requests_waiting",
                "gauge",
                "Number of requests waiting to be processed.",
                &self.waiting,
            ),
            (
                "vllm:prompt_tokens_total",
                "counter",
                "Number of prefill tokens processed.",
                &self.prompt_tokens,
            ),
            (
                "vllm:generation_tokens_total",
                "counter",
                "Number of generation tokens processed.",
                &self.generation_tokens,
            ),
            (
                "vllm:prefix_cache_queries_total",
                "counter",
                "Prefix cache queries, in terms of number of queried tokens.",
                &self.prefix_queries,
            ),
            (
                "vllm:prefix_cache_hits_total",
                "counter",
                "Prefix cache hits, in terms of number of cached tokens.",
                &self.prefix_hits,
            ),
            (
                "vllm:num_preemptions_total",
                "counter",
                "Cumulative number of preemptions from the engine.",
                &self.preemptions,
            ),
            (
                "servebench_sim:prefix_cache_evicted_blocks_total",
                "counter",
                "Prefix cache blocks evicted (LRU).",
                &self.evicted_blocks,
            ),
            (
                "servebench_sim:faults_injected_total",
                "counter",
                "Requests that received an injected fault.",
                &self.faults_injected,
            ),
        ]
    }
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let counters = Counters::new();
        counters.ttft.observe(Duration::from_millis(3));
        counters.ttft.observe(Duration::from_millis(30));
        counters.ttft.observe(Duration::from_secs(5000));
        let text = counters.render("m");
        assert!(text.contains(
            "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.005\"} 1.0"
        ));
        assert!(
            text.contains(
                "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.04\"} 2.0"
            )
        );
        assert!(
            text.contains(
                "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 3.0"
            )
        );
        assert!(text.contains("vllm:time_to_first_token_seconds_count{model_name=\"m\"} 3.0"));
    }

    #[test]
    fn series_come_in_exposition_order_with_their_types() {
        let counters = Counters::new();
        counters.running.store(2, Relaxed);
        counters.finished_length.store(5, Relaxed);
        let text = counters.render("m");
        let head: Vec<&str> = text.lines().take(6).collect();
        assert_eq!(
            head,
            [
                "# HELP vllm:num_requests_running Number of requests in model execution batches.",
                "# TYPE vllm:num_requests_running gauge",
                "vllm:num_requests_running{model_name=\"m\"} 2.0",
                "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
                "# TYPE vllm:num_requests_waiting gauge",
                "vllm:num_requests_waiting{model_name=\"m\"} 0.0",
            ]
        );
        let types: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .collect();
        assert_eq!(
            types,
            [
                "vllm:num_requests_running gauge",
                "vllm:num_requests_waiting gauge",
                "vllm:prompt_tokens_total counter",
                "vllm:generation_tokens_total counter",
                "vllm:prefix_cache_queries_total counter",
                "vllm:prefix_cache_hits_total counter",
                "vllm:num_preemptions_total counter",
                "servebench_sim:prefix_cache_evicted_blocks_total counter",
                "servebench_sim:faults_injected_total counter",
                "vllm:request_success_total counter",
                "vllm:time_to_first_token_seconds histogram",
                "vllm:e2e_request_latency_seconds histogram",
            ]
        );
        assert!(text.contains(
            "vllm:request_success_total{finished_reason=\"length\",model_name=\"m\"} 5.0"
        ));
    }
}
