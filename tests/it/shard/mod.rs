//! Sharded runs: merge checks on hand-built shard reports (`merge`), shards run concurrently
//! against one simulator and merged (`runs`), and the Kubernetes example (`examples`).

mod backends;
mod examples;
mod merge;
mod runs;

use crate::common::assert_valid_report;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use indexmap::IndexMap;
use servebench::client::RequestRecord;
use servebench::metrics::{self, PhaseSummary};
use servebench::plan::{ExpandOptions, PercentileMethod, Plan, prepare_from_value};
use servebench::report::{
    HostFacts, PhaseHeader, PhaseResult, PlanSource, PromptTokenCheck, REPORT_SCHEMA, Report,
    TimingMethodology, ToolInfo, WarmupResult,
};
use servebench::shard::{ShardInfo, merge_reports, plan_sha256};

fn servebench() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin!("servebench"))
}

fn write_plan(dir: &Path, yaml: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}
