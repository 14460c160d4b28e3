//! One run of a plan: targets up, phases in order, the report rewritten after every phase.

mod calibrate;
mod host;
pub mod output;
pub mod scrape;
pub mod settings;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::client::{Client, ClientConfig, RequestRecord};
use crate::metrics;
use crate::plan::{self, ExpandOptions, LoadedPlan, PlanErrors};
use crate::report::{
    PhaseResult, PlanSource, PromptTokenCheck, REPORT_SCHEMA, Report, TimingMethodology, ToolInfo,
    WarmupResult,
};
use crate::scheduler::progress::{PhaseProgress, ProgressMode};
use crate::scheduler::{self, LiveCounters, Stops, WindowSpec};
use crate::sim::{self, SimHandle};
use crate::workload::{PromptQueue, PromptSource, WorkloadContext};
use output::{Journal, Window};
use settings::PhaseSettings;

/// Default tolerated gap between planned and served prompt tokens.
pub const DEFAULT_PROMPT_TOLERANCE: f64 = 0.02;
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest silence allowed inside a stream unless the target sets `timeout.idle`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// After the first interrupt, in-flight requests get this long before they are cancelled.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// What `servebench run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// A plan file, or a `report.json` whose embedded plan is run again.
    pub plan: PathBuf,
    pub expand: ExpandOptions,
    /// Default: `runs/<plan-name>-<UTC timestamp>/`.
    pub out_dir: Option<PathBuf>,
    /// Run only these phases (by name), in plan order.
    pub only: Vec<String>,
    pub dry_run: bool,
    pub progress: ProgressMode,
    /// Measure the client ceiling before the first phase (`run --no-calibrate` skips it).
    pub calibrate: bool,
    /// Hold the kernel's request to keep idle CPUs quick to wake for the whole run
    /// (`run --no-latency-hint` skips it); see [`crate::wakeup`].
    pub latency_hint: bool,
    /// Keep the runtime's workers polling instead of parking for the whole run
    /// (`run --busy-poll`); see [`scheduler::BusyPoll`].
    pub busy_poll: bool,
    // Sharded runs (src/shard/).
    /// `--shard I/N`: run this shard's share of every phase.
    pub shard: Option<crate::shard::ShardSpec>,
    /// `--start-at`: start each phase at this time plus its planned offset.
    pub start_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Why a run did not produce a complete report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    InvalidPlan(#[from] PlanErrors),
    /// Bad arguments or environment, found before any request was sent.
    #[error("{0}")]
    InvalidInput(String),
    /// The run could not go on (a simulator did not start, the report could not be written).
    #[error("{0}")]
    Failed(String),
}

impl RunError {
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::InvalidPlan(_) | RunError::InvalidInput(_) => crate::exit::INVALID_INPUT,
            RunError::Failed(_) => crate::exit::RUN_FAILED,
        }
    }
}

/// What a finished (or interrupted) run left behind.
#[derive(Debug)]
pub struct RunOutcome {
    /// `None` for `--dry-run`.
    pub report_path: Option<PathBuf>,
    pub report: Option<Report>,
    pub interrupted: bool,
}

