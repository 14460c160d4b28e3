//! HTML writer: one self-contained offline page with inline CSS and inline SVG charts.

use std::fmt::Write;

use crate::report::model::Report;
use crate::report::render::document::html_body;
use crate::report::render::facts::{FactValue, header_facts};
use crate::report::render::page;
use crate::report::render::sections::{Markup, printed};
use crate::report::render::svg::esc;

/// The stylesheet, where the trend report has always read it.
pub(crate) use crate::report::render::page::CSS;

/// Render `report` as one HTML document that needs nothing from the network: the head, a
/// table of contents, then each section it shows.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let sections = printed(report, Markup::Html);
    head(&mut out, report);
    out.push_str("<nav class=\"toc\"><b>Contents:</b> ");
    for (i, section) in sections.iter().enumerate() {
        let sep = if i == 0 { "" } else { " · " };
        let _ = write!(
            out,
            "{sep}<a href=\"#{}\">{}</a>",
            section.anchor,
            esc(section.title(report))
        );
    }
    out.push_str("</nav>\n");
    facts(&mut out, report);
    for section in sections {
        let _ = writeln!(
            out,
            "<h2 id=\"{}\">{}</h2>",
            section.anchor,
            esc(section.title(report))
        );
        html_body(&mut out, &(section.body)(report));
    }
    out.push_str(page::CLOSE);
    out
}

/// The document head and the partial-run banner.
fn head(out: &mut String, report: &Report) {
    page::open(out, &format!("servebench report: {}", report.plan.name));
    if report.span.partial {
        let _ = writeln!(
            out,
            "<div class=\"banner\"><b>Partial run:</b> not every phase finished{}.</div>",
            report
                .span
                .stop_reason
                .as_deref()
                .map(|r| format!(" ({})", esc(r)))
                .unwrap_or_default()
        );
    }
}

/// The run's facts.
fn facts(out: &mut String, report: &Report) {
    out.push_str("<table class=\"facts\">");
    for (label, value) in header_facts(report) {
        let value = match value {
            FactValue::Text(text) => esc(&text),
            FactValue::List(items) => {
                let items: String = items
                    .iter()
                    .map(|i| format!("<li>{}</li>", esc(i)))
                    .collect();
                format!("<ul>{items}</ul>")
            }
        };
        let _ = write!(out, "<tr><th>{}</th><td>{value}</td></tr>", esc(&label));
    }
    out.push_str("</table>\n");
}
