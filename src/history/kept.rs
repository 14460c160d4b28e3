//! What the store keeps of a report beyond its figures (schema v5): the report itself with a
//! bounded sample of each phase's records, so a baseline gate needs neither run's files, and
//! each percentile's late band, which decides whether a client-bound run's percentile may
//! still enter trends.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

use crate::quantile::percentile;
use crate::report::model::figure_path::{FigurePath, figure_path_names};
use crate::report::model::{PhaseResult, RecordsKept, Report};

/// Records kept per phase for gates. A bootstrap of 2,000 records places a p99's interval
/// within a few percent, and a phase this size compares exactly as from its files.
pub const SAMPLE_RECORDS: usize = 2_000;

/// What `Store::record` keeps beside a run's rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Kept {
    /// The report as JSON, each phase's `request_timings` cut to [`SAMPLE_RECORDS`].
    pub report: Option<String>,
    /// Per phase, in order: each percentile figure's late band, by figure path.
    pub bands: Vec<BTreeMap<String, (f64, f64)>>,
}

/// How a kept report is stored (schema v6): its JSON, gzip-compressed.
pub const ENCODING: &str = "gzip";

/// A kept report's JSON as the store holds it.
pub fn pack(report: &str) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing into memory cannot fail.
    let _ = encoder.write_all(report.as_bytes());
    encoder.finish().unwrap_or_default()
}

/// A kept report's JSON back from the store's bytes; `None` when they are not what
/// [`pack`] wrote.
pub fn unpack(bytes: &[u8]) -> Option<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// What to keep of `report`, read from `report_path`: a phase whose report.json holds
/// fewer of its records than the sample keeps takes them from the records beside it.
pub fn kept_from(report: &Report, report_path: Option<&Path>) -> Kept {
    let short = |p: &PhaseResult| {
        (p.request_timings.len() as u64) < p.summary.requests.min(SAMPLE_RECORDS as u64)
    };
    match report_path {
        Some(path) if report.phases.iter().any(short) => {
            let mut full = report.clone();
            // Without readable records the report's own sample is kept.
            if crate::report::formats::records::attach_records(&mut full, path).is_ok() {
                return kept(&full);
            }
            kept(report)
        }
        _ => kept(report),
    }
}

/// What to keep of `report`.
pub fn kept(report: &Report) -> Kept {
    let method = report.timing_methodology.percentile_method;
    let bands = report
        .phases
        .iter()
        .map(|p| late_bands(p, method))
        .collect();
    let mut bounded = report.clone();
    for phase in &mut bounded.phases {
        bound_records(phase);
    }
    Kept {
        report: serde_json::to_string(&bounded).ok(),
        bands,
    }
}

/// Keep at most [`SAMPLE_RECORDS`] of the phase's records, evenly spread over its order
/// (deterministic, so recording the same report twice keeps the same ones).
fn bound_records(phase: &mut PhaseResult) {
    let had = phase.request_timings.len();
    if had <= SAMPLE_RECORDS {
        return;
    }
    let all = std::mem::take(&mut phase.request_timings);
    phase.request_timings = (0..SAMPLE_RECORDS)
        .map(|i| all[i * had / SAMPLE_RECORDS].clone())
        .collect();
    phase.records = Some(RecordsKept {
        kept: SAMPLE_RECORDS as u64,
        total: phase.summary.requests,
        sampling: "even".to_string(),
    });
}

