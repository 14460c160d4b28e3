//! Markdown rendering of a [`Comparison`], through the shared table code.

use std::fmt::Write;

use super::capacity::CapacityVerdict;
use super::gate::Compared;
use super::{Comparison, MetricChange, PhaseComparison};
use crate::report::model::figure_path::{Better, Unit};
use crate::report::render::numfmt::{pct_change, sig3, signed, with_unit};
use crate::report::render::table::{Align, Cell, Mark, Table};
use crate::report::render::table_text::{cell, inline, markdown_table};

fn value(v: Option<f64>, unit: Option<Unit>) -> String {
    match (v, unit) {
        (Some(v), Some(u)) => with_unit(v, u),
        (Some(v), None) => sig3(v),
        (None, _) => "–".to_string(),
    }
}

fn change_mark(m: &MetricChange) -> Mark {
    let (Some(d), Some(better)) = (m.change, m.better) else {
        return Mark::Plain;
    };
    if d == 0.0 || m.significant == Some(false) {
        return Mark::Plain;
    }
    match better {
        Better::Lower if d > 0.0 => Mark::Bad,
        Better::Higher if d < 0.0 => Mark::Bad,
        Better::Lower | Better::Higher => Mark::Good,
        Better::Neither => Mark::Plain,
    }
}

/// Render a comparison for a PR comment.
pub fn render(c: &Comparison) -> String {
    let mut out = String::from("# servebench compare\n\n");
    for (label, s) in [("Base", &c.base), ("New", &c.new)] {
        let _ = writeln!(
            out,
            "- **{label}:** {} (plan {}, run {}, started {})",
            inline(&s.path),
            inline(&s.plan),
            inline(&s.run_id),
            inline(&s.started_at)
        );
    }
    out.push('\n');

    if !c.provenance.is_empty() {
        provenance_section(&mut out, c);
    }
    if !c.refused.is_empty() {
        out.push_str("## Not compared\n\n");
        for r in &c.refused {
            let _ = writeln!(
                out,
                "- **{}**: the two runs asked for different work (work sha256 {} and {}); \
                 `--force` sets them side by side.",
                inline(&r.phase),
                inline(&r.base_work_sha256[..12.min(r.base_work_sha256.len())]),
                inline(&r.new_work_sha256[..12.min(r.new_work_sha256.len())]),
            );
        }
        out.push('\n');
    }

    if !c.gates.is_empty() {
        gates_section(&mut out, c);
    }
    if !c.capacities.is_empty() {
        capacity_section(&mut out, c);
    }

    let _ = writeln!(
        out,
        "## Changes by phase\n\nA percentile's change is significant when its {:.0}% \
         order-statistic intervals on the two sides do not overlap and, where both sides hold \
         per-request records, the bootstrap interval ({} resamples) of new − base excludes \
         zero; without intervals (too few samples) it is not tested. The error rate needs \
         records. Bold marks a change for the worse that is \
         significant, or that cannot be tested.\n",
        c.confidence * 100.0,
        c.bootstrap_resamples
    );
    if c.phases.is_empty() {
        out.push_str("No phase names in common.\n\n");
    }
    for p in &c.phases {
        phase_changes(&mut out, p);
    }
    for (label, list) in [
        ("Only in base", &c.only_in_base),
        ("Only in new", &c.only_in_new),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "{label}: {}\n", cell(&list.join(", ")));
        }
    }
    out
}

/// Capacity searches in both runs: a change is called only when the intervals part.
fn capacity_section(out: &mut String, c: &Comparison) {
    out.push_str(
        "## Capacity

A capacity is the highest load whose probe passed; its interval runs \
         from there to the lowest load whose probe failed. A change is called only when the \
         two intervals do not overlap; a search that stopped client-bound or indeterminate \
         gives only a lower bound and is not compared.\n\n",
    );
    let mut t = Table::new(&[
        ("Search", Align::Left),
        ("Base", Align::Right),
        ("New", Align::Right),
        ("Change", Align::Right),
        ("Verdict", Align::Left),
    ]);
    let shown = |v: Option<f64>, i: [Option<f64>; 2]| {
        let end = |e: Option<f64>| e.map_or("open".to_string(), sig3);
        match v {
            Some(v) => format!("{} [{}, {}]", sig3(v), end(i[0]), end(i[1])),
            None => "–".to_string(),
        }
    };
    for cap in &c.capacities {
        let verdict = match cap.verdict {
            CapacityVerdict::Higher => "higher (intervals apart)".to_string(),
            CapacityVerdict::Lower => "lower (intervals apart)".to_string(),
            CapacityVerdict::Overlapping => "no change told (intervals overlap)".to_string(),
            CapacityVerdict::NotComparable => {
                format!(
                    "not compared: {}",
                    cap.why.as_deref().unwrap_or("no interval")
                )
            }
        };
        let mark = match cap.verdict {
            CapacityVerdict::Lower => Mark::Bad,
            CapacityVerdict::Higher => Mark::Good,
            _ => Mark::Plain,
        };
        t.rows.push(vec![
            Cell::plain(cap.search.clone()),
            Cell::plain(shown(cap.base, cap.base_interval)),
            Cell::plain(shown(cap.new, cap.new_interval)),
            Cell::plain(cap.relative.map_or("–".to_string(), pct_change)),
            Cell::marked(verdict, mark),
        ]);
    }
    markdown_table(out, &t);
    out.push('\n');
}