/// `servebench run`: build the runtime, run, and map the outcome to an exit code.
pub fn run_command(options: RunOptions) -> i32 {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return crate::exit::RUN_FAILED;
        }
    };
    match runtime.block_on(run(options)) {
        Ok(outcome) if outcome.interrupted => crate::exit::RUN_FAILED,
        Ok(_) => crate::exit::SUCCESS,
        Err(RunError::InvalidPlan(errors)) => {
            eprintln!("{errors}");
            crate::exit::INVALID_INPUT
        }
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

/// Run a plan end to end.
pub async fn run(options: RunOptions) -> Result<RunOutcome, RunError> {
    let mut loaded = load_plan(&options.plan, &options.expand)?;
    if !options.dry_run {
        // Prove `--out` writable before model discovery sends the first request.
        if let Some(dir) = &options.out_dir {
            output::prepare_dir(dir).map_err(RunError::InvalidInput)?;
        }
        discover_models(&mut loaded.plan, &options.only).await?;
    }
    let all = settings::resolve(&loaded.plan)
        .map_err(|errors| RunError::InvalidInput(errors.join("\n")))?;
    let phases = select_phases(all, &options.only)?;
    // Sharded runs: planned phase starts, then this shard's share of every phase.
    let aligned_starts = match options.start_at {
        Some(at) => crate::shard::planned_offsets(&phases)
            .map_err(RunError::InvalidInput)?
            .into_iter()
            .map(|offset| chrono::Duration::from_std(offset).map(|d| at + d))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| RunError::InvalidInput(format!("--start-at: {e}")))?,
        None => Vec::new(),
    };
    let warmup_requests: Vec<Option<u64>> = phases
        .iter()
        .map(|p| crate::shard::warmup_requests(p, options.shard))
        .collect();
    let phases: Vec<_> = match options.shard {
        Some(shard) => {
            crate::shard::check_shardable(&phases, shard).map_err(RunError::InvalidInput)?;
            phases
                .into_iter()
                .map(|p| crate::shard::split_phase(p, shard))
                .collect()
        }
        None => phases,
    };
    if options.dry_run {
        print!("{}", settings::describe_schedule(&loaded.plan, &phases));
        print!(
            "{}",
            crate::shard::describe_schedule(options.shard, &phases, &aligned_starts)
        );
        return Ok(RunOutcome {
            report_path: None,
            report: None,
            interrupted: false,
        });
    }
    check_client_settings(&phases)?;
    let started_at = chrono::Utc::now();
    let run_id = format!(
        "{}-{}",
        loaded.plan.name,
        started_at.format("%Y%m%dT%H%M%SZ")
    );
    // Sharded runs: the shard in the run id keeps request ids (and out dirs) apart.
    let run_id = match options.shard {
        Some(shard) => format!("{run_id}-shard{}of{}", shard.index, shard.count),
        None => run_id,
    };
    let out_dir = options
        .out_dir
        .clone()
        .unwrap_or_else(|| Path::new("runs").join(&run_id));
    output::prepare_dir(&out_dir).map_err(RunError::InvalidInput)?;
    let journal = Journal::create(&out_dir).map_err(RunError::InvalidInput)?;

    // Held until the run returns: calibration and every phase run with quick wakeups.
    let (_latency_request, latency_hint) = crate::wakeup::request_if(options.latency_hint);
    let calibration = if options.calibrate {
        calibrate::calibrate()
            .await
            .inspect_err(|e| eprintln!("warning: client calibration failed: {e}"))
            .ok()
    } else {
        None
    };
    if let Some(warning) = calibration
        .as_ref()
        .and_then(|c| c.wake_latency.as_ref())
        .and_then(|wake| crate::wakeup::slow_wake_warning(wake, &latency_hint))
    {
        eprintln!("{warning}");
    }
    let _busy_poll = options.busy_poll.then(scheduler::BusyPoll::start);
    let simulators = start_simulators(&phases).await?;
    let stops = Stops::default();
    let interrupts = install_interrupt_handler(stops.clone(), journal.clone(), out_dir.clone());

    let mut report = new_report(&loaded, run_id.clone(), started_at);
    report.client_calibration = calibration;
    report.host.cpu_latency_hint = Some(latency_hint);
    report.client_busy_poll = options.busy_poll;
    report.shard = options.shard.map(|shard| crate::shard::ShardInfo {
        index: shard.index,
        count: shard.count,
        plan_sha256: crate::shard::plan_sha256(&loaded.plan),
        start_at: options
            .start_at
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        phase_starts: Vec::new(),
    });
    let write = |report: &Report| output::write_report(&out_dir, report).map_err(RunError::Failed);
    let report_path = write(&report)?;
    let http = reqwest::Client::builder()
        .build()
        .map_err(|e| RunError::Failed(format!("cannot build an HTTP client: {e}")))?;
    let mut run_origin = None;

    let mut failure = None;
    for (phase_index, phase) in phases.iter().enumerate() {
        // Sharded runs: every shard starts this phase at the same planned time.
        if let Some(&at) = aligned_starts.get(phase_index) {
            let late_ms = crate::shard::wait_until(at, &stops.stop_starting).await;
            if stops.stop_starting.is_cancelled() {
                break;
            }
            if late_ms > 1000.0 {
                eprintln!(
                    "warning: phase `{}` starts {:.1}s after its planned time {}",
                    phase.name,
                    late_ms / 1e3,
                    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                );
            }
            if let Some(info) = report.shard.as_mut() {
                info.phase_starts.push(crate::shard::PlannedStart {
                    phase: phase.name.to_string(),
                    planned_at: at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    late_ms,
                });
            }
        }
        if stops.stop_starting.is_cancelled() {
            break;
        }
        let endpoint = endpoint_for(phase, &simulators);
        let run = PhaseRun {
            plan: &loaded,
            phase,
            endpoint: &endpoint,
            run_id: &run_id,
            journal: &journal,
            stops: &stops,
            progress: options.progress,
            http: &http,
            shard: options.shard,
            warmup_requests: warmup_requests.get(phase_index).copied().flatten(),
            calibration: report.client_calibration.as_ref(),
        };
        match run.execute(&mut run_origin).await {
            Ok(result) => {
                let warning = calibrate::warning(&result);
                println!("{}", phase_line(&result));
                if let Some(warning) = warning {
                    eprintln!("{warning}");
                }
                report.phases.push(result);
                report.rechecks = recheck_pairs(&report, &phases);
                write(&report)?;
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
        if let Some(cooldown) = phase.cooldown {
            tokio::select! {
                _ = tokio::time::sleep(cooldown) => {}
                _ = stops.stop_starting.cancelled() => {}
            }
        }
    }
    let interrupted = stops.stop_starting.is_cancelled();
    report.finished_at =
        Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    report.partial = interrupted || failure.is_some() || report.phases.len() < phases.len();
    report.stop_reason = match (&failure, interrupted) {
        (Some(e), _) => Some(e.to_string()),
        (None, true) => Some("interrupted".to_string()),
        (None, false) => None,
    };
    write(&report)?;
    let _ = journal.flush();
    interrupts.abort();
    for (_, (_, handle)) in simulators {
        handle.shutdown().await;
    }
    eprintln!("report: {}", report_path.display());
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(RunOutcome {
        report_path: Some(report_path),
        report: Some(report),
        interrupted,
    })
}

fn load_plan(path: &Path, options: &ExpandOptions) -> Result<LoadedPlan, RunError> {
    Ok(plan::prepare(path, options)?)
}

/// A server target that names no model gets the first one its `/models` lists, as serving
/// engines expose exactly the model they serve; the report's plan then names it.
async fn discover_models(plan: &mut plan::Plan, only: &[String]) -> Result<(), RunError> {
    let used: Vec<String> = plan
        .phases
        .iter()
        .filter(|p| only.is_empty() || p.name.as_ref().is_some_and(|n| only.contains(n)))
        .filter_map(|p| p.target.clone().or_else(|| plan.defaults.target.clone()))
        .collect();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| RunError::Failed(format!("cannot build an HTTP client: {e}")))?;
    for (name, target) in plan.targets.iter_mut() {
        let Some(base_url) = target.base_url.clone() else {
            continue;
        };
        if target.model.is_some() || !used.contains(name) {
            continue;
        }
        let url = format!("{}/models", base_url.trim_end_matches('/'));
        let not_found = |why: String| {
            RunError::InvalidInput(format!(
                "target `{name}` names no model and {url} {why}; set `model:` on the target"
            ))
        };
        let response = http
            .get(&url)
            .send()
            .await
            .map_err(|e| not_found(format!("did not answer ({e})")))?;
        let text = response
            .text()
            .await
            .map_err(|e| not_found(format!("sent no body ({e})")))?;
        let listing: serde_json::Value = serde_json::from_str(&text)
            .map_err(|_| not_found("did not return JSON".to_string()))?;
        let id = listing["data"][0]["id"]
            .as_str()
            .ok_or_else(|| not_found("listed no model".to_string()))?;
        eprintln!("target `{name}`: using model `{id}` from {url}");
        target.model = Some(id.to_string());
    }
    Ok(())
}

fn select_phases<'p>(
    all: Vec<PhaseSettings<'p>>,
    only: &[String],
) -> Result<Vec<PhaseSettings<'p>>, RunError> {
    if only.is_empty() {
        return Ok(all);
    }
    let unknown: Vec<&String> = only
        .iter()
        .filter(|name| !all.iter().any(|p| p.name == name.as_str()))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = all.iter().map(|p| p.name).collect();
        return Err(RunError::InvalidInput(format!(
            "--only: no phase named {}; the plan's phases are: {}",
            unknown
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            known.join(", ")
        )));
    }
    Ok(all
        .into_iter()
        .filter(|p| only.iter().any(|n| n == p.name))
        .collect())
}

