//! The trend report as markdown for a PR comment: open alerts and provenance changes, then
//! a compact table per phase, kept under a PR comment's size limit.

use super::TrendReport;
use super::trend::{Extent, document};
use crate::report::render::document::{Block, Span};

/// A PR comment's limit, in characters.
pub const MARKDOWN_LIMIT: usize = 65_536;

/// Markdown text of `report`, under [`MARKDOWN_LIMIT`] characters: unchanged series are
/// left out of the phase tables when all of them do not fit, and the last phases are left
/// out (with a note) when even that is too long.
pub fn render(report: &TrendReport) -> String {
    let mut extent = Extent {
        charts: false,
        every_series: true,
        phases: usize::MAX,
    };
    let (full, phases) = document(report, extent);
    let text = full.markdown();
    if fits(&text) {
        return text;
    }
    extent.every_series = false;
    // Fewer phases until it fits, with room for the note that says so.
    let mut text = String::new();
    for kept in (0..=phases).rev() {
        extent.phases = kept;
        let (mut doc, _) = document(report, extent);
        if kept < phases {
            doc.blocks.push(cut_note(phases - kept));
        }
        text = doc.markdown();
        if fits(&text) {
            return text;
        }
    }
    // Even the alerts alone are too long: cut at a line.
    let mut used = 0;
    let mut cut: String = text
        .lines()
        .take_while(|line| {
            used += line.chars().count() + 1;
            used <= MARKDOWN_LIMIT - CLOSING_ROOM
        })
        .map(|line| format!("{line}\n"))
        .collect();
    cut.push_str("\n… cut to fit a PR comment: see the HTML trend report.\n");
    cut
}

/// Room kept for the closing note when the text is cut at a line.
const CLOSING_ROOM: usize = 100;

fn fits(text: &str) -> bool {
    text.chars().count() <= MARKDOWN_LIMIT
}

fn cut_note(left_out: usize) -> Block {
    Block::Paragraph(vec![
        Span::text(format!(
            "… {left_out} phase(s) left out to fit a PR comment: see the HTML trend report ("
        )),
        Span::code("servebench history trend --format html"),
        Span::text(") for every phase."),
    ])
}
