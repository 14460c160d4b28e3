//! The parts of the human-readable reports: table content and its text, number formats,
//! SVG charts and the sections that use them. The markdown and HTML writers put them
//! together.

pub(crate) mod backends;
pub(crate) mod connections;
pub(crate) mod hook_table;
pub(crate) mod interval_table;
pub(crate) mod numfmt;
pub(crate) mod recovery_html;
pub(crate) mod recovery_table;
pub(crate) mod repeat_table;
pub(crate) mod sampling;
pub(crate) mod search_table;
pub(crate) mod session_table;
pub mod svg;
pub(crate) mod table;
pub(crate) mod table_text;
pub(crate) mod timeline;
pub(crate) mod trust_table;
pub(crate) mod until_table;
