//! The run-until-stable table shared by the markdown and HTML writers: per phase with
//! `until`, what ended it, its verdict and each listed percentile's interval then, and its
//! warnings.

use super::numfmt::ms_from_s;
use super::table::{Align, Cell, Mark, Table};
use crate::metrics::DriftVerdict;
use crate::report::model::Report;

pub const NOTE: &str = "Each listed percentile with the half-width of its 95% interval at the check that ended the phase, relative to the estimate (milliseconds). Stable: every interval within bound; drifted: a percentile's change from the window's first half to its second lies wholly beyond the bound; inconclusive: neither.";

pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Stopped by", Align::Left),
        ("Verdict", Align::Left),
        ("Within", Align::Right),
        ("At (s)", Align::Right),
        ("Checks", Align::Right),
        ("Estimates", Align::Left),
    ]);
    for phase in &report.phases {
        let Some(u) = &phase.until else { continue };
        let estimates: Vec<String> = u
            .estimates
            .iter()
            .map(|e| {
                let value = e.estimate.map_or_else(|| "–".into(), ms_from_s);
                let text = match (e.half_width, e.relative) {
                    (Some(h), Some(r)) => format!(
                        "{} {value} ± {} ({:.1}%)",
                        e.metric,
                        ms_from_s(h),
                        r * 100.0
                    ),
                    _ => format!("{} {value} (no interval, {} samples)", e.metric, e.samples),
                };
                match (e.verdict, e.halves_change) {
                    (DriftVerdict::Drifted, Some([lo, hi])) => format!(
                        "{text}, drifted {:+.1}% to {:+.1}% between halves",
                        lo * 100.0,
                        hi * 100.0
                    ),
                    _ => text,
                }
            })
            .collect();
        let mark = if u.stopped_by == "stable" {
            Mark::Good
        } else {
            Mark::Warn
        };
        let verdict = match u.verdict {
            DriftVerdict::Stable => Cell::marked("stable", Mark::Good),
            DriftVerdict::Drifted => Cell::marked("DRIFTED", Mark::Bad),
            DriftVerdict::Inconclusive => Cell::marked("inconclusive", Mark::Warn),
        };
        t.rows.push(vec![
            Cell::plain(phase.header.phase.clone()),
            Cell::marked(u.stopped_by.clone(), mark),
            verdict,
            Cell::plain(format!("{:.1}%", u.within * 100.0)),
            Cell::plain(format!("{:.1}", u.checked_at_s)),
            Cell::plain(u.checks.to_string()),
            Cell::plain(estimates.join("; ")),
        ]);
    }
    t
}

/// `phase: warning` for each `until` phase that ended with one.
pub fn warnings(report: &Report) -> Vec<String> {
    report
        .phases
        .iter()
        .filter_map(|p| {
            let warning = p.until.as_ref()?.warning.as_ref()?;
            Some(format!("{}: {warning}", p.header.phase))
        })
        .collect()
}
