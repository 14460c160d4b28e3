//! A phase's settings resolved from the expanded plan: the phase's own, else the defaults.

use std::time::Duration;

use crate::plan::{Phase, Plan, Target, Tolerance, Warmup, Workload};
use crate::scheduler::Load;

/// In-flight requests get this long after a phase's bound unless the plan says otherwise.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(120);

/// Everything needed to run one phase, borrowed from the plan.
#[derive(Debug, Clone)]
pub struct PhaseSettings<'p> {
    pub name: &'p str,
    pub target_name: &'p str,
    pub target: &'p Target,
    pub route: &'p str,
    pub workload_name: &'p str,
    pub workload: &'p Workload,
    pub load: Load,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub warmup: Option<&'p Warmup>,
    pub cooldown: Option<Duration>,
    pub drain_timeout: Duration,
    pub tolerance: Tolerance,
    pub recheck_of: Option<&'p str>,
    pub tags: &'p [String],
}

impl PhaseSettings<'_> {
    pub fn concurrency(&self) -> Option<u32> {
        match self.load {
            Load::Closed { concurrency } => Some(concurrency),
            Load::Open { .. } | Load::Replay => None,
        }
    }

    pub fn rate_rps(&self) -> Option<f64> {
        match self.load {
            Load::Open { rps, .. } => Some(rps),
            Load::Closed { .. } | Load::Replay => None,
        }
    }

    /// Connections the client may keep open at once.
    pub fn max_connections(&self) -> usize {
        match &self.load {
            Load::Closed { concurrency } => *concurrency as usize,
            Load::Open {
                max_concurrency: Some(cap),
                ..
            } => *cap as usize,
            Load::Open { rps, .. } => (rps.ceil() as usize).clamp(16, 4096),
            Load::Replay => 256,
        }
    }

    /// One-line description of the load and bounds, for logs and `--dry-run`.
    pub fn describe_load(&self) -> String {
        let load = match &self.load {
            Load::Closed { concurrency } => format!("concurrency {concurrency}"),
            Load::Open {
                rps,
                arrival,
                burstiness,
                max_concurrency,
            } => {
                let mut s = format!("{rps} req/s {arrival:?}").to_lowercase();
                if let Some(b) = burstiness {
                    s.push_str(&format!(" burstiness {b}"));
                }
                if let Some(cap) = max_concurrency {
                    s.push_str(&format!(" max_concurrency {cap}"));
                }
                s
            }
            Load::Replay => "trace replay".to_string(),
        };
        let mut bounds = Vec::new();
        if let Some(d) = self.duration {
            bounds.push(humantime::format_duration(d).to_string());
        }
        if let Some(n) = self.requests {
            bounds.push(format!("{n} requests"));
        }
        if bounds.is_empty() {
            bounds.push("one pass".to_string());
        }
        format!("{load}, {}", bounds.join(" or "))
    }
}

/// Resolve every phase, or say what is missing. The plan checks make these errors
/// unreachable for a plan that came through `plan::prepare`; they guard hand-edited reports.
pub fn resolve(plan: &Plan) -> Result<Vec<PhaseSettings<'_>>, Vec<String>> {
    let mut settings = Vec::new();
    let mut errors = Vec::new();
    for (index, phase) in plan.phases.iter().enumerate() {
        match resolve_phase(plan, phase) {
            Ok(s) => settings.push(s),
            Err(e) => errors.push(format!("phases[{index}]: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(settings)
    } else {
        Err(errors)
    }
}

fn resolve_phase<'p>(plan: &'p Plan, phase: &'p Phase) -> Result<PhaseSettings<'p>, String> {
    let defaults = &plan.defaults;
    let name = phase.name.as_deref().ok_or("phase has no name")?;
    let target_name = phase
        .target
        .as_deref()
        .or(defaults.target.as_deref())
        .ok_or_else(|| format!("phase `{name}` names no target"))?;
    let target = plan
        .targets
        .get(target_name)
        .ok_or_else(|| format!("phase `{name}`: unknown target `{target_name}`"))?;
    let workload_name = phase
        .workload
        .as_deref()
        .or(defaults.workload.as_deref())
        .ok_or_else(|| format!("phase `{name}` names no workload"))?;
    let workload = plan
        .workloads
        .get(workload_name)
        .ok_or_else(|| format!("phase `{name}`: unknown workload `{workload_name}`"))?;
    let replays_trace = workload.trace.is_some();
    let load = match (&phase.concurrency, &phase.rate) {
        (None, None) if replays_trace => Load::Replay,
        (Some(concurrency), None) => Load::Closed {
            concurrency: *concurrency,
        },
        (None, Some(rate)) => Load::Open {
            rps: rate.rps,
            arrival: rate.arrival,
            burstiness: rate.burstiness,
            max_concurrency: rate.max_concurrency,
        },
        _ => {
            return Err(format!(
                "phase `{name}` needs exactly one of `concurrency` and `rate`"
            ));
        }
    };
    let duration = phase.duration.or(defaults.duration).map(|d| d.0);
    let requests = phase.requests.or(defaults.requests);
    if duration.is_none() && requests.is_none() && !replays_trace {
        return Err(format!(
            "phase `{name}` needs a bound: `duration` or `requests`"
        ));
    }
    Ok(PhaseSettings {
        name,
        target_name,
        target,
        route: phase.route.as_deref().unwrap_or(target_name),
        workload_name,
        workload,
        load,
        duration,
        requests,
        warmup: phase.warmup.as_ref().or(defaults.warmup.as_ref()),
        cooldown: phase.cooldown.or(defaults.cooldown).map(|d| d.0),
        drain_timeout: phase
            .drain_timeout
            .or(defaults.drain_timeout)
            .map(|d| d.0)
            .unwrap_or(DEFAULT_DRAIN_TIMEOUT),
        tolerance: phase
            .tolerance
            .clone()
            .or_else(|| defaults.tolerance.clone())
            .unwrap_or_default(),
        recheck_of: phase.recheck.as_deref(),
        tags: &phase.tags,
    })
}

/// `--dry-run`: the schedule, without sending anything.
pub fn describe_schedule(plan: &Plan, phases: &[PhaseSettings<'_>]) -> String {
    let mut out = format!("plan {} — {} phase(s)\n", plan.name, phases.len());
    let mut total = Duration::ZERO;
    let mut open_ended = false;
    for (i, p) in phases.iter().enumerate() {
        out.push_str(&format!(
            "{:>3}. {} → target {} (route {}), workload {}: {}",
            i + 1,
            p.name,
            p.target_name,
            p.route,
            p.workload_name,
            p.describe_load()
        ));
        if let Some(w) = p.warmup {
            let mut parts = Vec::new();
            if let Some(d) = w.duration {
                parts.push(d.to_string());
                total += d.0;
            }
            if let Some(n) = w.requests {
                parts.push(format!("{n} requests"));
                open_ended = true;
            }
            out.push_str(&format!("; warmup {}", parts.join(" or ")));
        }
        if let Some(c) = p.cooldown {
            out.push_str(&format!("; cooldown {}", humantime::format_duration(c)));
            total += c;
        }
        if let Some(of) = p.recheck_of {
            out.push_str(&format!("; recheck of {of}"));
        }
        out.push('\n');
        match p.duration {
            Some(d) => total += d,
            None => open_ended = true,
        }
    }
    let estimate = humantime::format_duration(Duration::from_secs(total.as_secs()));
    out.push_str(&format!(
        "estimated duration: {}{estimate} (plus draining)\n",
        if open_ended { "at least " } else { "" }
    ));
    out
}
