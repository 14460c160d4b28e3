//! The recovery and marks tables shared by the markdown and HTML writers.

use super::numfmt::sig3;
use super::table::{Align, Cell, Mark, Table};
use crate::report::model::Report;

pub const NOTE: &str = "Seconds from each phase's measured start. The outage runs from the first failing request after the fault-on mark to the first good one after the last bin outside tolerance of the baseline (error rate or TTFT p50); time to recover counts from the fault-off mark.";

fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |s| format!("{s:.2}"))
}

/// One row per phase with a recovery measurement.
pub fn recovery(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Baseline", Align::Left),
        ("Fault on", Align::Right),
        ("Fault off", Align::Right),
        ("Outage start", Align::Right),
        ("Outage end", Align::Right),
        ("Outage (s)", Align::Right),
        ("Time to recover (s)", Align::Right),
    ]);
    for phase in &report.phases {
        let Some(r) = &phase.recovery else { continue };
        let base = &r.baseline;
        let baseline = format!(
            "{}: {}% errors, TTFT p50 {} ms",
            base.source,
            sig3(base.error_rate * 100.0),
            base.ttft_p50_ms.map_or_else(|| "–".to_string(), sig3)
        );
        let recover = match (r.time_to_recover_s, r.fault_off_s) {
            (Some(s), _) => Cell::marked(format!("{s:.2}"), Mark::Good),
            (None, Some(_)) => Cell::marked("not recovered", Mark::Bad),
            (None, None) => Cell::plain("no fault-off mark"),
        };
        t.rows.push(vec![
            Cell::plain(phase.header.phase.clone()),
            Cell::plain(baseline),
            Cell::plain(secs(Some(r.fault_on_s))),
            Cell::plain(secs(r.fault_off_s)),
            Cell::plain(secs(r.outage_start_s)),
            Cell::plain(secs(r.outage_end_s)),
            Cell::marked(secs(r.outage_s), Mark::Warn),
            recover,
        ]);
    }
    t
}

/// Every phase's marks, in time order.
pub fn marks(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Mark", Align::Left),
        ("When", Align::Left),
        ("At (s)", Align::Right),
    ]);
    for phase in &report.phases {
        for mark in &phase.marks {
            t.rows.push(vec![
                Cell::plain(phase.header.phase.clone()),
                Cell::plain(mark.name.clone()),
                Cell::plain(mark.when.as_str()),
                Cell::plain(format!("{:.3}", mark.offset_s)),
            ]);
        }
    }
    t
}
