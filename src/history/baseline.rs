//! Baselines as code: a small YAML file in the plan's repository (`baselines.yaml` beside
//! the plan) naming runs to compare against, and resolving a name to a stored run.
//!
//! ```yaml
//! release:  {tag: v1.2}                       # the newest run tagged v1.2
//! pinned:   {run: 2026-03-01T10-00-00Z-ab12}  # one run by id
//! best:     {best_of_last: 5, figure: ttft.p99, gates: ["ttft.p99 < +10%"]}
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::series::{RunId, SeriesKey};
use super::store::{HistoryError, RunFilter, Store};
use crate::figure::Better;
use crate::report::model::figure_path::FigurePath;

/// How a baseline picks its run.
#[derive(Debug, Clone, PartialEq)]
pub enum Pick {
    Run(RunId),
    /// The newest run carrying this tag.
    Tag(String),
    /// Of the last `runs` complete, not excluded runs, the one with the best `figure`
    /// (averaged over the plan's phases, or of `phase` alone).
    BestOfLast {
        runs: usize,
        figure: FigurePath,
        phase: Option<String>,
    },
}

/// One named baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub name: String,
    pub pick: Pick,
    /// Gates (`compare`'s grammar) checked against it, beside any given on the command line.
    pub gates: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    run: Option<String>,
    tag: Option<String>,
    best_of_last: Option<usize>,
    figure: Option<String>,
    phase: Option<String>,
    #[serde(default)]
    gates: Vec<String>,
}

/// Why a baselines file or name did not work.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("{path}: baseline `{name}`: {message}")]
    Entry {
        path: String,
        name: String,
        message: String,
    },
    #[error("no baseline `{name}` in {path}; it names: {known}")]
    Unknown {
        path: String,
        name: String,
        known: String,
    },
    #[error("baseline `{name}`: {message}")]
    Unresolved { name: String, message: String },
    #[error(transparent)]
    History(#[from] HistoryError),
}

/// Every baseline in `path`, in file order.
pub fn load(path: &Path) -> Result<Vec<Baseline>, BaselineError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| BaselineError::File {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    parse(&text, &shown)
}

/// Baselines from the text of a baselines file (`path` names it in errors).
pub fn parse(text: &str, path: &str) -> Result<Vec<Baseline>, BaselineError> {
    let entries: indexmap::IndexMap<String, Entry> =
        serde_saphyr::from_str(text).map_err(|e| BaselineError::File {
            path: path.to_string(),
            message: e.to_string(),
        })?;
    entries
        .into_iter()
        .map(|(name, e)| {
            let bad = |message: &str| BaselineError::Entry {
                path: path.to_string(),
                name: name.clone(),
                message: message.to_string(),
            };
            let pick = match (e.run, e.tag, e.best_of_last) {
                (Some(run), None, None) => Pick::Run(run),
                (None, Some(tag), None) => Pick::Tag(tag),
                (None, None, Some(runs)) => {
                    let figure = e
                        .figure
                        .ok_or_else(|| bad("best_of_last needs `figure` (e.g. ttft.p99)"))?
                        .parse::<FigurePath>()
                        .map_err(|err| bad(&err.to_string()))?;
                    if runs == 0 {
                        return Err(bad("best_of_last must be at least 1"));
                    }
                    if figure.better() == Better::Neither {
                        return Err(bad(
                            "its figure has no better direction to pick the best by",
                        ));
                    }
                    Pick::BestOfLast {
                        runs,
                        figure,
                        phase: e.phase.clone(),
                    }
                }
                _ => return Err(bad("give exactly one of `run`, `tag` or `best_of_last`")),
            };
            if e.phase.is_some() && !matches!(pick, Pick::BestOfLast { .. }) {
                return Err(bad("`phase` goes with best_of_last only"));
            }
            Ok(Baseline {
                name,
                pick,
                gates: e.gates,
            })
        })
        .collect()
}

