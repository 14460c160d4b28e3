//! Inline SVG charts for the HTML report: line, scatter, percentile ranges, ratios.

use std::fmt::Write;

/// Escape text for HTML and SVG content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

/// Colours for series, in order; readable on white and distinct in greyscale-ish print.
pub const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

/// Every chart's width in pixels.
pub(crate) const WIDTH: f64 = 760.0;

/// A mapping from data to pixels along one axis.
#[derive(Debug, Clone)]
pub(crate) struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    pub(crate) px0: f64,
    pub(crate) px1: f64,
    /// Ticks to draw instead of computed ones (e.g. the concurrency levels of a sweep).
    fixed_ticks: Option<Vec<f64>>,
}

impl Scale {
    /// A scale covering `values`, padded; log when asked and every value is positive.
    pub(crate) fn fit(values: &[f64], log: bool, px0: f64, px1: f64, include_zero: bool) -> Scale {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let log = log && !finite.is_empty() && finite.iter().all(|v| *v > 0.0);
        let mut lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let mut hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() || !hi.is_finite() {
            lo = 0.0;
            hi = 1.0;
        }
        if log {
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil());
            if lo == hi {
                hi = lo * 10.0;
            }
        } else {
            if include_zero {
                lo = lo.min(0.0);
                hi = hi.max(0.0);
            }
            if lo == hi {
                hi = lo + 1.0;
                if !include_zero {
                    lo -= 1.0;
                }
            }
            let step = nice_step((hi - lo) / 5.0);
            lo = (lo / step).floor() * step;
            hi = (hi / step).ceil() * step;
        }
        Scale {
            lo,
            hi,
            log,
            px0,
            px1,
            fixed_ticks: None,
        }
    }

    /// A log scale spanning exactly the given positive values (padded), ticked at them.
    fn at_values(values: &[f64], px0: f64, px1: f64) -> Scale {
        let mut ticks: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        let (lo, hi) = match (ticks.first(), ticks.last()) {
            (Some(lo), Some(hi)) if hi > lo => (lo / 1.25, hi * 1.25),
            (Some(v), _) => (v / 2.0, v * 2.0),
            (None, _) => (1.0, 10.0),
        };
        Scale {
            lo,
            hi,
            log: true,
            px0,
            px1,
            fixed_ticks: Some(ticks),
        }
    }

    pub(crate) fn map(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(f64::MIN_POSITIVE).log10() - self.lo.log10())
                / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.px0 + t.clamp(-0.02, 1.02) * (self.px1 - self.px0)
    }

    pub(super) fn ticks(&self) -> Vec<f64> {
        if let Some(t) = &self.fixed_ticks {
            return t.clone();
        }
        if self.log {
            let mut out = Vec::new();
            let decades = (self.hi.log10() - self.lo.log10()).round() as i32;
            let mults: &[f64] = if decades <= 2 {
                &[1.0, 2.0, 5.0]
            } else {
                &[1.0]
            };
            let mut p = self.lo;
            while p <= self.hi * 1.0001 {
                for m in mults {
                    let v = p * m;
                    if v <= self.hi * 1.0001 {
                        out.push(v);
                    }
                }
                p *= 10.0;
            }
            out
        } else {
            let step = nice_step((self.hi - self.lo) / 5.0);
            let mut out = Vec::new();
            let mut v = self.lo;
            while v <= self.hi + step * 1e-6 {
                out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
                v += step;
            }
            out
        }
    }
}

fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

pub(crate) fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{:.0}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1.0 && v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        // Up to the thousandths, so ticks a narrow range apart stay apart (2.01, 2.02, …).
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').to_string()
    }
}

/// A chart's frame: the `<svg>` element, a white background and the title.
pub(crate) fn open(out: &mut String, title: &str, height: f64) {
    let _ = write!(
        out,
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" \
         role=\"img\" aria-label=\"{t}\"><title>{t}</title>\
         <rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#fff\"/>\
         <text x=\"{x}\" y=\"20\" class=\"ct\" text-anchor=\"middle\">{t}</text>",
        t = esc(title),
        x = WIDTH / 2.0
    );
}

/// A vertical grid line from `top` to `bottom` at each of `x`'s ticks, labelled below
/// `bottom` with the tick and `suffix`.
fn x_grid(out: &mut String, x: &Scale, top: f64, bottom: f64, suffix: &str) {
    for t in x.ticks() {
        let px = x.map(t);
        let _ = write!(
            out,
            "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\" class=\"grid\"/>\
             <text x=\"{px:.1}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"middle\">{}{suffix}</text>",
            bottom + 16.0,
            esc(&tick_label(t))
        );
    }
}

