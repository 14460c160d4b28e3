//! Markdown writer: a report sized for a pull-request comment.

use std::fmt::Write;

use crate::report::model::Report;
use crate::report::render::document::markdown_body;
use crate::report::render::facts::{FactValue, header_facts};
use crate::report::render::sections::{Markup, printed};
use crate::report::render::table_text::{cell, inline};

/// Render `report` as GitHub-flavoured markdown: the head, then each section it shows.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    head(&mut out, report);
    // Plain `##` headings: GitHub gives each the anchor the section declares.
    for section in printed(report, Markup::Markdown) {
        let _ = write!(out, "\n## {}\n\n", section.title(report));
        markdown_body(&mut out, &(section.body)(report));
    }
    out
}

/// Title, the partial-run banner and the run's facts.
fn head(out: &mut String, report: &Report) {
    let _ = writeln!(out, "# servebench report: {}\n", inline(&report.plan.name));
    if report.span.partial {
        let _ = writeln!(
            out,
            "> **Partial run:** not every phase finished{}.\n",
            report
                .span
                .stop_reason
                .as_deref()
                .map(|r| format!(" ({})", inline(r)))
                .unwrap_or_default()
        );
    }
    out.push_str("| | |\n|---|---|\n");
    for (label, value) in header_facts(report) {
        let value = match value {
            FactValue::Text(text) => cell(&text),
            // A table cell holds one line: the items follow each other, each with its bullet.
            FactValue::List(items) => items
                .iter()
                .map(|item| format!("• {}", cell(item)))
                .collect::<Vec<_>>()
                .join(" "),
        };
        let _ = writeln!(out, "| {} | {value} |", cell(&label));
    }
}
