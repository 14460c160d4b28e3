//! `fault_on`/`fault_off` actions: switch the target simulator's faults over its loopback
//! control endpoint (`/sim/faults`).

use std::time::Duration;

use crate::sim::SimFault;

use super::hooks::{HookContext, Ran, check_status, server_root};

/// `POST` the rule (switch on) or `DELETE` (switch off) on the phase's target.
pub(super) async fn switch(
    rule: Option<&SimFault>,
    ctx: &HookContext<'_>,
    timeout: Duration,
) -> Ran {
    let url = format!("{}/sim/faults", server_root(ctx));
    let request = match rule {
        Some(rule) => {
            let body = match serde_json::to_string(rule) {
                Ok(body) => body,
                Err(e) => return Ran::new(format!("fault_on POST {url}"), Err(e.to_string())),
            };
            ctx.http
                .post(&url)
                .header("content-type", "application/json")
                .body(body)
        }
        None => ctx.http.delete(&url),
    };
    let label = match rule {
        Some(_) => format!("fault_on POST {url}"),
        None => format!("fault_off DELETE {url}"),
    };
    let result = check_status(request.timeout(timeout).send().await, &url, None);
    Ran::new(label, result)
}
