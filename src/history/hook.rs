//! A test hook, built only with the `testing` feature (as the tests build the binary):
//! `SERVEBENCH_HISTORY_TEST_PAUSE=after-report|in-commit` makes the process say so on stderr
//! and wait there (up to a minute), so a test can SIGKILL it at that point and check from a
//! fresh process that no complete row was left. Unset, or in a release build, it does nothing.

/// The environment variable that names the point to pause at.
#[cfg(feature = "testing")]
pub const PAUSE_ENV: &str = "SERVEBENCH_HISTORY_TEST_PAUSE";

/// The line printed to stderr once paused; the point's name follows.
#[cfg(feature = "testing")]
pub const PAUSED_LINE: &str = "history test hook: paused at";

/// Where the hook can pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PausePoint {
    /// `run` wrote its report and has not started recording.
    AfterReport,
    /// Every row of the run is written inside the transaction; the commit has not run.
    InCommit,
}

#[cfg(feature = "testing")]
impl PausePoint {
    pub fn name(self) -> &'static str {
        match self {
            PausePoint::AfterReport => "after-report",
            PausePoint::InCommit => "in-commit",
        }
    }
}

/// Pause at `point` when the hook names it.
#[cfg(feature = "testing")]
pub fn pause_at(point: PausePoint) {
    if std::env::var(PAUSE_ENV).is_ok_and(|v| v == point.name()) {
        eprintln!("{PAUSED_LINE} {}", point.name());
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

/// Without the `testing` feature there is nothing to pause for.
#[cfg(not(feature = "testing"))]
#[inline(always)]
pub fn pause_at(_: PausePoint) {}
