//! Table content for the client-trust verdicts, shared by the markdown and HTML writers.

use super::table::{Align, Cell, Mark, Table};
use crate::metrics::trust::{
    CPU_SHARE_MAX, EVENT_LOOP_LAG_MEAN_MAX_MS, LATE_WAKE_SHARE_MAX, RUNQUEUE_WAIT_MAX,
    SEND_LAG_P99_MAX_MS,
};
use crate::report::model::Report;

/// What the verdict is judged on, stated once under the table.
pub fn note() -> String {
    format!(
        "A phase is client-bound when, during its measured window, more than {:.0}% of the \
         client's 10 ms timer ticks woke over 5 ms late (by the Wilson 95% lower bound of \
         that share), their mean lateness passed {} ms, the \
         client process used over {:.0}% of all cores (an embedded simulator counts), its \
         threads waited over {} s per second for a core, or an open loop's own send lag p99 \
         (its send lag less any wait for a max_concurrency slot, which is the plan's cap, not \
         the client) passed {} ms. A client-bound phase's latencies include client-side delay; compare calls none \
         of its changes significant.",
        LATE_WAKE_SHARE_MAX * 100.0,
        EVENT_LOOP_LAG_MEAN_MAX_MS,
        CPU_SHARE_MAX * 100.0,
        RUNQUEUE_WAIT_MAX,
        SEND_LAG_P99_MAX_MS
    )
}

/// The phases whose client was a bottleneck.
pub fn client_bound(report: &Report) -> Vec<String> {
    report
        .phases
        .iter()
        .filter(|p| p.client_trust.as_ref().is_some_and(|t| !t.is_trusted()))
        .map(|p| p.header.phase.clone())
        .collect()
}

/// One row per phase that was judged; empty for reports written before verdicts.
pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Verdict", Align::Left),
        ("Late wakes", Align::Right),
        ("Lag mean (ms)", Align::Right),
        ("Lag max (ms)", Align::Right),
        ("Client CPU", Align::Right),
        ("Core wait (s/s)", Align::Right),
        ("Client send lag p99 (ms)", Align::Right),
        ("Why", Align::Left),
    ]);
    let percent = |v: Option<f64>| v.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or_default();
    let fixed = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_default();
    for phase in &report.phases {
        let Some(trust) = &phase.client_trust else {
            continue;
        };
        let load = &trust.load;
        let (verdict, mark) = if trust.is_trusted() {
            ("trusted", Mark::Plain)
        } else {
            ("client-bound", Mark::Warn)
        };
        t.rows.push(vec![
            Cell::plain(phase.header.phase.clone()),
            Cell::marked(verdict, mark),
            Cell::plain(percent(load.late_wake_share)),
            Cell::plain(fixed(load.event_loop_lag_mean_ms)),
            Cell::plain(fixed(load.event_loop_lag_max_ms)),
            Cell::plain(percent(load.cpu_share)),
            Cell::plain(fixed(load.runqueue_wait_per_s)),
            Cell::plain(fixed(trust.send_lag_p99_ms)),
            Cell::plain(trust.reasons.join("; ")),
        ]);
    }
    t
}
