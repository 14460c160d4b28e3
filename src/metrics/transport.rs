//! Per-phase connection figures and the client-versus-server timing gap, from the records.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::client::RequestRecord;
use crate::plan::PercentileMethod;

/// How the phase's requests used their connections, and how much of their latency the server
/// itself accounts for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct TransportSummary {
    /// Measured requests that ran on a connection opened for them.
    #[serde(default)]
    pub connections_opened: u64,
    /// Connections open and waiting as the measured window opened, left by the warmup or
    /// opened for it (`connection.warm`): the window's requests did not open them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connections_warmed: u64,
    /// Measured requests sent again on a new connection after a reused one closed before the
    /// response.
    #[serde(default)]
    pub connection_retries: u64,
    /// New connections whose connect took over 200 ms (an accept-queue overflow's stall).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stalled_connects: u64,
    /// Client timings minus the server's own, over the requests whose server reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timing_gap: Option<ServerTimingGap>,
    /// Things about the connections a reader should know before trusting the latencies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// What the client saw minus what the server says it spent: transport, queueing outside the
/// engine's own clock, and the client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ServerTimingGap {
    /// Records that carried server timings. Their distributions of `ttft − server prompt
    /// time` and `e2e − server total time` are the phase's figures
    /// `ttft_minus_server_prompt_ms` and `e2e_minus_server_total_ms`.
    pub requests: u64,
    /// Where the time of a request went, on average over the requests whose server reported
    /// both its prompt and its total time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<LatencySplit>,
}

/// A request's latency cut into parts, mean milliseconds. `connect_ms + tls_ms +
/// server_queue_ms + server_prefill_ms + server_decode_ms + frontend_network_ms = e2e_ms` per
/// request by construction; `frontend_network_min_ms` is the most negative remainder, so a
/// server clock that claims more time than the client saw shows up.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct LatencySplit {
    pub requests: u64,
    /// Open loop: scheduled send → sent; before the request starts, so not part of `e2e_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_queue_ms: Option<f64>,
    /// New connections' TCP connect (0 on a reused one).
    pub connect_ms: f64,
    /// New connections' TLS handshake.
    pub tls_ms: f64,
    /// The server's scheduler queue, when it reports one (vLLM); absent otherwise, and then
    /// inside `frontend_network_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_queue_ms: Option<f64>,
    /// The server's prompt time.
    pub server_prefill_ms: f64,
    /// The server's generation time (total − queue − prompt).
    pub server_decode_ms: f64,
    /// The rest, outside the server's own clock: its frontend (the HTTP layer, tokenization,
    /// handing the request to the engine and the tokens back; in vLLM a separate API process
    /// talking to the engine's over IPC), its queue when it reports none, proxies, the network
    /// and the client. On loopback nearly all of it is the server's frontend. Reports written
    /// before it was named for that call it `network_other_ms`.
    #[serde(alias = "network_other_ms")]
    pub frontend_network_ms: f64,
    #[serde(alias = "network_other_min_ms")]
    pub frontend_network_min_ms: f64,
    pub e2e_ms: f64,
}

/// Running sums for a [`LatencySplit`], fed one record at a time by every path that builds a
/// phase's figures.
#[derive(Debug, Clone, Default)]
pub struct SplitSums {
    requests: u64,
    queued: u64,
    client_queue: f64,
    connect: f64,
    tls: f64,
    /// Requests whose server reported its queue time, and their sum.
    server_queued: u64,
    server_queue: f64,
    prefill: f64,
    decode: f64,
    other: f64,
    other_min: f64,
    e2e: f64,
}

impl SplitSums {
    pub fn add(&mut self, r: &RequestRecord) {
        let (Some(prompt), Some(total)) = (r.server_prompt_ms, r.server_total_ms) else {
            return;
        };
        if !r.is_ok() {
            return;
        }
        let (connect, tls) = (r.connect_ms.unwrap_or(0.0), r.tls_ms.unwrap_or(0.0));
        let other = r.e2e_ms - connect - tls - total;
        if let Some(lag) = r.send_lag_ms {
            self.queued += 1;
            self.client_queue += lag.max(0.0);
        }
        self.other_min = if self.requests == 0 {
            other
        } else {
            self.other_min.min(other)
        };
        self.requests += 1;
        self.connect += connect;
        self.tls += tls;
        let server_queue = r.server_queue_ms.unwrap_or(0.0);
        if r.server_queue_ms.is_some() {
            self.server_queued += 1;
            self.server_queue += server_queue;
        }
        self.prefill += prompt;
        self.decode += total - server_queue - prompt;
        self.other += other;
        self.e2e += r.e2e_ms;
    }

