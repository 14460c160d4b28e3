//! One trend chart: a series' runs in order with segment boundaries, level means, change
//! points, alert markers, excluded, client-bound and lower-bound runs marked, and provenance
//! changes as labelled vertical rules. Drawn on the report's own SVG frame, scales and axes.

use std::fmt::Write as _;

use crate::history::searches::SearchAnswer;
use crate::history::series::{Alert, AlertState};
use crate::history::trend::{ProvenanceChange, SegmentStart, SeriesTrend, Verdict, eligible};
use crate::report::render::svg::{PALETTE, Scale, WIDTH, axes, esc, open, tick_label};

const HEIGHT: f64 = 300.0;
/// Above this many runs the points are a line only, so a long history stays a small file.
const MARKED_POINTS: usize = 300;

const REGRESSION: &str = "#d62728";
const IMPROVEMENT: &str = "#2ca02c";
const NEUTRAL: &str = "#7f7f7f";
const PROVENANCE: &str = "#9467bd";
const CLIENT_BOUND: &str = "#ff7f0e";

/// The chart of one series.
pub fn chart(trend: &SeriesTrend, alerts: &[&Alert], provenance: &[ProvenanceChange]) -> String {
    let n = trend.points.len();
    let xs: Vec<f64> = (1..=n.max(2)).map(|i| i as f64).collect();
    let mut ys: Vec<f64> = trend.points.iter().map(|p| p.value).collect();
    ys.extend(
        trend
            .points
            .iter()
            .filter_map(|p| p.interval)
            .flat_map(|(l, h)| [l, h]),
    );
    let x = Scale::fit(&xs, false, 80.0, WIDTH - 30.0, false);
    let y = Scale::fit(&ys, false, HEIGHT - 60.0, 56.0, false);
    let top = y.px1;
    let bottom = y.px0;
    let title = format!(
        "{} → {} · {}",
        trend.key.phase, trend.key.target, trend.key.figure
    );
    let mut out = String::new();
    open(&mut out, &title, HEIGHT);
    axes(&mut out, &x, &y, "run (oldest first)", &trend.key.figure);
    let px = |i: usize| x.map((i + 1) as f64);
    let index_of = |run: &str| trend.points.iter().position(|p| p.run == run);

    // Provenance changes and segment starts: vertical rules with a label at the top.
    let mut label_row = 0;
    for p in provenance {
        if let Some(i) = index_of(&p.run) {
            rule(&mut out, px(i), top, bottom, PROVENANCE, "4 3");
            let text = format!(
                "{} → {}",
                p.label.rsplit('.').next().unwrap_or(&p.label),
                p.after.as_deref().unwrap_or("–")
            );
            label(
                &mut out,
                px(i),
                top - 4.0 - 11.0 * f64::from(label_row % 2),
                PROVENANCE,
                &text,
                &super::provenance_text(p),
            );
            label_row += 1;
        }
    }
    for s in trend
        .segments
        .iter()
        .filter(|s| s.start != SegmentStart::First)
    {
        let why = match s.start {
            SegmentStart::Work => "work changed",
            SegmentStart::Deployment => "deployment changed",
            SegmentStart::WorkAndDeployment | SegmentStart::First => "work and deployment changed",
        };
        rule(&mut out, px(s.from) - 4.0, top, bottom, "#000", "2 2");
        label(&mut out, px(s.from) - 4.0, bottom - 4.0, "#000", why, why);
    }

    // Level means.
    for level in trend.segments.iter().flat_map(|s| &s.levels) {
        let (x0, x1) = (px(level.from), px(level.to.saturating_sub(1)));
        let yy = y.map(level.mean);
        let _ = write!(
            out,
            "<line x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#444\" \
             stroke-width=\"2.5\" class=\"level\"><title>level {}</title></line>",
            esc(&tick_label(level.mean))
        );
    }

    // The eligible runs as a line; markers when few enough.
    let line: Vec<String> = (0..n)
        .filter(|&i| eligible(&trend.points[i]))
        .map(|i| format!("{:.1},{:.1}", px(i), y.map(trend.points[i].value)))
        .collect();
    let _ = write!(
        out,
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.2\" points=\"{}\"/>",
        PALETTE[0],
        line.join(" ")
    );
    for (i, p) in trend.points.iter().enumerate() {
        let (cx, cy) = (px(i), y.map(p.value));
        if !p.value.is_finite() {
            continue;
        }
        let tip = format!("{}: {}", p.run, tick_label(p.value));
        if p.excluded.is_some() || p.partial {
            let why = p.excluded.as_deref().unwrap_or("partial run");
            let _ = write!(
                out,
                "<path d=\"M{a:.1} {b:.1}L{c:.1} {d:.1}M{a:.1} {d:.1}L{c:.1} {b:.1}\" stroke=\"{NEUTRAL}\" \
                 stroke-width=\"2\" class=\"excluded\"><title>{} (left out: {})</title></path>",
                esc(&tip),
                esc(why),
                a = cx - 4.0,
                b = cy - 4.0,
                c = cx + 4.0,
                d = cy + 4.0,
            );
        } else if let Some(mark) = p.search.and_then(SearchAnswer::mark) {
            let _ = write!(
                out,
                "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"none\" stroke=\"{NEUTRAL}\" \
                 stroke-width=\"2\" class=\"lower-bound\"><title>{} (≥, {}: left out)</title></circle>",
                esc(&tip),
                esc(mark)
            );
        } else if p.client_bound {
            let _ = write!(
                out,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\" fill=\"none\" stroke=\"{CLIENT_BOUND}\" \
                 stroke-width=\"2\" class=\"client-bound\"><title>{} (client-bound, left out)</title></rect>",
                cx - 4.0,
                cy - 4.0,
                esc(&tip)
            );
        } else if n <= MARKED_POINTS {
            if let Some((lo, hi)) = p.interval {
                let _ = write!(
                    out,
                    "<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{}\" stroke-opacity=\"0.5\"/>",
                    y.map(lo),
                    y.map(hi),
                    PALETTE[0]
                );
            }
            let _ = write!(
                out,
                "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"2.8\" fill=\"{}\"><title>{}</title></circle>",
                PALETTE[0],
                esc(&tip)
            );
        }
    }

    // Change points and alerts.
    for c in trend.changes() {
        let color = match c.verdict {
            Verdict::Regression => REGRESSION,
            Verdict::Improvement => IMPROVEMENT,
            Verdict::Unranked | Verdict::ConditionChanged => NEUTRAL,
        };
        let xx = px(c.at) - 0.5 * (x.map(2.0) - x.map(1.0));
        rule(&mut out, xx, top, bottom, color, "");
        let text = super::change_text(c, &trend.key.figure);
        let _ = write!(
            out,
            "<circle cx=\"{xx:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{color}\" class=\"change\"><title>{}</title></circle>",
            y.map(c.after),
            esc(&text)
        );
    }
    for a in alerts {
        let Some(i) = index_of(&a.opened_by) else {
            continue;
        };
        let color = if a.state == AlertState::Open {
            REGRESSION
        } else {
            NEUTRAL
        };
        let (cx, cy) = (px(i), top + 10.0);
        let _ = write!(
            out,
            "<path d=\"M{:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z\" fill=\"{color}\" class=\"alert\">\
             <title>alert #{} {} since {}: {}</title></path>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" font-weight=\"600\" fill=\"{color}\">alert #{}</text>",
            cx - 7.0,
            cy + 6.0,
            cx + 7.0,
            cy + 6.0,
            cx,
            cy - 7.0,
            a.id,
            super::state_word(a),
            esc(&a.opened_by),
            esc(&a
                .moved_in(&trend.key)
                .map(|m| super::level_change(m.before, m.after, &m.figure))
                .unwrap_or_default()),
            cx + 9.0,
            cy + 5.0,
            a.id
        );
    }
    out.push_str("</svg>");
    out
}

fn rule(out: &mut String, x: f64, top: f64, bottom: f64, color: &str, dash: &str) {
    let dash = if dash.is_empty() {
        String::new()
    } else {
        format!(" stroke-dasharray=\"{dash}\"")
    };
    let _ = write!(
        out,
        "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\" stroke=\"{color}\" stroke-width=\"1.5\"{dash}/>"
    );
}

fn label(out: &mut String, x: f64, y: f64, color: &str, text: &str, tip: &str) {
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{y:.1}\" font-size=\"11\" fill=\"{color}\">{}<title>{}</title></text>",
        x + 3.0,
        esc(text),
        esc(tip)
    );
}
