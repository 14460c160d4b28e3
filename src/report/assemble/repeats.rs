//! Repeat groups in the report: each arm's rounds pooled, how much the rounds vary, and
//! whether two arms differ by more than that.

use super::phase::{Figures, Measured, PhaseFacts, phase_result};
use crate::client::RequestRecord;
use crate::report::model::PhaseHeader;
use crate::report::model::figure_path;
use crate::report::model::{
    ArmPair, ArmResult, PairFigure, PhaseResult, RepeatResult, Report, RoundSpread,
};

/// Every repeat group whose rounds are among `report.phases`.
pub fn repeat_results(report: &Report) -> Vec<RepeatResult> {
    let figures = Figures {
        method: report.timing_methodology.percentile_method,
        slo: report.plan.slo.as_ref(),
        previous: None,
    };
    let mut groups: Vec<RepeatResult> = Vec::new();
    for phase in &report.plan.phases {
        let Some(round) = &phase.round else { continue };
        let group = match groups.iter().position(|g| g.group == round.group) {
            Some(i) => &mut groups[i],
            None => {
                groups.push(RepeatResult {
                    group: round.group.clone(),
                    rounds: round.of,
                    arms: Vec::new(),
                    pairs: Vec::new(),
                });
                groups.last_mut().expect("just pushed")
            }
        };
        if !group.arms.iter().any(|a| a.arm == round.arm) {
            group
                .arms
                .push(arm_result(report, &round.group, &round.arm, figures));
        }
    }
    groups.retain(|g| g.arms.iter().any(|a| !a.phases.is_empty()));
    for group in &mut groups {
        group.pairs = pairs(&group.arms);
    }
    groups
}

fn arm_result(report: &Report, group: &str, arm: &str, figures: Figures<'_>) -> ArmResult {
    let mut rounds: Vec<(u32, &PhaseResult)> = report
        .plan
        .phases
        .iter()
        .filter_map(|p| {
            let r = p.round.as_ref()?;
            let name = p.name.as_deref()?;
            (r.group == group && r.arm == arm).then_some((r.index, name))
        })
        .filter_map(|(index, name)| {
            let result = report.phases.iter().find(|ph| ph.header.phase == name)?;
            Some((index, result))
        })
        .collect();
    rounds.sort_by_key(|(index, _)| *index);
    let pooled = pooled_result(arm, &rounds, figures);
    let spread = figure_path::repeated_paths()
        .into_iter()
        .map(|path| {
            let values: Vec<f64> = rounds.iter().filter_map(|(_, p)| path.value(p)).collect();
            RoundSpread {
                metric: path.to_string(),
                pooled: path.value(&pooled),
                min: values.iter().copied().reduce(f64::min),
                max: values.iter().copied().reduce(f64::max),
                rounds: values,
            }
        })
        .collect();
    ArmResult {
        arm: arm.to_string(),
        phases: rounds.iter().map(|(_, p)| p.header.phase.clone()).collect(),
        pooled: pooled.summary,
        spread,
    }
}

/// The rounds' records as one phase, each round shifted to start where the last one ended.
fn pooled_result(arm: &str, rounds: &[(u32, &PhaseResult)], figures: Figures<'_>) -> PhaseResult {
    let mut records: Vec<RequestRecord> = Vec::new();
    let mut end_ms = 0.0;
    for (_, round) in rounds {
        let timings = &round.request_timings;
        let first = timings
            .iter()
            .map(|r| r.start_offset_ms)
            .fold(f64::INFINITY, f64::min);
        if !first.is_finite() {
            continue;
        }
        let shift = end_ms - first;
        let mut last = end_ms;
        for record in timings {
            let mut r = record.clone();
            r.start_offset_ms += shift;
            last = f64::max(last, r.start_offset_ms + r.e2e_ms);
            records.push(r);
        }
        end_ms = last;
    }
    let facts = PhaseFacts {
        header: PhaseHeader {
            phase: arm.to_string(),
            ..PhaseHeader::default()
        },
        ..PhaseFacts::default()
    };
    phase_result(facts, Measured::All(records), figures)
}

fn pairs(arms: &[ArmResult]) -> Vec<ArmPair> {
    let mut out = Vec::new();
    for (i, a) in arms.iter().enumerate() {
        for b in &arms[i + 1..] {
            let metrics = a
                .spread
                .iter()
                .zip(&b.spread)
                // A spread needs two rounds on each side.
                .filter(|(sa, sb)| sa.rounds.len() >= 2 && sb.rounds.len() >= 2)
                .filter_map(|(sa, sb)| {
                    let difference = sb.pooled? - sa.pooled?;
                    let spread = f64::max(sa.range()?, sb.range()?);
                    Some(PairFigure {
                        metric: sa.metric.clone(),
                        difference,
                        spread,
                        exceeds_spread: difference.abs() > spread,
                    })
                })
                .collect();
            out.push(ArmPair {
                a: a.arm.clone(),
                b: b.arm.clone(),
                metrics,
            });
        }
    }
    out
}
