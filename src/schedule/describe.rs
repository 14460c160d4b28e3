//! The one description of a schedule that `run --dry-run` prints: every phase's load, bounds,
//! warmup and cooldown, the estimated length, and for a sharded or timed run the shard and
//! each phase's planned start.

use std::time::Duration;

use super::Schedule;
use super::shard::runs_nothing;

impl Schedule<'_> {
    /// `--dry-run`: the schedule, without sending anything.
    pub fn describe(&self) -> String {
        let mut out = self.describe_phases();
        out.push_str(&self.describe_shard());
        out
    }

    fn describe_phases(&self) -> String {
        let phases = &self.phases;
        let mut out = format!("plan {} — {} phase(s)\n", self.plan_name, phases.len());
        let mut total = Duration::ZERO;
        let mut open_ended = false;
        for (i, p) in phases.iter().enumerate() {
            out.push_str(&format!(
                "{:>3}. {} → target {} (route {}), workload {}: {}",
                i + 1,
                p.name,
                p.target_name,
                p.route,
                p.workload_name,
                p.describe_load()
            ));
            if let Some(w) = p.warmup {
                let mut parts = Vec::new();
                if let Some(d) = w.duration {
                    parts.push(d.to_string());
                    total += d.0 * p.repeats();
                }
                if let Some(n) = w.requests {
                    parts.push(format!("{n} requests"));
                    open_ended = true;
                }
                out.push_str(&format!("; warmup {}", parts.join(" or ")));
            }
            if let Some(c) = p.cooldown {
                out.push_str(&format!("; cooldown {}", humantime::format_duration(c)));
                total += c;
            }
            if let Some(of) = p.recheck_of {
                out.push_str(&format!("; recheck of {of}"));
            }
            out.push('\n');
            match p.duration {
                Some(d) => total += d * p.repeats(),
                None => open_ended = true,
            }
        }
        let estimate = humantime::format_duration(Duration::from_secs(total.as_secs()));
        out.push_str(&format!(
            "estimated duration: {}{estimate} (plus draining)\n",
            if open_ended { "at least " } else { "" }
        ));
        out
    }

    /// Which shard, and when each phase starts.
    fn describe_shard(&self) -> String {
        let mut out = String::new();
        if let Some(shard) = self.shard {
            out.push_str(&format!(
                "shard {shard}: the loads above are this shard's share{}\n",
                if self.phases.iter().any(runs_nothing) {
                    "; phases with no workers or no requests send nothing here"
                } else {
                    ""
                }
            ));
        }
        for (phase, at) in self.phases.iter().zip(&self.starts) {
            out.push_str(&format!(
                "  {} starts at {}\n",
                phase.name,
                at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ));
        }
        out
    }
}
