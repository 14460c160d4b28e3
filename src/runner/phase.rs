//! One phase: its client and prompts, the warmup and measured windows, the server scrapes
//! around them, and the phase's result.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::client::{Client, ClientConfig, RequestRecord};
use crate::plan::LoadedPlan;
use crate::report::model::PhaseHeader;
use crate::report::{Measured, PhaseFacts, ServerMetrics, WarmupResult};
use crate::schedule::{self, PhaseSettings, ShardSpec};
use crate::scheduler::live::{Keep, LiveTally, SharedTally};
use crate::scheduler::progress::{PhaseProgress, ProgressMode};
use crate::scheduler::rolling::Rolling;
use crate::scheduler::{self, LiveCounters, Stops, WindowSpec};
use crate::workload::{PromptQueue, PromptSource, WorkloadContext};

use super::calibrate;
use super::collect::{CollectSettings, PhaseCollector};
use super::decide::Decide;
use super::endpoint::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT};
use super::options::LongRunOptions;
use super::options::RunError;
use super::output::{FactsStage, Journal, Window};
use super::phase_seed;
use super::saturation::Saturation;
use super::scrape;
use super::stable::Stable;
use super::targets::PhaseTarget;
use super::watch::{Watched, WindowWatch, window_stops};

/// Longest a `/tokenize` calibration request may take.
const CALIBRATION_TIMEOUT: Duration = Duration::from_secs(30);

/// Everything one phase needs.
pub(super) struct PhaseRun<'a> {
    pub plan: &'a LoadedPlan,
    pub phase: &'a PhaseSettings<'a>,
    /// Where the requests go, and what its scrapes and hooks reach.
    pub target: &'a PhaseTarget,
    /// Prefixes the phase's request ids.
    pub run_id: &'a str,
    /// Every record goes here as it is made, so an interrupted run loses none.
    pub journal: &'a Journal,
    /// How an interrupt stops the window early.
    pub stops: &'a Stops,
    pub shard: Option<ShardSpec>,
    pub progress: ProgressMode,
    /// The warmup's request bound, this shard's share of it in a sharded run.
    pub warmup_requests: Option<u64>,
    /// The client ceiling measured before the run, if it was.
    pub calibration: Option<&'a crate::report::ClientCalibration>,
    /// What the phase's `during` actions need; `None` runs none (search probes).
    pub during: Option<&'a super::hooks::HookContext<'a>>,
    /// The run directory: a long window's column files go in it while it runs.
    pub out_dir: &'a Path,
    pub long_run: &'a LongRunOptions,
    /// The run's salt and how this phase's prompts carry it.
    pub salt: super::salt::PhaseSalt<'a>,
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

/// A phase that ran: its facts and records, ready to be built into its result.
pub(super) struct RanPhase {
    pub facts: PhaseFacts,
    pub measured: Measured,
}

