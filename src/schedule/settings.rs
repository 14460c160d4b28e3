//! A phase's settings read from the expanded plan, where `expand` already merged the
//! defaults into every phase.

use std::time::Duration;

use crate::plan::{Arrival, Phase, Plan, Target, Tolerance, Warmup, Workload};

/// In-flight requests get this long after a phase's bound unless the plan says otherwise.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(120);

/// What holds the load constant.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// Exactly this many requests in flight.
    Closed { concurrency: u32 },
    /// Arrivals at a rate, independent of responses.
    Open {
        rps: f64,
        arrival: Arrival,
        burstiness: Option<f64>,
        max_concurrency: Option<u32>,
    },
    /// Each request at its prompt's `scheduled_at` (trace replay), independent of responses.
    Replay,
}

/// Everything needed to run one phase, borrowed from the plan.
#[derive(Debug, Clone)]
pub struct PhaseSettings<'p> {
    pub name: &'p str,
    pub target_name: &'p str,
    pub target: &'p Target,
    pub route: &'p str,
    /// The workload's name; with a `mix`, the archetypes and their shares
    /// (`short-chat 70% + long-rag 30%`).
    pub workload_name: String,
    /// The workload; with a `mix`, its first archetype's, whose request settings every
    /// archetype shares.
    pub workload: &'p Workload,
    pub load: Load,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub warmup: Option<&'p Warmup>,
    pub cooldown: Option<Duration>,
    pub drain_timeout: Duration,
    pub tolerance: Tolerance,
    pub recheck_of: Option<&'p str>,
    /// The plan expects this phase's requests may all fail.
    pub expect_errors: bool,
    /// What the phase does when its target goes down.
    pub on_target_down: crate::plan::DownPolicy,
    pub tags: &'p [String],
    pub before: &'p [crate::plan::Hook],
    pub after: &'p [crate::plan::Hook],
    /// Actions at offsets into the measured window.
    pub during: &'p [crate::plan::Hook],
    /// End the measured window once these estimates are stable.
    pub until: Option<&'p crate::plan::Until>,
    /// A capacity search: the load above is its first probe's.
    pub search: Option<&'p crate::plan::Search>,
    /// A `mix`: each archetype's name, workload and share, in plan order (empty without).
    pub archetypes: Vec<Archetype<'p>>,
}

/// One workload of a phase's `mix`.
#[derive(Debug, Clone)]
pub struct Archetype<'p> {
    pub name: &'p str,
    pub workload: &'p Workload,
    /// Share of the phase's requests, 0 to 1.
    pub weight: f64,
}

