//! The report data model and its writers and readers.
//!
//! By role: [`model`] holds the data ([`Report`]) and the paths that name a figure in it;
//! [`assemble`] makes phase results from records ([`phase_result`]); [`render`] holds the table
//! content, number formats and SVG charts the human-readable formats share; [`formats`] has
//! one writer or reader per format (markdown, HTML, CSV, Parquet records, the seeds' anvil,
//! gateway and multi-phase formats, and [`write_files`]); [`compare`] matches two reports'
//! phases and checks gates.

pub mod assemble;
pub mod compare;
pub mod formats;
pub mod model;
pub mod render;

pub use assemble::phase::{Figures, Measured, PhaseFacts, phase_result};
pub use assemble::probe::ProbeSpec;
pub use assemble::relate::{pair_rechecks, relate_phases};
pub use compare::document::{html as render_comparison_html, markdown as render_comparison};
pub use formats::import::IMPORT_PROMPT_TOLERANCE;
pub use formats::read::{ReadError, read_report, report_file};
pub use formats::write::{REPORT_FILE, ReportFiles, write_all, write_atomic, write_files};
pub use model::*;

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
    /// The report as servebench JSON (`schema report`), for programs; a seed-format input
    /// comes out converted.
    Json,
}

/// Renders a whole report in one format.
pub trait Exporter {
    fn render(&self, report: &Report) -> String;
}

pub struct MarkdownExporter;
pub struct HtmlExporter;
pub struct GatewayExporter;
pub struct JsonExporter;
pub struct CsvExporter {
    /// One row per request instead of one per phase.
    pub requests: bool,
}

impl Exporter for MarkdownExporter {
    fn render(&self, report: &Report) -> String {
        formats::markdown::render(report)
    }
}

impl Exporter for HtmlExporter {
    fn render(&self, report: &Report) -> String {
        formats::html::render(report)
    }
}

impl Exporter for CsvExporter {
    fn render(&self, report: &Report) -> String {
        if self.requests {
            formats::csv::render_requests(report)
        } else {
            formats::csv::render_phases(report)
        }
    }
}

impl Exporter for GatewayExporter {
    fn render(&self, report: &Report) -> String {
        formats::gateway_out::render(report)
    }
}

impl Exporter for JsonExporter {
    fn render(&self, report: &Report) -> String {
        serde_json::to_string_pretty(report)
            .map_or_else(|e| format!("{{\"error\": \"{e}\"}}\n"), |s| s + "\n")
    }
}

/// The exporter for a one-document `format`; `None` for [`Format::Anvil`], which writes one
/// document per phase ([`formats::anvil_out::documents`]).
pub fn exporter(format: Format, requests: bool) -> Option<Box<dyn Exporter>> {
    match format {
        Format::Md => Some(Box::new(MarkdownExporter)),
        Format::Html => Some(Box::new(HtmlExporter)),
        Format::Csv => Some(Box::new(CsvExporter { requests })),
        Format::Gateway => Some(Box::new(GatewayExporter)),
        Format::Json => Some(Box::new(JsonExporter)),
        Format::Anvil => None,
    }
}

/// The sample report fixture, for unit tests that decorate it.
#[cfg(test)]
pub(crate) fn sample_report() -> Report {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/reports/sample.json"
    ))
    .expect("fixture");
    serde_json::from_str(&text).expect("sample report reads")
}
