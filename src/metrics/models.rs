//! Mixes: a phase's figures by the served model each request named, and by the archetype
//! (workload) each was drawn from, tallied record by record as part of the phase's one
//! tally, so a sampled phase's groups cover every request. One tally serves both.

use std::ops::Deref;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::select::{Rescan, distribution_by_selection};
use super::tally::Column;
use super::{Distributions, Goodput, per_second};
use crate::client::RequestRecord;
use crate::figure::{FIGURES, Figure};
use crate::plan::Objective;
use crate::quantile::PercentileMethod;

/// The requests of a phase in one group of a mix (one model, one archetype).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MixFigures {
    pub requests: u64,
    /// Share of the phase's requests, 0 to 1.
    pub share: f64,
    pub errors: u64,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    /// This group's requests per second over the phase's elapsed time (the shares of the
    /// phase's rate).
    pub request_rate: f64,
    /// This group's output tokens per second over the phase's elapsed time.
    pub output_tokens_per_second: f64,
    /// This group's requests meeting every SLO (its rate over the phase's elapsed time, its
    /// fraction of the group's requests); present when the plan sets an SLO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
    /// Each of the plan's SLO objectives against this group's figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<super::SloCheck>,
    /// Every figure over this group's requests, under the figure's name, as in the phase's
    /// summary.
    #[serde(flatten)]
    pub figures: Distributions,
}

/// The requests of a phase that named one model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ModelFigures {
    /// The served model name (a base model or an adapter).
    pub model: String,
    #[serde(flatten)]
    pub of: MixFigures,
}

/// The requests of a phase drawn from one archetype of its `mix`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ArchetypeFigures {
    /// The archetype: the workload's name in the plan.
    pub archetype: String,
    #[serde(flatten)]
    pub of: MixFigures,
}

impl Deref for ModelFigures {
    type Target = MixFigures;
    fn deref(&self) -> &MixFigures {
        &self.of
    }
}

impl Deref for ArchetypeFigures {
    type Target = MixFigures;
    fn deref(&self) -> &MixFigures {
        &self.of
    }
}

/// Which name of a record a tally groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MixKey {
    Model,
    Archetype,
}

impl MixKey {
    fn of(self, r: &RequestRecord) -> Option<&str> {
        match self {
            MixKey::Model => r.model.as_deref(),
            MixKey::Archetype => r.archetype.as_deref(),
        }
    }

    fn column(self, at: u32, figure: Figure) -> Column {
        match self {
            MixKey::Model => Column::Model(at, figure),
            MixKey::Archetype => Column::Archetype(at, figure),
        }
    }
}

/// Running figures by one name of the records; records without it (no mix) are left out.
#[derive(Debug, Clone)]
pub struct MixTally {
    key: MixKey,
    /// Names in the order first seen; a name's position is its column tag.
    names: Vec<String>,
    counts: Vec<MixCounts>,
}

/// The model mix's tally.
pub type ModelTally = MixTally;

#[derive(Debug, Clone)]
struct MixCounts {
    requests: u64,
    errors: u64,
    good: u64,
    input_tokens: u64,
    output_tokens: u64,
    /// Per figure: values and their sum.
    columns: [(u64, f64); FIGURES.len()],
}

impl MixTally {
    pub fn new(key: MixKey) -> Self {
        MixTally {
            key,
            names: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// Count one record (`good`: it met the SLO); each value goes to `sink` under its group.
    pub fn add(&mut self, r: &RequestRecord, good: bool, sink: &mut dyn FnMut(Column, f64)) {
        let Some(name) = self.key.of(r) else {
            return;
        };
        let at = match self.names.iter().position(|n| n == name) {
            Some(at) => at,
            None => {
                self.names.push(name.to_string());
                self.counts.push(MixCounts {
                    requests: 0,
                    errors: 0,
                    good: 0,
                    input_tokens: 0,
                    output_tokens: 0,
                    columns: [(0, 0.0); FIGURES.len()],
                });
                self.names.len() - 1
            }
        };
        let c = &mut self.counts[at];
        c.requests += 1;
        c.good += u64::from(good);
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
                sink(self.key.column(at as u32, figure), v);
            }
        }
    }

