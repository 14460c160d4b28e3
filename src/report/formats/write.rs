//! The one path report files take to disk: `report.json`, `report.md` and `report.html`, each
//! replaced atomically, so a reader (or a crash) never sees half a file.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use super::{html, markdown};
use crate::report::model::Report;

/// The report file of a run directory.
pub const REPORT_FILE: &str = "report.json";

/// Which files a report is written to.
#[derive(Debug, Clone, Default)]
pub struct ReportFiles {
    pub json: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub html: Option<PathBuf>,
}

impl ReportFiles {
    /// A run directory's `report.json`, `report.md` and `report.html`.
    pub fn run_dir(dir: &Path) -> Self {
        ReportFiles {
            json: Some(dir.join(REPORT_FILE)),
            markdown: Some(dir.join("report.md")),
            html: Some(dir.join("report.html")),
        }
    }

    /// The JSON report alone, at `path`.
    pub fn json(path: &Path) -> Self {
        ReportFiles {
            json: Some(path.to_path_buf()),
            ..ReportFiles::default()
        }
    }
}

/// Write `report` to `files`: JSON first, then the renders, each atomically; the message
/// names the file that could not be written.
pub fn write_files(report: &Report, files: &ReportFiles) -> Result<(), String> {
    if let Some(path) = &files.json {
        let mut text = serde_json::to_string_pretty(report)
            .map_err(|e| format!("cannot serialize the report: {e}"))?;
        text.push('\n');
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        write_to(path, &text)?;
    }
    if let Some(path) = &files.markdown {
        write_to(path, &markdown::render(report))?;
    }
    if let Some(path) = &files.html {
        write_to(path, &html::render(report))?;
    }
    Ok(())
}

fn write_to(path: &Path, text: &str) -> Result<(), String> {
    write_atomic(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Write `report.md` and `report.html` into `dir`.
pub fn write_all(report: &Report, dir: &Path) -> Result<(), String> {
    let files = ReportFiles::run_dir(dir);
    write_files(
        report,
        &ReportFiles {
            json: None,
            ..files
        },
    )
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
