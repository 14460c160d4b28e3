//! A [`Comparison`] as one document, built once from the shared table code: markdown for a
//! PR comment and an offline HTML page print the same blocks.

use super::capacity::CapacityVerdict;
use super::gate::{Compared, GateCheck};
use super::plan_diff::PLAN_CHANGES_LISTED;
use super::untested::{TooFewSamples, Untested};
use super::{Comparison, MetricChange, PhaseComparison};
use crate::report::model::figure_path::Unit;
use crate::report::render::document::{Block, Document, Level, Span, Tone};
use crate::report::render::numfmt::{figure_change, figure_value, pct_change, sig3};
use crate::report::render::table::{Align, Cell, Mark, Table};

fn value(v: Option<f64>, unit: Option<Unit>) -> String {
    match (v, unit) {
        (Some(v), Some(u)) => figure_value(v, u),
        (Some(v), None) => sig3(v),
        (None, _) => "–".to_string(),
    }
}

/// Bad (bold, red) for a significant change for the worse, good (green) for a significant
/// one for the better; a change that was not tested, or not told from noise, stays plain.
fn change_mark(m: &MetricChange) -> Mark {
    match (m.significant, m.worse()) {
        (Some(true), Some(true)) => Mark::Bad,
        (Some(true), Some(false)) => Mark::Good,
        _ => Mark::Plain,
    }
}

/// The comparison as markdown, for a PR comment.
pub fn markdown(c: &Comparison) -> String {
    document(c).markdown()
}

/// The comparison as one offline HTML page.
pub fn html(c: &Comparison) -> String {
    document(c).html()
}

/// Every block of the comparison, in print order.
pub fn document(c: &Comparison) -> Document {
    let mut blocks = vec![Block::List(
        [("Base:", &c.base), ("New:", &c.new)]
            .into_iter()
            .map(|(label, s)| {
                vec![
                    Span::strong(label),
                    Span::text(format!(
                        " {} (plan {}, run {}, started {})",
                        s.path, s.plan, s.run_id, s.started_at
                    )),
                ]
            })
            .collect(),
    )];
    blocks.push(Block::Paragraph(vec![Span::strong(headline(c))]));
    if !c.provenance.is_empty() || !c.plan.is_empty() {
        provenance_section(&mut blocks, c);
    }
    if !c.refused.is_empty() {
        not_compared_section(&mut blocks, c);
    }
    if !c.gates.is_empty() {
        gates_section(&mut blocks, &c.gates);
    }
    if !c.capacities.is_empty() {
        capacity_section(&mut blocks, c);
    }

    blocks.push(Block::Heading(Level::Section, "Changes by phase".into()));
    blocks.push(Block::Paragraph(vec![Span::text(format!(
        "A percentile's change is significant when its {:.0}% order-statistic intervals on \
         the two sides do not overlap and, where both sides hold per-request records, the \
         bootstrap interval ({} resamples) of new − base excludes zero; without intervals \
         (too few samples) it is not tested. The error rate needs records. Bold marks a \
         significant change for the worse.",
        c.confidence * 100.0,
        c.bootstrap_resamples
    ))]));
    if c.phases.is_empty() {
        blocks.push(Block::Paragraph(vec![Span::text(no_phase_compared(c))]));
    }
    for p in &c.phases {
        phase_changes(&mut blocks, p);
    }
    for (label, list) in [
        ("Only in base", &c.only_in_base),
        ("Only in new", &c.only_in_new),
    ] {
        if !list.is_empty() {
            blocks.push(Block::Paragraph(vec![Span::text(format!(
                "{label}: {}",
                list.join(", ")
            ))]));
        }
    }
    Document {
        title: "servebench compare".into(),
        blocks,
    }
}

/// The phases in both runs that asked for different work, and how to compare them anyway.
fn not_compared_section(blocks: &mut Vec<Block>, c: &Comparison) {
    blocks.push(Block::Heading(Level::Section, "Not compared".into()));
    blocks.push(Block::List(
        c.refused
            .iter()
            .map(|r| {
                vec![
                    Span::strong(&r.phase),
                    Span::text(format!(
                        ": the two runs asked for different work (work sha256 {} and {}); ",
                        &r.base_work_sha256[..12.min(r.base_work_sha256.len())],
                        &r.new_work_sha256[..12.min(r.new_work_sha256.len())],
                    )),
                    Span::code("--force"),
                    Span::text(" sets them side by side."),
                ]
            })
            .collect(),
    ));
}