/// Grid lines at both scales' ticks, the two axis lines and their labels.
pub(crate) fn axes(out: &mut String, x: &Scale, y: &Scale, x_label: &str, y_label: &str) {
    for t in y.ticks() {
        let py = y.map(t);
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{py:.1}\" y2=\"{py:.1}\" class=\"grid\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"end\">{}</text>",
            x.px0,
            x.px1,
            x.px0 - 6.0,
            py + 4.0,
            esc(&tick_label(t))
        );
    }
    x_grid(out, x, y.px1, y.px0, "");
    let _ = write!(
        out,
        "<line x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{y0:.1}\" y2=\"{y0:.1}\" class=\"axis\"/>\
         <line x1=\"{x0:.1}\" x2=\"{x0:.1}\" y1=\"{y0:.1}\" y2=\"{y1:.1}\" class=\"axis\"/>\
         <text x=\"{xm:.1}\" y=\"{yl:.1}\" class=\"al\" text-anchor=\"middle\">{xl}</text>\
         <text transform=\"translate(16 {ym:.1}) rotate(-90)\" class=\"al\" text-anchor=\"middle\">{ylab}</text>",
        x0 = x.px0,
        x1 = x.px1,
        y0 = y.px0,
        y1 = y.px1,
        xm = (x.px0 + x.px1) / 2.0,
        yl = y.px0 + 36.0,
        ym = (y.px0 + y.px1) / 2.0,
        xl = esc(x_label),
        ylab = esc(y_label),
    );
}

fn legend(out: &mut String, entries: &[(String, &str)], x: f64, y_top: f64, anchor_end: bool) {
    for (i, (name, color)) in entries.iter().enumerate() {
        let y = y_top + 16.0 * i as f64;
        let (rect_x, text_x, anchor) = if anchor_end {
            (x - 10.0, x - 14.0, "end")
        } else {
            (x, x + 14.0, "start")
        };
        let _ = write!(
            out,
            "<rect x=\"{rect_x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{color}\"/>\
             <text x=\"{text_x:.1}\" y=\"{y:.1}\" class=\"lg\" text-anchor=\"{anchor}\">{}</text>",
            y - 9.0,
            esc(name)
        );
    }
}

/// One line of a line chart.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Lines with point markers. `x_log` puts x on a log axis ticked at the data's own x values
/// (concurrency levels); `y_log` asks for a log y axis (ignored if a value is ≤ 0).
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_log: bool,
    y_log: bool,
    series: &[Series],
) -> String {
    let height = 340.0;
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    let x = if x_log && xs.iter().all(|v| *v > 0.0) {
        Scale::at_values(&xs, 80.0, WIDTH - 30.0)
    } else {
        Scale::fit(&xs, false, 80.0, WIDTH - 30.0, false)
    };
    let y = Scale::fit(&ys, y_log, height - 60.0, 40.0, true);
    let mut out = String::new();
    open(&mut out, title, height);
    axes(&mut out, &x, &y, x_label, y_label);
    let mut entries = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        entries.push((s.name.clone(), color));
        let path: Vec<String> = s
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|p| format!("{:.1},{:.1}", x.map(p.0), y.map(p.1)))
            .collect();
        let _ = write!(
            out,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for p in s
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
        {
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{color}\"><title>{}: {} → {}</title></circle>",
                x.map(p.0),
                y.map(p.1),
                esc(&s.name),
                esc(&tick_label(p.0)),
                esc(&super::numfmt::sig3(p.1))
            );
        }
    }
    // Top left: sweeps mostly rise to the right, so that corner stays clear.
    legend(&mut out, &entries, 92.0, 52.0, false);
    out.push_str("</svg>");
    out
}

/// Points of one phase; y on a log axis when the values span more than 50×.
pub fn scatter(title: &str, x_label: &str, y_label: &str, points: &[(f64, f64)]) -> String {
    let height = 260.0;
    let xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    let (lo, hi) = ys
        .iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(*v), h.max(*v)));
    let y_log = lo.is_finite() && hi / lo > 50.0;
    let x = Scale::fit(&xs, false, 80.0, WIDTH - 30.0, true);
    let y = Scale::fit(&ys, y_log, height - 60.0, 36.0, !y_log);
    let mut out = String::new();
    open(&mut out, title, height);
    axes(&mut out, &x, &y, x_label, y_label);
    for p in points.iter().filter(|p| p.0.is_finite() && p.1.is_finite()) {
        let _ = write!(
            out,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" class=\"pt\"/>",
            x.map(p.0),
            y.map(p.1)
        );
    }
    out.push_str("</svg>");
    out
}

/// One phase on a frontier chart.
pub struct FrontierPoint {
    /// Its load, written beside the point.
    pub label: String,
    pub x: f64,
    pub y: f64,
    pub on_frontier: bool,
    /// A client-bound phase is drawn hollow: its figures are not trusted.
    pub trusted: bool,
}

