//! Process exit codes: the one table every command maps its outcome through.
//!
//! Each code has one meaning. The README's table and `servebench --help` are written from
//! [`Exit::ALL`], and a test checks the README against it, so the two cannot drift.

/// How a command ended, as the process reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything succeeded.
    Success,
    /// A threshold or comparison gate failed (`compare --gate`, `history gate --baseline`).
    GateFailed,
    /// The plan, the arguments or another input is invalid; nothing was sent.
    InvalidInput,
    /// The run (or the command) could not finish: a server or simulator failed, the run was
    /// interrupted (a partial report is still written), or an output could not be written.
    RunFailed,
    /// The run finished but could not answer its question: a capacity search stopped
    /// client-bound or indeterminate (its capacity is only a lower bound), or a gate that
    /// requires tested series found one untested.
    Inconclusive,
    /// An alert is open in the results history (`history gate`).
    AlertOpen,
    /// `selftest` could not measure the client or could not write its results.
    SelftestFailed,
}

impl Exit {
    /// Every exit code, in code order: the documented table.
    pub const ALL: [Exit; 7] = [
        Exit::Success,
        Exit::GateFailed,
        Exit::InvalidInput,
        Exit::RunFailed,
        Exit::Inconclusive,
        Exit::AlertOpen,
        Exit::SelftestFailed,
    ];

    /// The process exit code.
    pub const fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::GateFailed => 1,
            Exit::InvalidInput => 2,
            Exit::RunFailed => 3,
            Exit::Inconclusive => 4,
            Exit::AlertOpen => 5,
            Exit::SelftestFailed => 6,
        }
    }

    /// What the code means, as the README and `--help` state it.
    pub const fn meaning(self) -> &'static str {
        match self {
            Exit::Success => "success",
            Exit::GateFailed => {
                "a threshold or comparison gate failed (`compare --gate`; `history gate \
                 --baseline` when the latest run fails a gate or a capacity fell below the \
                 baseline's)"
            }
            Exit::InvalidInput => "invalid plan, arguments or input file; nothing was sent",
            Exit::RunFailed => {
                "the run or command failed: a server or simulator failure, a target that is \
                 down (before the first phase, or during one unless it sets `on_target_down`; \
                 the partial report is written), an interrupt (the partial report is written), a \
                 phase whose every request failed (unless it sets `expect_errors: true`) or an \
                 output that could not be written"
            }
            Exit::Inconclusive => {
                "the run could not answer: a capacity search stopped client-bound or \
                 indeterminate, so its capacity is only a lower bound (the report is written); \
                 `history gate --require-tested` when a watched series could not be tested yet"
            }
            Exit::AlertOpen => "an alert is open in the results history (`history gate`)",
            Exit::SelftestFailed => "`selftest` could not measure the client or write its results",
        }
    }

    /// The exit codes as a plain-text list, for `servebench --help`.
    pub fn help_text() -> String {
        let mut text = String::from("Exit codes:\n");
        for exit in Exit::ALL {
            text.push_str(&format!("  {}  {}\n", exit.code(), exit.meaning()));
        }
        text
    }

    /// The exit codes as the README's markdown table.
    pub fn markdown_table() -> String {
        let mut text = String::from("| code | meaning |\n|---|---|\n");
        for exit in Exit::ALL {
            text.push_str(&format!("| `{}` | {} |\n", exit.code(), exit.meaning()));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn every_code_is_distinct_and_in_order() {
        let codes: Vec<i32> = Exit::ALL.iter().map(|e| e.code()).collect();
        let expected: Vec<i32> = (0..Exit::ALL.len() as i32).collect();
        assert_eq!(codes, expected);
    }

    #[test]
    fn the_gate_codes_name_every_command_that_exits_with_them() {
        // `commands::compare` and `commands::history::gate` return GateFailed.
        let gate = Exit::GateFailed.meaning();
        assert!(gate.contains("`compare --gate`"), "{gate}");
        assert!(gate.contains("`history gate --baseline`"), "{gate}");
        assert!(Exit::AlertOpen.meaning().contains("`history gate`"));
    }
}
