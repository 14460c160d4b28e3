//! `servebench run` as a command: the async runtime, the run, and its exit code.

use super::run::{RunError, RunOptions, run};

/// `servebench run`: build the runtime, run, and map the outcome to an exit code.
pub fn run_command(options: RunOptions) -> i32 {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return crate::exit::RUN_FAILED;
        }
    };
    match runtime.block_on(run(options)) {
        Ok(outcome) if outcome.interrupted => crate::exit::RUN_FAILED,
        Ok(_) => crate::exit::SUCCESS,
        Err(RunError::InvalidPlan(errors)) => {
            eprintln!("{errors}");
            crate::exit::INVALID_INPUT
        }
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}