impl PhaseRun<'_> {
    /// Run the phase's warmup and measured window after its `before` actions (`hooks`, whose
    /// outcomes lead the phase's); its facts and records, or why it could not run.
    pub(super) async fn execute(
        &self,
        run_origin: &mut Option<std::time::Instant>,
        hooks: Vec<crate::report::HookOutcome>,
    ) -> Result<RanPhase, RunError> {
        let phase = self.phase;
        // Sharded runs: a shard with no share of this phase sends nothing.
        if schedule::runs_nothing(phase) {
            return Ok(self.empty(hooks));
        }
        let prepared = self.prepare().await?;
        let seed = self.shard_seed(phase_seed(self.plan.plan.seed, phase.name));

        let warmup = self.warmup(&prepared, seed).await?;
        let connections_warmed = self.warm_connections(&prepared.client).await;
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
            on_down: phase.on_target_down,
        };
        let mut facts = PhaseFacts {
            warmup,
            dataset_sha256: prepared.dataset_sha256.clone(),
            prompt_tolerance: prepared.prompt_tolerance,
            hooks,
            connections_warmed,
            client_ceiling: self
                .calibration
                .map(|c| calibrate::phase_ceiling(c, &prepared.feed.stats())),
            ..self.phase_facts()
        };
        // A kill during the window still leaves the phase's start and actions to recover.
        self.journal_facts(&facts, FactsStage::Started);
        let sampler = self.sampler();
        // Boxed: the window with its watchers is a large future for the caller's stack.
        let measured = Box::pin(self.measured(&spec, prepared.client, prepared.feed.clone()));
        let watch = super::client_watch::ClientWatch::start();
        let ((mut outcome, collected), watched) = measured.await;
        let client_load = watch.finish().await;
        // A stop for stability or saturation is not an interrupt.
        outcome.interrupted = self.stops.stop_starting.is_cancelled();
        let (window, sampler_origin) = finish_sampler(sampler).await;
        let scrape_after = self.scrape().await;

        window_facts(
            &mut facts,
            &outcome,
            *run_origin.get_or_insert(outcome.origin),
        );
        // Requests that reached no server say nothing of the prompts' size.
        if facts.warmup.requests == 0 && facts.target_down.is_none() {
            let (tolerance, tokenizer) = (prepared.prompt_tolerance, &prepared.tokenizer);
            self.warn_on_prompt_gap(&collected, tolerance, tokenizer, "measured window");
        }
        self.cost_and_power(&mut facts, window.as_ref().zip(sampler_origin), &outcome);
        facts.server_metrics = self.server_metrics(scrape_before, scrape_after, window);
        facts.during_marks = super::marks::during_marks(&watched.during, outcome.origin);
        facts.hooks.extend(watched.during.outcomes);
        facts.until = watched.until;
        facts.saturation_stop = watched.saturation;
        if let Some(at_s) = watched
            .decided_at_s
            .filter(|_| self.progress != ProgressMode::Quiet)
        {
            eprintln!("probe `{}`: verdict in after {at_s:.1} s", self.phase.name);
        }
        facts.client_load = Some(client_load);
        self.journal_facts(&facts, FactsStage::Measured);
        Ok(RanPhase {
            facts,
            measured: collected,
        })
    }

    /// The target's price, and the power gauge's samples on the window's clock.
    fn cost_and_power(
        &self,
        facts: &mut PhaseFacts,
        sampled: Option<(&scrape::window::InWindow, std::time::Instant)>,
        outcome: &scheduler::WindowOutcome,
    ) {
        let target = self.phase.target;
        facts.cost = super::power::price(target);
        let interval = self.target.metrics_interval;
        facts.power = super::power::trace(target, interval, sampled, outcome.origin);
    }

    fn journal_facts(&self, facts: &PhaseFacts, stage: FactsStage) {
        if let Err(e) = self.journal.append_facts(facts, stage) {
            eprintln!(
                "warning: phase `{}`: the journal could not be written ({e})",
                facts.header.phase
            );
        }
    }

    fn connection_reuse(&self) -> bool {
        super::endpoint::connection(self.phase.target.connection.as_ref()).reuse
    }

    /// The server over the measured window: its counters from the scrapes around it, its
    /// gauges from the samples during it (`window`) when it was sampled.
    fn server_metrics(
        &self,
        before: Scrapes,
        after: Scrapes,
        window: Option<scrape::window::InWindow>,
    ) -> Option<ServerMetrics> {
        match (&self.target.metrics_url, before, after) {
            (_, Scrapes::Several(before), Scrapes::Several(after)) => {
                let metrics = &self.target.metrics;
                let combined = scrape::endpoints::combine(metrics, &before, &after, window);
                for warning in &combined.warnings {
                    eprintln!("warning: phase `{}`: {warning}", self.phase.name);
                }
                Some(combined)
            }
            (Some(url), Scrapes::One(Some(before)), Scrapes::One(Some(after))) => {
                Some(scrape::measure(url, &before, &after, window))
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
        let session_header = phase
            .workload
            .session
            .as_ref()
            .and_then(|s| s.affinity_header.as_deref())
            .and_then(|h| hyper::header::HeaderName::from_bytes(h.as_bytes()).ok());
        let client = Arc::new(
            client
                .with_request_id_prefix(format!("{}-{}", self.run_id, phase.name))
                .with_session_header(session_header),
        );
        let mut source = self.prompt_source().map_err(|e| {
            RunError::InvalidInput(format!(
                "phase `{}`, workload `{}`: {e}",
                phase.name, phase.workload_name
            ))
        })?;
        // `/tokenize` is asked the way the benchmark's requests are: same TLS, proxy, socket,
        // key and headers.
        let endpoint = &self.target.endpoint;
        let (http, headers) = endpoint
            .side_client(Some(CALIBRATION_TIMEOUT))
            .and_then(|http| Ok((http, endpoint.access_headers()?)))
            .map_err(|e| RunError::InvalidInput(format!("phase `{}`: {e}", phase.name)))?;
        source.calibrate_with(&http, &headers).await.map_err(|e| {
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
            on_down: phase.on_target_down,
        };
        let (outcome, collected) = self
            .window(
                &spec,
                Arc::new(prepared.client.for_window("warmup")),
                prepared.feed.clone(),
                (Window::Warmup, format!("{} warmup", phase.name)),
                (self.stops, LiveTally::shared(&Keep::default())),
            )
            .await;
        if let Some(down) = outcome.target_down {
            return Err(RunError::TargetDown(format!(
                "{} in the warmup of phase `{}`",
                down.describe(),
                phase.name
            )));
        }
        let warmup = WarmupResult {
            requests: collected.requests(),
            errors: collected.errors(),
            elapsed: collected.last_end_ms() / 1e3,
        };
        let (tolerance, tokenizer) = (prepared.prompt_tolerance, &prepared.tokenizer);
        self.warn_on_prompt_gap(&collected, tolerance, tokenizer, "warmup");
        if self.stops.stop_starting.is_cancelled() {
            return Err(RunError::Failed(format!(
                "interrupted during the warmup of phase `{}`",
                phase.name
            )));
        }
        Ok(warmup)
    }

    /// Open the connections the measured window will need (the target's `connection.warm`,
    /// else a closed loop's concurrency); a failure is only warned about, since the window's
    /// requests then report it themselves.
    async fn warm_connections(&self, client: &Client) -> u64 {
        let phase = self.phase;
        let asked = phase.target.connection.as_ref().and_then(|c| c.warm);
        let count = asked.or(phase.concurrency()).unwrap_or(0) as usize;
        if count == 0 || self.stops.stop_starting.is_cancelled() {
            return 0;
        }
        match client.warm_connections(count).await {
            Ok(opened) => opened as u64,
            Err(e) => {
                eprintln!(
                    "warning: phase `{}`: could not open connections before the measured \
                     window: {e}",
                    phase.name
                );
                0
            }
        }
    }

    /// The phase's settings as the report states them.
    fn phase_facts(&self) -> PhaseFacts {
        let phase = self.phase;
        PhaseFacts {
            header: PhaseHeader {
                phase: phase.name.to_string(),
                route: phase.route.to_string(),
                target: phase.target_name.to_string(),
                workload: phase.workload_name.to_string(),
                concurrency: phase.concurrency(),
                rate_rps: phase.rate_rps(),
                recheck_of: phase.recheck_of.map(str::to_string),
                work_sha256: super::salt::work_sha256(&self.plan.plan, phase, &self.target.model),
                prompt_salt: Some(self.salt.used),
                ..PhaseHeader::default()
            },
            connection_reuse: self.connection_reuse(),
            ..PhaseFacts::default()
        }
    }

    /// The measured window with its watchers: stopped early once its estimates are stable
    /// (`until`) or, for a rate probe, once the target has fallen behind its arrivals; the
    /// `during` actions run beside it.
    async fn measured(
        &self,
        spec: &WindowSpec,
        client: Arc<Client>,
        feed: Arc<PromptQueue>,
    ) -> (WindowResult, Watched) {
        let phase = self.phase;
        let stops = window_stops(self.stops);
        let method = self.plan.plan.percentile_method;
        let watch = WindowWatch {
            stable: phase
                .until
                .map(|until| Stable::new(until, method, stops.clone())),
            saturation: Saturation::for_probe(&phase.load, phase.search.is_some(), stops.clone()),
            // A probe that runs until stable keeps to its `until`.
            decide: Decide::for_probe(
                phase.search.filter(|_| phase.until.is_none()),
                phase.duration,
                method,
                stops.clone(),
            ),
            during: (phase.during, self.during),
        };
        let tally = watch.tally();
        let label = (Window::Measured, phase.name.to_string());
        let window = Box::pin(self.window(spec, client, feed, label, (&stops, tally.clone())));
        let by_requests = |(result, _): &WindowResult| Some(result.started) == spec.requests;
        watch.around(window, &tally, self.stops, by_requests).await
    }

    /// Run one window, journaling and showing progress as records arrive; every record is
    /// counted once in `tally`, which the window's watchers read, and `stops` end this window.
    async fn window(
        &self,
        spec: &WindowSpec,
        client: Arc<Client>,
        feed: Arc<PromptQueue>,
        (window, label): (Window, String),
        (stops, tally): (&Stops, SharedTally),
    ) -> WindowResult {
        let (tx, mut rx) = mpsc::unbounded_channel::<RequestRecord>();
        let counters = Arc::new(LiveCounters::default());
        let mut sink = WindowSink {
            journal: self.journal.clone(),
            phase_name: self.phase.name.to_string(),
            window,
            progress: PhaseProgress::new(
                self.progress,
                label.clone(),
                spec.duration,
                spec.requests,
            ),
            rolling: Rolling::new(self.long_run.summary_every, spec.duration),
            tally,
            collector: PhaseCollector::new(CollectSettings {
                keep: self.long_run.keep_records,
                seed: spec.seed,
                dir: self.out_dir.to_path_buf(),
                label,
                slo: self.plan.plan.slo.clone(),
            }),
            journal_error: None,
            collect_error: None,
            // Read when the client was made, which would have failed on a bad schema.
            check: super::reply_check::check_for(self.phase.workload, &self.plan_dir())
                .ok()
                .flatten(),
            scorer: self
                .phase
                .workload
                .score
                .as_ref()
                .and_then(|s| crate::metrics::score::Scorer::new(s).ok()),
        };
        let method = self.plan.plan.percentile_method;
        let reuse = self.connection_reuse();
        let collector_counters = counters.clone();
        let collector = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tokio::select! {
                    received = rx.recv() => match received {
                        Some(record) => sink.record(record, collector_counters.in_flight()),
                        None => break,
                    },
                    _ = tick.tick() => sink.tick(collector_counters.in_flight()),
                }
            }
            sink.finish(method, reuse)
        });
        let outcome = scheduler::run_window(spec, client, feed, tx, counters, stops).await;
        let collected = collector
            .await
            .unwrap_or_else(|_| Measured::All(Vec::new()));
        (outcome, collected)
    }

    fn client_config(&self) -> Result<ClientConfig, crate::client::ClientError> {
        let phase = self.phase;
        let mut config = super::endpoint::request_config(
            &self.target.endpoint,
            phase.target,
            phase.workload,
            phase.max_connections(),
        )?;
        config.model = self.target.model.clone();
        self.salt.add_to_body(&mut config.body);
        if let Some(format) = &phase.workload.response_format {
            let schema = super::reply_check::schema(format, &self.plan_dir())
                .map_err(crate::client::ClientError)?;
            super::reply_check::add_to_body(config.api, format, schema.as_ref(), &mut config.body);
            config.keep_replies = true;
        }
        config.keep_replies |= phase.workload.score.is_some();
        // Without limits a dead server would hold a phase forever; the drain timeout still
        // bounds a slow but live one.
        config
            .timeouts
            .connect
            .get_or_insert(DEFAULT_CONNECT_TIMEOUT);
        config.timeouts.idle.get_or_insert(DEFAULT_IDLE_TIMEOUT);
        Ok(config)
    }

    /// The phase's prompts: its workload's, or its mix's archetypes'.
    fn prompt_source(&self) -> Result<PromptSource, crate::workload::WorkloadError> {
        let phase = self.phase;
        let Some(mix) = self.plan.plan.phases.iter().find_map(|p| {
            (p.name.as_deref() == Some(phase.name))
                .then_some(p.mix.as_ref())
                .flatten()
        }) else {
            return PromptSource::new(phase.workload, &self.workload_context());
        };
        let parts: Vec<_> = phase
            .archetypes
            .iter()
            .map(|a| {
                let mut context = self.context_for(a.workload);
                // Each archetype draws its own prompts, even from one shared seed.
                context.seed ^= crate::hash::fnv1a_64(a.name.as_bytes());
                (a.workload, context)
            })
            .collect();
        let seed = self.workload_context().seed;
        PromptSource::mixed(mix, &parts, seed, phase.requests)
    }

    /// The directory of the plan file, which the workload's paths are relative to.
    fn plan_dir(&self) -> std::path::PathBuf {
        self.plan
            .source_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    fn workload_context(&self) -> WorkloadContext {
        self.context_for(self.phase.workload)
    }

    /// The context `workload`'s prompts are built in, in this phase.
    fn context_for(&self, workload: &crate::plan::Workload) -> WorkloadContext {
        let phase = self.phase;
        WorkloadContext {
            api: phase.target.api,
            tokenizer: crate::workload::resolve_tokenizer(workload, phase.target),
            plan_dir: self.plan_dir(),
            seed: self.shard_seed(phase_seed(
                workload.seed.or(self.plan.plan.seed),
                phase.name,
            )),
            base_url: self.target.endpoint.base_url.clone(),
            model: self.target.model.clone(),
            text_salt: self.salt.text(),
        }
    }

    /// Sharded runs: each shard draws its own arrivals and prompts.
    fn shard_seed(&self, seed: u64) -> u64 {
        self.shard
            .map_or(seed, |s| crate::hash::mix_seed(seed, s.index, s.count))
    }

    /// A phase that sent nothing (a shard with no share of it, or a `before` action that
    /// failed), with the actions that ran.
    pub(super) fn empty(&self, hooks: Vec<crate::report::HookOutcome>) -> RanPhase {
        let facts = self.phase_facts();
        RanPhase {
            facts: PhaseFacts {
                header: PhaseHeader {
                    started_at: chrono::Utc::now()
                        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    ..facts.header
                },
                hooks,
                ..facts
            },
            measured: Measured::All(Vec::new()),
        }
    }

    fn warn_on_prompt_gap(
        &self,
        collected: &Measured,
        tolerance: f64,
        tokenizer: &str,
        window: &str,
    ) {
        let check = collected.prompt_check(tolerance);
        if let Some(warning) = check.warning(tokenizer) {
            eprintln!("warning: phase `{}` ({window}): {warning}", self.phase.name);
        }
    }

    /// Samples of the target's metrics endpoints during the measured window, unless its
    /// `metrics_interval` is off.
    fn sampler(&self) -> Option<scrape::sampler::Sampler> {
        let interval = self.target.metrics_interval?;
        let target = self.target;
        let mut sampled =
            scrape::sampler::Sampled::of(target.metrics_url.as_deref(), &target.metrics)?;
        sampled.power_metric =
            crate::plan::power::power_metric(self.phase.target.power.as_ref()).to_string();
        let side = target.side.clone();
        Some(scrape::sampler::Sampler::start(side, sampled, interval))
    }

    async fn scrape(&self) -> Scrapes {
        if !self.target.metrics.is_empty() {
            return Scrapes::Several(
                scrape::endpoints::scrape_all(&self.target.side, &self.target.metrics).await,
            );
        }
        let Some(url) = self.target.metrics_url.as_deref() else {
            return Scrapes::One(None);
        };
        Scrapes::One(match scrape::scrape(&self.target.side, url).await {
            Ok(sample) => Some(sample),
            Err(e) => {
                eprintln!("warning: phase `{}`: {e}", self.phase.name);
                None
            }
        })
    }
}