    /// One entry per name, most requests first (then by name); empty when no record had
    /// one. Rates are over the phase's `elapsed_s`; `slo` (when the plan sets one) gives
    /// each group its goodput and verdicts; `column` opens a group's values of a figure
    /// for scanning again.
    pub fn finish<S: Rescan>(
        &self,
        method: PercentileMethod,
        elapsed_s: f64,
        slo: Option<&[Objective]>,
        column: &mut impl FnMut(Column) -> Result<S, S::Error>,
    ) -> Result<Vec<(String, MixFigures)>, S::Error> {
        let total: u64 = self.counts.iter().map(|c| c.requests).sum();
        let mut groups = Vec::with_capacity(self.names.len());
        for (at, (name, c)) in self.names.iter().zip(&self.counts).enumerate() {
            let mut figures = Distributions::default();
            for spec in &FIGURES {
                let (n, sum) = c.columns[spec.figure.index()];
                if n > 0 {
                    let mut source = column(self.key.column(at as u32, spec.figure))?;
                    let d = distribution_by_selection(&mut source, n, sum, method, spec.intervals)?;
                    figures.set(spec.figure, Some(d));
                }
            }
            let mix = MixFigures {
                requests: c.requests,
                share: c.requests as f64 / total.max(1) as f64,
                errors: c.errors,
                total_input_tokens: c.input_tokens,
                total_output_tokens: c.output_tokens,
                request_rate: per_second(c.requests as f64, elapsed_s),
                output_tokens_per_second: per_second(c.output_tokens as f64, elapsed_s),
                goodput: slo.map(|_| Goodput {
                    requests: c.good,
                    request_rate: per_second(c.good as f64, elapsed_s),
                    fraction: c.good as f64 / c.requests.max(1) as f64,
                }),
                slo: slo.map_or_else(Vec::new, |objectives| {
                    super::slo_checks(objectives, &figures, c.requests, c.errors)
                }),
                figures,
            };
            groups.push((name.clone(), mix));
        }
        groups.sort_by(|a, b| b.1.requests.cmp(&a.1.requests).then(a.0.cmp(&b.0)));
        Ok(groups)
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

    #[test]
    fn each_archetype_gets_its_goodput_and_slo_verdicts_and_the_phase_its_own() {
        let archetype = |index: u64, name: &str, ttft_ms: f64| RequestRecord {
            model: None,
            archetype: Some(name.to_string()),
            ..record(index, "-", ttft_ms)
        };
        let records = vec![
            archetype(0, "short", 10.0),
            archetype(1, "short", 20.0),
            archetype(2, "long", 300.0),
            archetype(3, "short", 30.0),
            archetype(4, "long", 50.0),
        ];
        let slo: crate::plan::Slo = serde_json::from_value(serde_json::json!({
            "ttft": {"p50": "100ms"}
        }))
        .unwrap();
        let figures = tally_records(&records, PercentileMethod::default(), Some(&slo), true);
        assert!(figures.models.is_empty());
        let [short, long] = &figures.archetypes[..] else {
            panic!("two archetypes: {:?}", figures.archetypes);
        };
        assert_eq!((short.archetype.as_str(), short.requests), ("short", 3));
        assert_eq!((long.archetype.as_str(), long.requests), ("long", 2));
        let good = |a: &ArchetypeFigures| a.goodput.as_ref().unwrap().requests;
        assert_eq!((good(short), good(long)), (3, 1));
        assert!((long.goodput.as_ref().unwrap().fraction - 0.5).abs() < 1e-12);
        assert_eq!(short.slo.len(), 1);
        assert_eq!(short.slo[0].objective, "ttft.p50");
        assert!(short.slo[0].met);
        // The long prompts' median (linear between 50 and 300 ms) misses 100 ms.
        assert!(!long.slo[0].met, "{:?}", long.slo);
        assert!(long.slo[0].value.unwrap() > 0.1);
        // The whole phase: p50 of all five is 30 ms, within the limit.
        assert_eq!(figures.slo.len(), 1);
        assert!(figures.slo[0].met);
        assert_eq!(figures.summary.goodput.unwrap().requests, 4);
    }
}
