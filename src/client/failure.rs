//! How a request fails: deadlines, the closed error kinds, and messages built from errors.

use std::future::Future;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::record::{ErrorKind, Unreached};
use super::stream::{self, StreamFailure};

/// How long an error response body may take to read for its excerpt.
const ERROR_BODY_WAIT: Duration = Duration::from_secs(2);
/// How much of an error (or non-stream) body is read.
const ERROR_BODY_MAX_BYTES: usize = 64 * 1024;

/// Why a connection could not be made.
#[derive(Debug)]
pub(crate) enum ConnectError {
    Timeout(Duration),
    /// Nothing accepted the connection: the message says where, and what that usually means.
    Refused(String),
    /// The host name did not resolve.
    Unresolved(String),
    Failed(String),
}

/// What a refused connection almost always means, for someone who has not started the server
/// yet: `connection refused — is the server running at http://127.0.0.1:8000?`. `what` is
/// `server` or `proxy`; `at` is where it was asked for.
pub(crate) fn refused_message(what: &str, at: &str) -> String {
    format!("connection refused — is the {what} running at {at}?")
}

/// Whether `err`, or an error it was caused by, is a refused connection.
pub(crate) fn is_refused(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(e) = cause {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        cause = e.source();
    }
    false
}

/// A failed request before it becomes `record.error`.
#[derive(Debug)]
pub(crate) struct Failure {
    pub kind: ErrorKind,
    pub status: Option<u16>,
    pub message: String,
    /// The error body (a non-2xx response's, or an error object's); the record redacts it.
    pub body: Option<Vec<u8>>,
    /// Set when no server was reached.
    pub unreached: Option<Unreached>,
}

impl Failure {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            status: None,
            message: message.into(),
            body: None,
            unreached: None,
        }
    }

    pub fn total() -> Self {
        Failure::new(
            ErrorKind::TotalTimeout,
            "request exceeded the total timeout",
        )
    }

    pub fn first_byte() -> Self {
        Failure::new(
            ErrorKind::FirstByteTimeout,
            "no response headers within the first-byte timeout",
        )
    }

    pub fn connect(err: ConnectError, url: &str) -> Self {
        let (message, unreached) = match err {
            ConnectError::Timeout(limit) => (
                format!("{url}: no connection within the connect timeout ({limit:?})"),
                None,
            ),
            ConnectError::Refused(why) => (format!("{url}: {why}"), Some(Unreached::Refused)),
            ConnectError::Unresolved(why) => (format!("{url}: {why}"), Some(Unreached::Unresolved)),
            ConnectError::Failed(why) => (format!("{url}: {why}"), Some(Unreached::Failed)),
        };
        Failure {
            unreached,
            ..Failure::new(ErrorKind::Connect, message)
        }
    }

    /// The request was written (or the connection dropped) before a whole response head came.
    pub fn before_response(err: &hyper::Error, url: &str) -> Self {
        Failure {
            unreached: Some(Unreached::Reset),
            ..Failure::new(
                ErrorKind::StreamBroken,
                format!("{url}: {}", error_chain(err)),
            )
        }
    }
}

impl From<StreamFailure> for Failure {
    fn from(f: StreamFailure) -> Self {
        Failure {
            body: f.body,
            ..Failure::new(f.kind, f.message)
        }
    }
}

/// Which deadline fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    /// The step's own deadline (first byte, idle).
    Own,
    Total,
}

pub(crate) enum Waited<T> {
    Done(T),
    TimedOut(Which),
}

/// The earlier of a step's own deadline and the total one, and which it is.
fn earlier(own: Option<Instant>, total: Option<Instant>) -> Option<(Instant, Which)> {
    match (own, total) {
        (None, None) => None,
        (Some(o), None) => Some((o, Which::Own)),
        (None, Some(t)) => Some((t, Which::Total)),
        (Some(o), Some(t)) if t <= o => Some((t, Which::Total)),
        (Some(o), Some(_)) => Some((o, Which::Own)),
    }
}

/// A request's deadlines on one timer, from the request to its body's end: the first-byte
/// and total deadlines until the response head, then the idle and total ones while the body
/// is read, then a short wait for the body's end after the stream's last event. The timer is
/// armed at the first wait that pends; each chunk only notes when it came, a wait that pends
/// brings the timer forward to an earlier deadline, and the timer re-arms itself when it
/// fires before the deadline then in force. A timer per step, or per chunk, cost more client
/// CPU than the chunk's own parsing; so does one per request, which a kept connection saves by
/// handing its last request's timer, still armed, to its next (see [`Deadlines::reuse`]).
pub(crate) struct Deadlines {
    own: Own,
    total: Option<Instant>,
    last_bytes: Instant,
    timer: Option<Timer>,
    /// The task the timer last registered; polling it again for the same task only re-does
    /// that registration.
    registered: Option<std::task::Waker>,
}

/// A deadline timer, kept armed between the requests of one connection.
pub(crate) type Timer = std::pin::Pin<Box<tokio::time::Sleep>>;

