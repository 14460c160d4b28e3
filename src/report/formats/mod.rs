//! Each report format's writer or reader: JSON files on disk, markdown, HTML, CSV, the
//! per-request Parquet records, and the seeds' anvil, gateway and multi-phase formats.

pub mod anvil;
pub mod anvil_out;
pub mod csv;
pub mod gateway_out;
pub mod html;
pub(crate) mod import;
pub mod markdown;
pub mod multiphase;
pub mod read;
pub mod records;
pub(crate) mod write;
