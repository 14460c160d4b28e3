//! A window's view of its target's reachability: the backoff after requests that reached no
//! server, the target-down check, and what the plan does then (`on_target_down`).
//!
//! A request that reached no server (refused, reset before a response, a name that did not
//! resolve) makes its sender wait before it sends again: 10 ms, doubling to 1 s, each wait
//! drawn between half and the whole of it. So a dead target costs a few requests a second,
//! never a tight loop. The target is *down* once it has had no success for 2 s and at least 3
//! such failures in a row; then the phase fails, waits (one probe at a time) or goes on.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use rand::Rng;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::{ErrorKind, RequestRecord, Unreached};
use crate::plan::DownPolicy;

/// The first wait after a failure to reach the target.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// The longest wait between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// A target is down after this long without a success…
pub const DOWN_AFTER: Duration = Duration::from_secs(2);
/// …and at least this many failures to reach it in a row.
pub const DOWN_FAILURES: u32 = 3;

/// One sender's backoff: each failure doubles the next wait, a success resets it.
#[derive(Debug, Default, Clone)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// The wait before the next attempt after one more failure, with jitter.
    pub fn next_delay(&mut self) -> Duration {
        let step = FIRST_BACKOFF.saturating_mul(1 << self.failures.min(16));
        self.failures = self.failures.saturating_add(1);
        step.min(MAX_BACKOFF)
            .mul_f64(rand::rng().random_range(0.5..=1.0))
    }

    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

/// What a record says about the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Some server answered (any status, or a stream that then failed).
    Reached,
    Unreached(Unreached),
    /// Says nothing: a connect timeout, or a request cancelled by the run.
    Unknown,
}

fn reach(record: &RequestRecord) -> Reach {
    match (record.unreached(), record.error.as_ref().map(|e| e.kind)) {
        (Some(why), _) => Reach::Unreached(why),
        (None, Some(ErrorKind::Connect | ErrorKind::Cancelled)) => Reach::Unknown,
        (None, _) => Reach::Reached,
    }
}

/// One spell of the target being down, in seconds from the window's start.
#[derive(Debug, Clone, PartialEq)]
pub struct OutageSpell {
    /// The first failure of the spell.
    pub from_s: f64,
    /// When the spell met the down condition.
    pub down_at_s: f64,
    /// The first success after it, if one came.
    pub until_s: Option<f64>,
    pub cause: Unreached,
}

/// Why a window ended early: its target went down (and did not come back in time).
#[derive(Debug, Clone, PartialEq)]
pub struct TargetDown {
    /// The spell's first failure, seconds from the window's start.
    pub at_s: f64,
    pub cause: Unreached,
    /// Waited this long for it to come back (`then: wait`).
    pub waited: Option<Duration>,
}

impl TargetDown {
    /// `target down at 3.1 s (connection refused)`.
    pub fn describe(&self) -> String {
        let waited = self
            .waited
            .map(|w| format!(", no answer within {}", humantime::format_duration(w)))
            .unwrap_or_default();
        format!(
            "target down at {:.1} s ({}{waited})",
            self.at_s,
            self.cause.describe()
        )
    }
}

/// May a sender send now (under `then: wait`, while the target is down)?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Go,
    /// Send, as the one probe of a down target.
    Probe,
    /// Not now: try again at this instant, or when told (`None`).
    Hold(Option<Instant>),
}

#[derive(Debug)]
struct State {
    streak: u32,
    streak_from: Option<Instant>,
    /// The spell under way (an index into `spells`) once the target is down.
    down: Option<usize>,
    down_at: Option<Instant>,
    probing: bool,
    probe_at: Instant,
    probe_backoff: Backoff,
    spells: Vec<OutageSpell>,
    stopped: Option<TargetDown>,
    withheld: u64,
}

/// A window's shared outage state.
#[derive(Debug)]
pub struct Outage {
    policy: DownPolicy,
    origin: Instant,
    /// Nothing to watch (no failure streak, not down, no probe out): an answer then only
    /// moves `last_reached_ns`, without the lock every request would otherwise take.
    calm: AtomicBool,
    /// The last answer, nanoseconds after `origin`.
    last_reached_ns: AtomicU64,
    state: Mutex<State>,
    changed: Notify,
    /// Cancelled when the window must stop starting requests: the target is down.
    ended: CancellationToken,
}

