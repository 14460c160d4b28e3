//! One run of a plan: targets up, phases in order, the report rewritten after every phase,
//! and a partial report when the run stops early.

use std::path::{Path, PathBuf};

use crate::plan::{self, ExpandOptions, HookWhen, LoadedPlan};
use crate::report::{
    ClientCalibration, Figures, PhaseResult, PlannedStart, Report, ShardInfo, phase_result,
    relate_phases,
};
use crate::schedule::{self, PhaseSettings, Schedule, ScheduleOptions, ShardSpec};
use crate::scheduler::{self, Stops};

use super::calibrate;
use super::console::{self, phase_line};
use super::facts::new_report;
use super::hooks;
use super::interrupt::install_interrupt_handler;
use super::marks;
use super::options::{LongRunOptions, RunError, RunOptions, RunOutcome};
use super::output::{self, Journal};
use super::phase::{PhaseRun, RanPhase};
use super::targets::{
    PhaseTarget, Simulators, Targets, check_client_settings, check_reachable, discover_models,
    start_simulators,
};

/// Run a plan end to end.
pub async fn run(options: RunOptions) -> Result<RunOutcome, RunError> {
    let mut loaded = load_plan(&options.plan, &options.expand)?;
    let problems = redact_plan(&mut loaded, options.dry_run);
    let targets = if options.dry_run {
        None
    } else {
        Some(preflight(&mut loaded, &options, problems).await?)
    };
    let schedule =
        Schedule::new(&loaded.plan, &schedule_options(&options)).map_err(RunError::InvalidInput)?;
    if options.shard.is_some() && schedule.phases.iter().any(|p| p.search.is_some()) {
        return Err(RunError::InvalidInput(
            "a capacity search cannot be sharded: each probe depends on the last".to_string(),
        ));
    }
    let Some(targets) = targets else {
        print!("{}", schedule.describe());
        return Ok(RunOutcome {
            report_path: None,
            report: None,
            interrupted: false,
            target_down: None,
        });
    };
    check_client_settings(&schedule.phases, &targets)?;
    run_schedule(&options, &loaded, &schedule, &targets).await
}

/// The run itself, once the plan, its schedule and its targets are ready: the run directory,
/// calibration, every phase, and the report closed.
async fn run_schedule(
    options: &RunOptions,
    loaded: &LoadedPlan,
    schedule: &Schedule<'_>,
    targets: &Targets,
) -> Result<RunOutcome, RunError> {
    let started_at = chrono::Utc::now();
    let run_id = run_id(&loaded.plan.name, started_at, options.shard);
    let shard_index = options.shard.map(|s| s.index);
    let (out_dir, journal) = open_run_dir(
        options.out_dir.as_deref(),
        &run_id,
        shard_index,
        options.long_run.part_rows,
    )?;

    // Held until the run returns: calibration and every phase run with quick wakeups.
    let (_latency_request, latency_hint) = crate::wakeup::request_if(options.latency_hint);
    let calibration = calibrate_client(options.calibrate, &latency_hint).await;
    let _busy_poll = options.busy_poll.then(scheduler::BusyPoll::start);
    let simulators = start_simulators(&schedule.phases).await?;
    let stops = Stops::default();
    let interrupts = install_interrupt_handler(stops.clone(), journal.clone(), out_dir.clone());

    let salt = super::salt::run_salt(options, &loaded.plan);
    let provenance =
        super::provenance::run_provenance(loaded, &schedule.phases, targets, &simulators, &salt)
            .await;
    let servers = provenance.servers.clone();
    let mut report = new_report(loaded, run_id.clone(), started_at);
    report.client_calibration = calibration;
    report.host.cpu_latency_hint = Some(latency_hint);
    report.client_busy_poll = options.busy_poll;
    report.shard = shard_info(&loaded.plan, options);
    report.provenance = Some(provenance);
    let report_path = output::write_report(&out_dir, &report).map_err(RunError::Failed)?;
    let phases = Phases {
        loaded,
        schedule,
        simulators: &simulators,
        run_id: &run_id,
        journal: &journal,
        stops: &stops,
        targets,
        options,
        out_dir: &out_dir,
        salt: &salt,
        servers: &servers,
    };
    let failure = phases.run(&mut report).await;
    // Every exit path from here on, a failed report write included, leaves a finished file.
    output::finish_records(&journal);
    let failure = failure?;

    let interrupted = stops.stop_starting.is_cancelled();
    close(
        &mut report,
        failure.as_ref(),
        interrupted,
        schedule.phases.len(),
    );
    output::write_report(&out_dir, &report).map_err(RunError::Failed)?;
    let _ = journal.flush();
    interrupts.abort();
    for (_, (_, handle)) in simulators {
        handle.shutdown().await;
    }
    eprintln!("report: {}", report_path.display());
    // A target that went down leaves a partial report worth keeping (and recording).
    let target_down = match failure {
        Some(RunError::TargetDown(why)) => Some(why),
        Some(e) => return Err(e),
        None => None,
    };
    Ok(RunOutcome {
        report_path: Some(report_path),
        report: Some(report),
        interrupted,
        target_down,
    })
}