/// `short-chat 70% + long-rag 30%`.
fn mix_label(archetypes: &[Archetype<'_>]) -> String {
    let parts: Vec<String> = archetypes
        .iter()
        .map(|a| format!("{} {}%", a.name, (a.weight * 1e4).round() / 1e2))
        .collect();
    parts.join(" + ")
}

/// A phase's workload, or the archetypes of its `mix` (the first standing for the workload).
fn resolve_workloads<'p>(
    plan: &'p Plan,
    phase: &'p Phase,
    name: &str,
) -> Result<(String, &'p Workload, Vec<Archetype<'p>>), String> {
    let find = |workload_name: &str| {
        plan.workloads
            .get(workload_name)
            .ok_or_else(|| format!("phase `{name}`: unknown workload `{workload_name}`"))
    };
    if let Some(mix) = &phase.mix {
        let mut archetypes = Vec::new();
        for (archetype, weight) in &mix.0 {
            archetypes.push(Archetype {
                name: archetype,
                workload: find(archetype)?,
                weight: weight.0,
            });
        }
        let lead = archetypes
            .first()
            .map(|a| a.workload)
            .ok_or_else(|| format!("phase `{name}`: the mix lists no workload"))?;
        return Ok((mix_label(&archetypes), lead, archetypes));
    }
    let workload_name = phase
        .workload
        .as_deref()
        .ok_or_else(|| format!("phase `{name}` names no workload"))?;
    Ok((workload_name.to_string(), find(workload_name)?, Vec::new()))
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

    /// How many times the phase's duration and warmup run: a search's worst case, else 1.
    pub fn repeats(&self) -> u32 {
        self.search.map_or(1, |s| s.worst_case_probes())
    }

    /// One-line description of the load and bounds, for logs and `--dry-run`.
    pub fn describe_load(&self) -> String {
        if let Some(s) = self.search {
            let kind = match s.load {
                crate::plan::SearchLoad::Concurrency => "concurrency",
                crate::plan::SearchLoad::Rate => "rate (req/s, constant arrivals)",
            };
            let needs: Vec<String> = s
                .sample_needs()
                .iter()
                .map(|need| {
                    let mut text = format!(
                        "{} passes from {} samples",
                        need.objective.name(),
                        need.samples
                    );
                    // A rate search knows each objective's lowest decidable load up front.
                    if s.load == crate::plan::SearchLoad::Rate {
                        let longest = s.longest_probe();
                        text.push_str(&format!(
                            ", which a {} probe holds from {} req/s",
                            humantime::format_duration(longest),
                            need.rate_for(longest).ceil()
                        ));
                    }
                    text
                })
                .collect();
            let needs = if needs.is_empty() {
                String::new()
            } else {
                format!(" ({})", needs.join(", "))
            };
            let start = s.start_reason().map_or(String::new(), |(first, why)| {
                format!("; first probe at {first} req/s: {why}")
            });
            return format!(
                "capacity search over {kind} {}–{}, precision {}%, at most {} probes of {}{needs}{start}",
                s.min,
                s.max,
                s.precision.0 * 100.0,
                s.worst_case_probes(),
                s.probe.duration
            );
        }
        let load = match &self.load {
            Load::Closed { concurrency } => format!("concurrency {concurrency}"),
            Load::Open {
                rps,
                arrival,
                burstiness,
                max_concurrency: cap,
            } => {
                let mut s = format!("{rps} req/s {arrival:?}").to_lowercase();
                if let Some(b) = burstiness {
                    s.push_str(&format!(" burstiness {b}"));
                }
                if let Some(cap) = cap {
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
/// unreachable for a plan that came through `plan::prepare` (which also merged the defaults
/// into every phase); they guard hand-edited reports.
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
    let name = phase.name.as_deref().ok_or("phase has no name")?;
    let target_name = phase
        .target
        .as_deref()
        .ok_or_else(|| format!("phase `{name}` names no target"))?;
    let target = plan
        .targets
        .get(target_name)
        .ok_or_else(|| format!("phase `{name}`: unknown target `{target_name}`"))?;
    let (workload_name, workload, archetypes) = resolve_workloads(plan, phase, name)?;
    let replays_trace = workload.trace.is_some();
    let load = phase_load(phase, name, replays_trace)?;
    let until = match &phase.search {
        Some(s) => s.probe.until.as_ref(),
        None => phase.until.as_ref(),
    };
    // A probe runs its `duration`; the runner lengthens one that needs more samples, up to
    // its `until.max_duration`.
    let duration = match (&phase.search, until) {
        (Some(s), _) => Some(s.probe.duration.0),
        (None, Some(until)) => Some(until.max_duration.0),
        (None, None) => phase.duration.map(|d| d.0),
    };
    if duration.is_none() && phase.requests.is_none() && !replays_trace {
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
        requests: phase.requests.filter(|_| phase.search.is_none()),
        warmup: match &phase.search {
            Some(s) => s.probe.warmup.as_ref(),
            None => phase.warmup.as_ref(),
        },
        cooldown: phase.cooldown.map(|d| d.0),
        drain_timeout: phase
            .drain_timeout
            .map(|d| d.0)
            .unwrap_or(DEFAULT_DRAIN_TIMEOUT),
        tolerance: phase.tolerance.clone().unwrap_or_default(),
        recheck_of: phase.recheck.as_deref(),
        expect_errors: phase.expect_errors,
        on_target_down: crate::plan::DownPolicy::of(
            phase.on_target_down.as_ref(),
            phase.expect_errors,
        ),
        tags: &phase.tags,
        before: &phase.before,
        after: &phase.after,
        during: &phase.during,
        until,
        search: phase.search.as_ref(),
        archetypes,
    })
}

/// A phase's load: its concurrency or rate, a search's first probe, or a trace's own pace.
fn phase_load(phase: &Phase, name: &str, replays_trace: bool) -> Result<Load, String> {
    if let Some(search) = &phase.search {
        return Ok(probe_load(search.load, search.first_load()));
    }
    match (&phase.concurrency, &phase.rate) {
        (None, None) if replays_trace => Ok(Load::Replay),
        (Some(concurrency), None) => Ok(Load::Closed {
            concurrency: *concurrency,
        }),
        (None, Some(rate)) => Ok(Load::Open {
            rps: rate.rps,
            arrival: rate.arrival,
            burstiness: rate.burstiness,
            max_concurrency: rate.max_concurrency,
        }),
        _ => Err(format!(
            "phase `{name}` needs exactly one of `concurrency` and `rate`"
        )),
    }
}

/// The load of a probe at `value`: that concurrency, or that rate with constant arrivals
/// (so a probe's outcome depends on the load, not on arrival luck).
pub fn probe_load(kind: crate::plan::SearchLoad, value: f64) -> Load {
    match kind {
        crate::plan::SearchLoad::Concurrency => Load::Closed {
            concurrency: value.round().max(1.0) as u32,
        },
        crate::plan::SearchLoad::Rate => Load::Open {
            rps: value,
            arrival: Arrival::Constant,
            burstiness: None,
            max_concurrency: None,
        },
    }
}