/// The baseline called `name`.
pub fn find<'a>(
    baselines: &'a [Baseline],
    name: &str,
    path: &str,
) -> Result<&'a Baseline, BaselineError> {
    baselines
        .iter()
        .find(|b| b.name == name)
        .ok_or_else(|| BaselineError::Unknown {
            path: path.to_string(),
            name: name.to_string(),
            known: baselines
                .iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The run `baseline` names among `plan`'s stored runs.
pub fn resolve(baseline: &Baseline, store: &dyn Store, plan: &str) -> Result<RunId, BaselineError> {
    let unresolved = |message: String| BaselineError::Unresolved {
        name: baseline.name.clone(),
        message,
    };
    let runs = store.runs(&RunFilter {
        plan: Some(plan.to_string()),
        ..RunFilter::default()
    })?;
    match &baseline.pick {
        Pick::Run(id) => {
            let run = store.run(id)?.summary;
            if run.plan != plan {
                return Err(unresolved(format!(
                    "run {id} is of plan `{}`, not `{plan}`",
                    run.plan
                )));
            }
            Ok(run.id)
        }
        Pick::Tag(tag) => runs
            .iter()
            .rev()
            .find(|r| r.tags.contains(tag))
            .map(|r| r.id.clone())
            .ok_or_else(|| unresolved(format!("no run of `{plan}` is tagged `{tag}`"))),
        Pick::BestOfLast {
            runs: n,
            figure,
            phase,
        } => {
            let candidates: Vec<&RunId> = runs
                .iter()
                .filter(|r| r.complete && r.excluded.is_none())
                .map(|r| &r.id)
                .collect();
            let last = &candidates[candidates.len().saturating_sub(*n)..];
            let name = figure.to_string();
            let keys: Vec<SeriesKey> = store
                .keys(Some(plan))?
                .into_iter()
                .filter(|k| k.figure == name && phase.as_ref().is_none_or(|p| *p == k.phase))
                .collect();
            // Each run's figure, averaged over the phases that have it.
            let mut sums: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
            for key in &keys {
                for p in store.series(key)? {
                    if let Some(run) = last.iter().find(|r| ***r == p.run) {
                        let e = sums.entry(run.as_str()).or_default();
                        e.0 += p.value;
                        e.1 += 1;
                    }
                }
            }
            let sign = if figure.better() == Better::Lower {
                1.0
            } else {
                -1.0
            };
            sums.into_iter()
                .map(|(run, (sum, count))| (run, sign * sum / count as f64))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(run, _)| run.to_string())
                .ok_or_else(|| {
                    unresolved(format!(
                        "none of the last {n} runs of `{plan}` has `{name}`"
                    ))
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_run_of_another_plan_is_refused() {
        let store = crate::history::synthetic::store("nightly", 2, 1, &["ttft.p99"]);
        let pinned = Baseline {
            name: "pinned".into(),
            pick: Pick::Run("run-0001".into()),
            gates: Vec::new(),
        };
        assert_eq!(resolve(&pinned, &store, "nightly").unwrap(), "run-0001");
        let err = resolve(&pinned, &store, "weekly").unwrap_err().to_string();
        assert!(
            err.contains("run run-0001 is of plan `nightly`, not `weekly`"),
            "{err}"
        );
    }

    #[test]
    fn reads_each_kind_and_refuses_an_ambiguous_entry() {
        let text = "release: {tag: v1.2}\npinned: {run: abc}\nbest: {best_of_last: 5, figure: ttft.p99, gates: ['ttft.p99 < +10%']}\n";
        let b = parse(text, "baselines.yaml").unwrap();
        assert_eq!(b[0].pick, Pick::Tag("v1.2".into()));
        assert_eq!(b[1].pick, Pick::Run("abc".into()));
        assert!(matches!(b[2].pick, Pick::BestOfLast { runs: 5, .. }));
        assert_eq!(b[2].gates, vec!["ttft.p99 < +10%".to_string()]);
        let err = parse("x: {tag: a, run: b}\n", "b.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("exactly one of"), "{err}");
        let err = parse("x: {best_of_last: 3}\n", "b.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs `figure`"), "{err}");
        let err = parse("x: {best_of_last: 3, figure: input_tokens.p50}\n", "b.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no better direction"), "{err}");
        let err = parse("x: {tagg: v1}\n", "b.yaml").unwrap_err().to_string();
        assert!(err.contains("b.yaml") && err.contains("tagg"), "{err}");
    }
}