/// Points labelled by load, the frontier's points joined by a line in x order; the legend in
/// the top corner the caller knows the points leave clear (left when `legend_left`).
pub fn frontier_chart(
    title: &str,
    x_label: &str,
    points: &[FrontierPoint],
    legend_left: bool,
) -> String {
    let height = 340.0;
    let shown: Vec<&FrontierPoint> = points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .collect();
    let xs: Vec<f64> = shown.iter().map(|p| p.x).collect();
    let ys: Vec<f64> = shown.iter().map(|p| p.y).collect();
    let x = Scale::fit(&xs, false, 80.0, WIDTH - 40.0, true);
    let y = Scale::fit(&ys, false, height - 60.0, 40.0, true);
    let mut out = String::new();
    open(&mut out, title, height);
    axes(&mut out, &x, &y, x_label, "output tok/s");
    let mut line: Vec<&&FrontierPoint> = shown.iter().filter(|p| p.on_frontier).collect();
    line.sort_by(|a, b| a.x.total_cmp(&b.x));
    let path: Vec<String> = line
        .iter()
        .map(|p| format!("{:.1},{:.1}", x.map(p.x), y.map(p.y)))
        .collect();
    let _ = write!(
        out,
        "<polyline class=\"frontier\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
        PALETTE[1],
        path.join(" ")
    );
    for p in &shown {
        let (fill, stroke) = match (p.trusted, p.on_frontier) {
            (false, _) => ("#fff", "#999"),
            (true, true) => (PALETTE[1], PALETTE[1]),
            (true, false) => (PALETTE[0], PALETTE[0]),
        };
        let (cx, cy) = (x.map(p.x), y.map(p.y));
        let _ = write!(
            out,
            "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"4.5\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.5\">\
             <title>{l}: {} → {} tok/s</title></circle>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"tick\">{l}</text>",
            esc(&super::numfmt::sig3(p.x)),
            esc(&super::numfmt::sig3(p.y)),
            cx + 7.0,
            cy - 6.0,
            l = esc(&p.label),
        );
    }
    let entries = [
        ("frontier".to_string(), PALETTE[1]),
        ("dominated".to_string(), PALETTE[0]),
        ("client-bound (hollow)".to_string(), "#999"),
    ];
    if legend_left {
        legend(&mut out, &entries, 92.0, 52.0, false);
    } else {
        legend(&mut out, &entries, WIDTH - 40.0, 52.0, true);
    }
    out.push_str("</svg>");
    out
}

/// One row of a percentile-range chart.
pub struct RangeRow {
    pub label: String,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    /// 95% intervals of p50, p95, p99 (low, high), drawn as whiskers when present.
    pub intervals: [Option<(f64, f64)>; 3],
}

/// Per row, a bar from p50 to p99 with markers at p50, p95 and p99, and whiskers for their
/// 95% intervals when known; log axis when the values span more than 20×, so a 15 s spike
/// does not flatten 150 ms phases.
pub fn range_rows(title: &str, x_label: &str, rows: &[RangeRow]) -> String {
    let row_h = 22.0;
    let top = 56.0;
    let height = top + row_h * rows.len() as f64 + 56.0;
    let all: Vec<f64> = rows
        .iter()
        .flat_map(|r| {
            let bounds = r.intervals.into_iter().flatten().flat_map(|(l, h)| [l, h]);
            [r.p50, r.p95, r.p99].into_iter().chain(bounds)
        })
        .collect();
    let (lo, hi) = all
        .iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(*v), h.max(*v)));
    let log = lo.is_finite() && hi / lo > 20.0;
    let x = Scale::fit(&all, log, 190.0, WIDTH - 30.0, false);
    let y = Scale {
        lo: 0.0,
        hi: 1.0,
        log: false,
        px0: height - 56.0,
        px1: top - 8.0,
        fixed_ticks: None,
    };
    let mut out = String::new();
    open(&mut out, title, height);
    x_grid(&mut out, &x, y.px1, y.px0, "");
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" class=\"al\" text-anchor=\"middle\">{}</text>",
        (x.px0 + x.px1) / 2.0,
        y.px0 + 36.0,
        esc(x_label)
    );
    let marks = [
        ("p50", PALETTE[0]),
        ("p95", PALETTE[4]),
        ("p99", PALETTE[1]),
    ];
    for (i, r) in rows.iter().enumerate() {
        let cy = top + row_h * i as f64 + row_h / 2.0;
        range_row(&mut out, &x, cy, r, &marks);
    }
    let entries: Vec<(String, &str)> = marks.iter().map(|(n, c)| (n.to_string(), *c)).collect();
    legend(&mut out, &entries[..], WIDTH - 30.0, 40.0, true);
    out.push_str("</svg>");
    out
}

