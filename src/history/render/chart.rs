//! One trend chart: a series' runs in order with segment boundaries, level means, change
//! points, alert markers, excluded, client-bound and lower-bound runs marked, and provenance
//! changes as numbered vertical rules listed in one legend under the plot. Drawn on the
//! report's own SVG frame, scales and axes, the y axis in the figure's unit.

use std::fmt::Write as _;

use super::thin::{pieces, recent_from};
use super::{Shown, change_text, level_change, provenance_text, state_word, value};
use crate::history::searches::SearchAnswer;
use crate::history::series::{Alert, AlertState, Point};
use crate::history::trend::{ProvenanceChange, SegmentStart, SeriesTrend, Verdict, eligible};
use crate::report::render::svg::{PALETTE, Scale, WIDTH, axes, esc, open};

/// The height of the plot with its title and axes; a provenance legend adds lines below.
const PLOT_HEIGHT: f64 = 300.0;
/// Lines of the provenance legend at most; further changes are counted in the last.
const LEGEND_LINES: usize = 4;
const LEGEND_LINE: f64 = 15.0;
/// Characters of a legend line before it is cut (the full text is its tooltip).
const LEGEND_CHARS: usize = 110;

const REGRESSION: &str = "#d62728";
const IMPROVEMENT: &str = "#2ca02c";
const NEUTRAL: &str = "#7f7f7f";
const PROVENANCE: &str = "#9467bd";
const CLIENT_BOUND: &str = "#ff7f0e";

/// A series' scales: run `i` at `px(i)`, a stored value at `py(v)`.
struct Frame<'a> {
    trend: &'a SeriesTrend,
    x: Scale,
    y: Scale,
    shown: Shown,
}

impl<'a> Frame<'a> {
    fn new(trend: &'a SeriesTrend) -> Self {
        let xs = Self::x_values_of(trend);
        let mut raw: Vec<f64> = trend.points.iter().map(|p| p.value).collect();
        raw.extend(
            trend
                .points
                .iter()
                .filter_map(|p| p.interval)
                .flat_map(|(l, h)| [l, h]),
        );
        let shown = Shown::for_values(&trend.key.figure, raw.iter().copied());
        let ys: Vec<f64> = raw.iter().map(|v| v * shown.factor).collect();
        Frame {
            trend,
            x: Scale::fit(&xs, false, 80.0, WIDTH - 30.0, false),
            y: Scale::fit(&ys, false, PLOT_HEIGHT - 60.0, 56.0, false),
            shown,
        }
    }

    /// Run numbers from 1, at least two so a single run still has a scale.
    fn x_values_of(trend: &SeriesTrend) -> Vec<f64> {
        (1..=trend.points.len().max(2)).map(|i| i as f64).collect()
    }

    fn x_values(&self) -> Vec<f64> {
        Self::x_values_of(self.trend)
    }

    fn px(&self, i: usize) -> f64 {
        self.x.map((i + 1) as f64)
    }

    fn py(&self, v: f64) -> f64 {
        self.y.map(v * self.shown.factor)
    }

    fn top(&self) -> f64 {
        self.y.px1
    }

    fn bottom(&self) -> f64 {
        self.y.px0
    }

    fn index_of(&self, run: &str) -> Option<usize> {
        self.trend.points.iter().position(|p| p.run == run)
    }

    fn figure(&self) -> &str {
        &self.trend.key.figure
    }
}

/// How much of each run a chart draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Each of the newest runs as a dot with its value and interval.
    Runs,
    /// The line alone (with levels, changes and the runs left out): the folded charts of a
    /// phase's unwatched figures, of which a plan has dozens a phase.
    Line,
}

/// The chart of one series.
pub fn chart(
    trend: &SeriesTrend,
    alerts: &[&Alert],
    provenance: &[ProvenanceChange],
    detail: Detail,
) -> String {
    let frame = Frame::new(trend);
    let changed = provenance_by_run(&frame, provenance);
    let legend_lines = changed.len().min(LEGEND_LINES);
    let height = PLOT_HEIGHT + LEGEND_LINE * legend_lines as f64;
    let title = format!(
        "{} → {} · {}",
        trend.key.phase, trend.key.target, trend.key.figure
    );
    let mut out = String::new();
    open(&mut out, &title, height);
    let y_label = frame.shown.label(frame.figure());
    axes(&mut out, &frame.x, &frame.y, "run (oldest first)", &y_label);
    provenance_rules(&mut out, &frame, &changed);
    segment_rules(&mut out, &frame);
    levels(&mut out, &frame);
    line(&mut out, &frame, &changed);
    points(&mut out, &frame, detail);
    changes(&mut out, &frame);
    alert_marks(&mut out, &frame, alerts);
    provenance_legend(&mut out, &changed);
    out.push_str("</svg>");
    out
}