impl Outage {
    pub fn new(policy: DownPolicy, origin: Instant) -> Outage {
        Outage {
            policy,
            origin,
            calm: AtomicBool::new(true),
            last_reached_ns: AtomicU64::new(0),
            state: Mutex::new(State {
                streak: 0,
                streak_from: None,
                down: None,
                down_at: None,
                probing: false,
                probe_at: origin,
                probe_backoff: Backoff::default(),
                spells: Vec::new(),
                stopped: None,
                withheld: 0,
            }),
            changed: Notify::new(),
            ended: CancellationToken::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn secs(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.origin).as_secs_f64()
    }

    /// Cancelled once the target is down and the phase is to stop.
    pub fn ended(&self) -> &CancellationToken {
        &self.ended
    }

    /// Whether a sender may send now; only `then: wait` ever holds one back.
    pub fn admit(&self) -> Admit {
        if !matches!(self.policy, DownPolicy::Wait(_)) || self.calm.load(Ordering::Acquire) {
            return Admit::Go;
        }
        let mut state = self.lock();
        if state.down.is_none() {
            return Admit::Go;
        }
        if state.probing {
            return Admit::Hold(None);
        }
        let now = Instant::now();
        if now < state.probe_at {
            return Admit::Hold(Some(state.probe_at));
        }
        state.probing = true;
        Admit::Probe
    }

    /// Wait for [`Admit`] to change (a probe's answer, or a probe's backoff run out).
    pub async fn held(&self, until: Option<Instant>) {
        let notified = self.changed.notified();
        match until {
            Some(at) => {
                tokio::select! {
                    () = notified => {}
                    () = tokio::time::sleep_until(at) => {}
                }
            }
            None => notified.await,
        }
    }

    /// An open-loop arrival that was not sent.
    pub fn withhold(&self) {
        self.lock().withheld += 1;
    }

    /// Take in a finished request.
    pub fn note(&self, record: &RequestRecord) {
        let now = Instant::now();
        let reached = reach(record);
        if reached == Reach::Reached {
            let ns = now.saturating_duration_since(self.origin).as_nanos() as u64;
            self.last_reached_ns.fetch_max(ns, Ordering::AcqRel);
            if self.calm.load(Ordering::Acquire) {
                return;
            }
        }
        let mut state = self.lock();
        let was_probing = std::mem::take(&mut state.probing);
        let changed = was_probing || reached == Reach::Reached && state.down.is_some();
        match reached {
            Reach::Reached => {
                state.streak = 0;
                state.streak_from = None;
                state.probe_backoff.reset();
                if let Some(spell) = state.down.take() {
                    state.spells[spell].until_s = Some(self.secs(now));
                    state.down_at = None;
                }
            }
            Reach::Unreached(why) => {
                state.streak += 1;
                let from = *state.streak_from.get_or_insert(now);
                let last_reached =
                    Duration::from_nanos(self.last_reached_ns.load(Ordering::Acquire));
                if state.down.is_none()
                    && state.stopped.is_none()
                    && state.streak >= DOWN_FAILURES
                    && now.saturating_duration_since(self.origin + last_reached) >= DOWN_AFTER
                {
                    self.went_down(&mut state, from, now, why);
                }
                if was_probing {
                    let wait = state.probe_backoff.next_delay();
                    state.probe_at = now + wait;
                }
            }
            Reach::Unknown => {}
        }
        let calm = state.streak == 0 && state.down.is_none() && !state.probing;
        self.calm.store(calm, Ordering::Release);
        let went_down = state.down.is_some() && state.down_at == Some(now);
        drop(state);
        // Wake only those who wait on a change: held senders and the `wait` watch.
        if changed || went_down {
            self.changed.notify_waiters();
        }
    }

    fn went_down(&self, state: &mut State, from: Instant, now: Instant, cause: Unreached) {
        state.spells.push(OutageSpell {
            from_s: self.secs(from),
            down_at_s: self.secs(now),
            until_s: None,
            cause,
        });
        state.down = Some(state.spells.len() - 1);
        state.down_at = Some(now);
        state.probe_at = now;
        if self.policy == DownPolicy::Fail {
            state.stopped = Some(TargetDown {
                at_s: self.secs(from),
                cause,
                waited: None,
            });
            self.ended.cancel();
        }
    }

    /// Under `then: wait`: end the window once the target has been down for `up_to`
    /// without answering. Returns when the window is to end (never, under other policies).
    pub async fn watch(&self) {
        let DownPolicy::Wait(up_to) = self.policy else {
            return self.ended.cancelled().await;
        };
        loop {
            let notified = self.changed.notified();
            let down_at = self.lock().down_at;
            let Some(down_at) = down_at else {
                tokio::select! {
                    () = notified => continue,
                    () = self.ended.cancelled() => return,
                }
            };
            tokio::select! {
                () = notified => continue,
                () = tokio::time::sleep_until(down_at + up_to) => {}
            }
            let mut state = self.lock();
            if state.down_at != Some(down_at) {
                continue;
            }
            let spell = &state.spells[state.down.expect("down")];
            state.stopped = Some(TargetDown {
                at_s: spell.from_s,
                cause: spell.cause,
                waited: Some(up_to),
            });
            drop(state);
            self.ended.cancel();
            return;
        }
    }

    /// What the window saw: why it ended early (if it did), every spell, and the open-loop
    /// arrivals withheld.
    pub fn finish(&self) -> (Option<TargetDown>, Vec<OutageSpell>, u64) {
        let state = self.lock();
        (state.stopped.clone(), state.spells.clone(), state.withheld)
    }
}

/// An open loop's senders: each arrival goes out on a lane that is not backing off, or is
/// withheld when every lane is. Lanes are not held while a request runs, so a slow server
/// never withholds an arrival; only failures to reach it do.
#[derive(Debug)]
pub struct Lanes {
    count: usize,
    cursor: AtomicUsize,
    /// Some lane backs off: only then are the lanes looked at under their lock.
    troubled: AtomicBool,
    lanes: Mutex<Vec<(Instant, Backoff)>>,
}

impl Lanes {
    /// `max_concurrency` lanes, else a quarter second of arrivals.
    pub fn for_rate(rps: f64, max_concurrency: Option<u32>) -> Lanes {
        let count = max_concurrency.map_or((rps / 4.0).ceil() as usize, |c| c as usize);
        Lanes::new(count.clamp(1, 4096))
    }

