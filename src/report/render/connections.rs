//! Table content for connections and the client-versus-server gap, shared by the markdown and
//! HTML writers; shown only for phases where there is something to say.

use super::numfmt::ms;
use super::table::{Align, Cell, Mark, Table};
use crate::figure::Figure;
use crate::report::model::Report;

/// One row per phase that opened connections beyond its first ones, retried, or carried
/// server timings; empty when none did.
pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Connections opened", Align::Right),
        ("Connection retries", Align::Right),
        ("With server timings", Align::Right),
        ("TTFT − server prompt p50 (ms)", Align::Right),
        ("TTFT − server prompt p99 (ms)", Align::Right),
        ("E2E − server total p50 (ms)", Align::Right),
        ("E2E − server total p99 (ms)", Align::Right),
    ]);
    for phase in &report.phases {
        let tr = &phase.transport;
        if tr.connections_opened == 0
            && tr.connections_warmed == 0
            && tr.connection_retries == 0
            && tr.server_timing_gap.is_none()
        {
            continue;
        }
        let gap = tr.server_timing_gap.as_ref();
        let figure = |d: Option<&crate::metrics::Distribution>, p99: bool| {
            d.map(|d| ms(if p99 { d.p99 } else { d.p50 }))
                .unwrap_or_default()
        };
        let prompt_gap = gap.and(phase.summary.distribution(Figure::TtftMinusServerPrompt));
        let total_gap = gap.and(phase.summary.distribution(Figure::E2eMinusServerTotal));
        let opened_mark = if tr.warnings.is_empty() {
            Mark::Plain
        } else {
            Mark::Warn
        };
        t.rows.push(vec![
            Cell::plain(phase.header.phase.clone()),
            Cell::marked(opened_text(tr), opened_mark),
            Cell::plain(tr.connection_retries.to_string()),
            Cell::plain(gap.map(|g| g.requests.to_string()).unwrap_or_default()),
            Cell::plain(figure(prompt_gap, false)),
            Cell::plain(figure(prompt_gap, true)),
            Cell::plain(figure(total_gap, false)),
            Cell::plain(figure(total_gap, true)),
        ]);
    }
    t
}

/// `12`, or `0 + 4 warmed` when connections waited open as the measured window opened.
fn opened_text(tr: &crate::metrics::TransportSummary) -> String {
    match tr.connections_warmed {
        0 => tr.connections_opened.to_string(),
        warmed => format!("{} + {warmed} warmed", tr.connections_opened),
    }
}

/// `target `NAME`: warning` for every target's (a skipped certificate check), then
/// `phase: warning` for every connection warning.
pub fn warnings(report: &Report) -> Vec<String> {
    let targets = report.endpoints.iter().flat_map(|(name, facts)| {
        facts
            .warnings
            .iter()
            .map(move |w| format!("target `{name}`: {w}"))
    });
    let phases = report.phases.iter().flat_map(|p| {
        p.transport
            .warnings
            .iter()
            .map(move |w| format!("{}: {w}", p.header.phase))
    });
    targets.chain(phases).collect()
}

/// Where each phase's request time went (mean ms), for phases whose server reported its own
/// prompt and total times; empty when none did.
pub fn split_table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("Requests", Align::Right),
        ("Client queue", Align::Right),
        ("Connect", Align::Right),
        ("TLS", Align::Right),
        ("Server queue", Align::Right),
        ("Server prefill", Align::Right),
        ("Server decode", Align::Right),
        ("Frontend + network", Align::Right),
        ("E2E", Align::Right),
    ]);
    for phase in &report.phases {
        let Some(split) = phase
            .transport
            .server_timing_gap
            .as_ref()
            .and_then(|g| g.split.as_ref())
        else {
            continue;
        };
        t.rows.push(vec![
            Cell::plain(phase.header.phase.clone()),
            Cell::plain(split.requests.to_string()),
            Cell::plain(split.client_queue_ms.map(ms).unwrap_or_default()),
            Cell::plain(ms(split.connect_ms)),
            Cell::plain(ms(split.tls_ms)),
            Cell::plain(split.server_queue_ms.map(ms).unwrap_or_default()),
            Cell::plain(ms(split.server_prefill_ms)),
            Cell::plain(ms(split.server_decode_ms)),
            Cell::plain(ms(split.frontend_network_ms)),
            Cell::plain(ms(split.e2e_ms)),
        ]);
    }
    t
}

/// Under the split table: what the columns are.
pub const SPLIT_NOTE: &str = "Mean milliseconds per request; connect + TLS + server queue + \
    server prefill + server decode + frontend + network = E2E. Frontend + network is the time \
    outside the server's own clock: its HTTP frontend (parsing, tokenization, handing the \
    request to the engine and the tokens back; in vLLM a separate API process), proxies and \
    the network; on loopback nearly all of it is the frontend. Server queue is shown where the \
    server reports it (vLLM's per-request metrics); elsewhere the queue is inside frontend + \
    network. Client queue (an open loop's send lag) comes before the request starts.";
