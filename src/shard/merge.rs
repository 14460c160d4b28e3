//! `servebench merge`: shard reports checked against each other, then one report recomputed
//! from the union of their request records.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use serde_json::Value;

use crate::client::RequestRecord;
use crate::figure::Figure;
use crate::metrics::cost::HourlyPrice;
use crate::metrics::trust::ClientLoad;
use crate::report::{
    ClientCeiling, Figures, HookWhen, Measured, MergedShard, PhaseFacts, PhaseHeader, PhaseMark,
    PhaseResult, REPORT_SCHEMA, Report, RunSpan, ShardPhaseFacts, ToolInfo, WarmupResult,
    phase_result, relate_phases,
};
use crate::schedule::plan_sha256;

/// Why shard reports could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The inputs are not the shards of one run; every problem found, one per line.
    #[error("{}", .0.join("\n"))]
    Invalid(Vec<String>),
    /// The merged report could not be written.
    #[error("{0}")]
    Failed(String),
}

impl MergeError {
    pub fn exit_code(&self) -> crate::exit::Exit {
        match self {
            MergeError::Invalid(_) => crate::exit::Exit::InvalidInput,
            MergeError::Failed(_) => crate::exit::Exit::RunFailed,
        }
    }
}

/// Read shard reports and merge them.
pub fn merge_files(inputs: &[PathBuf]) -> Result<Report, MergeError> {
    let mut reports = Vec::new();
    let mut problems = Vec::new();
    for path in inputs {
        match read_report(path) {
            Ok(report) => reports.push((path.display().to_string(), report)),
            Err(problem) => problems.push(problem),
        }
    }
    if !problems.is_empty() {
        return Err(MergeError::Invalid(problems));
    }
    merge_reports(reports)
}

fn read_report(path: &Path) -> Result<Report, String> {
    let name = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{name}: not a JSON file: {e}"))?;
    match value.get("schema").and_then(Value::as_str) {
        Some(REPORT_SCHEMA) => {}
        Some(other) => {
            return Err(format!(
                "{name}: not a servebench report (its `schema` is `{other}`, expected `{REPORT_SCHEMA}`)"
            ));
        }
        None => {
            return Err(format!(
                "{name}: not a servebench report (no `schema: {REPORT_SCHEMA}` field)"
            ));
        }
    }
    let mut report: Report = serde_json::from_value(value)
        .map_err(|e| format!("{name}: not a valid servebench report: {e}"))?;
    // Every record, not a sample, so merged percentiles stay exact.
    crate::report::formats::records::attach_records(&mut report, path)?;
    Ok(report)
}

/// One input: the name to use in messages, and the report.
struct Shard<'a> {
    file: &'a str,
    index: u32,
    report: &'a Report,
}

/// Each phase's results, in run order, with the shard that ran each.
type ByPhase<'a> = IndexMap<&'a str, Vec<(&'a Shard<'a>, &'a PhaseResult)>>;
/// Each shard's measured start of each phase: `(shard index, phase) → time`.
type Starts = BTreeMap<(u32, String), DateTime<Utc>>;

/// Check that `reports` (named by file) are all the shards of one run, then merge them.
pub fn merge_reports(reports: Vec<(String, Report)>) -> Result<Report, MergeError> {
    if reports.is_empty() {
        return Err(MergeError::Invalid(vec![
            "nothing to merge: give the shard reports".to_string(),
        ]));
    }
    let shards = check_shards(&reports)?;
    let first = shards[0].report;
    let by_phase = group_by_phase(&shards);
    let starts = phase_starts(&by_phase)?;
    let merge = PhaseMerge {
        shards: &shards,
        starts: &starts,
        run_origin: run_origin(&by_phase, &starts),
        first,
    };
    let mut notes = Vec::new();
    let mut phases: Vec<PhaseResult> = Vec::new();
    for (name, results) in &by_phase {
        let merged = merge.phase(name, results, phases.last(), &mut notes);
        phases.push(merged);
    }
    Ok(merge.report(phases, notes))
}

fn parse_time(file: &str, what: &str, text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("{file}: {what} `{text}` is not an RFC 3339 time: {e}"))
}