    pub fn new(count: usize) -> Lanes {
        let (now, count) = (Instant::now(), count.max(1));
        Lanes {
            count,
            cursor: AtomicUsize::new(0),
            troubled: AtomicBool::new(false),
            lanes: Mutex::new(vec![(now, Backoff::default()); count]),
        }
    }

    /// A lane free to send now, taken round-robin; `None` when every lane backs off.
    pub fn take(&self) -> Option<usize> {
        let n = self.count;
        if !self.troubled.load(Ordering::Acquire) {
            return Some(self.cursor.fetch_add(1, Ordering::Relaxed) % n);
        }
        let lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        let (cursor, now) = (self.cursor.load(Ordering::Relaxed), Instant::now());
        let found = (0..n)
            .map(|k| (cursor + k) % n)
            .find(|&i| lanes[i].0 <= now)?;
        self.cursor.store(found + 1, Ordering::Relaxed);
        Some(found)
    }

    /// The request on `lane` ended: the lane backs off when it reached no server.
    pub fn settle(&self, lane: usize, unreached: bool) {
        if !unreached && !self.troubled.load(Ordering::Acquire) {
            return;
        }
        let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        let Some((ready_at, backoff)) = lanes.get_mut(lane) else {
            return;
        };
        if unreached {
            *ready_at = Instant::now() + backoff.next_delay();
            self.troubled.store(true, Ordering::Release);
        } else {
            backoff.reset();
            let troubled = lanes.iter().any(|(_, b)| b.failures > 0);
            self.troubled.store(troubled, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::RequestError;

    fn refused() -> RequestRecord {
        RequestRecord {
            error: Some(RequestError {
                unreached: Some(Unreached::Refused),
                ..RequestError::new(ErrorKind::Connect, None, "refused")
            }),
            ..RequestRecord::default()
        }
    }

    fn status(code: u16) -> RequestRecord {
        RequestRecord {
            error: Some(RequestError::new(ErrorKind::HttpStatus, Some(code), "busy")),
            ..RequestRecord::default()
        }
    }

    fn timed_out() -> RequestRecord {
        RequestRecord {
            error: Some(RequestError::new(ErrorKind::Connect, None, "timeout")),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn backoff_doubles_from_10_ms_to_1_s_with_jitter_and_resets() {
        let mut backoff = Backoff::default();
        let waits: Vec<Duration> = (0..10).map(|_| backoff.next_delay()).collect();
        for (k, wait) in waits.iter().enumerate() {
            let full = (FIRST_BACKOFF * (1 << k)).min(MAX_BACKOFF);
            assert!(*wait >= full / 2 && *wait <= full, "{k}: {wait:?}");
        }
        backoff.reset();
        assert!(backoff.next_delay() <= FIRST_BACKOFF);
    }

    #[tokio::test(start_paused = true)]
    async fn down_needs_two_seconds_without_success_and_three_failures() {
        let outage = Outage::new(DownPolicy::Fail, Instant::now());
        outage.note(&status(200));
        tokio::time::advance(Duration::from_millis(500)).await;
        for _ in 0..5 {
            outage.note(&refused());
        }
        // Five failures, but a success 0.5 s ago: not down.
        assert!(!outage.ended().is_cancelled());
        tokio::time::advance(Duration::from_millis(1600)).await;
        outage.note(&refused());
        assert!(outage.ended().is_cancelled());
        let (down, spells, _) = outage.finish();
        let down = down.expect("down");
        assert_eq!(down.describe(), "target down at 0.5 s (connection refused)");
        assert_eq!(spells.len(), 1);
        assert!((spells[0].down_at_s - 2.1).abs() < 1e-6);
    }

    #[tokio::test(start_paused = true)]
    async fn statuses_and_connect_timeouts_never_make_a_target_down() {
        let outage = Outage::new(DownPolicy::Fail, Instant::now());
        for _ in 0..30 {
            tokio::time::advance(Duration::from_millis(200)).await;
            outage.note(&status(429));
            outage.note(&status(503));
            outage.note(&timed_out());
        }
        // Two failures in a row at most, between answers.
        outage.note(&refused());
        outage.note(&refused());
        assert!(!outage.ended().is_cancelled());
        assert_eq!(outage.finish().1, Vec::new());
    }

    #[tokio::test(start_paused = true)]
    async fn wait_probes_one_at_a_time_and_resumes_on_an_answer() {
        let outage = Outage::new(DownPolicy::Wait(Duration::from_secs(10)), Instant::now());
        tokio::time::advance(Duration::from_secs(3)).await;
        for _ in 0..3 {
            assert_eq!(outage.admit(), Admit::Go);
            outage.note(&refused());
        }
        assert_eq!(outage.admit(), Admit::Probe);
        assert_eq!(outage.admit(), Admit::Hold(None));
        outage.note(&refused());
        // The failed probe backs the next one off.
        assert!(matches!(outage.admit(), Admit::Hold(Some(_))));
        tokio::time::advance(Duration::from_millis(20)).await;
        assert_eq!(outage.admit(), Admit::Probe);
        tokio::time::advance(Duration::from_millis(500)).await;
        outage.note(&status(200));
        assert_eq!(outage.admit(), Admit::Go);
        let (down, spells, _) = outage.finish();
        assert_eq!(down, None);
        let until = spells[0].until_s.expect("recovered");
        assert!((until - 3.52).abs() < 1e-6, "{until}");
    }

    #[tokio::test(start_paused = true)]
    async fn wait_gives_up_after_wait_up_to() {
        let outage = Outage::new(DownPolicy::Wait(Duration::from_secs(5)), Instant::now());
        tokio::time::advance(Duration::from_secs(2)).await;
        for _ in 0..3 {
            outage.note(&refused());
        }
        let watched = tokio::time::timeout(Duration::from_secs(6), outage.watch()).await;
        assert!(watched.is_ok(), "the wait ends by wait_up_to");
        let down = outage.finish().0.expect("down");
        assert_eq!(
            down.describe(),
            "target down at 2.0 s (connection refused, no answer within 5s)"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn lanes_back_off_one_by_one_and_withhold_when_all_do() {
        let lanes = Lanes::new(2);
        let a = lanes.take().expect("a lane");
        let b = lanes.take().expect("another lane");
        assert_ne!(a, b);
        lanes.settle(a, true);
        assert_eq!(lanes.take(), Some(b));
        lanes.settle(b, true);
        assert_eq!(lanes.take(), None);
        tokio::time::advance(MAX_BACKOFF).await;
        assert!(lanes.take().is_some());
        // A slow answer holds no lane.
        lanes.settle(a, false);
        assert!(lanes.take().is_some());
    }
}