/// The deadline of the current step, besides the total one.
#[derive(Debug, Clone, Copy)]
enum Own {
    /// Until the response head: the first byte's.
    At(Option<Instant>),
    /// While the body is read: this long after the last bytes.
    Idle(Option<Duration>),
}

impl Deadlines {
    /// Deadlines for the response head: `first_byte` and `total`.
    pub(crate) fn new(first_byte: Option<Instant>, total: Option<Instant>, now: Instant) -> Self {
        Deadlines {
            own: Own::At(first_byte),
            total,
            last_bytes: now,
            timer: None,
            registered: None,
        }
    }

    /// Wait on `timer`, an earlier request's, rather than a new one. Armed for an earlier
    /// deadline, it re-arms when it fires; for a later one, it is brought forward at the first
    /// wait that pends: either way it fires by this request's deadline, and setting up and
    /// tearing down a timer (a locked timer-wheel insert and removal) is saved.
    pub(crate) fn reuse(&mut self, timer: Option<Timer>) {
        self.timer = timer;
        self.registered = None;
    }

    /// The timer, to hand to the connection's next request; armed or not, it fires no
    /// earlier than the deadline it was last set to, and whoever waits on it next re-arms it.
    pub(crate) fn take_timer(&mut self) -> Option<Timer> {
        self.registered = None;
        self.timer.take()
    }

    /// The head came at `now`: from here the body's idle deadline applies.
    pub(crate) fn body(&mut self, idle: Option<Duration>, now: Instant) {
        self.own = Own::Idle(idle);
        self.last_bytes = now;
    }

    /// The stream ended at its last event: wait for the body's end until `until` at most.
    pub(crate) fn drain_until(&mut self, until: Instant) {
        self.own = Own::At(None);
        self.total = Some(self.total.map_or(until, |t| t.min(until)));
    }

    /// Bytes came at `at`: the idle deadline moves on.
    pub(crate) fn saw_bytes(&mut self, at: Instant) {
        self.last_bytes = at;
    }

    /// When bytes last came (or the request went out, before any did).
    pub(crate) fn last_bytes(&self) -> Instant {
        self.last_bytes
    }

    fn deadline(&self) -> Option<(Instant, Which)> {
        let own = match self.own {
            Own::At(at) => at,
            Own::Idle(idle) => idle.map(|idle| self.last_bytes + idle),
        };
        earlier(own, self.total)
    }

    /// Await `fut` until the deadline in force.
    pub(crate) async fn wait<F: Future>(&mut self, fut: F) -> Waited<F::Output> {
        use std::task::Poll;
        if self.deadline().is_none() {
            return Waited::Done(fut.await);
        }
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(output) = fut.as_mut().poll(cx) {
                return Poll::Ready(Waited::Done(output));
            }
            let Some((deadline, which)) = self.deadline() else {
                unreachable!("a step's deadline stays while it is awaited");
            };
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
            // An armed timer set for later than the deadline now in force is brought forward;
            // one set for earlier re-arms itself when it fires.
            if deadline < timer.deadline().into_std() {
                timer.as_mut().reset(deadline.into());
                self.registered = None;
            }
            let same_task = self
                .registered
                .as_ref()
                .is_some_and(|waker| wakes_the_same(waker, cx.waker()));
            if same_task && !timer.is_elapsed() {
                return Poll::Pending;
            }
            while timer.as_mut().poll(cx).is_ready() {
                // The tokio clock, so a paused test clock agrees with the timer.
                if deadline <= tokio::time::Instant::now().into_std() {
                    return Poll::Ready(Waited::TimedOut(which));
                }
                timer.as_mut().reset(deadline.into());
            }
            self.registered = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

/// Whether `a` and `b` wake the same task. `Waker::will_wake` compares vtable addresses, and a
/// clone of tokio's block-on waker carries a copy of its vtable at another address, so it
/// answered `false` for every clone: compared by value, the vtables' functions are the same.
fn wakes_the_same(a: &std::task::Waker, b: &std::task::Waker) -> bool {
    a.will_wake(b) || (a.data() == b.data() && a.vtable() == b.vtable())
}

/// The next data bytes of a body, trailers skipped; `None` at its end.
pub(crate) async fn next_chunk(body: &mut Incoming) -> Result<Option<bytes::Bytes>, hyper::Error> {
    loop {
        match body.frame().await {
            None => return Ok(None),
            Some(Err(err)) => return Err(err),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
            }
        }
    }
}

/// Up to `ERROR_BODY_MAX_BYTES` of a body, waiting at most `ERROR_BODY_WAIT` (or the total
/// deadline); whatever arrived by then, and whether the body reached its end.
pub(crate) async fn read_body_prefix(
    body: &mut Incoming,
    total: Option<Instant>,
) -> (Vec<u8>, bool) {
    let now = Instant::now();
    let mut deadlines = Deadlines::new(Some(now + ERROR_BODY_WAIT), total, now);
    let mut bytes = Vec::new();
    while bytes.len() < ERROR_BODY_MAX_BYTES {
        match deadlines.wait(next_chunk(body)).await {
            Waited::Done(Ok(Some(chunk))) => bytes.extend_from_slice(&chunk),
            Waited::Done(Ok(None)) => return (bytes, true),
            Waited::Done(Err(_)) | Waited::TimedOut(_) => break,
        }
    }
    (bytes, false)
}

/// An error body's message for a record: `error.message` when JSON, else the text.
pub(crate) fn error_excerpt(body: &[u8]) -> String {
    if body.iter().all(u8::is_ascii_whitespace) {
        return String::new();
    }
    stream::error_message(body)
}

/// An error and its sources, joined with ": ".
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    message
}