fn group_by_phase<'a>(shards: &'a [Shard<'a>]) -> ByPhase<'a> {
    let mut by_phase: ByPhase<'a> = IndexMap::new();
    for shard in shards {
        for phase in &shard.report.phases {
            by_phase
                .entry(phase.header.phase.as_str())
                .or_default()
                .push((shard, phase));
        }
    }
    by_phase
}

fn phase_starts(by_phase: &ByPhase<'_>) -> Result<Starts, MergeError> {
    let mut problems = Vec::new();
    let mut starts = Starts::new();
    for (name, results) in by_phase {
        for (shard, result) in results {
            let what = format!("phase `{name}` started_at");
            match parse_time(shard.file, &what, &result.header.started_at) {
                Ok(t) => {
                    starts.insert((shard.index, name.to_string()), t);
                }
                Err(e) => problems.push(e),
            }
        }
    }
    if problems.is_empty() {
        Ok(starts)
    } else {
        Err(MergeError::Invalid(problems))
    }
}

/// The earliest start of the first phase among shards that sent requests in it.
fn run_origin(by_phase: &ByPhase<'_>, starts: &Starts) -> DateTime<Utc> {
    by_phase
        .first()
        .and_then(|(name, results)| {
            results
                .iter()
                .filter(|(_, r)| !r.request_timings.is_empty())
                .filter_map(|(s, _)| starts.get(&(s.index, name.to_string())))
                .min()
        })
        .or_else(|| starts.values().min())
        .copied()
        .unwrap_or_else(Utc::now)
}

/// Everything the merge of one phase needs from the run as a whole.
struct PhaseMerge<'a> {
    shards: &'a [Shard<'a>],
    starts: &'a Starts,
    run_origin: DateTime<Utc>,
    first: &'a Report,
}

