//! Which fault rule, if any, applies to a request number: the settings' fixed rules, then
//! the ones switched on over HTTP.

use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

use super::SimFault;
use super::rng::{STREAM_FAULTS, SimRng};

/// The first rule that selects request `seq` (counted from 1): listed in `at`, a multiple of
/// `every`, or a seeded draw below `probability`. Every rule draws, so adding a rule does not
/// change which requests earlier probability rules select.
pub(crate) fn select(faults: &[SimFault], seed: u64, seq: u64) -> Option<&SimFault> {
    let mut rng = SimRng::new(seed, seq, STREAM_FAULTS);
    let mut chosen = None;
    for fault in faults {
        let draw = rng.next_f64();
        let hit = fault.at.contains(&seq)
            || fault
                .every
                .is_some_and(|every| every > 0 && seq.is_multiple_of(every))
            || fault.probability.is_some_and(|p| draw < p);
        if hit && chosen.is_none() {
            chosen = Some(fault);
        }
    }
    chosen
}

/// The rules switched on over HTTP; checked after the fixed `faults` of the settings.
#[derive(Debug, Default)]
pub(crate) struct SwitchedFaults {
    /// Set while any rule is on, so requests without a switched fault take no lock.
    any: AtomicBool,
    rules: RwLock<Vec<SimFault>>,
}

impl SwitchedFaults {
    /// The switched rule that selects request `seq`, drawn as the fixed rules are.
    pub(crate) fn select(&self, seed: u64, seq: u64) -> Option<SimFault> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let rules = self.rules.read().unwrap_or_else(|p| p.into_inner());
        select(&rules, seed, seq).cloned()
    }

    pub(crate) fn set(&self, rules: Vec<SimFault>) {
        let mut held = self.rules.write().unwrap_or_else(|p| p.into_inner());
        self.any.store(!rules.is_empty(), Ordering::Release);
        *held = rules;
    }

    pub(crate) fn current(&self) -> Vec<SimFault> {
        self.rules.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimFaultKind;

    fn rule(kind: SimFaultKind) -> SimFault {
        SimFault {
            kind,
            probability: None,
            every: None,
            at: vec![],
            status: None,
            seconds: None,
            after_tokens: None,
        }
    }

    #[test]
    fn schedule_and_probability() {
        let faults = vec![
            SimFault {
                at: vec![2],
                ..rule(SimFaultKind::Status)
            },
            SimFault {
                every: Some(3),
                ..rule(SimFaultKind::RateLimit)
            },
        ];
        let kinds: Vec<_> = (1..=6)
            .map(|seq| select(&faults, 0, seq).map(|f| f.kind))
            .collect();
        assert_eq!(
            kinds,
            vec![
                None,
                Some(SimFaultKind::Status),
                Some(SimFaultKind::RateLimit),
                None,
                None,
                Some(SimFaultKind::RateLimit)
            ]
        );
        let half = vec![SimFault {
            probability: Some(0.5),
            ..rule(SimFaultKind::Stall)
        }];
        let hits = (1..=2000)
            .filter(|seq| select(&half, 9, *seq).is_some())
            .count();
        assert!((800..1200).contains(&hits), "{hits}");
        let again = (1..=2000)
            .filter(|seq| select(&half, 9, *seq).is_some())
            .count();
        assert_eq!(hits, again);
    }
}