/// The comparison's first line: its counts, after what makes them mean little when the two
/// runs ran different plans (`0 significant regressions` of nothing compared is no pass).
fn headline(c: &Comparison) -> String {
    if !c.plans_differ {
        return tally_line(c);
    }
    let plans = if c.base.plan == c.new.plan {
        format!("The two runs' plans differ (both named {})", c.base.plan)
    } else {
        format!(
            "The two runs ran different plans ({} and {})",
            c.base.plan, c.new.plan
        )
    };
    let forced = c.phases.iter().filter(|p| p.forced).count();
    let work = match (c.refused.len(), forced) {
        (0, 0) => String::new(),
        (0, n) => format!(": {n} compared phase(s) asked for different work (--force)"),
        (n, _) => format!(": {n} phase(s) in both asked for different work, not compared"),
    };
    if c.phases.is_empty() {
        return format!("{plans}{work}. No phase was compared.");
    }
    format!("{plans}{work}. Of what was compared: {}", tally_line(c))
}

/// `N significant regressions, M significant improvements, K figures not testable`.
fn tally_line(c: &Comparison) -> String {
    let t = &c.tally;
    let count =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{}, {}, {}.",
        count(
            t.regressions,
            "significant regression",
            "significant regressions"
        ),
        count(
            t.improvements,
            "significant improvement",
            "significant improvements"
        ),
        count(
            t.not_testable,
            "figure not testable",
            "figures not testable"
        ),
    )
}

/// Which figures too few samples left untested, and the phase that would test them.
fn too_few_samples_line(t: &TooFewSamples) -> String {
    let mut line = format!(
        "Not testable for too few samples: {}. They need up to {} samples a side",
        t.figures.join(", "),
        t.samples_needed
    );
    if let (Some(s), Some(r)) = (t.seconds_needed, t.requests_needed) {
        line.push_str(&format!(
            "; at these runs' rates, a phase of about {} ({r} requests) would give them",
            duration_text(s)
        ));
    }
    line.push('.');
    line
}

/// Seconds as a phase duration a plan could take: `40 s`, `3.2 min`.
fn duration_text(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{} s", seconds.ceil())
    } else {
        format!("{} min", sig3(seconds / 60.0))
    }
}

/// Why no phase was compared: no name in common, or every shared name asked for other work.
fn no_phase_compared(c: &Comparison) -> String {
    match c.refused.len() {
        0 => "No phase names in common.".to_string(),
        1 => "No phase compared: the one phase with a matching name asked for different work \
              (see Not compared)."
            .to_string(),
        n => format!(
            "No phase compared: the {n} phases with matching names asked for different work \
             (see Not compared)."
        ),
    }
}

/// Capacity searches in both runs: a change is called only when the intervals part.
fn capacity_section(blocks: &mut Vec<Block>, c: &Comparison) {
    blocks.push(Block::Heading(Level::Section, "Capacity".into()));
    blocks.push(Block::Paragraph(vec![Span::text(
        "A capacity is the highest load whose probe passed; its interval runs from there to \
         the lowest load whose probe failed. A change is called only when the two intervals \
         do not overlap; a search that stopped client-bound or indeterminate gives only a \
         lower bound and is not compared.",
    )]));
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
    blocks.push(Block::Table(t));
}

/// The provenance labels that differ between the runs (engine version, host, labels), then
/// the plan: its file's hash and the expanded plan's keys that differ.
fn provenance_section(blocks: &mut Vec<Block>, c: &Comparison) {
    blocks.push(Block::Heading(
        Level::Section,
        "What differs between the runs".into(),
    ));
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
    if let Some([b, n]) = &c.plan.sha256 {
        let short = |h: &String| h[..12.min(h.len())].to_string();
        t.rows.push(vec![
            Cell::plain("plan sha256"),
            Cell::plain(short(b)),
            Cell::plain(short(n)),
        ]);
    }
    if !t.rows.is_empty() {
        blocks.push(Block::Table(t));
    }
    if c.plan.changes.is_empty() {
        return;
    }
    blocks.push(Block::Paragraph(vec![Span::text(
        "Expanded-plan keys that differ:",
    )]));
    let mut keys = Table::new(&[
        ("Plan key", Align::Left),
        ("Base", Align::Left),
        ("New", Align::Left),
    ]);
    for k in &c.plan.changes {
        keys.rows.push(vec![
            Cell::plain(k.key.clone()),
            Cell::plain(shown(&k.base)),
            Cell::plain(shown(&k.new)),
        ]);
    }
    blocks.push(Block::Table(keys));
    if c.plan.more > 0 {
        blocks.push(Block::Paragraph(vec![Span::text(format!(
            "… and {} more (the JSON's `plan` lists the first {}).",
            c.plan.more, PLAN_CHANGES_LISTED
        ))]));
    }
}

