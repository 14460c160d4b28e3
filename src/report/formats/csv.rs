//! CSV writer: one row per phase, or one row per request with `--requests` (RFC 4180).

use super::records::{COLUMNS, Cell, RecordRow, Window};
use crate::figure::path::{FigurePath, Scalar};
use crate::figure::{FIGURES, Spec, Stat, Unit};
use crate::metrics::ServerTimingGap;
use crate::report::model::{PhaseResult, Report};

/// A figure's CSV column for one statistic: times in milliseconds with the unit after the
/// statistic (`ttft_p50_ms`), other figures in their own unit (`server_queue_ms_p99`,
/// `output_tokens_mean`).
fn figure_column(spec: &Spec, stat: Stat) -> (String, f64) {
    match spec.unit {
        Unit::Seconds => (format!("{}_{}_ms", spec.name, stat.name()), 1000.0),
        _ => (format!("{}_{}", spec.name, stat.name()), 1.0),
    }
}

/// One row per phase: every figure of the figure table with every statistic (empty where a
/// phase has none), latencies in milliseconds.
pub fn render_phases(report: &Report) -> String {
    let mut out = String::new();
    push_row(&mut out, &phase_header());
    for p in &report.phases {
        push_row(&mut out, &phase_row(report, p));
    }
    out
}

