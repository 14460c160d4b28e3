//! Writer of seed 004's multi-phase gateway layout: run labels at the top, then one entry per
//! phase with seed 004's keys and units (seconds, linear-interpolation percentiles).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::multiphase::{MultiPhaseEntry, MultiPhaseRun};
use crate::figure::Figure;
use crate::metrics::Distribution;
use crate::plan::PercentileMethod;
use crate::report::model::{PhaseResult, Report};

/// A whole run in seed 004's layout.
pub type GatewayDocument = MultiPhaseRun<GatewayDistribution>;

/// Seed 004's five order statistics. Token counts write `min` and `max` as integers, as the
/// seed does (they are samples; the percentiles are interpolated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayDistribution {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: Value,
    pub max: Value,
}

impl GatewayDistribution {
    fn seconds(d: &Distribution) -> Self {
        GatewayDistribution {
            p50: d.p50,
            p95: d.p95,
            p99: d.p99,
            min: Value::from(d.min),
            max: Value::from(d.max),
        }
    }

    fn tokens(d: &Distribution) -> Self {
        let count = |x: f64| {
            if x.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&x) {
                Value::from(x as u64)
            } else {
                Value::from(x)
            }
        };
        GatewayDistribution {
            p50: d.p50,
            p95: d.p95,
            p99: d.p99,
            min: count(d.min),
            max: count(d.max),
        }
    }
}

/// The whole report in seed 004's layout.
pub fn document(report: &Report) -> GatewayDocument {
    let meta = &report.metadata;
    let text = |key: &str| match meta.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    let notes = match meta.get("notes") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    };
    MultiPhaseRun {
        model: text("model").or_else(|| single_model(report)),
        engine: text("engine"),
        hardware: text("hardware").or_else(|| text("gpu")),
        precision: text("precision"),
        method: text("method"),
        notes,
        phases: report
            .phases
            .iter()
            .map(|p| phase(p, report.timing_methodology.percentile_method))
            .collect(),
    }
}

/// Pretty JSON in seed 004's key order.
pub fn render(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(&document(report)).unwrap_or_default();
    text.push('\n');
    text
}

/// The model every target serves, when they agree.
fn single_model(report: &Report) -> Option<String> {
    let mut models = report
        .plan
        .targets
        .values()
        .filter_map(|t| t.model.as_ref());
    let first = models.next()?;
    models.all(|m| m == first).then(|| first.clone())
}

/// One phase. Seed 004's percentiles interpolate linearly; a phase summarized with another
/// method is re-summarized from its records with linear interpolation when it has them.
fn phase(p: &PhaseResult, method: PercentileMethod) -> MultiPhaseEntry<GatewayDistribution> {
    let relinear = (method != PercentileMethod::Linear && !p.request_timings.is_empty())
        .then(|| crate::metrics::summarize(&p.request_timings, PercentileMethod::Linear, None));
    let s = relinear.as_ref().unwrap_or(&p.summary);
    let stats = |figure: Figure, unit: fn(&Distribution) -> GatewayDistribution| {
        s.distribution(figure).map(unit)
    };
    MultiPhaseEntry {
        phase: p.header.phase.clone(),
        route: Some(p.header.route.clone()),
        workload: Some(p.header.workload.clone()),
        concurrency: p.header.concurrency,
        requests: p.summary.requests,
        success: p.summary.success,
        errors: p.summary.errors,
        elapsed: p.summary.elapsed,
        output_tokens_per_second: p.summary.output_tokens_per_second,
        request_rate: p.summary.request_rate,
        ttft: stats(Figure::Ttft, GatewayDistribution::seconds),
        tpot: stats(Figure::Tpot, GatewayDistribution::seconds),
        e2e: stats(Figure::E2e, GatewayDistribution::seconds),
        input_tokens: stats(Figure::InputTokens, GatewayDistribution::tokens),
        output_tokens: stats(Figure::OutputTokens, GatewayDistribution::tokens),
        start_offset_seconds: p.header.start_offset_seconds,
        end_offset_seconds: p.end_offset_seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_extremes_are_integers_and_latencies_stay_floats() {
        let d = Distribution {
            p50: 538.0,
            p95: 542.0,
            p99: 543.32,
            min: 533.0,
            max: 544.0,
            ..Distribution::default()
        };
        let t = serde_json::to_string(&GatewayDistribution::tokens(&d)).unwrap();
        assert_eq!(
            t,
            r#"{"p50":538.0,"p95":542.0,"p99":543.32,"min":533,"max":544}"#
        );
        let s = serde_json::to_string(&GatewayDistribution::seconds(&d)).unwrap();
        assert!(s.ends_with(r#""min":533.0,"max":544.0}"#), "{s}");
    }
}