/// Each percentile's quantiles at q − s and q + s of the phase's own records, where s is the
/// client's late-wake share: how far the late share of requests could have moved it.
pub fn late_bands(
    phase: &PhaseResult,
    method: crate::plan::PercentileMethod,
) -> BTreeMap<String, (f64, f64)> {
    let mut out = BTreeMap::new();
    let Some(share) = phase
        .client_trust
        .as_ref()
        .and_then(|t| t.load.late_wake_share)
        .filter(|s| s.is_finite())
    else {
        return out;
    };
    let mut sorted: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for name in figure_path_names() {
        let Ok(FigurePath::Dist(kind, stat)) = name.parse::<FigurePath>() else {
            continue;
        };
        let Some(q) = stat.quantile() else {
            continue;
        };
        let values = sorted.entry(kind.name()).or_insert_with(|| {
            let mut v: Vec<f64> = phase
                .request_timings
                .iter()
                .filter_map(|r| r.value(kind))
                .filter(|v| v.is_finite())
                .collect();
            v.sort_by(f64::total_cmp);
            v
        });
        if values.is_empty() {
            continue;
        }
        let at = |q: f64| percentile(values, q.clamp(0.0, 1.0), method);
        out.insert(name.clone(), (at(q - share), at(q + share)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packed_report_unpacks_to_its_json_and_other_bytes_do_not() {
        let json = r#"{"phases":[{"request_timings":[{"ttft_ms":12.5}]}]}"#.repeat(50);
        let packed = pack(&json);
        assert!(
            packed.len() * 4 < json.len(),
            "{} of {}",
            packed.len(),
            json.len()
        );
        assert_eq!(unpack(&packed).as_deref(), Some(json.as_str()));
        assert_eq!(unpack(json.as_bytes()), None);
        assert_eq!(unpack(&packed[..packed.len() / 2]), None);
    }
    use crate::metrics::trust::{ClientLoad, ClientTrust, TrustVerdict};
    use crate::plan::PercentileMethod;

    /// The sample's first phase with `n` records whose ttft is 1, 2, … `n` ms, its client
    /// late `share` of the time.
    fn phase(n: usize, share: f64) -> PhaseResult {
        let mut p = crate::report::sample_report().phases.remove(0);
        let record = p.request_timings[0].clone();
        p.request_timings = (0..n)
            .map(|i| {
                let mut r = record.clone();
                r.request_index = i as u64;
                r.ttft_ms = Some((i + 1) as f64);
                r
            })
            .collect();
        p.summary.requests = n as u64;
        p.client_trust = Some(ClientTrust {
            verdict: TrustVerdict::ClientBound,
            reasons: Vec::new(),
            load: ClientLoad {
                late_wake_share: Some(share),
                ..ClientLoad::default()
            },
            send_lag_p99_ms: None,
        });
        p
    }

    #[test]
    fn a_percentile_s_band_is_its_own_quantiles_a_late_share_either_side() {
        let bands = late_bands(&phase(100, 0.25), PercentileMethod::NearestRank);
        // p50 ± 25%: the 25th and 75th of 1..100 ms, in seconds.
        let (lo, hi) = bands["ttft.p50"];
        assert!(
            (lo - 0.025).abs() < 1e-12 && (hi - 0.075).abs() < 1e-12,
            "{lo} {hi}"
        );
        // p99 + 25% is past the top: the largest value.
        assert!((bands["ttft.p99"].1 - 0.100).abs() < 1e-12);
        assert!(!bands.contains_key("ttft.mean"), "a mean has no band");
        // No late share measured: no bands.
        let mut unknown = phase(100, 0.25);
        unknown.client_trust = None;
        assert!(late_bands(&unknown, PercentileMethod::NearestRank).is_empty());
    }

    #[test]
    fn a_large_phase_keeps_an_even_sample_and_says_so() {
        let mut report = crate::report::sample_report();
        report.phases = vec![phase(5_000, 0.0), phase(SAMPLE_RECORDS, 0.0)];
        let kept = kept(&report);
        let back: Report = serde_json::from_str(kept.report.as_deref().unwrap()).unwrap();
        let large = &back.phases[0];
        assert_eq!(large.request_timings.len(), SAMPLE_RECORDS);
        assert_eq!(large.request_timings[1].request_index, 2, "every 2.5th");
        let said = large.records.as_ref().unwrap();
        assert_eq!((said.kept, said.total), (SAMPLE_RECORDS as u64, 5_000));
        // A phase of the sample's size is kept whole, as it was.
        assert_eq!(back.phases[1], report.phases[1]);
    }
}