/// A row's label, right-aligned against the plot's left edge.
fn row_label(out: &mut String, x: &Scale, cy: f64, label: &str) {
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"end\">{}</text>",
        x.px0 - 8.0,
        cy + 4.0,
        esc(label)
    );
}

/// One row of a range chart: its label, the p50–p99 bar, interval whiskers and markers.
fn range_row(out: &mut String, x: &Scale, cy: f64, r: &RangeRow, marks: &[(&str, &str); 3]) {
    row_label(out, x, cy, &r.label);
    if [r.p50, r.p99].iter().all(|v| v.is_finite()) {
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{cy:.1}\" y2=\"{cy:.1}\" stroke=\"#999\" stroke-width=\"4\"/>",
            x.map(r.p50),
            x.map(r.p99)
        );
    }
    for ((_, color), interval) in marks.iter().zip(r.intervals) {
        if let Some((lo, hi)) = interval.filter(|(l, h)| l.is_finite() && h.is_finite()) {
            whisker(out, x.map(lo), x.map(hi), cy, color);
        }
    }
    for ((name, color), v) in marks.iter().zip([r.p50, r.p95, r.p99]) {
        if v.is_finite() {
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{cy:.1}\" r=\"5\" fill=\"{color}\"><title>{} {name}: {}</title></circle>",
                x.map(v),
                esc(&r.label),
                esc(&super::numfmt::sig3(v))
            );
        }
    }
}

/// A horizontal interval with end caps, centred on a row.
fn whisker(out: &mut String, x0: f64, x1: f64, cy: f64, color: &str) {
    let (top, bottom) = (cy - 7.0, cy + 7.0);
    let _ = write!(
        out,
        "<path d=\"M{x0:.1} {top:.1}V{bottom:.1}M{x0:.1} {cy:.1}H{x1:.1}M{x1:.1} {top:.1}V{bottom:.1}\" \
         stroke=\"{color}\" stroke-width=\"1.5\" fill=\"none\"/>"
    );
}

/// One row of a ratio chart.
pub struct RatioRow {
    pub label: String,
    pub ratio: f64,
    pub bad: bool,
}

/// Bars from 1× to each row's ratio on a log axis: recheck ÷ original.
pub fn ratio_rows(title: &str, rows: &[RatioRow]) -> String {
    let row_h = 20.0;
    let top = 44.0;
    let height = top + row_h * rows.len() as f64 + 56.0;
    let mut vals: Vec<f64> = rows
        .iter()
        .map(|r| r.ratio)
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    vals.push(0.5);
    vals.push(2.0);
    let x = Scale::fit(&vals, true, 260.0, WIDTH - 30.0, false);
    let y0 = height - 56.0;
    let mut out = String::new();
    open(&mut out, title, height);
    x_grid(&mut out, &x, top - 8.0, y0, "×");
    let one = x.map(1.0);
    let _ = write!(
        out,
        "<line x1=\"{one:.1}\" x2=\"{one:.1}\" y1=\"{:.1}\" y2=\"{y0:.1}\" class=\"axis\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" class=\"al\" text-anchor=\"middle\">recheck ÷ original (log scale)</text>",
        top - 8.0,
        (x.px0 + x.px1) / 2.0,
        y0 + 36.0
    );
    for (i, r) in rows.iter().enumerate() {
        let cy = top + row_h * i as f64 + row_h / 2.0;
        row_label(&mut out, &x, cy, &r.label);
        if r.ratio.is_finite() && r.ratio > 0.0 {
            let px = x.map(r.ratio);
            let color = if r.bad { PALETTE[1] } else { PALETTE[2] };
            let _ = write!(
                out,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"12\" fill=\"{color}\"><title>{}: {}×</title></rect>",
                px.min(one),
                cy - 6.0,
                (px - one).abs().max(1.0),
                esc(&r.label),
                esc(&super::numfmt::sig3(r.ratio))
            );
        }
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn nice_ticks_cover_the_data() {
        let s = Scale::fit(&[0.0, 147.0], false, 0.0, 100.0, true);
        let t = s.ticks();
        assert_eq!(t.first(), Some(&0.0));
        assert!(*t.last().unwrap() >= 147.0);
        let l = Scale::fit(&[0.15, 14.9], true, 0.0, 100.0, false);
        assert!(l.log);
        assert_eq!(l.ticks().first(), Some(&0.1));
        let narrow = Scale::fit(&[2.01, 2.04], false, 0.0, 100.0, false).ticks();
        let labels: Vec<String> = narrow.iter().map(|&t| tick_label(t)).collect();
        assert_eq!(labels, ["2", "2.01", "2.02", "2.03", "2.04"]);
    }
}