/// User info leaves the URL before anything connects or prints it, and vars holding a URL
/// secret are redacted. A plan re-run from a report: redacted values are supplied or
/// refused, never sent (the refusals are returned, to be reported with the preflight's).
fn redact_plan(loaded: &mut LoadedPlan, dry_run: bool) -> Vec<String> {
    let problems = if dry_run {
        Vec::new()
    } else {
        super::redact::fill_redacted(&mut loaded.plan)
    };
    let url_secrets = super::redact::plan_url_secrets(&loaded.plan);
    super::redact::move_user_info_to_headers(&mut loaded.plan);
    for value in loaded
        .vars
        .values_mut()
        .chain(loaded.plan.vars.values_mut())
    {
        if url_secrets
            .iter()
            .any(|s| value.to_string().contains(s.as_str()))
        {
            *value = serde_json::Value::String(crate::client::REDACTED.to_string());
        }
    }
    problems
}

/// Prove `--output` writable and every phase's inputs readable before model discovery sends
/// the first request (all problems are reported together); then resolve the targets the
/// phases use and name the models of those that name none.
async fn preflight(
    loaded: &mut LoadedPlan,
    options: &RunOptions,
    mut problems: Vec<String>,
) -> Result<Targets, RunError> {
    if let Some(dir) = &options.out_dir
        && let Err(e) = output::prepare_dir(dir)
    {
        problems.push(e);
    }
    let preliminary =
        Schedule::new(&loaded.plan, &schedule_options(options)).map_err(RunError::InvalidInput)?;
    let plan_dir = loaded
        .source_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    super::preflight::check_inputs(&preliminary.phases, &plan_dir, problems)?;
    let used = preliminary.phases.iter().map(|p| p.target_name);
    let targets = Targets::resolve(&loaded.plan, used, &plan_dir)?;
    check_reachable(&preliminary.phases, &targets).await?;
    drop(preliminary);
    discover_models(&mut loaded.plan, &targets, options.quiet()).await?;
    Ok(targets)
}

fn schedule_options(options: &RunOptions) -> ScheduleOptions<'_> {
    ScheduleOptions {
        only: &options.only,
        shard: options.shard,
        start_at: options.start_at,
    }
}

/// The run directory (`--output`, else `runs/<run id>/`), checked writable, with its journal.
fn open_run_dir(
    out: Option<&Path>,
    run_id: &str,
    shard: Option<u32>,
    part_rows: u64,
) -> Result<(PathBuf, Journal), RunError> {
    let dir = out.map_or_else(|| Path::new("runs").join(run_id), Path::to_path_buf);
    output::prepare_dir(&dir).map_err(RunError::InvalidInput)?;
    let journal = Journal::create(&dir, shard, part_rows).map_err(RunError::InvalidInput)?;
    Ok((dir, journal))
}

/// Sharded runs: which shard this report holds and the plan digest its siblings share.
fn shard_info(plan: &plan::Plan, options: &RunOptions) -> Option<ShardInfo> {
    options.shard.map(|shard| ShardInfo {
        index: shard.index,
        count: shard.count,
        plan_sha256: schedule::plan_sha256(plan),
        start_at: options
            .start_at
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        phase_starts: Vec::new(),
    })
}

/// The run's end: when it finished, and whether (and why) it stopped before every phase ran.
fn close(report: &mut Report, failure: Option<&RunError>, interrupted: bool, phases: usize) {
    report.span.finished_at =
        Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    report.span.partial = interrupted || failure.is_some() || report.phases.len() < phases;
    report.span.stop_reason = match (failure, interrupted) {
        (Some(e), _) => Some(e.to_string()),
        (None, true) => Some("interrupted".to_string()),
        (None, false) => None,
    };
}

/// `<plan>-<UTC time>`; in a sharded run the shard keeps request ids (and out dirs) apart.
fn run_id(
    plan_name: &str,
    started_at: chrono::DateTime<chrono::Utc>,
    shard: Option<ShardSpec>,
) -> String {
    let run_id = format!("{plan_name}-{}", started_at.format("%Y%m%dT%H%M%SZ"));
    match shard {
        Some(shard) => format!("{run_id}-shard{}of{}", shard.index, shard.count),
        None => run_id,
    }
}

