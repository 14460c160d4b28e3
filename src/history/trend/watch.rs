//! Which series open alerts: the plan's watched figures (`history: {watch: [...]}`), a
//! short default list otherwise. Every other series is still analysed and drawn.

use crate::history::searches::CAPACITY;
use crate::plan::model::HistorySettings;

use super::split::Settings;

/// The figures watched when the plan names none.
pub const DEFAULT_WATCH: [&str; 9] = [
    "ttft.p50",
    "ttft.p99",
    "tpot.p50",
    "tpot.p99",
    "e2e.p99",
    "output_tokens_per_second",
    "request_rate",
    "error_rate",
    CAPACITY,
];

/// Figures that repeat TPOT: the same values (`mean_inter_token_latency_ms`) or its
/// inverse (`decode_tok_s`). Watched beside TPOT they would alert twice for one change.
const TPOT_ALIASES: [&str; 2] = ["mean_inter_token_latency_ms", "decode_tok_s"];

/// The watched figures of one plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Watch {
    figures: Vec<String>,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch {
            figures: DEFAULT_WATCH.iter().map(|f| f.to_string()).collect(),
        }
    }
}

impl Watch {
    pub fn new(figures: &[String]) -> Watch {
        Watch {
            figures: figures.to_vec(),
        }
    }

    /// Whether a change of `figure` opens an alert.
    pub fn watches(&self, figure: &str) -> bool {
        if !self.figures.iter().any(|f| f == figure) {
            return false;
        }
        let family = figure.split('.').next().unwrap_or(figure);
        let tpot_watched = self.figures.iter().any(|f| f.starts_with("tpot."));
        !(tpot_watched && TPOT_ALIASES.contains(&family))
    }

    pub fn figures(&self) -> &[String] {
        &self.figures
    }
}

/// A plan's detection settings and watch list, from its `history:` section (defaults where
/// it has none).
pub fn rules(plan: Option<&HistorySettings>) -> (Settings, Watch) {
    let mut settings = Settings::default();
    if let Some(n) = plan.and_then(|h| h.min_runs_after) {
        settings.min_points = n as usize;
        settings.newest_runs = settings.newest_runs.max(settings.min_points + 1);
    }
    let watch = plan
        .and_then(|h| h.watch.as_deref())
        .map_or_else(Watch::default, Watch::new);
    (settings, watch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpot_aliases_are_not_watched_beside_tpot() {
        let watch = Watch::new(&[
            "tpot.p50".into(),
            "mean_inter_token_latency_ms.p50".into(),
            "decode_tok_s.p50".into(),
        ]);
        assert!(watch.watches("tpot.p50"));
        assert!(!watch.watches("mean_inter_token_latency_ms.p50"));
        assert!(!watch.watches("decode_tok_s.p50"));
        let alone = Watch::new(&["decode_tok_s.p50".into()]);
        assert!(alone.watches("decode_tok_s.p50"));
        assert!(!Watch::default().watches("tpot.p95"));
        assert!(Watch::default().watches(CAPACITY));
    }

    #[test]
    fn min_runs_after_sets_the_level_length() {
        let (settings, _) = rules(Some(&HistorySettings {
            min_runs_after: Some(5),
            watch: None,
        }));
        assert_eq!(settings.min_points, 5);
        assert_eq!(settings.newest_runs, 6);
    }
}
