//! The results history: recording into SQLite and a real PostgreSQL server, the schema's
//! versions, concurrent recorders, kills at the three points a run can die, imports, and the
//! `history` command.

mod cli;
mod concurrency;
mod imports;
mod kill;
mod real_aiperf;
mod schema;
mod store;
mod support;
mod trends;