/// Stop the window's sampler: what its samples gave, and the instant their times count from.
async fn finish_sampler(
    sampler: Option<scrape::sampler::Sampler>,
) -> (Option<scrape::window::InWindow>, Option<std::time::Instant>) {
    match sampler {
        Some(sampler) => {
            let origin = sampler.origin();
            (sampler.finish().await, Some(origin))
        }
        None => (None, None),
    }
}

/// What the measured window itself tells of the phase: when it began (`run_origin`: the
/// run's first window), whether it was cut short, and its target's outages.
fn window_facts(
    facts: &mut PhaseFacts,
    outcome: &scheduler::WindowOutcome,
    run_origin: std::time::Instant,
) {
    facts.header.started_at = outcome
        .started_at
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    facts.header.start_offset_seconds = outcome
        .origin
        .saturating_duration_since(run_origin)
        .as_secs_f64();
    let target_down = outcome.target_down.as_ref().map(|d| d.describe());
    facts.partial = outcome.interrupted || target_down.is_some();
    facts.target_down = target_down;
    facts.outages = outcome.outages.iter().map(outage_report).collect();
    facts.withheld = outcome.withheld;
}

/// A spell the target was down, as the report states it.
fn outage_report(spell: &scheduler::outage::OutageSpell) -> crate::report::TargetOutage {
    crate::report::TargetOutage {
        from_s: spell.from_s,
        down_at_s: spell.down_at_s,
        until_s: spell.until_s,
        recovered_after_s: spell.until_s.map(|until| until - spell.from_s),
        cause: spell.cause.describe().to_string(),
    }
}

