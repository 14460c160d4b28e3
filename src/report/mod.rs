//! The report data model and its writers and readers.
//!
//! One [`Report`] feeds small exporters (markdown, HTML, CSV, the seeds' anvil and gateway
//! formats); markdown and HTML share their table content through `table`. [`read_report`] reads servebench's JSON and the seed formats;
//! [`compare::compare`] matches two reports' phases and checks [`gate`]s.

mod model;

pub mod anvil_out;
pub mod compare;
mod compare_md;
pub mod csv;
pub mod figure_path;
pub mod gate;
pub mod gateway_out;
pub mod html;
pub mod markdown;
mod numfmt;
pub mod read;
pub mod schema;
pub mod seed;
pub mod svg;
mod table;

pub use compare_md::render as render_comparison;
pub use model::*;
pub use read::{ReadError, read_report};

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// An output format of `servebench report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown for pull-request comments.
    Md,
    /// One self-contained HTML page with inline SVG charts.
    Html,
    /// One row per phase (or per request with `--requests`).
    Csv,
    /// One `anvil-serving.benchmark/v1` document per phase (seeds 000/002).
    Anvil,
    /// Seed 004's multi-phase gateway layout for the whole run.
    Gateway,
}

/// Renders a whole report in one format.
pub trait Exporter {
    fn render(&self, report: &Report) -> String;
}

pub struct MarkdownExporter;
pub struct HtmlExporter;
pub struct GatewayExporter;
pub struct CsvExporter {
    /// One row per request instead of one per phase.
    pub requests: bool,
}

impl Exporter for MarkdownExporter {
    fn render(&self, report: &Report) -> String {
        markdown::render(report)
    }
}

impl Exporter for HtmlExporter {
    fn render(&self, report: &Report) -> String {
        html::render(report)
    }
}

impl Exporter for CsvExporter {
    fn render(&self, report: &Report) -> String {
        if self.requests {
            csv::render_requests(report)
        } else {
            csv::render_phases(report)
        }
    }
}

impl Exporter for GatewayExporter {
    fn render(&self, report: &Report) -> String {
        gateway_out::render(report)
    }
}

/// The exporter for a one-document `format`; `None` for [`Format::Anvil`], which writes one
/// document per phase ([`anvil_out::documents`]).
pub fn exporter(format: Format, requests: bool) -> Option<Box<dyn Exporter>> {
    match format {
        Format::Md => Some(Box::new(MarkdownExporter)),
        Format::Html => Some(Box::new(HtmlExporter)),
        Format::Csv => Some(Box::new(CsvExporter { requests })),
        Format::Gateway => Some(Box::new(GatewayExporter)),
        Format::Anvil => None,
    }
}

/// Write `report.md` and `report.html` into `dir`, each replaced atomically so a reader never
/// sees half a file. The run command calls this after every phase.
pub fn write_all(report: &Report, dir: &Path) -> io::Result<()> {
    write_atomic(&dir.join("report.md"), &markdown::render(report))?;
    write_atomic(&dir.join("report.html"), &html::render(report))?;
    Ok(())
}

/// Write through a temporary file and a rename, so a reader (or a crash) never sees half a file.
pub fn write_atomic(path: &Path, contents: &str) -> io::Result<()> {
    let mut tmp = PathBuf::from(path);
    tmp.set_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(contents.as_bytes())?;
        f.sync_all()
    });
    if let Err(e) = written {
        // A full disk must not leave a stray temporary file behind.
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path)
}