/// The provenance labels that differ between the runs (engine version, host, labels).
fn provenance_section(out: &mut String, c: &Comparison) {
    out.push_str("## What differs between the runs\n\n");
    let mut t = Table::new(&[
        ("Label", Align::Left),
        ("Base", Align::Left),
        ("New", Align::Left),
    ]);
    let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "–".to_string());
    for d in &c.provenance {
        t.rows.push(vec![
            Cell::plain(d.label.clone()),
            Cell::plain(shown(&d.base)),
            Cell::plain(shown(&d.new)),
        ]);
    }
    markdown_table(out, &t);
    out.push('\n');
}

/// The gate checks, failures first.
fn gates_section(out: &mut String, c: &Comparison) {
    let failed = c.gates.iter().filter(|g| !g.passed).count();
    out.push_str("## Gates\n\n");
    if failed == 0 {
        let _ = writeln!(out, "All {} gate checks passed.\n", c.gates.len());
    } else {
        let _ = writeln!(
            out,
            "> **✗ {failed} of {} gate checks failed.**\n",
            c.gates.len()
        );
    }
    let mut t = Table::new(&[
        ("Gate", Align::Left),
        ("Phase", Align::Left),
        ("Base", Align::Right),
        ("New", Align::Right),
        ("Observed", Align::Right),
        ("Result", Align::Left),
    ]);
    // Failures first, so a long list of passing checks cannot hide one.
    let ordered = c
        .gates
        .iter()
        .filter(|g| !g.passed)
        .chain(c.gates.iter().filter(|g| g.passed));
    for g in ordered {
        let unit = g.unit;
        let observed = match (g.observed, g.compared, unit) {
            (None, _, _) => "–".to_string(),
            (Some(o), Compared::RelativeChange, _) => pct_change(o),
            (Some(o), Compared::Change, Some(u)) => signed(o, u),
            (Some(o), Compared::Change, None) => sig3(o),
            (Some(o), Compared::Value, u) => value(Some(o), u),
        };
        t.rows.push(vec![
            Cell::plain(g.gate.clone()),
            Cell::plain(g.phase.clone().unwrap_or_else(|| "–".to_string())),
            Cell::plain(value(g.base, unit)),
            Cell::plain(value(g.new, unit)),
            Cell::plain(observed),
            match (&g.problem, g.passed) {
                (Some(p), _) => Cell::marked(format!("FAIL: {p}"), Mark::Bad),
                (None, true) => Cell::marked("pass", Mark::Good),
                (None, false) => Cell::marked("FAIL", Mark::Bad),
            },
        ]);
    }
    markdown_table(out, &t);
    out.push('\n');
}

/// One phase's metric changes with their intervals and significance.
fn phase_changes(out: &mut String, p: &PhaseComparison) {
    let _ = writeln!(out, "### {}\n", inline(&p.phase));
    if p.forced {
        out.push_str(
            "> **Forced:** the two runs asked for different work; compared because of \
             `--force`.\n\n",
        );
    }
    for condition in &p.conditions {
        let because = if condition.explains_latency() {
            " — latency changes here are put down to the prefix cache and not tested"
        } else {
            ""
        };
        let _ = writeln!(out, "> **{}**{because}\n", cell(&condition.to_string()));
    }
    for (side, salt) in ["base", "new"].iter().zip(p.prompt_salt) {
        if salt == Some(crate::report::model::SaltUsed::None) {
            let _ = writeln!(
                out,
                "> The {side} run sent byte-identical prompts on purpose (`salt: none`): a \
                 rerun may be served from the server's prefix cache.\n"
            );
        }
    }
    let mut t = Table::new(&[
        ("Metric", Align::Left),
        ("Base", Align::Right),
        ("New", Align::Right),
        ("Change", Align::Right),
        ("Relative", Align::Right),
        ("95% CI of change", Align::Right),
        ("Significant", Align::Left),
        ("Samples (base/new)", Align::Right),
    ]);
    for m in &p.metrics {
        let mark = change_mark(m);
        t.rows.push(vec![
            Cell::plain(m.metric.clone()),
            Cell::plain(value(m.base, m.unit)),
            Cell::plain(value(m.new, m.unit)),
            Cell::plain(match (m.change, m.unit) {
                (Some(d), Some(u)) => signed(d, u),
                _ => "–".to_string(),
            }),
            Cell::marked(
                m.relative_change
                    .map_or_else(|| "–".to_string(), pct_change),
                mark,
            ),
            Cell::plain(match (m.ci95, m.unit) {
                (Some([lo, hi]), Some(u)) => format!("[{}, {}]", signed(lo, u), signed(hi, u)),
                _ => "–".to_string(),
            }),
            Cell::plain(match (m.significant, m.note) {
                (Some(true), _) => "yes".to_string(),
                (Some(false), _) => "no".to_string(),
                (None, Some(note)) => format!("n/a ({note})"),
                (None, None) => "n/a (no records or intervals)".to_string(),
            }),
            Cell::plain(
                m.samples
                    .map_or_else(|| "–".to_string(), |[b, n]| format!("{b}/{n}")),
            ),
        ]);
    }
    markdown_table(out, &t);
    out.push('\n');
    if !p.new_error_causes.is_empty() {
        out.push_str("New error causes (not in base):\n\n");
        let mut causes = Table::new(&[
            ("Count", Align::Right),
            ("Cause", Align::Left),
            ("Example", Align::Left),
        ]);
        for c in &p.new_error_causes {
            causes.rows.push(vec![
                Cell::marked(c.count.to_string(), Mark::Bad),
                Cell::plain(c.cause.clone()),
                Cell::plain(c.example.clone()),
            ]);
        }
        markdown_table(out, &causes);
        out.push('\n');
    }
}