/// Client settings are checked for every phase (API key variables set, a model named) before
/// anything is sent.
fn check_client_settings(phases: &[PhaseSettings<'_>]) -> Result<(), RunError> {
    for phase in phases {
        ClientConfig::for_target(phase.target, String::new(), phase.workload, 1)
            .map_err(|e| RunError::InvalidInput(format!("target `{}`: {e}", phase.target_name)))?;
    }
    Ok(())
}

type Simulators = HashMap<String, (SocketAddr, SimHandle)>;

async fn start_simulators(phases: &[PhaseSettings<'_>]) -> Result<Simulators, RunError> {
    let mut simulators = Simulators::new();
    for phase in phases {
        if let Some(config) = &phase.target.simulator
            && !simulators.contains_key(phase.target_name)
        {
            let (addr, handle) = sim::serve(config.clone()).await.map_err(|e| {
                RunError::Failed(format!(
                    "cannot start the simulator for target `{}`: {e}",
                    phase.target_name
                ))
            })?;
            simulators.insert(phase.target_name.to_string(), (addr, handle));
        }
    }
    Ok(simulators)
}

/// Where a phase's requests go.
#[derive(Debug, Clone)]
struct Endpoint {
    base_url: String,
    metrics_url: Option<String>,
    model: String,
}

fn endpoint_for(phase: &PhaseSettings<'_>, simulators: &Simulators) -> Endpoint {
    let target = phase.target;
    match simulators.get(phase.target_name) {
        Some((addr, _)) => Endpoint {
            base_url: format!("http://{addr}/v1"),
            metrics_url: Some(format!("http://{addr}/metrics")),
            model: target
                .model
                .clone()
                .or_else(|| target.simulator.as_ref().and_then(|s| s.model.clone()))
                .unwrap_or_else(|| "sim".to_string()),
        },
        None => Endpoint {
            base_url: target
                .base_url
                .clone()
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_string(),
            metrics_url: target.metrics_url.clone(),
            model: target.model.clone().unwrap_or_default(),
        },
    }
}

/// First interrupt (SIGINT or SIGTERM): stop starting requests, give in-flight ones a short
/// grace, then write a partial report. Second: flush the journal and exit at once.
fn install_interrupt_handler(
    stops: Stops,
    journal: Journal,
    out_dir: PathBuf,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        #[cfg(unix)]
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let mut interrupts = 0;
        loop {
            #[cfg(unix)]
            let sigterm = async {
                match terminate.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            #[cfg(not(unix))]
            let sigterm = std::future::pending::<()>();
            tokio::select! {
                result = tokio::signal::ctrl_c() => if result.is_err() { return },
                _ = sigterm => {}
            }
            interrupts += 1;
            if interrupts == 1 {
                eprintln!(
                    "\ninterrupted: no new requests; waiting up to {}s for in-flight ones, then writing a partial report to {} (interrupt again to exit at once)",
                    INTERRUPT_GRACE.as_secs(),
                    out_dir.display()
                );
                stops.stop_starting.cancel();
                let abort = stops.abort_in_flight.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(INTERRUPT_GRACE).await;
                    abort.cancel();
                });
            } else {
                let _ = journal.flush();
                eprintln!(
                    "interrupted again: exiting now; finished requests are in {}",
                    out_dir.join(output::JOURNAL_FILE).display()
                );
                std::process::exit(crate::exit::RUN_FAILED);
            }
        }
    })
}

