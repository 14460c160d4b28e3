//! Plan diagnostics: one problem with its place in the source, rendered with a caret; an
//! error stops the plan, a warning (an old key name, say) does not.

use std::fmt;

use crate::figure::path::{FigurePathError, figure_path_names, known_figure_paths};

/// Where in a source a diagnostic points: 1-based line and column (in characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    /// The file as the user named it, or `command line` for `--set`.
    pub file: String,
    pub line: usize,
    pub col: usize,
    /// Characters to underline (at least 1).
    pub len: usize,
    /// The source line, for the excerpt; `None` when there is no source text.
    pub source_line: Option<String>,
}

/// One problem found in a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Key path such as `phases[3].concurrency`; empty for the whole document.
    pub path: String,
    pub message: String,
    pub location: Location,
    /// What to do about it ("did you mean `concurrency`?").
    pub hint: Option<String>,
    /// Context, such as which matrix phase an expanded phase came from.
    pub note: Option<String>,
}

impl Diagnostic {
    /// A problem with a file as a whole (unreadable, refused), placed at its first line.
    pub fn whole_file(file: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            path: String::new(),
            message: message.into(),
            location: Location {
                file: file.into(),
                line: 1,
                col: 1,
                len: 1,
                source_line: None,
            },
            hint: None,
            note: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// How serious a diagnostic is: an error stops the plan, a warning does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Severity {
    Error,
    Warning,
}

impl Severity {
    fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

impl Diagnostic {
    /// The diagnostic as a GitHub Actions workflow command, so a pull request shows it on
    /// the offending line: `::error file=…,line=…,col=…,endColumn=…::message`.
    pub fn github_annotation(&self) -> String {
        self.annotation(Severity::Error, "invalid plan")
    }

    fn annotation(&self, severity: Severity, title: &str) -> String {
        let loc = &self.location;
        let mut message = if self.path.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.path, self.message)
        };
        if let Some(hint) = &self.hint {
            message.push_str(&format!("\nhelp: {hint}"));
        }
        if let Some(note) = &self.note {
            message.push_str(&format!("\nnote: {note}"));
        }
        format!(
            "::{} file={},line={},col={},endColumn={},title={}::{}",
            severity.name(),
            escape_property(&loc.file),
            loc.line,
            loc.col,
            loc.col + loc.len.max(1),
            escape_property(title),
            escape_data(&message)
        )
    }

    /// The diagnostic as one JSON object (`validate --format json`).
    pub fn to_json(&self) -> serde_json::Value {
        self.json(Severity::Error)
    }

    fn json(&self, severity: Severity) -> serde_json::Value {
        let loc = &self.location;
        serde_json::json!({
            "severity": severity.name(),
            "file": loc.file,
            "line": loc.line,
            "col": loc.col,
            "end_col": loc.col + loc.len.max(1),
            "path": self.path,
            "message": self.message,
            "hint": self.hint,
            "note": self.note,
        })
    }
}

/// Escaping for the message of a workflow command.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escaping for a property (`file=…`) of a workflow command.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.render(f, Severity::Error)
    }
}

impl Diagnostic {
    fn render(&self, f: &mut fmt::Formatter<'_>, severity: Severity) -> fmt::Result {
        let severity = severity.name();
        if self.path.is_empty() {
            writeln!(f, "{severity}: {}", self.message)?;
        } else {
            writeln!(f, "{severity}: {}: {}", self.path, self.message)?;
        }
        let loc = &self.location;
        let gutter = loc.line.to_string().len();
        let pad = " ".repeat(gutter);
        writeln!(f, "{pad}--> {}:{}:{}", loc.file, loc.line, loc.col)?;
        if let Some(line) = &loc.source_line {
            // Tabs would misalign the caret, so show them as one space each.
            let shown: String = line
                .chars()
                .map(|c| if c == '\t' { ' ' } else { c })
                .collect();
            let line_chars = shown.chars().count();
            let start = loc.col.saturating_sub(1).min(line_chars);
            let len = loc.len.max(1).min(line_chars.saturating_sub(start).max(1));
            writeln!(f, "{pad} |")?;
            writeln!(f, "{} | {}", loc.line, shown.trim_end())?;
            writeln!(f, "{pad} | {}{}", " ".repeat(start), "^".repeat(len))?;
        }
        if let Some(hint) = &self.hint {
            writeln!(f, "{pad} = help: {hint}")?;
        }
        if let Some(note) = &self.note {
            writeln!(f, "{pad} = note: {note}")?;
        }
        Ok(())
    }
}

/// What a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    /// An old name or spelling, still read as the new one.
    Deprecated,
}