/// This machine's client ceiling, measured before the first phase unless skipped; warns when
/// sleeping threads wake slowly here.
async fn calibrate_client(
    calibrate: bool,
    latency_hint: &crate::wakeup::CpuLatencyHint,
) -> Option<ClientCalibration> {
    let calibration = if calibrate {
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
        .and_then(|wake| crate::wakeup::slow_wake_warning(wake, latency_hint))
    {
        eprintln!("{warning}");
    }
    calibration
}

/// The phases of a run, in order, and everything they share.
pub(super) struct Phases<'a> {
    pub(super) loaded: &'a LoadedPlan,
    schedule: &'a Schedule<'a>,
    pub(super) simulators: &'a Simulators,
    run_id: &'a str,
    journal: &'a Journal,
    pub(super) stops: &'a Stops,
    pub(super) targets: &'a Targets,
    pub(super) options: &'a RunOptions,
    pub(super) out_dir: &'a Path,
    /// The run's salt, and each target as its server states itself (which salt it takes).
    salt: &'a str,
    servers: &'a [crate::report::ServerIdentity],
}

impl Phases<'_> {
    /// Run every phase, rewriting the report after each; the error that stopped them early,
    /// if one did. Only a report that cannot be written fails the call itself.
    async fn run(&self, report: &mut Report) -> Result<Option<RunError>, RunError> {
        let mut run_origin = None;
        let calibration = report.client_calibration.clone();
        for (phase_index, phase) in self.schedule.phases.iter().enumerate() {
            // Sharded runs: every shard starts this phase at the same planned time.
            if let Some(&at) = self.schedule.starts.get(phase_index) {
                self.wait_for_planned_start(phase, at, report).await;
            }
            if self.stops.stop_starting.is_cancelled() {
                break;
            }
            if let Some(search) = phase.search {
                match self
                    .run_search(phase, search, report, &mut run_origin)
                    .await?
                {
                    Some(e) => return Ok(Some(e)),
                    None => continue,
                }
            }
            let target = match self.targets.for_phase(phase, self.simulators) {
                Ok(target) => target,
                Err(e) => return Ok(Some(e)),
            };
            let warmup_requests = self
                .schedule
                .warmup_requests
                .get(phase_index)
                .copied()
                .flatten();
            let hook_ctx = hooks::HookContext {
                phase: phase.name,
                target: &target,
                allow_exec: self.options.expand.allow_exec,
                plan_dir: self.plan_dir(),
            };
            let long_run = self.long_run_for(phase);
            let run = PhaseRun {
                shard: self.options.shard,
                warmup_requests,
                during: Some(&hook_ctx),
                long_run: &long_run,
                ..self.phase_run(phase, &target, calibration.as_ref())
            };
            let mut hooks = Vec::new();
            let hook_error =
                hooks::run_hooks(HookWhen::Before, phase.before, &hook_ctx, &mut hooks).await;
            if let Some(message) = hook_error {
                // The phase never started: record it, with its actions, as an empty partial one.
                let mut ran = run.empty(hooks);
                ran.facts.partial = true;
                self.add_phase(report, ran)?;
                return Ok(Some(RunError::Failed(message)));
            }
            let stop = match run.execute(&mut run_origin, hooks).await {
                Ok(ran) => self.after_phase(phase, &hook_ctx, ran, report).await?,
                Err(e) => Some(e),
            };
            if stop.is_some() {
                return Ok(stop);
            }
            if let Some(cooldown) = phase.cooldown {
                tokio::select! {
                    _ = tokio::time::sleep(cooldown) => {}
                    _ = self.stops.stop_starting.cancelled() => {}
                }
            }
        }
        Ok(None)
    }

    /// A phase that ran: its `after` actions, then its place in the report; why the run
    /// stops here, if it does (the target went down, or an action failed).
    async fn after_phase(
        &self,
        phase: &PhaseSettings<'_>,
        hook_ctx: &hooks::HookContext<'_>,
        mut ran: RanPhase,
        report: &mut Report,
    ) -> Result<Option<RunError>, RunError> {
        let down = ran.facts.target_down.clone();
        let during_error = marks::during_failure(&ran.facts.hooks);
        let hook_error =
            hooks::run_hooks(HookWhen::After, phase.after, hook_ctx, &mut ran.facts.hooks).await;
        self.add_phase(report, ran)?;
        if let Some(why) = down {
            return Ok(Some(RunError::TargetDown(why)));
        }
        Ok(during_error.or(hook_error).map(RunError::Failed))
    }

    /// How many records a phase keeps: recovery after a mark (of a `before`, `during` or
    /// `after` action) is measured from every record of the phase.
    fn long_run_for(&self, phase: &PhaseSettings<'_>) -> LongRunOptions {
        let marked = [phase.before, phase.during, phase.after]
            .iter()
            .any(|hooks| hooks.iter().any(|h| h.mark_name().is_some()));
        let keep_records = if marked {
            usize::MAX
        } else {
            self.options.long_run.keep_records
        };
        LongRunOptions {
            keep_records,
            ..self.options.long_run.clone()
        }
    }

    /// The plan file's directory, where `exec` hooks run.
    fn plan_dir(&self) -> &Path {
        match self.loaded.source_path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        }
    }

    /// One search probe: a phase of its own, without hooks or a planned start.
    pub(super) async fn probe(
        &self,
        phase: &PhaseSettings<'_>,
        calibration: Option<&ClientCalibration>,
        run_origin: &mut Option<std::time::Instant>,
    ) -> Result<RanPhase, RunError> {
        let target = self.targets.for_phase(phase, self.simulators)?;
        // A probe's verdict counts its records (goodput, completion rate): it keeps them all.
        let keep_all = LongRunOptions {
            keep_records: usize::MAX,
            ..self.options.long_run.clone()
        };
        PhaseRun {
            long_run: &keep_all,
            ..self.phase_run(phase, &target, calibration)
        }
        .execute(run_origin, Vec::new())
        .await
    }

    /// A phase run with this run's context: unsharded, with the phase's own warmup bound.
    fn phase_run<'p>(
        &'p self,
        phase: &'p PhaseSettings<'p>,
        target: &'p PhaseTarget,
        calibration: Option<&'p ClientCalibration>,
    ) -> PhaseRun<'p> {
        PhaseRun {
            plan: self.loaded,
            phase,
            target,
            run_id: self.run_id,
            journal: self.journal,
            stops: self.stops,
            progress: self.options.progress,
            shard: None,
            warmup_requests: phase.warmup.and_then(|w| w.requests),
            calibration,
            during: None,
            out_dir: self.out_dir,
            long_run: &self.options.long_run,
            salt: super::salt::PhaseSalt {
                value: self.salt,
                used: super::provenance::phase_salt(phase, self.servers),
            },
        }
    }

    /// Wait for a phase's planned start (`--start-at`) and note in the report how late it is.
    async fn wait_for_planned_start(
        &self,
        phase: &PhaseSettings<'_>,
        at: chrono::DateTime<chrono::Utc>,
        report: &mut Report,
    ) {
        let late_ms = wait_until(at, &self.stops.stop_starting).await;
        if self.stops.stop_starting.is_cancelled() {
            return;
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
            info.phase_starts.push(PlannedStart {
                phase: phase.name.to_string(),
                planned_at: at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                late_ms,
            });
        }
    }

    /// A finished phase: built into its result (the journal holding its final facts first),
    /// its console line, its place in the report, the rechecks paired again, and the report
    /// rewritten. The result, as the report now holds it.
    pub(super) fn add_phase<'r>(
        &self,
        report: &'r mut Report,
        ran: RanPhase,
    ) -> Result<&'r PhaseResult, RunError> {
        if let Err(e) = self
            .journal
            .append_facts(&ran.facts, output::FactsStage::Finished)
        {
            eprintln!("warning: the journal could not be written ({e})");
        }
        let figures = Figures {
            method: self.loaded.plan.percentile_method,
            slo: self.loaded.plan.slo.as_ref(),
            previous: report.phases.last(),
        };
        let result = phase_result(ran.facts, ran.measured, figures);
        if !self.options.quiet() {
            println!("{}", phase_line(&result));
        }
        for warning in console::phase_warnings(&result) {
            eprintln!("{warning}");
        }
        report.phases.push(result);
        relate_phases(report);
        output::write_report(self.out_dir, report).map_err(RunError::Failed)?;
        Ok(report.phases.last().expect("just pushed"))
    }
}

fn load_plan(path: &Path, options: &ExpandOptions) -> Result<LoadedPlan, RunError> {
    let loaded = plan::prepare(path, options)?;
    for warning in &loaded.warnings {
        eprintln!("{}", warning.one_line());
    }
    Ok(loaded)
}

/// Wait until `at` (wall clock) unless a stop comes first; returns how late we are, in
/// milliseconds (0 when on time).
async fn wait_until(
    at: chrono::DateTime<chrono::Utc>,
    stop: &tokio_util::sync::CancellationToken,
) -> f64 {
    let now = chrono::Utc::now();
    match (at - now).to_std() {
        Ok(wait) if !wait.is_zero() => {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => {}
            }
            0.0
        }
        _ => (now - at).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e3,
    }
}
