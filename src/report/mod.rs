//! The report data model and its writers and readers.
//!
//! One [`Report`] feeds small exporters (markdown, HTML, CSV); markdown and HTML share their
//! table content through `table`. [`read_report`] reads servebench's JSON and the seed formats;
//! [`compare::compare`] matches two reports' phases and checks gates.

mod model;

pub mod compare;
mod compare_md;
mod connections;
pub mod csv;
pub mod html;
pub mod markdown;
pub mod metric;
mod numfmt;
pub mod read;
pub mod seed;
pub mod svg;
mod table;

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
}

/// Renders a whole report in one format.
pub trait Exporter {
    fn render(&self, report: &Report) -> String;
}

pub struct MarkdownExporter;
pub struct HtmlExporter;
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

/// The exporter for `format`.
pub fn exporter(format: Format, requests: bool) -> Box<dyn Exporter> {
    match format {
        Format::Md => Box::new(MarkdownExporter),
        Format::Html => Box::new(HtmlExporter),
        Format::Csv => Box::new(CsvExporter { requests }),
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

/// Output format of `servebench compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    Md,
    Json,
}

/// `servebench report`: render a report file; returns the exit code.
pub fn report_command(input: &Path, format: Format, requests: bool, output: Option<&Path>) -> i32 {
    if requests && format != Format::Csv {
        eprintln!("error: --requests applies to --format csv only");
        return crate::exit::INVALID_INPUT;
    }
    let report = match read_report(input) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return crate::exit::INVALID_INPUT;
        }
    };
    let text = exporter(format, requests).render(&report);
    emit(&text, output)
}

fn emit(text: &str, output: Option<&Path>) -> i32 {
    let result = match output {
        Some(path) => write_atomic(path, text).map_err(|e| format!("{}: {e}", path.display())),
        None => io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| format!("stdout: {e}")),
    };
    match result {
        Ok(()) => crate::exit::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write {e}");
            crate::exit::RUN_FAILED
        }
    }
}

/// `servebench compare`: exit 0 when every gate passes, 1 when one fails, 2 on bad input.
pub fn compare_command(
    base: &Path,
    new: &Path,
    gates: &[String],
    format: CompareFormat,
    output: Option<&Path>,
) -> i32 {
    let mut parsed = Vec::new();
    let mut bad = false;
    for g in gates {
        match g.parse::<compare::Gate>() {
            Ok(g) => parsed.push(g),
            Err(e) => {
                eprintln!("error: {e}");
                bad = true;
            }
        }
    }
    if bad {
        return crate::exit::INVALID_INPUT;
    }
    let (base_report, new_report) = match (read_report(base), read_report(new)) {
        (Ok(b), Ok(n)) => (b, n),
        (b, n) => {
            for e in [b.err(), n.err()].into_iter().flatten() {
                eprintln!("error: {e}");
            }
            return crate::exit::INVALID_INPUT;
        }
    };
    let comparison = compare::compare(
        &base.display().to_string(),
        &base_report,
        &new.display().to_string(),
        &new_report,
        &parsed,
    );
    let text = match format {
        CompareFormat::Md => compare_md::render(&comparison),
        CompareFormat::Json => match serde_json::to_string_pretty(&comparison) {
            Ok(s) => s + "\n",
            Err(e) => {
                eprintln!("error: cannot encode the comparison: {e}");
                return crate::exit::RUN_FAILED;
            }
        },
    };
    let code = emit(&text, output);
    if code != crate::exit::SUCCESS {
        return code;
    }
    if comparison.passed {
        crate::exit::SUCCESS
    } else {
        let failed = comparison.gates.iter().filter(|g| !g.passed).count();
        eprintln!("{failed} gate check(s) failed");
        crate::exit::GATE_FAILED
    }
}
