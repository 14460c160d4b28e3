//! What can go wrong with the history: where the store is, what it holds, what was asked.

/// A history error; each names the store or the input it concerns.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The store cannot be opened or reached (a missing directory, a refused connection).
    #[error("{location}: cannot open the history store: {detail}")]
    Open { location: String, detail: String },
    /// The file is not a servebench history store, or is damaged; it is left untouched.
    #[error(
        "{location}: {detail}; the file was left as it is (move it away or give another --history)"
    )]
    Corrupt { location: String, detail: String },
    /// The store was written by a newer servebench.
    #[error(
        "{location}: the history store has schema version {found}, newer than the {supported} this servebench reads; upgrade servebench (the store was left as it is)"
    )]
    NewerSchema {
        location: String,
        found: i64,
        supported: i64,
    },
    /// A query or a write failed.
    #[error("{location}: {detail}")]
    Database { location: String, detail: String },
    /// No run with this id.
    #[error("no run `{0}` in the history (see `servebench history list`)")]
    UnknownRun(String),
    /// No run of this plan (a typo in `--plan`); `hint` names the plans it holds.
    #[error("no runs of plan `{plan}` in {location}; {hint}")]
    UnknownPlan {
        plan: String,
        location: String,
        hint: String,
    },
    /// No alert with this id.
    #[error("no alert {0} in the history")]
    UnknownAlert(i64),
    /// The request itself is wrong (an unknown figure, a bad filter).
    #[error("{0}")]
    Invalid(String),
    /// An input file could not be read or understood (or an output file written).
    #[error("{}: {message}", path.display())]
    File {
        path: std::path::PathBuf,
        message: String,
    },
    /// The backend cannot do this.
    #[error("this history backend cannot {0}")]
    Unsupported(&'static str),
}
