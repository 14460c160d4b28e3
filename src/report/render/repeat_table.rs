//! Repeat-group tables shared by the markdown and HTML writers.

use super::numfmt::{signed, with_unit};
use super::table::{Align, Cell, Mark, Table};
use crate::report::model::Report;
use crate::report::model::figure_path::FigurePath;

/// Above the tables: how arms are pooled and when a pair differs.
pub const NOTE: &str = "Each arm pooled over its rounds; an arm pair differs when the gap \
    between their pooled figures is larger than either arm's range across rounds.";

/// Per arm and figure: the pooled value and the range of the rounds' values.
pub fn arms(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Group", Align::Left),
        ("Arm", Align::Left),
        ("Rounds", Align::Right),
        ("Figure", Align::Left),
        ("Pooled", Align::Right),
        ("Round min", Align::Right),
        ("Round max", Align::Right),
    ]);
    for group in &report.repeats {
        for arm in &group.arms {
            for s in &arm.spread {
                let fmt =
                    |v: Option<f64>| v.map(|v| format_value(&s.metric, v)).unwrap_or_default();
                t.rows.push(vec![
                    Cell::plain(group.group.clone()),
                    Cell::plain(arm.arm.clone()),
                    Cell::plain(format!("{}/{}", arm.phases.len(), group.rounds)),
                    Cell::plain(s.metric.clone()),
                    Cell::plain(fmt(s.pooled)),
                    Cell::plain(fmt(s.min)),
                    Cell::plain(fmt(s.max)),
                ]);
            }
        }
    }
    t
}

/// Per pair of arms and figure: the pooled difference against the round-to-round spread.
pub fn pairs(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Group", Align::Left),
        ("Arms", Align::Left),
        ("Figure", Align::Left),
        ("Difference (b − a)", Align::Right),
        ("Round spread", Align::Right),
        ("Verdict", Align::Left),
    ]);
    for group in &report.repeats {
        for pair in &group.pairs {
            for m in &pair.metrics {
                let unit = unit_of(&m.metric);
                let verdict = if m.exceeds_spread {
                    Cell::marked("larger than the spread", Mark::Warn)
                } else {
                    Cell::plain("within the spread")
                };
                t.rows.push(vec![
                    Cell::plain(group.group.clone()),
                    Cell::plain(format!("{} vs {}", pair.a, pair.b)),
                    Cell::plain(m.metric.clone()),
                    Cell::plain(
                        unit.map_or_else(|| m.difference.to_string(), |u| signed(m.difference, u)),
                    ),
                    Cell::plain(format_value(&m.metric, m.spread)),
                    verdict,
                ]);
            }
        }
    }
    t
}

/// One line per pair whose arms differ beyond the spread on some figure.
pub fn headlines(report: &Report) -> Vec<String> {
    report
        .repeats
        .iter()
        .flat_map(|g| g.pairs.iter().map(move |p| (g, p)))
        .filter_map(|(g, p)| {
            let beyond: Vec<&str> = p
                .metrics
                .iter()
                .filter(|m| m.exceeds_spread)
                .map(|m| m.metric.as_str())
                .collect();
            (!beyond.is_empty()).then(|| {
                format!(
                    "{}: {} and {} differ by more than the round-to-round spread in {}",
                    g.group,
                    p.a,
                    p.b,
                    beyond.join(", ")
                )
            })
        })
        .collect()
}

fn unit_of(metric: &str) -> Option<crate::report::model::figure_path::Unit> {
    metric.parse::<FigurePath>().ok().map(FigurePath::unit)
}

fn format_value(metric: &str, value: f64) -> String {
    unit_of(metric).map_or_else(|| value.to_string(), |u| with_unit(value, u))
}