/// Milliseconds from `from` to `to`, negative when `to` is earlier.
pub(crate) fn signed_ms(from: Instant, to: Instant) -> f64 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_secs_f64() * 1000.0,
        None => -(from.duration_since(to).as_secs_f64() * 1000.0),
    }
}

pub(crate) fn ms_since(start: Instant, now: Instant) -> f64 {
    now.saturating_duration_since(start).as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::{Instant as TokioInstant, sleep};

    /// Bytes every 60 ms keep a 100 ms idle deadline from firing, however long the body runs;
    /// the first 150 ms gap fires it, 100 ms after the last bytes.
    #[tokio::test(start_paused = true)]
    async fn the_idle_deadline_moves_with_each_chunk_and_fires_on_a_gap() {
        let start = TokioInstant::now();
        let mut deadlines = Deadlines::new(None, None, start.into_std());
        deadlines.body(Some(Duration::from_millis(100)), start.into_std());
        for _ in 0..10 {
            let waited = deadlines.wait(sleep(Duration::from_millis(60))).await;
            assert!(
                matches!(waited, Waited::Done(())),
                "a chunk within the idle time"
            );
            deadlines.saw_bytes(TokioInstant::now().into_std());
        }
        let last_bytes = TokioInstant::now();
        let waited = deadlines.wait(sleep(Duration::from_millis(150))).await;
        assert!(matches!(waited, Waited::TimedOut(Which::Own)));
        assert_eq!(last_bytes.elapsed(), Duration::from_millis(100));
    }

    /// The total deadline fires even while bytes keep coming, and says it was the total.
    #[tokio::test(start_paused = true)]
    async fn the_total_deadline_fires_while_bytes_flow() {
        let start = TokioInstant::now();
        let total = start.into_std() + Duration::from_millis(250);
        let mut deadlines = Deadlines::new(None, Some(total), start.into_std());
        deadlines.body(Some(Duration::from_millis(100)), start.into_std());
        let mut chunks = 0;
        loop {
            match deadlines.wait(sleep(Duration::from_millis(60))).await {
                Waited::Done(()) => {
                    chunks += 1;
                    deadlines.saw_bytes(TokioInstant::now().into_std());
                }
                Waited::TimedOut(which) => {
                    assert!(matches!(which, Which::Total));
                    break;
                }
            }
        }
        assert_eq!(chunks, 4);
        assert_eq!(start.elapsed(), Duration::from_millis(250));
    }

    /// One timer through a request's steps: armed for the head's first-byte deadline, brought
    /// forward when the body's idle deadline comes sooner, and again for the drain's.
    #[tokio::test(start_paused = true)]
    async fn one_timer_follows_the_head_the_body_and_the_drain() {
        let start = TokioInstant::now();
        let first_byte = start.into_std() + Duration::from_millis(1000);
        let mut deadlines = Deadlines::new(Some(first_byte), None, start.into_std());
        let head = deadlines.wait(sleep(Duration::from_millis(50))).await;
        assert!(matches!(head, Waited::Done(())));
        assert!(
            deadlines.timer.is_some(),
            "armed while the head was awaited"
        );

        deadlines.body(
            Some(Duration::from_millis(100)),
            TokioInstant::now().into_std(),
        );
        let gap = deadlines.wait(sleep(Duration::from_millis(500))).await;
        assert!(matches!(gap, Waited::TimedOut(Which::Own)));
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(150),
            "idle, not first byte"
        );

        let mut deadlines = Deadlines::new(None, None, start.into_std());
        deadlines.body(
            Some(Duration::from_secs(30)),
            TokioInstant::now().into_std(),
        );
        let chunk = deadlines.wait(sleep(Duration::from_millis(10))).await;
        assert!(matches!(chunk, Waited::Done(())));
        let before_drain = TokioInstant::now();
        deadlines.drain_until(before_drain.into_std() + Duration::from_millis(30));
        let drained = deadlines.wait(sleep(Duration::from_secs(5))).await;
        assert!(matches!(drained, Waited::TimedOut(Which::Total)));
        assert_eq!(before_drain.elapsed(), Duration::from_millis(30));
    }
}
