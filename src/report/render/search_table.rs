//! The capacity-search tables shared by the markdown and HTML writers.

use super::numfmt::{sig3, with_unit};
use super::table::{Align, Cell, Mark, Table};
use crate::report::model::Report;
use crate::report::model::figure_path::Unit;

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), sig3)
}

/// One row per search: capacity, goodput, bracket, why it stopped.
pub fn searches(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Search", Align::Left),
        ("Load", Align::Left),
        ("Capacity", Align::Right),
        ("Goodput (req/s)", Align::Right),
        ("Bracket", Align::Right),
        ("Probes", Align::Right),
        ("Stopped", Align::Left),
    ]);
    for s in &report.searches {
        let load = serde_json::to_value(s.load)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        t.rows.push(vec![
            Cell::plain(s.phase.clone()),
            Cell::plain(load),
            Cell::marked(opt(s.capacity), Mark::Good),
            Cell::plain(opt(s.goodput)),
            Cell::plain(format!("{} – {}", opt(s.bracket[0]), opt(s.bracket[1]))),
            Cell::plain(s.probes.len().to_string()),
            Cell::plain(s.stop_reason.clone()),
        ]);
    }
    t
}

/// One row per probe: load, verdict, the objectives it missed.
pub fn probes(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Probe", Align::Left),
        ("Load", Align::Right),
        ("Verdict", Align::Left),
        ("Missed", Align::Left),
    ]);
    for p in &report.phases {
        let Some(o) = &p.probe else { continue };
        let mut missed: Vec<String> = o
            .objectives
            .iter()
            .filter(|c| !c.passed)
            .map(|c| {
                let show = |v: f64| {
                    if c.objective == "error_rate" {
                        format!("{}%", sig3(v * 100.0))
                    } else {
                        with_unit(v, Unit::Seconds)
                    }
                };
                let value = c.value.map_or_else(|| "–".to_string(), show);
                format!("{} {value} > {}", c.objective, show(c.limit))
            })
            .collect();
        if o.over_saturated {
            let named = match &o.over_saturated_why {
                Some(why) => format!("over-saturated: {why}"),
                None => "over-saturated".to_string(),
            };
            missed.insert(0, named);
        }
        t.rows.push(vec![
            Cell::plain(p.phase.clone()),
            Cell::plain(sig3(o.load)),
            if o.passed {
                Cell::marked("pass", Mark::Good)
            } else {
                Cell::marked("FAIL", Mark::Bad)
            },
            Cell::plain(missed.join("; ")),
        ]);
    }
    t
}