/// Everything one phase needs.
struct PhaseRun<'a> {
    plan: &'a LoadedPlan,
    phase: &'a PhaseSettings<'a>,
    endpoint: &'a Endpoint,
    run_id: &'a str,
    journal: &'a Journal,
    stops: &'a Stops,
    progress: ProgressMode,
    http: &'a reqwest::Client,
    shard: Option<crate::shard::ShardSpec>,
    /// The warmup's request bound, this shard's share of it in a sharded run.
    warmup_requests: Option<u64>,
    /// The client ceiling measured before the run, if it was.
    calibration: Option<&'a crate::report::ClientCalibration>,
}

impl PhaseRun<'_> {
    async fn execute(
        &self,
        run_origin: &mut Option<std::time::Instant>,
    ) -> Result<PhaseResult, RunError> {
        let phase = self.phase;
        // Sharded runs: a shard with no share of this phase sends nothing.
        if crate::shard::runs_nothing(phase) {
            return Ok(self.empty_result());
        }
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
        let tokenizer = source.tokenizer_description();
        let prompt_tolerance = source.prompt_tolerance();
        let dataset_sha256 = source.dataset_sha256().map(str::to_string);
        // A trace replay's natural bound is one pass over the trace.
        let trace_requests = match phase.load {
            scheduler::Load::Replay => source.request_limit(),
            _ => None,
        };
        let feed = Arc::new(PromptQueue::start(
            source,
            scheduler::prompt_depth(&phase.load),
        ));
        if let Some(w) =
            calibrate::prompt_warning(phase, &feed.stats(), &tokenizer, self.calibration)
        {
            eprintln!("{w}");
        }
        let seed = self.shard_seed(phase_seed(self.plan.plan.seed, phase.name));

        let scrape_before = self.scrape().await;

        let mut warmup = WarmupResult::default();
        if let Some(w) = phase.warmup {
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
                    client.clone(),
                    feed.clone(),
                    Window::Warmup,
                    format!("{} warmup", phase.name),
                )
                .await;
            warmup = WarmupResult {
                requests: records.len() as u64,
                errors: records.iter().filter(|r| !r.is_ok()).count() as u64,
                elapsed: records
                    .iter()
                    .map(|r| r.start_offset_ms + r.e2e_ms)
                    .fold(0.0, f64::max)
                    / 1e3,
            };
            self.warn_on_prompt_gap(&records, prompt_tolerance, &tokenizer, "warmup");
        }
        if self.stops.stop_starting.is_cancelled() && phase.warmup.is_some() {
            return Err(RunError::Failed(format!(
                "interrupted during the warmup of phase `{}`",
                phase.name
            )));
        }

        let spec = WindowSpec {
            load: phase.load.clone(),
            duration: phase.duration,
            requests: phase.requests.or(if phase.duration.is_none() {
                trace_requests
            } else {
                None
            }),
            drain_timeout: phase.drain_timeout,
            seed,
            precise_pacing: true,
        };
        let (outcome, mut records) = self
            .window(
                &spec,
                client,
                feed.clone(),
                Window::Measured,
                phase.name.to_string(),
            )
            .await;
        let scrape_after = self.scrape().await;
        records.sort_by_key(|r| r.request_index);

        let origin = *run_origin.get_or_insert(outcome.origin);
        let start_offset_seconds = outcome
            .origin
            .saturating_duration_since(origin)
            .as_secs_f64();
        let last_end_s = records
            .iter()
            .map(|r| r.start_offset_ms + r.e2e_ms)
            .fold(0.0, f64::max)
            / 1e3;
        let method = self.plan.plan.percentile_method;
        let summary = metrics::summarize(&records, method, self.plan.plan.slo.as_ref());
        let prompt_tokens = PromptTokenCheck::from_records(&records, prompt_tolerance);
        if warmup.requests == 0 {
            self.warn_on_prompt_gap(&records, prompt_tolerance, &tokenizer, "measured window");
        }
        let send_lags: Vec<f64> = records.iter().filter_map(|r| r.send_lag_ms).collect();
        let server_metrics = match (&self.endpoint.metrics_url, scrape_before, scrape_after) {
            (Some(url), Some(before), Some(after)) => Some(scrape::diff(url, &before, &after)),
            _ => None,
        };
        let client_headroom = self
            .calibration
            .and_then(|c| calibrate::headroom(&summary, c, &feed.stats()));
        Ok(PhaseResult {
            phase: phase.name.to_string(),
            route: phase.route.to_string(),
            target: phase.target_name.to_string(),
            workload: phase.workload_name.to_string(),
            concurrency: phase.concurrency(),
            rate_rps: phase.rate_rps(),
            recheck_of: phase.recheck_of.map(str::to_string),
            started_at: outcome
                .started_at
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            start_offset_seconds,
            end_offset_seconds: start_offset_seconds + last_end_s,
            partial: outcome.interrupted,
            summary,
            warmup,
            prompt_tokens,
            dataset_sha256,
            send_lag_ms: metrics::distribution(&send_lags, method),
            achieved_rate_ratio: phase
                .rate_rps()
                .and_then(|rps| achieved_rate(&records).map(|r| r / rps)),
            server_metrics,
            request_timings: records,
            client_headroom,
        })
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
                        Some(mut record) => {
                            metrics::derive_record_fields(&mut record);
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
        let mut config = ClientConfig::for_target(
            phase.target,
            self.endpoint.base_url.clone(),
            phase.workload,
            phase.max_connections(),
        )?;
        config.model = self.endpoint.model.clone();
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
        self.shard.map_or(seed, |s| s.mix_seed(seed))
    }

    /// Sharded runs: the result of a phase this shard has no share of.
    fn empty_result(&self) -> PhaseResult {
        let phase = self.phase;
        PhaseResult {
            phase: phase.name.to_string(),
            route: phase.route.to_string(),
            target: phase.target_name.to_string(),
            workload: phase.workload_name.to_string(),
            concurrency: phase.concurrency(),
            rate_rps: phase.rate_rps(),
            recheck_of: phase.recheck_of.map(str::to_string),
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            start_offset_seconds: 0.0,
            end_offset_seconds: 0.0,
            partial: false,
            summary: crate::metrics::PhaseSummary::default(),
            warmup: WarmupResult::default(),
            prompt_tokens: PromptTokenCheck::default(),
            dataset_sha256: None,
            send_lag_ms: None,
            achieved_rate_ratio: None,
            server_metrics: None,
            request_timings: Vec::new(),
            client_headroom: None,
        }
    }

    fn warn_on_prompt_gap(
        &self,
        records: &[RequestRecord],
        tolerance: f64,
        tokenizer: &str,
        window: &str,
    ) {
        if let Some(warning) =
            served_vs_planned(records, tolerance).and_then(|check| check.warning(tokenizer))
        {
            eprintln!("warning: phase `{}` ({window}): {warning}", self.phase.name);
        }
    }

    async fn scrape(&self) -> Option<scrape::Sample> {
        let url = self.endpoint.metrics_url.as_deref()?;
        match scrape::scrape(self.http, url).await {
            Ok(sample) => Some(sample),
            Err(e) => {
                eprintln!("warning: phase `{}`: {e}", self.phase.name);
                None
            }
        }
    }
}

