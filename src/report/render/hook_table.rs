//! The phase hooks table shared by the markdown and HTML writers: one row per action, only
//! for phases that had any.

use super::table::{Align, Cell, Mark, Table};
use crate::report::model::{HookOutcome, HookStatus, Report};

/// Every phase's `before`/`during`/`after` actions in the order they ran; empty when no phase had any.
pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Phase", Align::Left),
        ("When", Align::Left),
        ("Action", Align::Left),
        ("Target", Align::Left),
        ("Outcome", Align::Left),
        ("Duration (ms)", Align::Right),
        ("Exit", Align::Right),
        ("Detail", Align::Left),
        ("Last output", Align::Left),
    ]);
    for phase in &report.phases {
        for hook in &phase.hooks {
            let (kind, target) = split_action(hook);
            let mark = match hook.outcome {
                HookStatus::Failed => Mark::Bad,
                HookStatus::Warned => Mark::Warn,
                HookStatus::Ok | HookStatus::Skipped => Mark::Plain,
            };
            t.rows.push(vec![
                Cell::plain(phase.header.phase.clone()),
                Cell::plain(hook.when.as_str()),
                Cell::plain(kind),
                Cell::plain(target),
                Cell::marked(hook.outcome.as_str(), mark),
                Cell::plain(format!("{:.0}", hook.duration_ms)),
                Cell::plain(hook.exit_status.map(|s| s.to_string()).unwrap_or_default()),
                Cell::marked(hook.detail.clone(), mark),
                Cell::plain(hook.output_tail.last().cloned().unwrap_or_default()),
            ]);
        }
    }
    t
}

/// `("http", "POST http://…")` from the action label `http POST http://…`.
fn split_action(hook: &HookOutcome) -> (String, String) {
    match hook.action.split_once(' ') {
        Some((kind, rest)) => (kind.to_string(), rest.to_string()),
        None => (hook.action.clone(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::HookWhen;

    #[test]
    fn the_action_label_splits_into_kind_and_target() {
        let hook = |action: &str| HookOutcome {
            when: HookWhen::Before,
            action: action.into(),
            outcome: HookStatus::Ok,
            duration_ms: 0.0,
            detail: String::new(),
            exit_status: None,
            output_tail: Vec::new(),
            mark: None,
        };
        assert_eq!(
            split_action(&hook("exec ./reset.sh --all")),
            ("exec".into(), "./reset.sh --all".into())
        );
        assert_eq!(
            split_action(&hook("invalid")),
            ("invalid".into(), String::new())
        );
    }
}