/// The phase rows' column names.
fn phase_header() -> Vec<String> {
    let mut header: Vec<String> = [
        "phase",
        "route",
        "target",
        "workload",
        "concurrency",
        "rate_rps",
        "recheck_of",
        "partial",
        "requests",
        "success",
        "errors",
        "elapsed_s",
        "output_tokens_per_second",
        "request_rate",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for spec in &FIGURES {
        header.extend(Stat::ALL.map(|stat| figure_column(spec, stat).0));
    }
    header.extend(
        [
            "total_input_tokens",
            "total_output_tokens",
            "planned_prompt_tokens_mean",
            "actual_prompt_tokens_mean",
            "prompt_tokens_warning",
            "client_trust",
            "recheck_verdict",
            "until_verdict",
        ]
        .iter()
        .chain(&SPLIT_COLUMNS)
        .map(|s| s.to_string())
        .chain(TOKEN_SPLIT_SCALARS.map(|s| s.name().replace('.', "_")))
        .chain(COST_ENERGY_COLUMNS.map(str::to_string))
        .chain(CHECK_COLUMNS.map(str::to_string)),
    );
    header
}

/// The reasoning and speculative-decoding scalars, last: empty where the phase has none.
const TOKEN_SPLIT_SCALARS: [Scalar; 5] = [
    Scalar::TotalReasoningTokens,
    Scalar::TotalContentTokens,
    Scalar::ContentTokensPerSecond,
    Scalar::SpecAcceptanceRate,
    Scalar::SpecAcceptanceLength,
];

/// The phase's cost and energy figures, with the currency and how the energy was sampled.
const COST_ENERGY_COLUMNS: [&str; 8] = [
    "cost_currency",
    "cost_per_million_output_tokens",
    "cost_per_million_tokens",
    "energy_mean_watts",
    "energy_joules_per_output_token",
    "energy_joules_per_request",
    "energy_method",
    "energy_interval_s",
];

fn cost_energy(p: &PhaseResult) -> Vec<String> {
    let cost = p.cost.as_ref();
    let energy = p.energy.as_ref();
    vec![
        cost.map(|c| c.currency.clone()).unwrap_or_default(),
        opt(cost.and_then(|c| c.per_million_output_tokens)),
        opt(cost.and_then(|c| c.per_million_tokens)),
        opt(energy.and_then(|e| e.mean_watts)),
        opt(energy.and_then(|e| e.joules_per_output_token)),
        opt(energy.and_then(|e| e.joules_per_request)),
        energy.map(|e| e.method.clone()).unwrap_or_default(),
        opt(energy.map(|e| e.interval_s)),
    ]
}

/// Structured output's share valid with its interval, and a `compare_to` phase's overheads.
const CHECK_COLUMNS: [&str; 9] = [
    "valid_share",
    "valid_share_ci95_lo",
    "valid_share_ci95_hi",
    "overhead.ttft_p50",
    "overhead.tpot_p50",
    "overhead.decode_tok_s_p50",
    "accuracy",
    "accuracy_ci95_lo",
    "accuracy_ci95_hi",
];

fn check_cells(p: &PhaseResult) -> Vec<String> {
    use crate::report::model::figure_path::FigurePath;
    let share = p.summary.structured_output.as_ref();
    let mut cells = vec![
        opt(share.map(|o| o.valid_share)),
        opt(share.map(|o| o.valid_share_ci95[0])),
        opt(share.map(|o| o.valid_share_ci95[1])),
    ];
    for name in &CHECK_COLUMNS[3..6] {
        let value = name.parse::<FigurePath>().ok().and_then(|f| f.value(p));
        cells.push(opt(value));
    }
    let accuracy = p.summary.accuracy.as_ref();
    cells.push(opt(accuracy.map(|a| a.accuracy)));
    cells.push(opt(accuracy.map(|a| a.accuracy_ci95[0])));
    cells.push(opt(accuracy.map(|a| a.accuracy_ci95[1])));
    cells
}

/// One phase's row; its recheck verdict from the report's rechecks.
fn phase_row(report: &Report, p: &PhaseResult) -> Vec<String> {
    let s = &p.summary;
    let mut row = vec![
        p.header.phase.clone(),
        p.header.route.clone(),
        p.header.target.clone(),
        p.header.workload.clone(),
        opt(p.header.concurrency),
        opt(p.header.rate_rps),
        p.header.recheck_of.clone().unwrap_or_default(),
        p.partial.to_string(),
        s.requests.to_string(),
        s.success.to_string(),
        s.errors.to_string(),
        s.elapsed.to_string(),
        s.output_tokens_per_second.to_string(),
        s.request_rate.to_string(),
    ];
    for spec in &FIGURES {
        let d = s.distribution(spec.figure);
        row.extend(Stat::ALL.map(|stat| {
            let scale = figure_column(spec, stat).1;
            d.map(|d| (stat.of(d) * scale).to_string())
                .unwrap_or_default()
        }));
    }
    row.push(s.total_input_tokens.to_string());
    row.push(s.total_output_tokens.to_string());
    row.push(opt(p.prompt_tokens.planned_mean));
    row.push(opt(p.prompt_tokens.actual_mean));
    row.push(p.prompt_tokens.warning.to_string());
    row.push(
        p.client_trust
            .as_ref()
            .map(|t| {
                if t.is_trusted() {
                    "trusted"
                } else {
                    "client_bound"
                }
            })
            .unwrap_or_default()
            .to_string(),
    );
    let recheck = report.rechecks.iter().find(|r| r.recheck == p.header.phase);
    row.push(recheck.map_or("", |r| r.verdict.as_str()).to_string());
    row.push(
        p.until
            .as_ref()
            .map_or("", |u| u.verdict.as_str())
            .to_string(),
    );
    row.extend(split_ms(p.transport.server_timing_gap.as_ref()));
    row.extend(TOKEN_SPLIT_SCALARS.map(|scalar| opt(FigurePath::Scalar(scalar).value(p))));
    row.extend(cost_energy(p));
    row.extend(check_cells(p));
    row
}

/// The latency split's means (empty where the server reported no timings): the server's
/// queue, prefill and decode by its own clock, and the remainder outside it.
const SPLIT_COLUMNS: [&str; 4] = [
    "server_queue_mean_ms",
    "server_prefill_mean_ms",
    "server_decode_mean_ms",
    "frontend_network_mean_ms",
];

fn split_ms(gap: Option<&ServerTimingGap>) -> Vec<String> {
    match gap.and_then(|g| g.split.as_ref()) {
        Some(s) => vec![
            opt(s.server_queue_ms),
            s.server_prefill_ms.to_string(),
            s.server_decode_ms.to_string(),
            s.frontend_network_ms.to_string(),
        ],
        None => vec![String::new(); SPLIT_COLUMNS.len()],
    }
}

/// One row per request of every phase: exactly the columns of `requests.parquet`, in its
/// order, so the two never fall out of step. `report.json` keeps measured requests only.
pub fn render_requests(report: &Report) -> String {
    let header: Vec<String> = COLUMNS.iter().map(|c| c.name.to_string()).collect();
    let mut out = String::new();
    push_row(&mut out, &header);
    for p in &report.phases {
        for record in &p.request_timings {
            let row = RecordRow {
                phase: p.header.phase.clone(),
                window: Window::Measured,
                shard: None,
                record: record.clone(),
            };
            let fields: Vec<String> = COLUMNS.iter().map(|c| cell_text((c.get)(&row))).collect();
            push_row(&mut out, &fields);
        }
    }
    out
}

fn cell_text(cell: Cell) -> String {
    match cell {
        Cell::Null => String::new(),
        Cell::F64(v) => v.to_string(),
        Cell::I64(v) => v.to_string(),
        Cell::Str(s) => s,
        Cell::Bool(b) => b.to_string(),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn push_row(out: &mut String, fields: &[String]) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&quote(f));
    }
    out.push_str("\r\n");
}

/// RFC 4180: quote fields holding a comma, quote, CR or LF; double inner quotes.
pub(crate) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quotes_per_rfc4180() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("two\nlines"), "\"two\nlines\"");
    }
}
