//! The trend report as one offline HTML file: the summary tables, then per phase a chart
//! per figure (inline SVG, no scripts, nothing fetched).

use std::fmt::Write as _;

use super::chart::chart;
use super::{
    RECENT_RUNS, TrendReport, alert_line, change_text, closed_by, moved_lines, point_text,
    provenance_text, runs_text, state_word,
};
use crate::history::trend::eligible;
use crate::report::formats::html::CSS;
use crate::report::render::svg::esc;

/// What the charts' marks mean.
const LEGEND: &str = "Blue: each run's value (a whisker: its within-run 95% interval, or a \
    capacity's interval from its probes); dark \
    bars: level means; a vertical line with a dot: a change point (red regression, green \
    improvement, grey unranked or explained by a condition); a red triangle: the run that \
    opened an alert; grey ×: an excluded or partial run; orange square: a client-bound run \
    (both left out of detection); hollow grey circle: a capacity that is only a lower bound \
    or indeterminate (left out); purple dashed rule: a provenance change; black dotted \
    rule: a new segment (work or deployment changed).";

/// The HTML document of `report`.
pub fn render(report: &TrendReport) -> String {
    let title = match report.plan {
        Some(p) => format!("Trend of {p}"),
        None => "Trend of every plan".to_string(),
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{CSS}</style></head><body>\n<h1>{t}</h1>\n\
         <p class=\"note\">{} series. {}</p>\n",
        report.trends.len(),
        esc(&report.method()),
        t = esc(&title)
    );
    alerts(&mut out, report);
    provenance(&mut out, report);
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(LEGEND));
    for (phase, target, trends) in report.phases() {
        let _ = writeln!(out, "<h2>{} → {}</h2>", esc(phase), esc(target));
        for t in trends {
            let alerts: Vec<_> = report
                .alerts
                .iter()
                .filter(|a| a.moved_in(&t.key).is_some())
                .collect();
            out.push_str(&chart(t, &alerts, report.provenance));
            let latest = t.points.iter().rev().find(|p| eligible(p));
            let _ = writeln!(
                out,
                "<p class=\"note\">Latest {}; {}</p>",
                latest.map_or("–".into(), |p| esc(&point_text(p, &t.key.figure))),
                t.changes()
                    .last()
                    .map_or("no change point.".into(), |c| esc(&format!(
                        "last change: {}.",
                        change_text(c, &t.key.figure)
                    )))
            );
        }
    }
    out.push_str("</body></html>\n");
    out
}

fn alerts(out: &mut String, report: &TrendReport) {
    let live = report.live_alerts();
    if live.is_empty() {
        out.push_str("<p class=\"good\"><b>No open alerts.</b></p>\n");
    } else {
        out.push_str(
            "<h2 id=\"alerts\">Alerts</h2>\n<table><tr><th>#</th><th>State</th><th>Change</th>\
             <th>Series moved</th><th>Opened by</th><th>Note</th></tr>\n",
        );
        for a in live {
            let class = if a.state == crate::history::AlertState::Open {
                "bad"
            } else {
                "warn"
            };
            let moved: Vec<String> = moved_lines(a).iter().map(|l| esc(l)).collect();
            let _ = writeln!(
                out,
                "<tr class=\"alert\"><td>{}</td><td class=\"{class}\">{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td></tr>",
                a.id,
                state_word(a),
                esc(&alert_line(a)),
                moved.join("<br>"),
                esc(&a.opened_by),
                esc(a.note.as_deref().unwrap_or(""))
            );
        }
        out.push_str("</table>\n");
    }
    let closed = report.recently_closed();
    if closed.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h2 id=\"closed\">Closed in the last {RECENT_RUNS} runs</h2>\n<table><tr><th>#</th>\
         <th>State</th><th>Change</th><th>Open for</th><th>Closed by</th><th>Note</th></tr>"
    );
    for (a, open_for) in closed {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            a.id,
            state_word(a),
            esc(&alert_line(a)),
            open_for.map_or("–".into(), runs_text),
            esc(&closed_by(a)),
            esc(a.note.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</table>\n");
}

fn provenance(out: &mut String, report: &TrendReport) {
    if report.provenance.is_empty() {
        return;
    }
    out.push_str(
        "<h2 id=\"provenance\">Provenance changes</h2>\n<table><tr><th>First run</th><th>Change</th></tr>\n",
    );
    for p in report.provenance {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            esc(&p.run),
            esc(&provenance_text(p))
        );
    }
    out.push_str("</table>\n");
}
