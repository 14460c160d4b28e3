//! The trend report as JSON, for scripts: the alerts as the store keeps them, then per
//! series its latest value, current level and changes, in the figure's stored unit.

use serde_json::{Value, json};

use super::{TrendReport, unit_of, verdict_word};
use crate::history::trend::{SeriesTrend, eligible};

/// The JSON document of `report`.
pub fn render(report: &TrendReport) -> String {
    let doc = json!({
        "plan": report.plan,
        "alerts": report.alerts,
        "series": report.trends.iter().map(|t| series(report, t)).collect::<Vec<_>>(),
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

fn series(report: &TrendReport, t: &SeriesTrend) -> Value {
    let latest = t.points.iter().rev().find(|p| eligible(p));
    json!({
        "key": t.key,
        "unit": unit_of(&t.key.figure).symbol(),
        "runs": t.points.len(),
        "eligible_runs": t.points.iter().filter(|p| eligible(p)).count(),
        "latest": latest.map(|p| json!({"run": p.run, "value": p.value})),
        "level": t.segments.last().and_then(|s| s.levels.last()).map(|l| l.mean),
        "changes": t.changes().map(|c| json!({
            "run": c.run,
            "before": c.before,
            "after": c.after,
            "relative": c.relative(),
            "verdict": verdict_word(c),
        })).collect::<Vec<_>>(),
        "alert": report.alert_of(t).map(|a| a.id),
    })
}
