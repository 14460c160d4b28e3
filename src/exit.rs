//! Process exit codes, as documented in the README.

/// Everything succeeded.
pub const SUCCESS: i32 = 0;
/// A threshold or comparison gate failed.
pub const GATE_FAILED: i32 = 1;
/// The plan or the arguments are invalid.
pub const INVALID_INPUT: i32 = 2;
/// The run itself failed.
pub const RUN_FAILED: i32 = 3;
/// `selftest` could not measure or could not write its results.
pub const SELFTEST_FAILED: i32 = 1;