impl PhaseMerge<'_> {
    /// One phase recomputed from every shard's records; a note when a shard lacks it.
    fn phase(
        &self,
        name: &str,
        results: &[(&Shard<'_>, &PhaseResult)],
        previous: Option<&PhaseResult>,
        notes: &mut Vec<String>,
    ) -> PhaseResult {
        // A shard with no share of the phase sent nothing; its start says nothing.
        let start_of = |senders_only: bool| {
            results
                .iter()
                .filter(|(_, r)| !senders_only || !r.request_timings.is_empty())
                .filter_map(|(s, _)| self.starts.get(&(s.index, name.to_string())))
                .min()
                .copied()
        };
        let origin = start_of(true)
            .or_else(|| start_of(false))
            .unwrap_or(self.run_origin);
        let records = self.records(name, results, origin);
        let (lead_shard, lead) = results[0];
        let lead_shift_s = self
            .starts
            .get(&(lead_shard.index, name.to_string()))
            .map_or(0.0, |t| ms_between(origin, *t) / 1e3);
        let missing = results.len() < self.shards.len();
        if missing {
            let have: Vec<u32> = results.iter().map(|(s, _)| s.index).collect();
            notes.push(format!(
                "phase `{name}` is missing from shard(s) {}",
                self.shards
                    .iter()
                    .filter(|s| !have.contains(&s.index))
                    .map(|s| format!("{} ({})", s.index, s.file))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let facts = PhaseFacts {
            header: PhaseHeader {
                phase: name.to_string(),
                // Every shard ran the same expanded plan, so its prompts carried a salt the
                // same way (the values themselves may differ: `merged_from[].salt`).
                work_sha256: lead.header.work_sha256.clone(),
                prompt_salt: lead.header.prompt_salt,
                route: lead.header.route.clone(),
                target: lead.header.target.clone(),
                workload: lead.header.workload.clone(),
                concurrency: results
                    .iter()
                    .filter_map(|(_, r)| r.header.concurrency)
                    .reduce(|a, b| a + b),
                rate_rps: results
                    .iter()
                    .filter_map(|(_, r)| r.header.rate_rps)
                    .reduce(|a, b| a + b),
                recheck_of: lead.header.recheck_of.clone(),
                started_at: origin.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                start_offset_seconds: ms_between(self.run_origin, origin) / 1e3,
            },
            partial: missing || results.iter().any(|(_, r)| r.partial),
            warmup: WarmupResult {
                requests: results.iter().map(|(_, r)| r.warmup.requests).sum(),
                errors: results.iter().map(|(_, r)| r.warmup.errors).sum(),
                elapsed: results
                    .iter()
                    .map(|(_, r)| r.warmup.elapsed)
                    .fold(0.0, f64::max),
            },
            dataset_sha256: results.iter().find_map(|(_, r)| r.dataset_sha256.clone()),
            // Each shard scraped the server around its own window; those overlap, so the
            // per-shard scrapes stay in `merged_from`, and only the backend counters, read
            // over the span of every shard's scrapes, are merged, beside one shard's samples
            // of the server during its window.
            server_metrics: super::backends::merge(
                &results
                    .iter()
                    .filter_map(|(_, r)| r.server_metrics.as_ref())
                    .collect::<Vec<_>>(),
            ),
            prompt_tolerance: lead.prompt_tokens.tolerance,
            // A shard that saw its server close every connection says so again here.
            connection_reuse: results
                .iter()
                .any(|(_, r)| !r.transport.warnings.is_empty()),
            cost: lead_price(lead),
            ..self.run_facts(results, lead_shift_s)
        };
        let figures = Figures {
            method: self.first.plan.percentile_method,
            slo: self.first.plan.slo.as_ref(),
            previous,
        };
        phase_result(facts, Measured::All(records), figures)
    }

    /// How the shards ran a phase: every shard runs the phase's actions, so the lead's
    /// actions and marks stand for all (its marks moved onto the merged clock by
    /// `lead_shift_s`); the client's load is the busiest machine's, its ceiling the sum of
    /// theirs.
    fn run_facts(&self, results: &[(&Shard<'_>, &PhaseResult)], lead_shift_s: f64) -> PhaseFacts {
        let (_, lead) = results[0];
        let loads: Vec<ClientLoad> = results
            .iter()
            .filter_map(|(_, r)| r.client_trust.as_ref().map(|t| t.load.clone()))
            .collect();
        let ceilings: Option<Vec<&ClientCeiling>> = results
            .iter()
            .map(|(_, r)| r.client_ceiling.as_ref())
            .collect();
        PhaseFacts {
            hooks: lead.hooks.clone(),
            during_marks: lead
                .marks
                .iter()
                .filter(|m| m.when == HookWhen::During)
                .map(|m| PhaseMark {
                    offset_s: m.offset_s + lead_shift_s,
                    ..m.clone()
                })
                .collect(),
            until: lead.until.clone(),
            saturation_stop: results.iter().find_map(|(_, r)| r.saturation_stop.clone()),
            client_load: loads.into_iter().reduce(|a, b| a.busier(&b)),
            client_ceiling: ceilings.and_then(|c| {
                c.into_iter().cloned().reduce(|a, b| ClientCeiling {
                    requests_per_second: a.requests_per_second + b.requests_per_second,
                    events_per_second: a.events_per_second + b.events_per_second,
                })
            }),
            connections_warmed: results
                .iter()
                .map(|(_, r)| r.transport.connections_warmed)
                .sum(),
            ..PhaseFacts::default()
        }
    }

    /// Every shard's records of a phase on the earliest shard's clock, in start order and
    /// numbered again.
    fn records(
        &self,
        name: &str,
        results: &[(&Shard<'_>, &PhaseResult)],
        origin: DateTime<Utc>,
    ) -> Vec<RequestRecord> {
        let mut records: Vec<(u32, RequestRecord)> = Vec::new();
        for (shard, result) in results {
            let shift_ms = self
                .starts
                .get(&(shard.index, name.to_string()))
                .map_or(0.0, |t| ms_between(origin, *t));
            for record in &result.request_timings {
                let mut record = record.clone();
                record.start_offset_ms += shift_ms;
                record.scheduled_offset_ms = record.scheduled_offset_ms.map(|s| s + shift_ms);
                records.push((shard.index, record));
            }
        }
        records.sort_by(|a, b| {
            a.1.start_offset_ms
                .total_cmp(&b.1.start_offset_ms)
                .then(a.0.cmp(&b.0))
                .then(a.1.request_index.cmp(&b.1.request_index))
        });
        records
            .into_iter()
            .enumerate()
            .map(|(i, (_, mut record))| {
                record.request_index = i as u64;
                record
            })
            .collect()
    }

    /// The merged report around the merged phases; partial when any shard or phase was.
    fn report(&self, phases: Vec<PhaseResult>, mut notes: Vec<String>) -> Report {
        let first = self.first;
        let started_at = self
            .shards
            .iter()
            .filter_map(|s| parse_time(s.file, "started_at", &s.report.span.started_at).ok())
            .min()
            .unwrap_or(self.run_origin);
        let finished_at = self
            .shards
            .iter()
            .map(|s| {
                s.report
                    .span
                    .finished_at
                    .as_deref()
                    .and_then(|t| parse_time(s.file, "finished_at", t).ok())
            })
            .collect::<Option<Vec<_>>>()
            .and_then(|ts| ts.into_iter().max());
        notes.extend(self.shards.iter().filter_map(unfinished_note));
        let partial = !notes.is_empty() || phases.iter().any(|p| p.partial);
        let mut report = Report {
            schema: REPORT_SCHEMA.to_string(),
            tool: ToolInfo {
                name: env!("CARGO_PKG_NAME").to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
            },
            span: RunSpan {
                run_id: format!(
                    "{}-{}-merged",
                    first.plan.name,
                    started_at.format("%Y%m%dT%H%M%SZ")
                ),
                started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                finished_at: finished_at
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                partial,
                stop_reason: (!notes.is_empty()).then(|| notes.join("; ")),
            },
            provenance: self.provenance(),
            host: first.host.clone(),
            plan_source: first.plan_source.clone(),
            vars: first.vars.clone(),
            plan: first.plan.clone(),
            metadata: first.metadata.clone(),
            timing_methodology: first.timing_methodology.clone(),
            rechecks: Vec::new(),
            repeats: Vec::new(),
            phases,
            shard: None,
            merged_from: Some(self.shards.iter().map(shard_facts).collect()),
            client_calibration: None,
            client_busy_poll: false,
            searches: Vec::new(),
            endpoints: first.endpoints.clone(),
        };
        relate_phases(&mut report);
        report
    }

    /// The first shard's provenance, with the run's salt only when every shard carried the
    /// same one: shards run without one `--salt` or `--start-at` each drew their own, and
    /// `merged_from` keeps each.
    fn provenance(&self) -> Option<crate::report::Provenance> {
        let mut provenance = self.first.provenance.clone()?;
        let salt_of = |s: &Shard<'_>| s.report.provenance.as_ref().and_then(|p| p.salt.clone());
        if self.shards.iter().any(|s| salt_of(s) != provenance.salt) {
            provenance.salt = None;
        }
        Some(provenance)
    }
}

/// Why a shard did not finish, if it did not.
fn unfinished_note(shard: &Shard<'_>) -> Option<String> {
    if let Some(reason) = &shard.report.span.stop_reason {
        Some(format!("shard {} ({}): {reason}", shard.index, shard.file))
    } else if shard.report.span.partial {
        Some(format!(
            "shard {} ({}) did not finish",
            shard.index, shard.file
        ))
    } else {
        None
    }
}

/// Every input must be a shard of the same plan, with one report per index from 0 to N−1.
fn check_shards(reports: &[(String, Report)]) -> Result<Vec<Shard<'_>>, MergeError> {
    let mut problems = Vec::new();
    let mut shards = Vec::new();
    let mut shas: IndexMap<String, Vec<&str>> = IndexMap::new();
    for (file, report) in reports {
        let Some(info) = &report.shard else {
            problems.push(format!(
                "{file}: not a shard report (it was run without --shard I/N)"
            ));
            continue;
        };
        let sha = plan_sha256(&report.plan);
        if sha != info.plan_sha256 {
            problems.push(format!(
                "{file}: its plan was edited after the run (plan sha256 {} does not match the recorded {})",
                short(&sha),
                short(&info.plan_sha256)
            ));
        }
        shas.entry(sha).or_default().push(file);
        shards.push((file.as_str(), info.index, info.count, report));
    }
    if shas.len() > 1 {
        problems.push(format!(
            "the reports ran different plans: {}",
            shas.iter()
                .map(|(sha, files)| format!("{} ran plan sha256 {}", files.join(", "), short(sha)))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    problems.extend(numbering_problems(&shards));
    if !problems.is_empty() {
        return Err(MergeError::Invalid(problems));
    }
    let mut shards: Vec<Shard<'_>> = shards
        .into_iter()
        .map(|(file, index, _, report)| Shard {
            file,
            index,
            report,
        })
        .collect();
    shards.sort_by_key(|s| s.index);
    Ok(shards)
}

/// The shard numbering: one count N, and each index from 0 to N−1 exactly once.
fn numbering_problems(shards: &[(&str, u32, u32, &Report)]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut counts: IndexMap<u32, Vec<&str>> = IndexMap::new();
    for (file, _, count, _) in shards {
        counts.entry(*count).or_default().push(*file);
    }
    if counts.len() > 1 {
        problems.push(format!(
            "the reports disagree on the number of shards: {}",
            counts
                .iter()
                .map(|(n, files)| format!("{} of {n}", files.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let mut by_index: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for (file, index, _, _) in shards {
        by_index.entry(*index).or_default().push(*file);
    }
    for (index, files) in &by_index {
        if files.len() > 1 {
            problems.push(format!(
                "shard {index} appears {} times: {}",
                files.len(),
                files.join(", ")
            ));
        }
    }
    if counts.len() == 1
        && let Some((&count, _)) = counts.first()
    {
        let missing: Vec<String> = (0..count)
            .filter(|i| !by_index.contains_key(i))
            .map(|i| format!("{i}/{count}"))
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "missing shard(s) {}: the reports given are {}",
                missing.join(", "),
                shards
                    .iter()
                    .map(|(file, index, count, _)| format!("{index}/{count} ({file})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    problems
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

fn ms_between(earlier: DateTime<Utc>, later: DateTime<Utc>) -> f64 {
    (later - earlier).num_microseconds().unwrap_or(0) as f64 / 1e3
}

fn shard_facts(shard: &Shard<'_>) -> MergedShard {
    let report = shard.report;
    let info = report.shard.as_ref();
    MergedShard {
        index: shard.index,
        file: shard.file.to_string(),
        span: report.span.clone(),
        host: report.host.clone(),
        start_at: info.and_then(|i| i.start_at.clone()),
        salt: report.provenance.as_ref().and_then(|p| p.salt.clone()),
        phases: report
            .phases
            .iter()
            .map(|p| ShardPhaseFacts {
                phase: p.header.phase.clone(),
                started_at: p.header.started_at.clone(),
                concurrency: p.header.concurrency,
                rate_rps: p.header.rate_rps,
                requests: p.summary.requests,
                errors: p.summary.errors,
                warmup: p.warmup.clone(),
                send_lag_ms: p.summary.distribution(Figure::SendLag).copied(),
                achieved_rate_ratio: p.achieved_rate_ratio,
                late_ms: info.and_then(|i| {
                    i.phase_starts
                        .iter()
                        .find(|s| s.phase == p.header.phase)
                        .map(|s| s.late_ms)
                }),
                server_metrics: p.server_metrics.clone(),
            })
            .collect(),
    }
}

/// Every shard ran against the same priced target: the lead's price. The energy of
/// overlapping windows is not merged.
fn lead_price(lead: &PhaseResult) -> Option<HourlyPrice> {
    lead.cost.as_ref().map(|c| HourlyPrice {
        per_hour: c.per_hour,
        currency: c.currency.clone(),
    })
}
