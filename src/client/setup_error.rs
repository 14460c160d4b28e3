//! The one error of setting a client up, shared by the files that check its settings.

/// The client could not be set up (bad URL, bad header); requests themselves never error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);
