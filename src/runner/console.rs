//! The line a run prints on stdout after each phase.

use crate::figure::Figure;
use crate::report::PhaseResult;

/// One phase's headline figures: requests, errors, throughput and latency percentiles.
pub(super) fn phase_line(result: &PhaseResult) -> String {
    let s = &result.summary;
    let ms = |d: Option<&crate::metrics::Distribution>,
              pick: fn(&crate::metrics::Distribution) -> f64| {
        d.map(|d| format!("{:.1}", pick(d) * 1e3))
            .unwrap_or_else(|| "-".into())
    };
    if s.encodes() {
        return format!(
            "{}: {} requests, {} errors, {:.2} req/s, {:.1} inputs/s, {:.1} input tok/s, E2E p50 {} ms p99 {} ms{}",
            result.header.phase,
            s.requests,
            s.errors,
            s.request_rate,
            s.inputs_per_second.unwrap_or(0.0),
            s.input_tokens_per_second.unwrap_or(0.0),
            ms(s.distribution(Figure::E2e), |d| d.p50),
            ms(s.distribution(Figure::E2e), |d| d.p99),
            outage_words(result),
        );
    }
    let down = outage_words(result);
    let cancelled = if s.cancelled > 0 {
        format!(", {} cancelled", s.cancelled)
    } else {
        String::new()
    };
    format!(
        "{}: {} requests, {} errors{cancelled}, {:.1} output tok/s, {:.2} req/s, TTFT p50 {} ms p99 {} ms, TPOT p50 {} ms{down}",
        result.header.phase,
        s.requests,
        s.errors,
        s.output_tokens_per_second,
        s.request_rate,
        ms(s.distribution(Figure::Ttft), |d| d.p50),
        ms(s.distribution(Figure::Ttft), |d| d.p99),
        ms(s.distribution(Figure::Tpot), |d| d.p50),
    )
}

/// How the phase's target went down, for its line: ` — target down at 3.1 s (connection
/// refused)`, or each spell it came back from.
fn outage_words(result: &PhaseResult) -> String {
    if let Some(down) = &result.target_down {
        return format!(" — {down}");
    }
    result
        .outages
        .iter()
        .map(|o| format!(" — target {}", o.describe()))
        .collect()
}

/// The warnings a finished phase earns: a client-bound window, an `until` that ended
/// without stable estimates, a load near the client's ceiling.
pub(super) fn phase_warnings(result: &PhaseResult) -> Vec<String> {
    let mut warnings = Vec::new();
    // A phase whose target went down was bound by no client: its requests reached no server.
    let trust = result
        .client_trust
        .as_ref()
        .filter(|_| result.target_down.is_none());
    if let Some(trust) = trust.filter(|t| !t.is_trusted()) {
        warnings.push(format!(
            "warning: phase `{}`: client-bound, its latencies include client-side delay: {}",
            result.header.phase,
            trust.reasons.join("; ")
        ));
    }
    if let Some(warning) = result.until.as_ref().and_then(|u| u.warning.as_ref()) {
        warnings.push(format!(
            "warning: phase `{}`: {warning}",
            result.header.phase
        ));
    }
    warnings.extend(super::calibrate::warning(result));
    warnings
}
