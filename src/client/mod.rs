//! OpenAI-compatible requests and streamed responses: one [`RequestRecord`] per request.

mod record;

pub use record::*;
