//! The results history: recording into SQLite and a real PostgreSQL server, the schema's
//! versions, concurrent recorders, kills at the three points a run can die, imports, the
//! `history` command (its refusals of typos and of gates with nothing to check), and the trends: detection rates, the trend report, the gate and
//! baselines over both backends.

mod cli;
mod concurrency;
mod gate_cli;
mod gate_store;
mod imports;
mod kill;
mod nightly;
mod real_aiperf;
mod schema;
mod searches;
mod store;
mod support;
mod trends;
