//! One phase: its client and prompts, the warmup and measured windows, the server scrapes
//! around them, and the phase's result.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::client::{Client, ClientConfig, RequestRecord};
use crate::plan::LoadedPlan;
use crate::report::{
    self, Figures, PhaseFacts, PhaseResult, PromptTokenCheck, ServerMetrics, WarmupResult,
};
use crate::schedule::{self, PhaseSettings, ShardSpec};
use crate::scheduler::progress::{PhaseProgress, ProgressMode};
use crate::scheduler::{self, LiveCounters, Stops, WindowSpec};
use crate::workload::{PromptQueue, PromptSource, WorkloadContext};

use super::calibrate;
use super::output::{Journal, Window};
use super::phase_seed;
use super::run::RunError;
use super::scrape;
use super::targets::Endpoint;

pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest silence allowed inside a stream unless the target sets `timeout.idle`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Everything one phase needs.
pub(super) struct PhaseRun<'a> {
    pub plan: &'a LoadedPlan,
    pub phase: &'a PhaseSettings<'a>,
    pub endpoint: &'a Endpoint,
    pub run_id: &'a str,
    pub journal: &'a Journal,
    pub stops: &'a Stops,
    pub progress: ProgressMode,
    pub http: &'a reqwest::Client,
    pub shard: Option<ShardSpec>,
    /// The warmup's request bound, this shard's share of it in a sharded run.
    pub warmup_requests: Option<u64>,
    /// The client ceiling measured before the run, if it was.
    pub calibration: Option<&'a crate::report::ClientCalibration>,
}

/// A phase's client and prompts, ready to send.
struct Prepared {
    client: Arc<Client>,
    feed: Arc<PromptQueue>,
    tokenizer: String,
    prompt_tolerance: f64,
    dataset_sha256: Option<String>,
    /// A trace replay's natural bound: one pass over the trace.
    trace_requests: Option<u64>,
}

