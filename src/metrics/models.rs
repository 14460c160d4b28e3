//! Model mixes: a phase's figures by the served model each request named, tallied record by
//! record as part of the phase's one tally, so a sampled phase's models cover every request.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::select::{Rescan, distribution_by_selection};
use super::tally::Column;
use super::{Distributions, per_second};
use crate::client::RequestRecord;
use crate::figure::{FIGURES, Figure};
use crate::quantile::PercentileMethod;

/// The requests of a phase that named one model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ModelFigures {
    /// The served model name (a base model or an adapter).
    pub model: String,
    pub requests: u64,
    /// Share of the phase's requests, 0 to 1.
    pub share: f64,
    pub errors: u64,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    /// This model's requests per second over the phase's elapsed time (the shares of the
    /// phase's rate).
    pub request_rate: f64,
    /// This model's output tokens per second over the phase's elapsed time.
    pub output_tokens_per_second: f64,
    /// Every figure over this model's requests, under the figure's name, as in the phase's
    /// summary.
    #[serde(flatten)]
    pub figures: Distributions,
}

/// Running figures by model; records that name no model (no mix) are left out.
#[derive(Debug, Clone, Default)]
pub struct ModelTally {
    /// Names in the order first seen; a name's position is its column tag.
    names: Vec<String>,
    counts: Vec<ModelCounts>,
}

#[derive(Debug, Clone)]
struct ModelCounts {
    requests: u64,
    errors: u64,
    input_tokens: u64,
    output_tokens: u64,
    /// Per figure: values and their sum.
    columns: [(u64, f64); FIGURES.len()],
}

impl ModelTally {
    /// Count one record; each value goes to `sink` under its model.
    pub fn add(&mut self, r: &RequestRecord, sink: &mut dyn FnMut(Column, f64)) {
        let Some(model) = &r.model else {
            return;
        };
        let at = match self.names.iter().position(|n| n == model) {
            Some(at) => at,
            None => {
                self.names.push(model.clone());
                self.counts.push(ModelCounts {
                    requests: 0,
                    errors: 0,
                    input_tokens: 0,
                    output_tokens: 0,
                    columns: [(0, 0.0); FIGURES.len()],
                });
                self.names.len() - 1
            }
        };
        let c = &mut self.counts[at];
        c.requests += 1;
        if r.is_ok() {
            c.input_tokens += r.prompt_tokens.unwrap_or(0);
            c.output_tokens += r.output_tokens.unwrap_or(0);
        } else {
            c.errors += 1;
        }
        for figure in Figure::all() {
            if let Some(v) = r.value(figure) {
                let slot = &mut c.columns[figure.index()];
                slot.0 += 1;
                slot.1 += v;
                sink(Column::Model(at as u32, figure), v);
            }
        }
    }

    /// One entry per model, most requests first (then by name); empty when no record named a
    /// model. Rates are over the phase's `elapsed_s`; `column` opens a model's values of a
    /// figure for scanning again.
    pub fn finish<S: Rescan>(
        &self,
        method: PercentileMethod,
        elapsed_s: f64,
        column: &mut impl FnMut(Column) -> Result<S, S::Error>,
    ) -> Result<Vec<ModelFigures>, S::Error> {
        let total: u64 = self.counts.iter().map(|c| c.requests).sum();
        let mut models = Vec::with_capacity(self.names.len());
        for (at, (name, c)) in self.names.iter().zip(&self.counts).enumerate() {
            let mut figures = Distributions::default();
            for spec in &FIGURES {
                let (n, sum) = c.columns[spec.figure.index()];
                if n > 0 {
                    let mut source = column(Column::Model(at as u32, spec.figure))?;
                    let d = distribution_by_selection(&mut source, n, sum, method, spec.intervals)?;
                    figures.set(spec.figure, Some(d));
                }
            }
            models.push(ModelFigures {
                model: name.clone(),
                requests: c.requests,
                share: c.requests as f64 / total.max(1) as f64,
                errors: c.errors,
                total_input_tokens: c.input_tokens,
                total_output_tokens: c.output_tokens,
                request_rate: per_second(c.requests as f64, elapsed_s),
                output_tokens_per_second: per_second(c.output_tokens as f64, elapsed_s),
                figures,
            });
        }
        models.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.model.cmp(&b.model)));
        Ok(models)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ErrorKind, RequestError};
    use crate::metrics::tally_records;

    fn record(index: u64, model: &str, ttft_ms: f64) -> RequestRecord {
        RequestRecord {
            request_index: index,
            start_offset_ms: index as f64 * 100.0,
            ttft_ms: Some(ttft_ms),
            e2e_ms: ttft_ms + 50.0,
            output_tokens: Some(10),
            model: Some(model.to_string()),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn each_model_gets_its_own_requests_errors_rates_and_figures() {
        let mut records = vec![
            record(0, "base", 10.0),
            record(1, "adapter", 310.0),
            record(2, "base", 20.0),
            record(3, "adapter", 12.0),
            record(4, "base", 30.0),
        ];
        records.push(RequestRecord {
            error: Some(RequestError::new(ErrorKind::HttpStatus, Some(404), "no")),
            ttft_ms: None,
            output_tokens: None,
            ..record(5, "adapter-c", 0.0)
        });
        let figures = tally_records(&records, PercentileMethod::default(), None, true);
        let elapsed = figures.summary.elapsed;
        let names: Vec<&str> = figures.models.iter().map(|m| m.model.as_str()).collect();
        assert_eq!(names, ["base", "adapter", "adapter-c"]);
        let [base, adapter, unknown] = &figures.models[..] else {
            panic!("three models");
        };
        assert_eq!((base.requests, base.errors), (3, 0));
        assert!((base.share - 0.5).abs() < 1e-12);
        assert_eq!(base.total_output_tokens, 30);
        assert!((base.output_tokens_per_second - 30.0 / elapsed).abs() < 1e-9);
        let ttft = |m: &ModelFigures| *m.figures.get(Figure::Ttft).unwrap();
        assert!((ttft(base).max - 0.030).abs() < 1e-12);
        assert!((ttft(base).min - 0.010).abs() < 1e-12);
        assert!((ttft(adapter).max - 0.310).abs() < 1e-12);
        assert_eq!((unknown.requests, unknown.errors), (1, 1));
        assert!(unknown.figures.get(Figure::Ttft).is_none());
        // Records naming no model (no mix) give no breakdown.
        let plain: Vec<RequestRecord> = records
            .iter()
            .cloned()
            .map(|r| RequestRecord { model: None, ..r })
            .collect();
        let figures = tally_records(&plain, PercentileMethod::default(), None, true);
        assert!(figures.models.is_empty());
    }
}
