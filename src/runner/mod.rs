//! One run of a plan: targets up, phases in order, the report rewritten after every phase.
//!
//! `run` holds the run from plan to final report; `phase` one phase's windows; `watch` what
//! watches a measured window while it runs; `targets` the resolved endpoints and simulators;
//! `interrupt` Ctrl-C; `facts` the report a run starts from; `console` the per-phase line.

mod calibrate;
mod client_watch;
pub mod collect;
mod console;
mod decide;
pub mod endpoint;
mod exec;
mod facts;
mod hooks;
mod host;
mod interrupt;
pub mod journal;
mod marks;
mod options;
pub mod output;
mod phase;
mod power;
mod preflight;
mod provenance;
pub mod recover;
pub mod redact;
mod reply_check;
mod run;
mod salt;
mod saturation;
pub mod scrape;
mod search;
mod stable;
mod targets;
mod watch;

pub use endpoint::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT};
pub use interrupt::INTERRUPT_GRACE;
pub use options::{LongRunOptions, RunError, RunOptions, RunOutcome};
pub use run::run;

/// Each phase draws its own prompts and arrivals: a recheck repeats its original's settings,
/// not its exact prompts, which a server's prefix cache would otherwise serve from memory.
fn phase_seed(seed: Option<u64>, phase_name: &str) -> u64 {
    // FNV-1a: stable across platforms and releases, unlike std's hasher.
    seed.unwrap_or(0) ^ crate::hash::fnv1a_64(phase_name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_seeds_differ_by_name_and_follow_the_plan_seed() {
        assert_ne!(phase_seed(Some(1), "a"), phase_seed(Some(1), "b"));
        assert_ne!(phase_seed(Some(1), "a"), phase_seed(Some(2), "a"));
        assert_eq!(phase_seed(Some(1), "a"), phase_seed(Some(1), "a"));
    }
}