    pub fn finish(&self) -> Option<LatencySplit> {
        let n = self.requests as f64;
        (self.requests > 0).then(|| LatencySplit {
            requests: self.requests,
            client_queue_ms: (self.queued > 0).then(|| self.client_queue / self.queued as f64),
            connect_ms: self.connect / n,
            tls_ms: self.tls / n,
            // Averaged over all requests (0 where not reported) so the parts still add up.
            server_queue_ms: (self.server_queued > 0).then(|| self.server_queue / n),
            server_prefill_ms: self.prefill / n,
            server_decode_ms: self.decode / n,
            frontend_network_ms: self.other / n,
            frontend_network_min_ms: self.other_min,
            e2e_ms: self.e2e / n,
        })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Below this many requests a phase says nothing about a server's connection habits.
const CLOSE_WARNING_MIN_REQUESTS: usize = 8;

/// The phase's connection figures; `reuse` says whether the client kept connections (with
/// `reuse: false` every request opening one is the point, not a warning).
pub fn transport(
    records: &[RequestRecord],
    method: PercentileMethod,
    reuse: bool,
) -> TransportSummary {
    let mut summary = super::tally_records(records, method, None, reuse).transport;
    summary.warnings.extend(super::buffering_warning(records));
    summary
}

/// How a phase's requests used connections, counted.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectionCounts {
    /// Requests that opened a connection.
    pub opened: u64,
    /// Requests that said whether they did.
    pub connected: u64,
    pub retries: u64,
    /// New connections whose TCP connect took longer than [`STALLED_CONNECT_MS`].
    pub stalled: u64,
}

/// A loopback or LAN connect takes well under a millisecond; a SYN retransmission after the
/// server's accept queue overflowed adds a whole second.
pub const STALLED_CONNECT_MS: f64 = 200.0;

impl ConnectionCounts {
    pub fn add(&mut self, r: &RequestRecord) {
        self.opened += u64::from(r.new_connection == Some(true));
        self.connected += u64::from(r.new_connection.is_some());
        self.retries += u64::from(r.connection_retries);
        self.stalled += u64::from(r.connect_ms.is_some_and(|ms| ms > STALLED_CONNECT_MS));
    }
}

/// The phase's connection figures from counts; `peak_in_flight` is asked only when the
/// warning needs it.
pub fn transport_from_counts(
    counts: ConnectionCounts,
    peak_in_flight: impl FnOnce() -> usize,
    server_timing_gap: Option<ServerTimingGap>,
    reuse: bool,
) -> TransportSummary {
    let (opened, connected) = (counts.opened, counts.connected);
    let mut warnings = Vec::new();
    if reuse && closes_after_every_response(opened as usize, connected as usize, peak_in_flight) {
        warnings.push(format!(
            "the server closes the connection after every response ({opened} of {connected} \
             requests opened a new one): each request pays connection set-up inside its TTFT"
        ));
    }
    if counts.stalled > 0 {
        warnings.push(format!(
            "{} new connection(s) took over {STALLED_CONNECT_MS} ms to connect, as after a SYN \
             retransmission when the server's accept queue overflows: their requests' latency \
             holds that stall",
            counts.stalled
        ));
    }
    TransportSummary {
        connections_opened: opened,
        connections_warmed: 0,
        connection_retries: counts.retries,
        stalled_connects: counts.stalled,
        server_timing_gap,
        warnings,
    }
}

/// Nearly every request needed a new connection, far more than the requests ever in flight
/// at once (which open their first connections legitimately).
fn closes_after_every_response(
    opened: usize,
    connected: usize,
    peak_in_flight: impl FnOnce() -> usize,
) -> bool {
    if connected < CLOSE_WARNING_MIN_REQUESTS || opened * 10 < connected * 9 {
        return false;
    }
    connected >= 2 * peak_in_flight() + 2
}

/// The most requests in flight at one instant.
pub fn peak_in_flight(records: &[RequestRecord]) -> usize {
    let mut edges: Vec<(f64, i32)> = records
        .iter()
        .flat_map(|r| [(r.start_offset_ms, 1), (r.start_offset_ms + r.e2e_ms, -1)])
        .collect();
    // Ends before starts at the same instant: back-to-back requests do not overlap.
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut now = 0i32;
    let mut peak = 0i32;
    for (_, step) in edges {
        now += step;
        peak = peak.max(now);
    }
    peak.max(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::Figure;

    fn record(start: f64, e2e: f64, new_connection: bool) -> RequestRecord {
        RequestRecord {
            start_offset_ms: start,
            e2e_ms: e2e,
            new_connection: Some(new_connection),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn a_second_long_connect_is_counted_and_flagged() {
        let mut records = vec![record(0.0, 1010.0, true), record(5.0, 12.0, true)];
        records[0].connect_ms = Some(1003.5);
        records[1].connect_ms = Some(0.4);
        let t = transport(&records, PercentileMethod::NearestRank, true);
        assert_eq!(t.stalled_connects, 1);
        assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
        assert!(t.warnings[0].contains("accept queue"), "{:?}", t.warnings);
        records[0].connect_ms = Some(150.0);
        let t = transport(&records, PercentileMethod::NearestRank, true);
        assert_eq!((t.stalled_connects, t.warnings.len()), (0, 0));
    }

    #[test]
    fn counts_connections_and_retries() {
        let mut records = vec![record(0.0, 10.0, true), record(10.0, 10.0, false)];
        records[1].connection_retries = 1;
        records[1].new_connection = Some(true);
        let t = transport(&records, PercentileMethod::NearestRank, true);
        assert_eq!((t.connections_opened, t.connection_retries), (2, 1));
        assert!(t.warnings.is_empty(), "too few requests to judge");
        assert!(t.server_timing_gap.is_none());
    }

    #[test]
    fn warns_when_every_sequential_request_opens_a_connection() {
        let records: Vec<_> = (0..10)
            .map(|i| record(i as f64 * 10.0, 10.0, true))
            .collect();
        let t = transport(&records, PercentileMethod::NearestRank, true);
        assert_eq!(t.warnings.len(), 1);
        assert!(t.warnings[0].contains("closes the connection after every response"));
        // On purpose with `reuse: false`; and a pool that reuses is fine.
        assert!(
            transport(&records, PercentileMethod::NearestRank, false)
                .warnings
                .is_empty()
        );
        let mut reused = records.clone();
        for r in reused.iter_mut().skip(1) {
            r.new_connection = Some(false);
        }
        assert!(
            transport(&reused, PercentileMethod::NearestRank, true)
                .warnings
                .is_empty()
        );
        // Ten requests all in flight at once open ten connections legitimately.
        let parallel: Vec<_> = (0..10).map(|_| record(0.0, 10.0, true)).collect();
        assert!(
            transport(&parallel, PercentileMethod::NearestRank, true)
                .warnings
                .is_empty()
        );
    }

    #[test]
    fn server_gap_is_client_minus_server() {
        let mut records = vec![record(0.0, 100.0, true), record(0.0, 50.0, false)];
        records[0].ttft_ms = Some(30.0);
        records[0].server_prompt_ms = Some(20.0);
        records[0].server_total_ms = Some(90.0);
        let tally =
            crate::metrics::tally_records(&records, PercentileMethod::NearestRank, None, true);
        let gap = tally
            .transport
            .server_timing_gap
            .expect("one record had timings");
        assert_eq!(gap.requests, 1);
        let figure = |f| tally.summary.distribution(f).copied().expect("a gap");
        assert_eq!(figure(Figure::TtftMinusServerPrompt).p50, 10.0);
        assert_eq!(figure(Figure::E2eMinusServerTotal).p99, 10.0);
    }

    /// vLLM's queue, prompt and generation times leave the frontend's share: 100 ms e2e,
    /// 5 queued + 30 prompt + 55 generation by the engine's clock, 2 ms connecting.
    #[test]
    fn the_split_leaves_the_frontend_and_network_share() {
        let mut r = record(0.0, 100.0, true);
        r.connect_ms = Some(2.0);
        r.server_queue_ms = Some(5.0);
        r.server_prompt_ms = Some(30.0);
        r.server_total_ms = Some(90.0);
        let split = transport(&[r], PercentileMethod::NearestRank, true)
            .server_timing_gap
            .and_then(|g| g.split)
            .expect("a split");
        assert_eq!(split.server_queue_ms, Some(5.0));
        assert_eq!(
            (split.server_prefill_ms, split.server_decode_ms),
            (30.0, 55.0)
        );
        assert_eq!(split.frontend_network_ms, 8.0);
        assert_eq!(split.frontend_network_min_ms, 8.0);
    }

    /// Reports written when the remainder was called `network_other_ms` still read.
    #[test]
    fn an_older_reports_network_other_reads_as_frontend_network() {
        let old = serde_json::json!({
            "requests": 1, "connect_ms": 0.0, "tls_ms": 0.0, "server_prefill_ms": 30.0,
            "server_decode_ms": 60.0, "network_other_ms": 10.0, "network_other_min_ms": 9.0,
            "e2e_ms": 100.0
        });
        let split: LatencySplit = serde_json::from_value(old).unwrap();
        assert_eq!(
            (split.frontend_network_ms, split.frontend_network_min_ms),
            (10.0, 9.0)
        );
    }
}
