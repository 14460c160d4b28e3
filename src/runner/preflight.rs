//! Before the first request: every phase's prompt inputs (dataset and trace files, tokenizer
//! files, chat templates) are opened and checked, so a bad file in a late phase fails the
//! run at once instead of after the earlier phases have run.

use std::collections::HashSet;
use std::path::Path;

use super::RunError;
use crate::schedule::PhaseSettings;
use crate::workload::{PromptSource, WorkloadContext};

/// Build each distinct (target, workload) pair's prompt source once, without sending
/// anything; every problem found, plus `earlier` ones (such as an unwritable `--output`), is
/// reported together as one invalid-input error.
pub(super) fn check_inputs(
    phases: &[PhaseSettings<'_>],
    plan_dir: &Path,
    earlier: Vec<String>,
) -> Result<(), RunError> {
    let mut problems = earlier;
    let mut seen = HashSet::new();
    for phase in phases {
        // A mix's archetypes are checked one by one.
        let single = [(phase.workload_name.as_str(), phase.workload)];
        let mixed = phase.archetypes.iter().map(|a| (a.name, a.workload));
        let workloads: Vec<(&str, &crate::plan::Workload)> = if phase.archetypes.is_empty() {
            single.to_vec()
        } else {
            mixed.collect()
        };
        for (name, workload) in workloads {
            if !seen.insert((phase.target_name, name)) {
                continue;
            }
            let context = WorkloadContext {
                api: phase.target.api,
                tokenizer: crate::workload::resolve_tokenizer(workload, phase.target),
                plan_dir: plan_dir.to_path_buf(),
                seed: 0,
                base_url: String::new(),
                model: String::new(),
                text_salt: None,
            };
            if let Err(e) = PromptSource::new(workload, &context) {
                problems.push(format!("phase `{}`, workload `{name}`: {e}", phase.name));
            }
        }
    }
    match problems.len() {
        0 => Ok(()),
        1 => Err(RunError::InvalidInput(problems.remove(0))),
        n => Err(RunError::InvalidInput(format!(
            "{n} problems found before the first request:\n  - {}",
            problems.join("\n  - ")
        ))),
    }
}
