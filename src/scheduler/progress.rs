//! Live progress of a window: one line per phase on a terminal, plain log lines otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::live::LiveTally;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A live line when stderr is a terminal, else a log line every few seconds.
    Auto,
    Quiet,
}

/// The progress line of one window; its figures are read from the window's [`LiveTally`].
pub struct PhaseProgress {
    label: String,
    bar: Option<ProgressBar>,
    log_every: Option<Duration>,
    last_log: Instant,
    started: Instant,
    planned_duration: Option<Duration>,
    planned_requests: Option<u64>,
}

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
        }
    }

    /// Redraw (or log) with the current in-flight count.
    pub fn tick(&mut self, tally: &LiveTally, in_flight: u64) {
        let line = self.status(tally, in_flight);
        if let Some(bar) = &self.bar {
            let position = match (self.planned_duration, self.planned_requests) {
                (Some(_), _) => self.started.elapsed().as_millis() as u64,
                (None, Some(_)) => tally.requests,
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

    fn status(&self, tally: &LiveTally, in_flight: u64) -> String {
        let elapsed_s = self.started.elapsed().as_secs_f64().max(1e-9);
        let bound = match (self.planned_duration, self.planned_requests) {
            (Some(d), _) => format!(
                "{:.0}/{:.0}s ({:.0}s left)",
                elapsed_s,
                d.as_secs_f64(),
                (d.as_secs_f64() - elapsed_s).max(0.0)
            ),
            (None, Some(n)) => format!("{}/{n} req", tally.requests),
            (None, None) => String::new(),
        };
        let ttft = match tally.recent_median_ms() {
            Some(ms) => format!("{ms:.1} ms"),
            None => "-".to_string(),
        };
        let (tokens, kind, latency) = if tally.encodes {
            (tally.input_tokens, "input tok/s", "e2e")
        } else {
            (tally.output_tokens, "tok/s", "ttft")
        };
        let (failures, recent) = tally.recent_failures();
        format!(
            "{bound} done {} in-flight {in_flight} {:.1} req/s {:.0} {kind} errors {} ({:.1}% of last {}) {latency} p50 {ttft}",
            tally.requests,
            tally.requests as f64 / elapsed_s,
            tokens as f64 / elapsed_s,
            tally.errors,
            100.0 * failures as f64 / recent.max(1) as f64,
            recent
        )
    }
}
