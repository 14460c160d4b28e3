//! The parts of the human-readable reports: table content and its text, number formats,
//! SVG charts, and the sections that use them, declared once in [`sections`] with a body per
//! markup. The markdown and HTML writers walk that list. Pages with no charts (the
//! comparison) are built once as a [`document::Document`] and printed in both markups.

pub(crate) mod backends;
pub(crate) mod chart_sections;
pub(crate) mod connections;
pub(crate) mod document;
pub(crate) mod facts;
pub(crate) mod hook_table;
pub(crate) mod html_sections;
pub(crate) mod interval_table;
pub(crate) mod load_table;
pub(crate) mod markdown_sections;
pub(crate) mod numfmt;
pub(crate) mod page;
pub(crate) mod pareto;
pub(crate) mod recovery_html;
pub(crate) mod recovery_table;
pub(crate) mod repeat_table;
pub(crate) mod sampling;
pub(crate) mod search_table;
pub mod sections;
pub(crate) mod server_table;
pub(crate) mod session_table;
pub mod svg;
pub(crate) mod table;
pub(crate) mod table_text;
pub(crate) mod timeline;
pub(crate) mod trust_table;
pub(crate) mod until_table;