impl PhaseRun<'_> {
    /// Run the phase's warmup and measured window; its result, or why it could not run.
    pub(super) async fn execute(
        &self,
        run_origin: &mut Option<std::time::Instant>,
    ) -> Result<PhaseResult, RunError> {
        let phase = self.phase;
        // Sharded runs: a shard with no share of this phase sends nothing.
        if schedule::runs_nothing(phase) {
            return Ok(self.empty_result());
        }
        let prepared = self.prepare().await?;
        let seed = self.shard_seed(phase_seed(self.plan.plan.seed, phase.name));

        let warmup = self.warmup(&prepared, seed).await?;
        // After the warmup, so the server's counters cover the measured window only.
        let scrape_before = self.scrape().await;

        let spec = WindowSpec {
            load: phase.load.clone(),
            duration: phase.duration,
            requests: phase.requests.or(if phase.duration.is_none() {
                prepared.trace_requests
            } else {
                None
            }),
            drain_timeout: phase.drain_timeout,
            seed,
            precise_pacing: true,
        };
        let sampler = self.sampler();
        let (outcome, mut records) = self
            .window(
                &spec,
                prepared.client,
                prepared.feed.clone(),
                Window::Measured,
                phase.name.to_string(),
            )
            .await;
        let timeline = match sampler {
            Some(sampler) => sampler.finish().await,
            None => Vec::new(),
        };
        let scrape_after = self.scrape().await;
        records.sort_by_key(|r| r.request_index);

        let origin = *run_origin.get_or_insert(outcome.origin);
        if warmup.requests == 0 {
            let (tolerance, tokenizer) = (prepared.prompt_tolerance, &prepared.tokenizer);
            self.warn_on_prompt_gap(&records, tolerance, tokenizer, "measured window");
        }
        let mut server_metrics = self.server_metrics(scrape_before, scrape_after);
        if let Some(m) = server_metrics.as_mut() {
            m.timeline = timeline;
        }
        let facts = PhaseFacts {
            started_at: outcome
                .started_at
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            start_offset_seconds: outcome
                .origin
                .saturating_duration_since(origin)
                .as_secs_f64(),
            partial: outcome.interrupted,
            warmup,
            dataset_sha256: prepared.dataset_sha256,
            server_metrics,
            ..self.phase_facts()
        };
        let figures = Figures {
            method: self.plan.plan.percentile_method,
            slo: self.plan.plan.slo.as_ref(),
            prompt_tolerance: prepared.prompt_tolerance,
            connection_reuse: super::endpoint::connection(self.phase.target.connection.as_ref())
                .reuse,
        };
        let mut result = report::phase_result(facts, records, figures);
        result.client_load_share = self
            .calibration
            .and_then(|c| calibrate::load_share(&result.summary, c, &prepared.feed.stats()));
        Ok(result)
    }

    /// The server's counters over the measured window, from the scrapes around it.
    fn server_metrics(&self, before: Scrapes, after: Scrapes) -> Option<ServerMetrics> {
        match (&self.endpoint.metrics_url, before, after) {
            (_, Scrapes::Several(before), Scrapes::Several(after)) => {
                let combined = scrape::endpoints::combine(&self.endpoint.metrics, &before, &after);
                for warning in &combined.warnings {
                    eprintln!("warning: phase `{}`: {warning}", self.phase.name);
                }
                Some(combined)
            }
            (Some(url), Scrapes::One(Some(before)), Scrapes::One(Some(after))) => {
                Some(scrape::diff(url, &before, &after))
            }
            _ => None,
        }
    }

    /// The client and the prompt source, calibrated against the server when the workload asks.
    async fn prepare(&self) -> Result<Prepared, RunError> {
        let phase = self.phase;
        let client = self
            .client_config()
            .and_then(Client::new)
            .map_err(|e| RunError::InvalidInput(format!("phase `{}`: {e}", phase.name)))?;
        let client =
            Arc::new(client.with_request_id_prefix(format!("{}-{}", self.run_id, phase.name)));
        let mut source =
            PromptSource::new(phase.workload, &self.workload_context()).map_err(|e| {
                RunError::InvalidInput(format!(
                    "phase `{}`, workload `{}`: {e}",
                    phase.name, phase.workload_name
                ))
            })?;
        source.calibrate().await.map_err(|e| {
            RunError::Failed(format!(
                "phase `{}`: tokenizer calibration failed: {e}",
                phase.name
            ))
        })?;
        let trace_requests = match phase.load {
            scheduler::Load::Replay => source.request_limit(),
            _ => None,
        };
        let tokenizer = source.tokenizer_description();
        let prompt_tolerance = source.prompt_tolerance();
        let dataset_sha256 = source.dataset_sha256().map(str::to_string);
        let feed = Arc::new(PromptQueue::start(
            source,
            scheduler::prompt_depth(&phase.load),
        ));
        if let Some(w) =
            calibrate::prompt_warning(phase, &feed.stats(), &tokenizer, self.calibration)
        {
            eprintln!("{w}");
        }
        Ok(Prepared {
            client,
            feed,
            tokenizer,
            prompt_tolerance,
            dataset_sha256,
            trace_requests,
        })
    }

    /// The warmup window, when the phase has one; an interrupt during it ends the phase.
    async fn warmup(&self, prepared: &Prepared, seed: u64) -> Result<WarmupResult, RunError> {
        let phase = self.phase;
        let Some(w) = phase.warmup else {
            return Ok(WarmupResult::default());
        };
        let spec = WindowSpec {
            load: phase.load.clone(),
            duration: w.duration.map(|d| d.0),
            requests: self.warmup_requests,
            drain_timeout: phase.drain_timeout,
            seed: seed ^ 0x5741_524d,
            precise_pacing: true,
        };
        let (_, records) = self
            .window(
                &spec,
                prepared.client.clone(),
                prepared.feed.clone(),
                Window::Warmup,
                format!("{} warmup", phase.name),
            )
            .await;
        let warmup = WarmupResult {
            requests: records.len() as u64,
            errors: records.iter().filter(|r| !r.is_ok()).count() as u64,
            elapsed: records
                .iter()
                .map(|r| r.start_offset_ms + r.e2e_ms)
                .fold(0.0, f64::max)
                / 1e3,
        };
        let (tolerance, tokenizer) = (prepared.prompt_tolerance, &prepared.tokenizer);
        self.warn_on_prompt_gap(&records, tolerance, tokenizer, "warmup");
        if self.stops.stop_starting.is_cancelled() {
            return Err(RunError::Failed(format!(
                "interrupted during the warmup of phase `{}`",
                phase.name
            )));
        }
        Ok(warmup)
    }

    /// The phase's settings as the report states them.
    fn phase_facts(&self) -> PhaseFacts {
        let phase = self.phase;
        PhaseFacts {
            phase: phase.name.to_string(),
            route: phase.route.to_string(),
            target: phase.target_name.to_string(),
            workload: phase.workload_name.to_string(),
            concurrency: phase.concurrency(),
            rate_rps: phase.rate_rps(),
            recheck_of: phase.recheck_of.map(str::to_string),
            ..PhaseFacts::default()
        }
    }

    /// Run one window, journaling and showing progress as records arrive.
    async fn window(
        &self,
        spec: &WindowSpec,
        client: Arc<Client>,
        feed: Arc<PromptQueue>,
        window: Window,
        label: String,
    ) -> (scheduler::WindowOutcome, Vec<RequestRecord>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<RequestRecord>();
        let counters = Arc::new(LiveCounters::default());
        let journal = self.journal.clone();
        let phase_name = self.phase.name.to_string();
        let mut progress = PhaseProgress::new(self.progress, label, spec.duration, spec.requests);
        let collector_counters = counters.clone();
        let collector = tokio::spawn(async move {
            let mut records = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            let mut journal_error = None;
            loop {
                tokio::select! {
                    received = rx.recv() => match received {
                        Some(record) => {
                            if let Err(e) = journal.append(&phase_name, window, &record) {
                                journal_error.get_or_insert(e);
                            }
                            progress.record(&record);
                            records.push(record);
                        }
                        None => break,
                    },
                    _ = tick.tick() => {
                        progress.tick(collector_counters.in_flight());
                        let _ = journal.flush();
                    }
                }
            }
            let _ = journal.flush();
            if let Some(e) = journal_error {
                eprintln!(
                    "warning: the journal could not be written ({e}); the report still holds every record"
                );
            }
            progress.finish(&format!(
                "{} requests, {} errors",
                records.len(),
                records.iter().filter(|r| !r.is_ok()).count()
            ));
            records
        });
        let outcome = scheduler::run_window(spec, client, feed, tx, counters, self.stops).await;
        let records = collector.await.unwrap_or_default();
        (outcome, records)
    }

    fn client_config(&self) -> Result<ClientConfig, crate::client::ClientError> {
        let phase = self.phase;
        let mut config = super::endpoint::client_config(
            phase.target,
            self.endpoint.base_url.clone(),
            phase.workload,
            phase.max_connections(),
        )?;
        config.model = self.endpoint.model.clone();
        let plan_dir = self.plan.source_path.parent().unwrap_or(Path::new(""));
        super::endpoint::resolve_paths(&mut config, phase.target, plan_dir);
        // Without limits a dead server would hold a phase forever; the drain timeout still
        // bounds a slow but live one.
        config
            .timeouts
            .connect
            .get_or_insert(DEFAULT_CONNECT_TIMEOUT);
        config.timeouts.idle.get_or_insert(DEFAULT_IDLE_TIMEOUT);
        Ok(config)
    }

    fn workload_context(&self) -> WorkloadContext {
        let phase = self.phase;
        WorkloadContext {
            api: phase.target.api,
            tokenizer: crate::workload::resolve_tokenizer(phase.workload, phase.target),
            plan_dir: self
                .plan
                .source_path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            seed: self.shard_seed(phase_seed(
                phase.workload.seed.or(self.plan.plan.seed),
                phase.name,
            )),
            base_url: self.endpoint.base_url.clone(),
            model: self.endpoint.model.clone(),
        }
    }

    /// Sharded runs: each shard draws its own arrivals and prompts.
    fn shard_seed(&self, seed: u64) -> u64 {
        self.shard
            .map_or(seed, |s| crate::hash::mix_seed(seed, s.index, s.count))
    }

    /// Sharded runs: the result of a phase this shard has no share of.
    pub(super) fn empty_result(&self) -> PhaseResult {
        let facts = PhaseFacts {
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            ..self.phase_facts()
        };
        // Nothing was sent: no objective to meet and no prompt size to check.
        let figures = Figures {
            method: self.plan.plan.percentile_method,
            slo: None,
            prompt_tolerance: 0.0,
            connection_reuse: true,
        };
        report::phase_result(facts, Vec::new(), figures)
    }

    fn warn_on_prompt_gap(
        &self,
        records: &[RequestRecord],
        tolerance: f64,
        tokenizer: &str,
        window: &str,
    ) {
        let check = PromptTokenCheck::from_requests(
            records
                .iter()
                .map(|r| (r.planned_context_tokens, r.prompt_tokens)),
            tolerance,
        );
        if let Some(warning) = check.warning(tokenizer) {
            eprintln!("warning: phase `{}` ({window}): {warning}", self.phase.name);
        }
    }

    /// Scrapes during the measured window when the target asks for them: the backends when
    /// it lists any, else its one metrics endpoint.
    fn sampler(&self) -> Option<scrape::timeline::Sampler> {
        let interval = self.endpoint.metrics_interval?;
        let backends: Vec<String> = self
            .endpoint
            .metrics
            .iter()
            .filter(|m| m.role == crate::plan::MetricsRole::Backend)
            .map(|m| m.url.clone())
            .collect();
        let urls = match (backends.is_empty(), &self.endpoint.metrics_url) {
            (false, _) => backends,
            (true, Some(url)) if self.endpoint.metrics.is_empty() => vec![url.clone()],
            _ => self
                .endpoint
                .metrics
                .iter()
                .map(|m| m.url.clone())
                .collect(),
        };
        Some(scrape::timeline::Sampler::start(
            self.http.clone(),
            urls,
            interval,
        ))
    }

    async fn scrape(&self) -> Scrapes {
        if !self.endpoint.metrics.is_empty() {
            return Scrapes::Several(
                scrape::endpoints::scrape_all(self.http, &self.endpoint.metrics).await,
            );
        }
        let Some(url) = self.endpoint.metrics_url.as_deref() else {
            return Scrapes::One(None);
        };
        Scrapes::One(match scrape::scrape(self.http, url).await {
            Ok(sample) => Some(sample),
            Err(e) => {
                eprintln!("warning: phase `{}`: {e}", self.phase.name);
                None
            }
        })
    }
}

/// One scrape of a target's metrics: its one endpoint, or each of several.
enum Scrapes {
    One(Option<scrape::Sample>),
    Several(Vec<Result<scrape::Sample, String>>),
}
