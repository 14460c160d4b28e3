//! The selftest report as text.

use super::{Quantiles, SelftestReport};
use crate::wakeup;

fn fmt_q(q: &Option<Quantiles>) -> String {
    match q {
        Some(q) => format!("{:.3} / {:.3}", q.p50, q.p99),
        None => "-".into(),
    }
}

/// The results as a plain-text table.
pub fn render(report: &SelftestReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "servebench selftest{}: {} CPUs, load average {}, open-file limit {}, {} output tokens per request\n",
        if report.quick { " (quick)" } else { "" },
        report.cpus,
        report.load_average.as_deref().unwrap_or("unknown"),
        report
            .nofile_limit
            .map_or("unknown".to_string(), |n| n.to_string()),
        report.output_tokens,
    ));
    let hint = &report.cpu_latency_hint;
    out.push_str(&format!(
        "CPU wake-latency hint: {}{}; a sleeping thread wakes late by p50 {:.3} / p99 {:.3} / max {:.3} ms\n",
        match hint.status {
            wakeup::HintStatus::Held => "held (/dev/cpu_dma_latency = 0 µs)",
            wakeup::HintStatus::Off => "off",
            wakeup::HintStatus::Unavailable => "unavailable",
        },
        hint.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default(),
        report.wake_latency.p50_ms,
        report.wake_latency.p99_ms,
        report.wake_latency.max_ms,
    ));
    out.push_str(
        "client on one thread, simulator on another; client CPU = process less simulator thread; peak RSS is the process's\n\n",
    );
    out.push_str(&format!(
        "{:>6} {:>6} {:>5} {:>4} {:>8} {:>6} {:>9} {:>10} {:>9} {:>8} {:>8} {:>17} {:>17}\n",
        "conc",
        "prompt",
        "ms/tk",
        "idle",
        "requests",
        "errors",
        "req/s",
        "events/s",
        "cpu s/1M",
        "sim cpu",
        "RSS MiB",
        "TTFT err p50/p99",
        "ITL err p50/p99"
    ));
    let rows = report
        .cases
        .iter()
        .chain([&report.unsaturated, &report.unsaturated_busy_poll]);
    for c in rows {
        out.push_str(&format!(
            "{:>6} {:>6} {:>5} {:>4} {:>8} {:>6} {:>9.0} {:>10.0} {:>9.2} {:>8.2} {:>8.1} {:>17} {:>17}\n",
            c.concurrency,
            c.prompt_tokens,
            c.decode_ms_per_token,
            if c.busy_poll { "spin" } else { "park" },
            c.requests,
            c.errors,
            c.requests_per_s,
            c.events_per_s,
            c.client_cpu_s_per_million_events,
            c.sim_cpu_s,
            c.peak_rss_mib,
            fmt_q(&c.ttft_error_ms),
            fmt_q(&c.itl_span_error_ms),
        ));
    }
    let o = &report.open_loop;
    out.push_str(&format!(
        "\nopen loop at {:.0} req/s: {} requests ({} errors), achieved {:.0} req/s, send lag p50/p99 {} ms\n",
        o.target_rps,
        o.requests,
        o.errors,
        o.achieved_rps,
        fmt_q(&o.send_lag_ms)
    ));
    out
}
