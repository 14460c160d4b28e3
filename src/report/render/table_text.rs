//! A [`Table`] written out: as a markdown pipe table or an HTML table, and the escaping of
//! text in running markdown. Every section that renders a table comes here, so no section
//! needs the whole-report writers.

use std::fmt::Write;

use super::svg::esc;
use super::table::{Align, Mark, Table};

/// A pipe table; marked cells are bold so they show in a PR comment.
pub(crate) fn markdown_table(out: &mut String, t: &Table) {
    out.push('|');
    for c in &t.columns {
        let _ = write!(out, " {} |", cell(&c.title));
    }
    out.push_str("\n|");
    for c in &t.columns {
        out.push_str(match c.align {
            Align::Left => "---|",
            Align::Right => "---:|",
        });
    }
    out.push('\n');
    for row in &t.rows {
        out.push('|');
        for c in row {
            let text = cell(&c.text);
            match c.mark {
                Mark::Bad | Mark::Warn if !text.is_empty() => {
                    let _ = write!(out, " **{text}** |");
                }
                Mark::Bad | Mark::Warn | Mark::Plain | Mark::Good => {
                    let _ = write!(out, " {text} |");
                }
            }
        }
        out.push('\n');
    }
}

/// Text safe inside a table cell: no pipes or line breaks, markdown punctuation escaped.
pub(crate) fn cell(s: &str) -> String {
    inline(s).replace('|', "\\|")
}

/// Text safe in running markdown: characters that would start markup are escaped.
pub(crate) fn inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' => {
                out.push('\\');
                out.push(ch);
            }
            _ => out.push(ch),
        }
    }
    out
}

/// A table as HTML, in the classes of the page's stylesheet.
pub(crate) fn html_table(out: &mut String, t: &Table) {
    out.push_str("<table><thead><tr>");
    for c in &t.columns {
        let _ = write!(out, "<th>{}</th>", esc(&c.title));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (c, col) in row.iter().zip(&t.columns) {
            let mut classes = Vec::new();
            if col.align == Align::Right {
                classes.push("r");
            }
            match c.mark {
                Mark::Bad => classes.push("bad"),
                Mark::Warn => classes.push("warn"),
                Mark::Good => classes.push("good"),
                Mark::Plain => {}
            }
            if classes.is_empty() {
                let _ = write!(out, "<td>{}</td>", esc(&c.text));
            } else {
                let _ = write!(
                    out,
                    "<td class=\"{}\">{}</td>",
                    classes.join(" "),
                    esc(&c.text)
                );
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}
