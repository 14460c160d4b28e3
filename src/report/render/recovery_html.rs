//! The HTML recovery timeline: per phase with a recovery measurement, its bins with the marks
//! as vertical lines and the outage shaded.

use std::fmt::Write;

use super::svg::{Scale, WIDTH, axes, esc, open, tick_label};
use crate::report::model::PhaseResult;

const HEIGHT: f64 = 260.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 56.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 52.0;

/// Error rate per bin as bars (left axis), TTFT p50 per bin as a line (its scale on the
/// right), the outage shaded and every mark a labelled vertical line; frame, scales and axes
/// are the other charts' ([`super::svg`]).
pub fn timeline(phase: &PhaseResult) -> String {
    let Some(r) = &phase.recovery else {
        return String::new();
    };
    let bin = r.settings.bin_s;
    let last_mark = phase.marks.iter().map(|m| m.offset_s).fold(0.0, f64::max);
    let span = (r.bins.len() as f64 * bin).max(last_mark).max(bin);
    let (bottom, right) = (HEIGHT - BOTTOM, WIDTH - RIGHT);
    let x = Scale::fit(&[0.0, span], false, LEFT, right, true);
    let rate = Scale::fit(&[0.0, 1.0], false, bottom, TOP, true);
    let ttfts: Vec<f64> = r.bins.iter().filter_map(|b| b.ttft_p50_ms).collect();
    // Headroom, so the line stays clear of the top edge and the mark labels.
    let ttft_top = ttfts.iter().copied().fold(0.0, f64::max).max(1e-9) * 1.25;
    let ttft = Scale::fit(&[0.0, ttft_top], false, bottom, TOP, true);
    let title = format!(
        "{}: error rate (bars) and TTFT p50 (line) per {:.0} ms bin",
        phase.header.phase,
        bin * 1e3
    );
    let mut svg = String::new();
    open(&mut svg, &title, HEIGHT);
    if let (Some(start), Some(end)) = (r.outage_start_s, r.outage_end_s) {
        let _ = write!(
            svg,
            "<rect class=\"outage\" x=\"{:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#b00020\" fill-opacity=\"0.12\"><title>outage {start:.2}–{end:.2} s</title></rect>",
            x.map(start),
            (x.map(end) - x.map(start)).max(1.0),
            bottom - TOP,
        );
    }
    axes(&mut svg, &x, &rate, "seconds into the phase", "error rate");
    let bar_w = (x.map(bin) - x.map(0.0)).max(1.0);
    for b in r.bins.iter().filter(|b| b.errors > 0) {
        let share = b.errors as f64 / b.requests.max(1) as f64;
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{bar_w:.1}\" height=\"{:.1}\" fill=\"#d62728\" fill-opacity=\"0.6\"/>",
            x.map(b.start_s),
            rate.map(share),
            rate.map(0.0) - rate.map(share),
        );
    }
    let points: Vec<String> = r
        .bins
        .iter()
        .filter_map(|b| {
            let at = x.map(b.start_s + bin / 2.0);
            b.ttft_p50_ms.map(|t| format!("{at:.1},{:.1}", ttft.map(t)))
        })
        .collect();
    let _ = write!(
        svg,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>",
        points.join(" ")
    );
    for t in ttft.ticks() {
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"tick\">{} ms</text>",
            right + 4.0,
            ttft.map(t) + 4.0,
            esc(&tick_label(t))
        );
    }
    for mark in &phase.marks {
        let at = x.map(mark.offset_s);
        let _ = write!(
            svg,
            "<line class=\"mark\" x1=\"{at:.1}\" y1=\"{TOP}\" x2=\"{at:.1}\" y2=\"{bottom:.1}\" stroke=\"#333\" stroke-dasharray=\"4 3\"/><text class=\"lg\" x=\"{:.1}\" y=\"{:.1}\">{} {:.2}s</text>",
            at + 3.0,
            TOP - 4.0,
            esc(&mark.name),
            mark.offset_s,
        );
    }
    svg.push_str("</svg>");
    svg
}