/// Gate checks alone as markdown, where no comparison was possible (a side known only by
/// its stored figures).
pub fn gates_markdown(gates: &[GateCheck]) -> String {
    let mut blocks = Vec::new();
    gates_section(&mut blocks, gates);
    Document {
        title: "servebench gate".into(),
        blocks,
    }
    .markdown()
}

/// The gate checks, failures first.
fn gates_section(blocks: &mut Vec<Block>, gates: &[GateCheck]) {
    let failed = gates.iter().filter(|g| !g.passed).count();
    blocks.push(Block::Heading(Level::Section, "Gates".into()));
    blocks.push(if failed == 0 {
        Block::Paragraph(vec![Span::text(format!(
            "All {} gate checks passed.",
            gates.len()
        ))])
    } else {
        Block::Callout(
            Tone::Bad,
            vec![Span::strong(format!(
                "✗ {failed} of {} gate checks failed.",
                gates.len()
            ))],
        )
    });
    let mut t = Table::new(&[
        ("Gate", Align::Left),
        ("Phase", Align::Left),
        ("Base", Align::Right),
        ("New", Align::Right),
        ("Observed", Align::Right),
        ("Result", Align::Left),
    ]);
    // Failures first, so a long list of passing checks cannot hide one.
    let ordered = gates
        .iter()
        .filter(|g| !g.passed)
        .chain(gates.iter().filter(|g| g.passed));
    for g in ordered {
        let unit = g.unit;
        let observed = match (g.observed, g.compared, unit) {
            (None, _, _) => "–".to_string(),
            (Some(o), Compared::RelativeChange, _) => pct_change(o),
            (Some(o), Compared::Change, Some(u)) => figure_change(o, u),
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
    blocks.push(Block::Table(t));
}

/// One phase's metric changes with their intervals and significance.
fn phase_changes(blocks: &mut Vec<Block>, p: &PhaseComparison) {
    blocks.push(Block::Heading(Level::Subsection, p.phase.clone()));
    phase_callouts(blocks, p);
    blocks.push(Block::Table(metric_table(p)));
    if let Some(too_few) = &p.too_few_samples {
        blocks.push(Block::Paragraph(vec![Span::text(too_few_samples_line(
            too_few,
        ))]));
    }
    if !p.new_error_causes.is_empty() {
        blocks.push(Block::Paragraph(vec![Span::text(
            "New error causes (not in base):",
        )]));
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
        blocks.push(Block::Table(causes));
    }
}

/// What a reader must know before a phase's figures: a forced comparison, conditions that
/// moved, prompts sent unsalted.
fn phase_callouts(blocks: &mut Vec<Block>, p: &PhaseComparison) {
    if p.forced {
        blocks.push(Block::Callout(
            Tone::Warn,
            vec![
                Span::strong("Forced:"),
                Span::text(" the two runs asked for different work; compared because of "),
                Span::code("--force"),
                Span::text("."),
            ],
        ));
    }
    for condition in &p.conditions {
        let mut spans = vec![Span::strong(condition.to_string())];
        if condition.explains_latency() {
            spans.push(Span::text(
                " — latency changes here are put down to the prefix cache and not tested",
            ));
        }
        blocks.push(Block::Callout(Tone::Warn, spans));
    }
    for (side, salt) in ["base", "new"].iter().zip(p.prompt_salt) {
        if salt == Some(crate::report::model::SaltUsed::None) {
            blocks.push(Block::Callout(
                Tone::Note,
                vec![
                    Span::text(format!(
                        "The {side} run sent byte-identical prompts on purpose ("
                    )),
                    Span::code("salt: none"),
                    Span::text("): a rerun may be served from the server's prefix cache."),
                ],
            ));
        }
    }
}

/// A phase's metrics: each side's value, the change, its interval and significance.
fn metric_table(p: &PhaseComparison) -> Table {
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
                (Some(d), Some(u)) => figure_change(d, u),
                _ => "–".to_string(),
            }),
            Cell::marked(
                m.relative_change
                    .map_or_else(|| "–".to_string(), pct_change),
                mark,
            ),
            Cell::plain(match (m.ci95, m.unit) {
                (Some([lo, hi]), Some(u)) => {
                    format!("[{}, {}]", figure_change(lo, u), figure_change(hi, u))
                }
                _ => "–".to_string(),
            }),
            Cell::plain(match (m.significant, m.note) {
                (Some(true), _) => "yes",
                (Some(false), _) => "no",
                (None, Some(why)) => why.cell(),
                (None, None) => Untested::NoRecordsOrIntervals.cell(),
            }),
            Cell::plain(
                m.samples
                    .map_or_else(|| "–".to_string(), |[b, n]| format!("{b}/{n}")),
            ),
        ]);
    }
    t
}
