//! Label sets of Prometheus samples: kept per metric up to a cap, read back by label name,
//! and turned into per-label-set deltas and ranges over a phase.

use std::collections::{BTreeMap, BTreeSet};

use crate::report::GaugeRange;

/// Label sets kept per metric; a metric with more (a per-request or per-path label) is still
/// summed in full, and the report notes that its label sets were cut.
pub const LABEL_SET_CAP: usize = 64;

/// The label text of one sample line (`a="1",b="2"`), normalized: pairs sorted by name so
/// two scrapes that order them differently still match.
pub fn normalize(labels: &str) -> String {
    let mut pairs = pairs(labels);
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// The value of label `name` in a label text, unescaped.
pub fn value(labels: &str, name: &str) -> Option<String> {
    pairs(labels)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// `(name, value)` pairs of a label text; a malformed tail is dropped.
pub fn pairs(labels: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = labels.trim();
    while let Some((name, after)) = rest.split_once('=') {
        let name = name.trim().trim_start_matches(',').trim();
        let Some(quoted) = after.trim_start().strip_prefix('"') else {
            break;
        };
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => break,
                },
                '"' => {
                    end = Some(i + 1);
                    break;
                }
                c => value.push(c),
            }
        }
        let Some(end) = end else { break };
        out.push((name.to_string(), value));
        rest = quoted[end..].trim_start().trim_start_matches(',');
    }
    out
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Per-metric label sets of one scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// Metric name → label text → value.
    pub sets: BTreeMap<String, BTreeMap<String, f64>>,
    /// Metrics that had more than [`LABEL_SET_CAP`] label sets.
    pub capped: BTreeSet<String>,
}

impl Series {
    /// Record one labelled sample (label sets repeated in one scrape are summed).
    pub fn add(&mut self, name: &str, labels: &str, value: f64) {
        let sets = self.sets.entry(name.to_string()).or_default();
        let key = normalize(labels);
        if let Some(v) = sets.get_mut(&key) {
            *v += value;
        } else if sets.len() < LABEL_SET_CAP {
            sets.insert(key, value);
        } else {
            self.capped.insert(name.to_string());
        }
    }
}

/// Whether a metric's label sets say more than its sum: several of them, or a `worker`
/// label (a router's per-worker counter, which matters even with one worker).
pub fn worth_keeping(sets: &BTreeMap<String, f64>) -> bool {
    sets.len() > 1 || sets.keys().any(|k| value(k, "worker").is_some())
}

/// Counter deltas per label set over a phase, for `counters` worth keeping.
pub fn counter_deltas<'a>(
    before: &Series,
    after: &'a Series,
    counters: impl Iterator<Item = &'a String>,
) -> BTreeMap<String, BTreeMap<String, f64>> {
    counters
        .filter_map(|name| {
            let sets = after.sets.get(name).filter(|s| worth_keeping(s))?;
            let old = before.sets.get(name);
            let deltas = sets
                .iter()
                .map(|(labels, v)| {
                    let b = old.and_then(|o| o.get(labels)).copied().unwrap_or(0.0);
                    (labels.clone(), v - b)
                })
                .collect();
            Some((name.clone(), deltas))
        })
        .collect()
}

/// Gauge ranges per label set over the before and after samples.
pub fn gauge_ranges(
    before: &Series,
    after: &Series,
    gauges: &[&str],
) -> BTreeMap<String, BTreeMap<String, GaugeRange>> {
    gauges
        .iter()
        .filter_map(|name| {
            let a = after.sets.get(*name).filter(|s| worth_keeping(s))?;
            let b = before.sets.get(*name);
            let ranges = a
                .iter()
                .map(|(labels, after_value)| {
                    let before_value = b.and_then(|b| b.get(labels)).copied();
                    let min = before_value.map_or(*after_value, |v| v.min(*after_value));
                    let max = before_value.map_or(*after_value, |v| v.max(*after_value));
                    let mean = None;
                    (labels.clone(), GaugeRange { min, max, mean })
                })
                .collect();
            Some((name.to_string(), ranges))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_read_and_unescaped() {
        let labels = r#"worker="http://127.0.0.1:8001",outcome="succ\"ess",x="a\\b""#;
        assert_eq!(
            value(labels, "worker").as_deref(),
            Some("http://127.0.0.1:8001")
        );
        assert_eq!(value(labels, "outcome").as_deref(), Some("succ\"ess"));
        assert_eq!(value(labels, "x").as_deref(), Some("a\\b"));
        assert_eq!(value(labels, "missing"), None);
    }

    #[test]
    fn label_order_does_not_matter() {
        assert_eq!(normalize(r#"b="2", a="1""#), normalize(r#"a="1",b="2""#));
        assert_eq!(normalize(r#"a="x\"y""#), r#"a="x\"y""#);
    }

    #[test]
    fn label_sets_beyond_the_cap_are_noted() {
        let mut series = Series::default();
        for i in 0..LABEL_SET_CAP + 3 {
            series.add("m_total", &format!("path=\"/{i}\""), 1.0);
        }
        series.add("m_total", "path=\"/0\"", 1.0);
        assert_eq!(series.sets["m_total"].len(), LABEL_SET_CAP);
        assert_eq!(series.sets["m_total"]["path=\"/0\""], 2.0);
        assert!(series.capped.contains("m_total"));
    }

    #[test]
    fn deltas_keep_label_sets_and_a_single_unlabelled_set_is_left_out() {
        let mut before = Series::default();
        let mut after = Series::default();
        before.add("w_total", "worker=\"a\"", 1.0);
        after.add("w_total", "worker=\"a\"", 4.0);
        after.add("w_total", "worker=\"b\"", 2.0);
        before.add("one_total", "model_name=\"m\"", 1.0);
        after.add("one_total", "model_name=\"m\"", 5.0);
        let names = ["w_total".to_string(), "one_total".to_string()];
        let deltas = counter_deltas(&before, &after, names.iter());
        assert_eq!(deltas["w_total"]["worker=\"a\""], 3.0);
        assert_eq!(deltas["w_total"]["worker=\"b\""], 2.0);
        assert!(!deltas.contains_key("one_total"));
    }
}
