//! Runs a phase's `before`/`during`/`after` actions and records each one's outcome.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::plan::{Hook, HookAction, HookWhen, OnFailure};
use crate::report::{HookOutcome, HookStatus};
use crate::sim::SimFault;

use super::exec;
use super::targets::PhaseTarget;

/// Default limit on one action.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// What every action of one phase's hooks may need.
pub(super) struct HookContext<'a> {
    pub phase: &'a str,
    /// The phase's target: its base URL, and the client side traffic to it goes through.
    pub target: &'a PhaseTarget,
    /// `run --allow-exec` was given.
    pub allow_exec: bool,
    /// Where `exec` programs run: the plan's directory.
    pub plan_dir: &'a Path,
}

/// One action's result, with what an `exec` action adds.
pub(super) struct Ran {
    action: String,
    result: Result<String, String>,
    exit_status: Option<i32>,
    output_tail: Vec<String>,
}

impl Ran {
    pub(super) fn new(action: String, result: Result<String, String>) -> Ran {
        Ran {
            action,
            result,
            exit_status: None,
            output_tail: Vec::new(),
        }
    }
}

/// Run `hooks` in order; stops at the first failing `fail` action and returns its message.
pub(super) async fn run_hooks(
    when: HookWhen,
    hooks: &[Hook],
    ctx: &HookContext<'_>,
    outcomes: &mut Vec<HookOutcome>,
) -> Option<String> {
    for hook in hooks {
        let started = Instant::now();
        let ran = run_one(when, hook, ctx).await;
        let failed = ran.result.is_err();
        let detail = ran.result.unwrap_or_else(|e| e);
        let action = ran.action;
        let outcome = match (failed, hook.on_failure) {
            (false, _) => HookStatus::Ok,
            (true, OnFailure::Fail) => HookStatus::Failed,
            (true, OnFailure::Warn) => HookStatus::Warned,
        };
        if failed {
            eprintln!("warning: {when} hook `{action}` failed: {detail}");
        }
        outcomes.push(HookOutcome {
            when,
            action: action.clone(),
            outcome,
            duration_ms: started.elapsed().as_secs_f64() * 1e3,
            detail: detail.clone(),
            exit_status: ran.exit_status,
            output_tail: ran.output_tail,
            mark: hook.mark_name().map(str::to_string),
        });
        if outcome == HookStatus::Failed {
            return Some(format!("{when} hook `{action}` failed: {detail}"));
        }
    }
    None
}

/// Run one action.
async fn run_one(when: HookWhen, hook: &Hook, ctx: &HookContext<'_>) -> Ran {
    let timeout = hook.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0);
    let http = &ctx.target.side;
    match &hook.action {
        HookAction::FaultOn(rule) => switch_faults(Some(rule), ctx, timeout).await,
        HookAction::FaultOff => switch_faults(None, ctx, timeout).await,
        HookAction::Exec(command) => run_exec(when, command, ctx, timeout).await,
        HookAction::Sleep(sleep) => {
            tokio::time::sleep(sleep.0).await;
            Ran::new(
                format!("sleep {:.3}s", sleep.as_secs_f64()),
                Ok("slept".into()),
            )
        }
        HookAction::WaitHealthy(wait) => {
            let limit = wait.timeout.map_or(timeout, |t| t.0);
            let label = format!("wait_healthy {}", wait.url);
            Ran::new(label, wait_healthy(http, &wait.url, limit).await)
        }
        HookAction::Http(spec) => {
            let method = spec.method.as_deref().unwrap_or("POST").to_uppercase();
            let label = format!("http {method} {}", spec.url);
            let Ok(parsed) = reqwest::Method::from_bytes(method.as_bytes()) else {
                return Ran::new(label, Err(format!("`{method}` is not an HTTP method")));
            };
            let mut request = http.request(parsed, &spec.url).timeout(timeout);
            for (k, v) in &spec.headers {
                request = request.header(k, v);
            }
            if let Some(body) = &spec.body {
                request = request.body(body.clone());
            }
            let result = check_status(request.send().await, &spec.url, spec.expect_status);
            Ran::new(label, result)
        }
        // vLLM's path, which the simulator serves as well.
        HookAction::ResetPrefixCache => {
            let url = format!("{}/reset_prefix_cache", server_root(ctx));
            let label = format!("reset_prefix_cache POST {url}");
            let result = check_status(http.post(&url).timeout(timeout).send().await, &url, None);
            Ran::new(label, result)
        }
    }
}