/// The height of a strip of [`sparkline`].
const STRIP_HEIGHT: f64 = 40.0;

/// A folded figure that never changed: its line alone in a strip beside its name, unit and
/// range, so the dozens of steady figures of a phase take a line each.
pub fn sparkline(trend: &SeriesTrend, provenance: &[ProvenanceChange]) -> String {
    let frame = Frame::new(trend);
    let points = &trend.points;
    let drawn: Vec<usize> = (0..points.len())
        .filter(|&i| eligible(&points[i]) && points[i].value.is_finite())
        .collect();
    let factor = frame.shown.factor;
    let ys: Vec<f64> = drawn.iter().map(|&i| points[i].value * factor).collect();
    let x = Scale::fit(&frame.x_values(), false, 330.0, WIDTH - 30.0, false);
    let y = Scale::fit(&ys, false, STRIP_HEIGHT - 6.0, 6.0, false);
    let title = format!(
        "{} → {} · {}",
        trend.key.phase, trend.key.target, trend.key.figure
    );
    let figure = frame.figure();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min) / factor;
    let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max) / factor;
    let range = match drawn.last() {
        Some(&last) => format!(
            "{} to {}, latest {}",
            value(lo, figure),
            value(hi, figure),
            value(points[last].value, figure)
        ),
        None => "no eligible run".to_string(),
    };
    let mut out = format!(
        "<svg class=\"chart strip\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} \
         {STRIP_HEIGHT}\" role=\"img\" aria-label=\"{t}\"><title>{t}</title>\
         <text x=\"4\" y=\"16\" class=\"tick\">{}</text><text x=\"4\" y=\"32\" class=\"tick\">{}</text>",
        esc(&frame.shown.label(figure)),
        esc(&range),
        t = esc(&title),
    );
    let mut breaks: Vec<usize> = provenance_by_run(&frame, provenance)
        .iter()
        .map(|(i, _)| *i)
        .collect();
    breaks.extend(segment_starts(trend));
    for piece in pieces(points.len(), &drawn, &breaks) {
        let coords: Vec<String> = piece
            .iter()
            .map(|&i| {
                let (px, py) = (x.map((i + 1) as f64), y.map(points[i].value * factor));
                format!("{px:.0},{py:.0}")
            })
            .collect();
        run_line(&mut out, &coords);
    }
    out.push_str("</svg>");
    out
}

/// Where each segment after the first starts.
fn segment_starts(trend: &SeriesTrend) -> impl Iterator<Item = usize> + '_ {
    trend
        .segments
        .iter()
        .filter(|s| s.start != SegmentStart::First)
        .map(|s| s.from)
}

/// The provenance changes at runs of this series, grouped by run (an import changes many
/// labels at once): `(index, changes)`, oldest first.
fn provenance_by_run<'p>(
    frame: &Frame,
    provenance: &'p [ProvenanceChange],
) -> Vec<(usize, Vec<&'p ProvenanceChange>)> {
    let mut groups: Vec<(usize, Vec<&ProvenanceChange>)> = Vec::new();
    for p in provenance {
        let Some(i) = frame.index_of(&p.run) else {
            continue;
        };
        match groups.iter_mut().find(|(at, _)| *at == i) {
            Some((_, list)) => list.push(p),
            None => groups.push((i, vec![p])),
        }
    }
    groups.sort_by_key(|(i, _)| *i);
    groups
}

/// A dashed rule per run where provenance changed, numbered as the legend lists it; close
/// numbers take turns on two rows so they never overprint.
fn provenance_rules(out: &mut String, frame: &Frame, changed: &[(usize, Vec<&ProvenanceChange>)]) {
    let mut last: Option<(f64, usize)> = None;
    for (n, (i, group)) in changed.iter().enumerate() {
        let x = frame.px(*i);
        rule(out, x, frame.top(), frame.bottom(), PROVENANCE, "4 3");
        let row = match last {
            Some((lx, row)) if x - lx < 16.0 => 1 - row,
            _ => 0,
        };
        last = Some((x, row));
        let tip: Vec<String> = group.iter().map(|p| provenance_text(p)).collect();
        label(
            out,
            x,
            frame.top() - 4.0 - 11.0 * row as f64,
            PROVENANCE,
            &(n + 1).to_string(),
            &tip.join("; "),
        );
    }
}

