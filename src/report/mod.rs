//! The report data model and its writers and readers.
//!
//! One [`Report`] feeds small exporters (markdown, HTML, CSV, the seeds' anvil and gateway
//! formats); markdown and HTML share their table content through `table`. [`read_report`]
//! reads servebench's JSON and the older formats (`anvil`, `multiphase`); [`phase_result`]
//! builds every phase result; [`write_files`] writes every report file; [`compare::compare`]
//! matches two reports' phases and checks [`gate`]s.

pub mod anvil;
pub mod anvil_out;
mod backends;
pub mod compare;
mod compare_md;
mod connections;
pub mod csv;
mod endpoints;
pub mod figure_path;
pub mod gate;
pub mod gateway_out;
mod hook_table;
pub mod html;
mod import;
mod interval_table;
pub mod markdown;
mod model;
pub mod multiphase;
mod numfmt;
pub mod phase;
pub mod read;
pub mod records;
mod recovery_html;
mod recovery_table;
mod repeat_table;
pub mod repeats;
mod sampling;
pub mod schema;
mod search;
mod search_table;
mod session_table;
pub mod svg;
mod table;
mod table_text;
mod timeline;
mod trust_table;
mod until_table;
mod write;

pub use compare_md::render as render_comparison;
pub use endpoints::EndpointFacts;
pub use import::IMPORT_PROMPT_TOLERANCE;
pub use model::*;
pub use phase::{Figures, PhaseFacts, pair_rechecks, phase_result, phase_result_sampled};
pub use read::{ReadError, read_report};
pub use search::*;
pub use write::{REPORT_FILE, ReportFiles, write_all, write_atomic, write_files};

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
