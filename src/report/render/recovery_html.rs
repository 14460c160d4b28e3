//! The HTML recovery section: the marks and recovery tables and, per phase with a recovery
//! measurement, a timeline of its bins with the marks as vertical lines and the outage shaded.

use std::fmt::Write;

use super::svg::{WIDTH, esc};
use crate::report::model::{PhaseResult, Report};

const HEIGHT: f64 = 240.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 56.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 40.0;

/// The section, when any phase has marks.
pub fn section(out: &mut String, report: &Report) {
    let marks = super::recovery_table::marks(report);
    if marks.is_empty() {
        return;
    }
    out.push_str("<h2>Marks and recovery</h2>\n");
    super::table_text::html_table(out, &marks);
    let recovery = super::recovery_table::recovery(report);
    if recovery.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<p class=\"note\">{}</p>",
        esc(super::recovery_table::NOTE)
    );
    super::table_text::html_table(out, &recovery);
    for phase in &report.phases {
        if phase.recovery.is_some() {
            out.push_str(&timeline(phase));
            out.push('\n');
        }
    }
}

/// Error rate per bin as bars (left axis), TTFT p50 per bin as a line (right axis), the
/// outage shaded and every mark a labelled vertical line.
pub fn timeline(phase: &PhaseResult) -> String {
    let Some(r) = &phase.recovery else {
        return String::new();
    };
    let bin = r.settings.bin_s;
    let last_mark = phase.marks.iter().map(|m| m.offset_s).fold(0.0, f64::max);
    let span = (r.bins.len() as f64 * bin).max(last_mark).max(bin);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |s: f64| LEFT + (s.clamp(0.0, span) / span) * plot_w;
    let y_rate = |rate: f64| TOP + plot_h * (1.0 - rate.clamp(0.0, 1.0));
    let ttft_max = r
        .bins
        .iter()
        .filter_map(|b| b.ttft_p50_ms)
        .fold(0.0, f64::max)
        .max(1e-9)
        // Headroom, so the line stays clear of the top edge and the mark labels.
        * 1.25;
    let y_ttft = |ms: f64| TOP + plot_h * (1.0 - ms / ttft_max);
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg class=\"chart recovery\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"recovery timeline of {name}\">\
<text class=\"ct\" x=\"{LEFT}\" y=\"14\">{name}: error rate (bars) and TTFT p50 (line) per {bin_ms:.0} ms bin</text>",
        name = esc(&phase.phase),
        bin_ms = bin * 1e3,
    );
    if let (Some(start), Some(end)) = (r.outage_start_s, r.outage_end_s) {
        let _ = write!(
            svg,
            "<rect class=\"outage\" x=\"{:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{plot_h}\" fill=\"#b00020\" fill-opacity=\"0.12\"><title>outage {start:.2}–{end:.2} s</title></rect>",
            x(start),
            (x(end) - x(start)).max(1.0),
        );
    }
    let bar_w = (plot_w * bin / span).max(1.0);
    for b in r.bins.iter().filter(|b| b.errors > 0) {
        let rate = b.errors as f64 / b.requests.max(1) as f64;
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{bar_w:.1}\" height=\"{:.1}\" fill=\"#d62728\" fill-opacity=\"0.6\"/>",
            x(b.start_s),
            y_rate(rate),
            TOP + plot_h - y_rate(rate),
        );
    }
    let points: Vec<String> = r
        .bins
        .iter()
        .filter_map(|b| {
            b.ttft_p50_ms
                .map(|t| format!("{:.1},{:.1}", x(b.start_s + bin / 2.0), y_ttft(t)))
        })
        .collect();
    let _ = write!(
        svg,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>",
        points.join(" ")
    );
    axes(&mut svg, span, ttft_max);
    for mark in &phase.marks {
        let at = x(mark.offset_s);
        let _ = write!(
            svg,
            "<line class=\"mark\" x1=\"{at:.1}\" y1=\"{TOP}\" x2=\"{at:.1}\" y2=\"{:.1}\" stroke=\"#333\" stroke-dasharray=\"4 3\"/><text class=\"lg\" x=\"{:.1}\" y=\"{:.1}\">{} {:.2}s</text>",
            TOP + plot_h,
            at + 3.0,
            TOP - 4.0,
            esc(&mark.name),
            mark.offset_s,
        );
    }
    svg.push_str("</svg>");
    svg
}

fn axes(svg: &mut String, span: f64, ttft_max: f64) {
    let bottom = HEIGHT - BOTTOM;
    let right = WIDTH - RIGHT;
    let _ = write!(
        svg,
        "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{bottom}\" x2=\"{right}\" y2=\"{bottom}\"/>\
<line class=\"axis\" x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{bottom}\"/>\
<text class=\"tick\" x=\"{LEFT}\" y=\"{:.1}\">0 s</text>\
<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{span:.1} s</text>\
<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">100%</text>\
<text class=\"tick\" x=\"{:.1}\" y=\"{bottom}\" text-anchor=\"end\">0%</text>\
<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\">{ttft_max:.0} ms</text>",
        bottom + 14.0,
        right,
        bottom + 14.0,
        LEFT - 4.0,
        TOP + 4.0,
        LEFT - 4.0,
        right + 4.0,
        TOP + 4.0,
    );
}