/// What a window did, and its records.
type WindowResult = (scheduler::WindowOutcome, Measured);

/// Where a window's records go as they arrive: the journal, the running tally (which the
/// progress line, the rolling summaries and the window's watchers read) and the collector.
struct WindowSink {
    journal: Journal,
    phase_name: String,
    window: Window,
    progress: PhaseProgress,
    rolling: Rolling,
    tally: SharedTally,
    collector: PhaseCollector,
    journal_error: Option<std::io::Error>,
    collect_error: Option<std::io::Error>,
    /// Each reply's check, as its record arrives (after the request, off its timing).
    check: Option<crate::metrics::reply_check::ReplyCheck>,
    /// Each reply scored against its `expected`, as its record arrives.
    scorer: Option<crate::metrics::score::Scorer>,
}

impl WindowSink {
    fn record(&mut self, mut record: RequestRecord, in_flight: u64) {
        if let Some(check) = &self.check {
            check.check(&mut record);
        }
        if let Some(scorer) = &self.scorer {
            scorer.score(&mut record);
        }
        if let Err(e) = self.journal.append(&self.phase_name, self.window, &record) {
            self.journal_error.get_or_insert(e);
        }
        LiveTally::lock(&self.tally).record(&record, std::time::Instant::now());
        // This record's request was in flight with the others still running.
        self.collector.note_in_flight(in_flight + 1);
        if let Err(e) = self.collector.add(record) {
            self.collect_error.get_or_insert(e);
        }
    }