/// Under the plot, one line per provenance change: its number, run and what changed.
fn provenance_legend(out: &mut String, changed: &[(usize, Vec<&ProvenanceChange>)]) {
    for (n, (_, group)) in changed.iter().enumerate().take(LEGEND_LINES) {
        let y = PLOT_HEIGHT + LEGEND_LINE * n as f64 - 4.0;
        let all: Vec<String> = group.iter().map(|p| provenance_text(p)).collect();
        let mut text = if n + 1 == LEGEND_LINES && changed.len() > LEGEND_LINES {
            format!(
                "{}–{}: {} more provenance changes (see the table above)",
                n + 1,
                changed.len(),
                changed.len() - n
            )
        } else {
            format!("{} at {}: {}", n + 1, group[0].run, all.join("; "))
        };
        if text.chars().count() > LEGEND_CHARS {
            text = text.chars().take(LEGEND_CHARS - 1).collect::<String>() + "…";
        }
        let _ = write!(
            out,
            "<text x=\"80\" y=\"{y:.1}\" class=\"lg\" fill=\"{PROVENANCE}\">{}<title>{}</title></text>",
            esc(&text),
            esc(&all.join("\n"))
        );
    }
}

/// A dotted rule where a segment starts, labelled when there is room beside the last label.
fn segment_rules(out: &mut String, frame: &Frame) {
    let mut last_label = f64::NEG_INFINITY;
    for s in frame.trend.segments.iter() {
        let why = match s.start {
            SegmentStart::First => continue,
            SegmentStart::Work => "work changed",
            SegmentStart::Deployment => "deployment changed",
            SegmentStart::WorkAndDeployment => "work and deployment changed",
        };
        let x = frame.px(s.from) - 4.0;
        rule(out, x, frame.top(), frame.bottom(), "#000", "2 2");
        if x - last_label > 170.0 {
            label(out, x, frame.bottom() - 4.0, "#000", why, why);
            last_label = x;
        }
    }
}

fn levels(out: &mut String, frame: &Frame) {
    for level in frame.trend.segments.iter().flat_map(|s| &s.levels) {
        let (x0, x1) = (frame.px(level.from), frame.px(level.to.saturating_sub(1)));
        let yy = frame.py(level.mean);
        let _ = write!(
            out,
            "<line x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#444\" \
             stroke-width=\"2.5\" class=\"level\"><title>level {}</title></line>",
            esc(&value(level.mean, frame.figure()))
        );
    }
}

/// The eligible runs as a line, one piece per segment and provenance, older runs thinned.
fn line(out: &mut String, frame: &Frame, changed: &[(usize, Vec<&ProvenanceChange>)]) {
    let points = &frame.trend.points;
    let drawn: Vec<usize> = (0..points.len())
        .filter(|&i| eligible(&points[i]) && points[i].value.is_finite())
        .collect();
    let mut breaks: Vec<usize> = changed.iter().map(|(i, _)| *i).collect();
    breaks.extend(segment_starts(frame.trend));
    for piece in pieces(points.len(), &drawn, &breaks) {
        let coords: Vec<String> = piece
            .iter()
            // Whole pixels: a finer line is not visible at the chart's width.
            .map(|&i| format!("{:.0},{:.0}", frame.px(i), frame.py(points[i].value)))
            .collect();
        run_line(out, &coords);
    }
}

