//! The parts of the human-readable reports: table content and its text, number formats,
//! SVG charts, and the sections that use them, declared once in [`sections`] with one body
//! each, built as [`document::Block`]s. The markdown and HTML writers walk that list and print
//! each body with the block printer of their markup; the comparison is one
//! [`document::Document`] of the same blocks.

pub(crate) mod backends;
pub(crate) mod cancel_table;
pub(crate) mod chart_sections;
pub(crate) mod checks_table;
pub(crate) mod connections;
pub(crate) mod cost_energy_table;
pub mod document;
pub(crate) mod facts;
pub(crate) mod hook_table;
pub(crate) mod interval_table;
pub(crate) mod load_table;
pub(crate) mod model_table;
pub(crate) mod numfmt;
pub(crate) mod page;
pub(crate) mod pareto;
pub(crate) mod recovery_html;
pub(crate) mod recovery_table;
pub(crate) mod repeat_table;
pub(crate) mod sampling;
pub(crate) mod search_table;
pub(crate) mod section_blocks;
pub mod sections;
pub(crate) mod server_table;
pub(crate) mod session_table;
pub mod svg;
pub mod table;
pub(crate) mod table_text;
pub(crate) mod timeline;
pub(crate) mod token_split;
pub(crate) mod trust_table;
pub(crate) mod until_table;
