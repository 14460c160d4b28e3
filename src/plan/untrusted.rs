//! `validate --untrusted`: the rules for plans from strangers (pull requests in CI): no file
//! read outside the plan's directory, nothing executed.

use std::path::{Component, Path};

use super::{Plan, TokenizerSpec};

/// Every reason `plan` may not run untrusted, each naming the field and value.
pub fn untrusted_problems(plan: &Plan) -> Vec<String> {
    let mut problems = path_problems(plan);
    problems.extend(exec_problems(plan));
    problems
}

/// Files the plan reads must stay inside its directory: no absolute path, no `..` that
/// climbs out of it.
pub fn path_problems(plan: &Plan) -> Vec<String> {
    let tokenizer = |owner: String, spec: &Option<TokenizerSpec>| {
        let mut out = Vec::new();
        if let Some(spec) = spec {
            if let Some(p) = &spec.path {
                out.push((format!("{owner}.tokenizer.path"), p.clone()));
            }
            if let Some(p) = &spec.chat_template {
                out.push((format!("{owner}.tokenizer.chat_template"), p.clone()));
            }
        }
        out
    };
    let mut owned: Vec<(String, String)> = Vec::new();
    for (name, target) in &plan.targets {
        owned.extend(tokenizer(format!("targets.{name}"), &target.tokenizer));
    }
    for (name, workload) in &plan.workloads {
        owned.extend(tokenizer(format!("workloads.{name}"), &workload.tokenizer));
        if let Some(d) = &workload.dataset {
            owned.push((format!("workloads.{name}.dataset.path"), d.path.clone()));
        }
        if let Some(t) = &workload.trace {
            owned.push((format!("workloads.{name}.trace.path"), t.path.clone()));
        }
    }
    owned
        .into_iter()
        .filter_map(|(field, path)| {
            leaves_plan_dir(&path).then(|| {
                format!(
                    "{field}: `{path}` is outside the plan's directory; an untrusted plan may \
                     read only files beside it or below it"
                )
            })
        })
        .collect()
}

/// Whether a plan-relative path is absolute or climbs above the plan's directory.
pub fn leaves_plan_dir(path: &str) -> bool {
    let mut depth: i64 = 0;
    for component in Path::new(path).components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return true,
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// Anything the plan would execute: every `exec` hook, named by phase and hook.
pub fn exec_problems(plan: &Plan) -> Vec<String> {
    super::hooks::exec_hooks(plan)
        .into_iter()
        .map(|(p, when, h, command)| {
            let name = plan.phases[p].name.as_deref().unwrap_or("?");
            format!(
                "phases[{p}] (`{name}`).{when}[{h}].exec: runs the local program `{}`; an \
                 untrusted plan may not execute anything",
                command.join(" ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_leave_the_plan_dir() {
        for inside in [
            "a.jsonl",
            "data/a.jsonl",
            "./a",
            "data/../a.jsonl",
            "a/b/../../c",
        ] {
            assert!(!leaves_plan_dir(inside), "{inside}");
        }
        for outside in ["../a.jsonl", "/etc/passwd", "data/../../a", "./../a", ".."] {
            assert!(leaves_plan_dir(outside), "{outside}");
        }
    }
}