/// Each phase draws its own prompts and arrivals: a recheck repeats its original's settings,
/// not its exact prompts, which a server's prefix cache would otherwise serve from memory.
fn phase_seed(seed: Option<u64>, phase_name: &str) -> u64 {
    // FNV-1a: stable across platforms and releases, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in phase_name.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    seed.unwrap_or(0) ^ hash
}

/// Requests per second between the first and the last start.
pub(crate) fn achieved_rate(records: &[RequestRecord]) -> Option<f64> {
    let first = records
        .iter()
        .map(|r| r.start_offset_ms)
        .fold(f64::INFINITY, f64::min);
    let last = records
        .iter()
        .map(|r| r.start_offset_ms)
        .fold(f64::NEG_INFINITY, f64::max);
    (records.len() > 1 && last > first).then(|| (records.len() - 1) as f64 / ((last - first) / 1e3))
}

fn served_vs_planned(
    records: &[RequestRecord],
    tolerance: f64,
) -> Option<crate::workload::PromptTokenCheck> {
    crate::workload::PromptTokenCheck::new(
        records
            .iter()
            .filter_map(|r| Some((r.planned_context_tokens?, r.prompt_tokens?))),
        tolerance,
    )
}

fn recheck_pairs(report: &Report, phases: &[PhaseSettings<'_>]) -> Vec<crate::report::RecheckPair> {
    report
        .phases
        .iter()
        .filter_map(|recheck| {
            let original_name = recheck.recheck_of.as_deref()?;
            let original = report.phases.iter().find(|p| p.phase == original_name)?;
            let tolerance = phases
                .iter()
                .find(|p| p.name == recheck.phase)
                .map(|p| p.tolerance.clone())
                .unwrap_or_default();
            Some(metrics::recheck_pair(
                original_name,
                &original.summary,
                &recheck.phase,
                &recheck.summary,
                &tolerance,
            ))
        })
        .collect()
}

fn new_report(
    loaded: &LoadedPlan,
    run_id: String,
    started_at: chrono::DateTime<chrono::Utc>,
) -> Report {
    let (redacted_plan, redacted_vars) = crate::client::redact_plan(&loaded.plan, &loaded.vars);
    Report {
        schema: REPORT_SCHEMA.to_string(),
        tool: ToolInfo {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        run_id,
        started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        finished_at: None,
        partial: true,
        stop_reason: None,
        host: host::host_facts(),
        plan_source: PlanSource {
            path: loaded.source_path.display().to_string(),
            sha256: loaded.source_sha256.clone(),
        },
        // Secret header values stay out of the report (and so out of report.md/html).
        vars: redacted_vars,
        plan: redacted_plan,
        metadata: loaded.plan.metadata.clone(),
        timing_methodology: timing_methodology(loaded.plan.percentile_method),
        phases: Vec::new(),
        rechecks: Vec::new(),
        client_calibration: None,
        client_busy_poll: false,
        shard: None,
        merged_from: None,
    }
}

fn timing_methodology(method: plan::PercentileMethod) -> TimingMethodology {
    TimingMethodology {
        clock: "client monotonic clock (std::time::Instant); timestamps taken when bytes arrive".to_string(),
        percentile_method: method,
        time_to_first_output: "request start through the first non-empty streamed reasoning or content delta".to_string(),
        ttft: "request start through the first non-empty streamed content delta".to_string(),
        generation: "client-observed E2E minus time to first output".to_string(),
        decode: "output tokens after the first divided by client-observed generation time; output tokens may include reasoning tokens".to_string(),
        mean_inter_token_latency: "client-observed generation time divided by output tokens after the first; not a per-token trace".to_string(),
        tpot: "(E2E minus TTFT) divided by output tokens after the first (vLLM's TPOT)".to_string(),
        effective_prefill: "usage.prompt_tokens divided by client-observed time to first output; includes queueing".to_string(),
        elapsed: "first measured request's start to the last one's end; warmup excluded".to_string(),
    }
}

fn phase_line(result: &PhaseResult) -> String {
    let s = &result.summary;
    let ms = |d: Option<crate::metrics::Distribution>,
              pick: fn(&crate::metrics::Distribution) -> f64| {
        d.map(|d| format!("{:.1}", pick(&d) * 1e3))
            .unwrap_or_else(|| "-".into())
    };
    format!(
        "{}: {} requests, {} errors, {:.1} output tok/s, {:.2} req/s, TTFT p50 {} ms p99 {} ms, TPOT p50 {} ms",
        result.phase,
        s.requests,
        s.errors,
        s.output_tokens_per_second,
        s.request_rate,
        ms(s.ttft, |d| d.p50),
        ms(s.ttft, |d| d.p99),
        ms(s.tpot, |d| d.p50),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(planned: u64, actual: u64, start_ms: f64) -> RequestRecord {
        RequestRecord {
            planned_context_tokens: Some(planned),
            prompt_tokens: Some(actual),
            start_offset_ms: start_ms,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn prompt_check_flags_a_missed_plan() {
        // Seed 000: planned 4096, served 2960.
        let check = PromptTokenCheck::from_records(
            &[record(4096, 2960, 0.0), record(4096, 2960, 1.0)],
            0.02,
        );
        assert!(check.warning);
        assert!((check.relative_error.unwrap() - (2960.0 - 4096.0) / 4096.0).abs() < 1e-12);
        let exact = PromptTokenCheck::from_records(&[record(538, 538, 0.0)], 0.02);
        assert!(!exact.warning);
        assert_eq!(exact.relative_error, Some(0.0));
    }

    #[test]
    fn achieved_rate_is_measured_between_first_and_last_start() {
        let records: Vec<_> = (0..101).map(|i| record(1, 1, i as f64 * 10.0)).collect();
        assert!((achieved_rate(&records).unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(achieved_rate(&records[..1]), None);
    }

    #[test]
    fn phase_seeds_differ_by_name_and_follow_the_plan_seed() {
        assert_ne!(phase_seed(Some(1), "a"), phase_seed(Some(1), "b"));
        assert_ne!(phase_seed(Some(1), "a"), phase_seed(Some(2), "a"));
        assert_eq!(phase_seed(Some(1), "a"), phase_seed(Some(1), "a"));
    }
}