/// The target's base URL without its `/v1`: where the server's own endpoints live.
pub(super) fn server_root(ctx: &HookContext<'_>) -> String {
    crate::workload::tokens::server_root(&ctx.target.endpoint.base_url)
}

/// An `exec` action; refused (never run) unless the run allows programs.
async fn run_exec(
    when: HookWhen,
    command: &[String],
    ctx: &HookContext<'_>,
    timeout: Duration,
) -> Ran {
    let label = format!("exec {}", command.join(" "));
    if !ctx.allow_exec {
        return Ran::new(
            label,
            Err("running programs is not allowed; start the run with `--allow-exec`".into()),
        );
    }
    let env = exec::ExecEnv {
        dir: ctx.plan_dir,
        vars: vec![
            ("SERVEBENCH_PHASE", ctx.phase.to_string()),
            ("SERVEBENCH_HOOK", when.as_str().to_string()),
            ("SERVEBENCH_BASE_URL", ctx.target.endpoint.base_url.clone()),
        ],
    };
    let done = exec::run_exec(command, &env, timeout).await;
    Ran {
        action: label,
        result: done.result,
        exit_status: done.exit_status,
        output_tail: done.output_tail,
    }
}

pub(super) fn check_status(
    response: Result<reqwest::Response, reqwest::Error>,
    url: &str,
    expect: Option<u16>,
) -> Result<String, String> {
    let response = response.map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let good = match expect {
        Some(code) => status.as_u16() == code,
        None => status.is_success(),
    };
    if good {
        Ok(format!("HTTP {}", status.as_u16()))
    } else {
        Err(format!("{url} answered HTTP {}", status.as_u16()))
    }
}

async fn wait_healthy(
    http: &reqwest::Client,
    url: &str,
    limit: Duration,
) -> Result<String, String> {
    let started = Instant::now();
    let mut last = String::from("no answer");
    while started.elapsed() < limit {
        let left = limit.saturating_sub(started.elapsed());
        match http
            .get(url)
            .timeout(left.max(Duration::from_millis(1)))
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => return Ok(format!("HTTP {}", r.status().as_u16())),
            Ok(r) => last = format!("HTTP {}", r.status().as_u16()),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(200).min(limit.saturating_sub(started.elapsed())))
            .await;
    }
    Err(format!(
        "{url} not healthy after {:.1}s (last: {last})",
        limit.as_secs_f64()
    ))
}

/// `fault_on`/`fault_off`: switch the target simulator's faults over its loopback control
/// endpoint (`/sim/faults`).
/// `POST` the rule (switch on) or `DELETE` (switch off) on the phase's target.
async fn switch_faults(rule: Option<&SimFault>, ctx: &HookContext<'_>, timeout: Duration) -> Ran {
    let url = format!("{}/sim/faults", server_root(ctx));
    let request = match rule {
        Some(rule) => {
            let body = match serde_json::to_string(rule) {
                Ok(body) => body,
                Err(e) => return Ran::new(format!("fault_on POST {url}"), Err(e.to_string())),
            };
            ctx.target
                .side
                .post(&url)
                .header("content-type", "application/json")
                .body(body)
        }
        None => ctx.target.side.delete(&url),
    };
    let label = match rule {
        Some(_) => format!("fault_on POST {url}"),
        None => format!("fault_off DELETE {url}"),
    };
    let result = check_status(request.timeout(timeout).send().await, &url, None);
    Ran::new(label, result)
}
