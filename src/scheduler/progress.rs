//! Live progress of a window: one line per phase on a terminal, plain log lines otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::client::RequestRecord;
use crate::quantile::{PercentileMethod, percentile};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A live line when stderr is a terminal, else a log line every few seconds.
    Auto,
    Quiet,
}

/// Running figures for the progress line, updated as records arrive.
pub struct PhaseProgress {
    label: String,
    bar: Option<ProgressBar>,
    log_every: Option<Duration>,
    last_log: Instant,
    started: Instant,
    planned_duration: Option<Duration>,
    planned_requests: Option<u64>,
    done: u64,
    errors: u64,
    output_tokens: u64,
    /// Embeddings and rerank: prompt tokens, shown instead of output tokens, and E2E latency
    /// kept in the TTFT window (they have no first token).
    input_tokens: u64,
    encodes: bool,
    recent_ttft_ms: Vec<f64>,
    next_ttft_slot: usize,
    /// Outcomes of the last `TTFT_WINDOW` requests (true: failed), for a rolling error rate.
    recent_failed: std::collections::VecDeque<bool>,
    recent_failures: usize,
}

/// Recent TTFTs kept for the running median.
const TTFT_WINDOW: usize = 512;

impl PhaseProgress {
    pub fn new(
        mode: ProgressMode,
        label: String,
        planned_duration: Option<Duration>,
        planned_requests: Option<u64>,
    ) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bar = (mode == ProgressMode::Auto && terminal).then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(
                    planned_duration
                        .map(|d| d.as_millis() as u64)
                        .or(planned_requests)
                        .unwrap_or(0),
                ),
                ProgressDrawTarget::stderr_with_hz(4),
            );
            let template = "{prefix:.bold} [{elapsed_precise}] {bar:24.cyan/blue} {msg}";
            bar.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_prefix(label.clone());
            bar
        });
        let log_every = (mode == ProgressMode::Auto && !terminal).then_some(Duration::from_secs(5));
        PhaseProgress {
            label,
            bar,
            log_every,
            last_log: Instant::now(),
            started: Instant::now(),
            planned_duration,
            planned_requests,
            done: 0,
            errors: 0,
            output_tokens: 0,
            input_tokens: 0,
            encodes: false,
            recent_ttft_ms: Vec::with_capacity(TTFT_WINDOW),
            next_ttft_slot: 0,
            recent_failed: std::collections::VecDeque::with_capacity(TTFT_WINDOW),
            recent_failures: 0,
        }
    }

    pub fn record(&mut self, record: &RequestRecord) {
        self.done += 1;
        if self.recent_failed.len() == TTFT_WINDOW && self.recent_failed.pop_front() == Some(true) {
            self.recent_failures -= 1;
        }
        self.recent_failed.push_back(!record.is_ok());
        self.recent_failures += usize::from(!record.is_ok());
        if record.is_ok() {
            self.output_tokens += record.output_tokens.unwrap_or(0);
            self.input_tokens += record.prompt_tokens.unwrap_or(0);
        } else {
            self.errors += 1;
        }
        self.encodes |= record.inputs.is_some();
        let latency = if record.inputs.is_some() {
            record.is_ok().then_some(record.e2e_ms)
        } else {
            record.ttft_ms
        };
        if let Some(ttft) = latency {
            if self.recent_ttft_ms.len() < TTFT_WINDOW {
                self.recent_ttft_ms.push(ttft);
            } else {
                self.recent_ttft_ms[self.next_ttft_slot] = ttft;
                self.next_ttft_slot = (self.next_ttft_slot + 1) % TTFT_WINDOW;
            }
        }
    }

    /// Redraw (or log) with the current in-flight count.
    pub fn tick(&mut self, in_flight: u64) {
        let line = self.status(in_flight);
        if let Some(bar) = &self.bar {
            let position = match (self.planned_duration, self.planned_requests) {
                (Some(_), _) => self.started.elapsed().as_millis() as u64,
                (None, Some(_)) => self.done,
                (None, None) => 0,
            };
            bar.set_position(position);
            bar.set_message(line);
        } else if let Some(every) = self.log_every
            && self.last_log.elapsed() >= every
        {
            self.last_log = Instant::now();
            eprintln!("{}: {line}", self.label);
        }
    }

    pub fn finish(&mut self, summary_line: &str) {
        // Log mode prints nothing here: the runner prints each phase's figures.
        if let Some(bar) = &self.bar {
            bar.finish_with_message(summary_line.to_string());
        }
    }

    fn status(&self, in_flight: u64) -> String {
        let elapsed_s = self.started.elapsed().as_secs_f64().max(1e-9);
        let bound = match (self.planned_duration, self.planned_requests) {
            (Some(d), _) => format!(
                "{:.0}/{:.0}s ({:.0}s left)",
                elapsed_s,
                d.as_secs_f64(),
                (d.as_secs_f64() - elapsed_s).max(0.0)
            ),
            (None, Some(n)) => format!("{}/{n} req", self.done),
            (None, None) => String::new(),
        };
        let ttft = match median(&self.recent_ttft_ms) {
            Some(ms) => format!("{ms:.1} ms"),
            None => "-".to_string(),
        };
        let (tokens, kind, latency) = if self.encodes {
            (self.input_tokens, "input tok/s", "e2e")
        } else {
            (self.output_tokens, "tok/s", "ttft")
        };
        format!(
            "{bound} done {} in-flight {in_flight} {:.1} req/s {:.0} {kind} errors {} ({:.1}% of last {}) {latency} p50 {ttft}",
            self.done,
            self.done as f64 / elapsed_s,
            tokens as f64 / elapsed_s,
            self.errors,
            100.0 * self.recent_failures as f64 / self.recent_failed.len().max(1) as f64,
            self.recent_failed.len()
        )
    }
}

/// The median as the report reads it, so the live line and the report agree.
fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(percentile(&sorted, 0.5, PercentileMethod::Linear))
}