impl WarningKind {
    /// The name `validate --format json` gives it.
    pub fn name(self) -> &'static str {
        match self {
            WarningKind::Deprecated => "deprecated",
        }
    }

    /// The title of its GitHub annotation.
    fn title(self) -> &'static str {
        match self {
            WarningKind::Deprecated => "deprecated plan spelling",
        }
    }
}

/// Something in a plan that does not stop it (the plan loads and runs) but should change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub kind: WarningKind,
    pub diagnostic: Diagnostic,
}

impl Warning {
    /// The warning as a GitHub Actions `::warning` workflow command.
    pub fn github_annotation(&self) -> String {
        self.diagnostic
            .annotation(Severity::Warning, self.kind.title())
    }

    /// The warning as one JSON object, beside the errors of `validate --format json`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = self.diagnostic.json(Severity::Warning);
        value["kind"] = serde_json::Value::from(self.kind.name());
        value
    }

    /// One line, `warning: FILE:LINE:COL: PATH: MESSAGE`, for commands that only mention it.
    pub fn one_line(&self) -> String {
        let d = &self.diagnostic;
        let loc = &d.location;
        let path = if d.path.is_empty() {
            String::new()
        } else {
            format!("{}: ", d.path)
        };
        format!(
            "warning: {}:{}:{}: {path}{}",
            loc.file, loc.line, loc.col, d.message
        )
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.diagnostic.render(f, Severity::Warning)
    }
}

/// Every problem found in a plan, in source order within each pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct PlanErrors {
    pub diagnostics: Vec<Diagnostic>,
}

impl PlanErrors {
    pub fn one(d: Diagnostic) -> Self {
        PlanErrors {
            diagnostics: vec![d],
        }
    }

    pub fn len(&self) -> usize {
        self.diagnostics.len()
    }

    pub fn is_empty(&self) -> bool {
        self.diagnostics.is_empty()
    }
}

impl fmt::Display for PlanErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        let n = self.diagnostics.len();
        if n > 1 {
            writeln!(f, "\n{n} errors")?;
        }
        Ok(())
    }
}

/// Levenshtein distance, for "did you mean" hints.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest candidate to `word`, if it is close enough to be a likely typo.
pub fn suggest<'a, I: IntoIterator<Item = &'a str>>(word: &str, candidates: I) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// "did you mean `x`?" when there is a close candidate.
pub fn did_you_mean<'a, I: IntoIterator<Item = &'a str>>(
    word: &str,
    candidates: I,
) -> Option<String> {
    suggest(word, candidates).map(did_you_mean_text)
}

/// The hint naming `candidate` as the word meant.
pub fn did_you_mean_text(candidate: &str) -> String {
    format!("did you mean `{candidate}`?")
}

/// What to write after an unknown name: "did you mean `x`?" when a name is close, else the
/// whole list.
pub fn did_you_mean_or_list(word: &str, names: &[&str]) -> String {
    did_you_mean(word, names.iter().copied())
        .unwrap_or_else(|| format!("use one of {}", names.join(", ")))
}

/// Why `text` is not a figure path, with a did-you-mean among the figure paths and `also`
/// (names the caller accepts besides them), else the list of what may be written.
pub fn explain_figure_path(text: &str, e: &FigurePathError, also: &[&str]) -> String {
    if !matches!(e, FigurePathError::Unknown(_)) {
        return e.to_string();
    }
    let mut names = figure_path_names();
    names.extend(also.iter().map(|n| n.to_string()));
    match did_you_mean(text, names.iter().map(String::as_str)) {
        Some(hint) => format!("{e}; {hint}"),
        None => {
            let known = std::iter::once(known_figure_paths())
                .chain(also.iter().map(|n| n.to_string()))
                .collect::<Vec<_>>()
                .join(", ");
            format!("{e}; known metrics: {known}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let keys = ["concurrency", "duration", "rate"];
        assert_eq!(suggest("concurency", keys), Some("concurrency"));
        assert_eq!(suggest("durration", keys), Some("duration"));
        assert_eq!(suggest("colour", keys), None);
    }

    #[test]
    fn renders_caret_under_the_span() {
        let d = Diagnostic {
            path: "phases[3].concurrency".into(),
            message: "expected an integer, found \"sixteen\"".into(),
            location: Location {
                file: "plans/x.yaml".into(),
                line: 14,
                col: 18,
                len: 7,
                source_line: Some("    concurrency: sixteen".into()),
            },
            hint: None,
            note: None,
        };
        let text = d.to_string();
        assert!(text.contains("  --> plans/x.yaml:14:18\n"), "{text}");
        assert!(text.contains("14 |     concurrency: sixteen\n"), "{text}");
        assert!(text.contains("   |                  ^^^^^^^\n"), "{text}");
    }
}