    fn tick(&mut self, in_flight: u64) {
        let summary = {
            let mut tally = LiveTally::lock(&self.tally);
            self.progress.tick(&tally, in_flight);
            self.rolling.due(&mut tally, std::time::Instant::now())
        };
        if let Some(summary) = summary
            && let Err(e) = self
                .journal
                .append_summary(&self.phase_name, self.window, &summary)
        {
            self.journal_error.get_or_insert(e);
        }
        let _ = self.journal.flush();
    }

    fn finish(mut self, method: crate::plan::PercentileMethod, reuse: bool) -> Measured {
        let _ = self.journal.flush();
        let phase = &self.phase_name;
        if let Some(e) = self.journal_error {
            eprintln!(
                "warning: the journal could not be written ({e}); the report still holds every figure"
            );
        }
        if let Some(e) = self.collect_error {
            eprintln!("warning: phase `{phase}`: the column files could not be written ({e})");
        }
        self.progress.finish(&format!(
            "{} requests, {} errors",
            self.collector.requests(),
            self.collector.errors()
        ));
        self.collector.finish(method, reuse).unwrap_or_else(|e| {
            eprintln!("warning: phase `{phase}`: the column files could not be read ({e})");
            Measured::All(Vec::new())
        })
    }
}

/// One scrape of a target's metrics: its one endpoint, or each of several.
enum Scrapes {
    One(Option<scrape::Sample>),
    Several(Vec<Result<scrape::Sample, String>>),
}