/// Each run's mark: excluded, lower-bound and client-bound runs always; plain runs (with
/// their interval) only among the newest, which are drawn point by point, and only in a
/// chart of [`Detail::Runs`]. A plain run is a
/// round dot (a zero-length stroke), which keeps a long page small.
fn points(out: &mut String, frame: &Frame, detail: Detail) {
    let recent = match detail {
        Detail::Runs => recent_from(frame.trend.points.len()),
        Detail::Line => usize::MAX,
    };
    let (mut dots, mut whiskers) = (String::new(), String::new());
    for (i, p) in frame.trend.points.iter().enumerate() {
        if !p.value.is_finite() {
            continue;
        }
        let (cx, cy) = (frame.px(i), frame.py(p.value));
        let tip = format!("{}: {}", p.run, value(p.value, frame.figure()));
        if special_mark(out, p, cx, cy, &tip) || i < recent {
            continue;
        }
        if let Some((lo, hi)) = p.interval {
            let _ = write!(
                whiskers,
                "<path d=\"M{cx:.1} {:.1}V{:.1}\"/>",
                frame.py(lo),
                frame.py(hi)
            );
        }
        let _ = write!(
            dots,
            "<path d=\"M{cx:.1} {cy:.1}h0\"><title>{}</title></path>",
            esc(&tip)
        );
    }
    let color = PALETTE[0];
    let _ = write!(
        out,
        "<g stroke=\"{color}\" stroke-opacity=\"0.5\">{whiskers}</g>\
         <g class=\"runs\" stroke=\"{color}\" stroke-width=\"5.6\" stroke-linecap=\"round\">{dots}</g>"
    );
}

/// The mark of a run left out of detection; whether it had one.
fn special_mark(out: &mut String, p: &Point, cx: f64, cy: f64, tip: &str) -> bool {
    if p.excluded.is_some() || p.partial {
        let why = p.excluded.as_deref().unwrap_or("partial run");
        let _ = write!(
            out,
            "<path d=\"M{a:.1} {b:.1}L{c:.1} {d:.1}M{a:.1} {d:.1}L{c:.1} {b:.1}\" stroke=\"{NEUTRAL}\" \
             stroke-width=\"2\" class=\"excluded\"><title>{} (left out: {})</title></path>",
            esc(tip),
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
            esc(tip),
            esc(mark)
        );
    } else if p.client_bound {
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\" fill=\"none\" stroke=\"{CLIENT_BOUND}\" \
             stroke-width=\"2\" class=\"client-bound\"><title>{} (client-bound, left out)</title></rect>",
            cx - 4.0,
            cy - 4.0,
            esc(tip)
        );
    } else {
        return false;
    }
    true
}

fn changes(out: &mut String, frame: &Frame) {
    for c in frame.trend.changes() {
        let color = match c.verdict {
            Verdict::Regression => REGRESSION,
            Verdict::Improvement => IMPROVEMENT,
            Verdict::Unranked | Verdict::ConditionChanged => NEUTRAL,
        };
        let xx = frame.px(c.at) - 0.5 * (frame.x.map(2.0) - frame.x.map(1.0));
        rule(out, xx, frame.top(), frame.bottom(), color, "");
        let _ = write!(
            out,
            "<circle cx=\"{xx:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{color}\" class=\"change\"><title>{}</title></circle>",
            frame.py(c.after),
            esc(&change_text(c, frame.figure()))
        );
    }
}

fn alert_marks(out: &mut String, frame: &Frame, alerts: &[&Alert]) {
    for a in alerts {
        let Some(i) = frame.index_of(&a.opened_by) else {
            continue;
        };
        let color = if a.state == AlertState::Open {
            REGRESSION
        } else {
            NEUTRAL
        };
        let moved = a
            .moved_in(&frame.trend.key)
            .map(|m| level_change(m.before, m.after, &m.figure))
            .unwrap_or_default();
        let (cx, cy) = (frame.px(i), frame.top() + 10.0);
        let _ = write!(
            out,
            "<path d=\"M{:.1} {:.1}L{:.1} {:.1}L{cx:.1} {:.1}Z\" fill=\"{color}\" class=\"alert\">\
             <title>alert #{} {} since {}: {}</title></path>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" font-weight=\"600\" fill=\"{color}\">alert #{}</text>",
            cx - 7.0,
            cy + 6.0,
            cx + 7.0,
            cy + 6.0,
            cy - 7.0,
            a.id,
            state_word(a),
            esc(&a.opened_by),
            esc(&moved),
            cx + 9.0,
            cy + 5.0,
            a.id
        );
    }
}

/// One piece of a series' line through its runs' `coords` (`x,y`).
fn run_line(out: &mut String, coords: &[String]) {
    let _ = write!(
        out,
        "<polyline class=\"run-line\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.2\" points=\"{}\"/>",
        PALETTE[0],
        coords.join(" ")
    );
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
