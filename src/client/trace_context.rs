//! W3C trace context: the `traceparent` header each request carries, so a server's traces
//! join the report's records row by row.
//!
//! The trace id's first 16 hex digits come from the run (its request-id prefix, `<run>-<phase>`,
//! hashed with a random draw made when the client is set up, so two runs never share one) and
//! its last 16 are the request index; the parent (span) id is the hash of both. The flags say
//! "sampled", so servers that trace only sampled requests keep them.

use hyper::header::{HeaderName, HeaderValue};

use crate::hash::{IdHash, mix64, write_hex_u64};

/// The header's name.
pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// Whether requests carry a `traceparent` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceContextMode {
    /// A W3C `traceparent` on every request (the default).
    #[default]
    W3c,
    /// No trace context header.
    Off,
}

/// The per-request header values a request carries: its id and its trace context.
#[derive(Debug, Default)]
pub(super) struct SentIds {
    pub id: Option<HeaderValue>,
    pub traceparent: Option<HeaderValue>,
}

/// One client's trace ids: the run's half, drawn once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceIds {
    run: u64,
}

impl TraceIds {
    /// Trace ids for requests named `{prefix}-{index}`, unlike any other run's.
    pub fn new(prefix: &str) -> Self {
        Self::with_draw(prefix, rand::random())
    }

    /// [`TraceIds::new`] with the random draw given (tests).
    pub fn with_draw(prefix: &str, draw: u64) -> Self {
        let [hash, _] = IdHash::new().update(prefix.as_bytes()).lanes();
        // Never zero: an all-zero trace id is invalid.
        TraceIds {
            run: mix64(hash ^ draw).max(1),
        }
    }

    /// The request's trace id, 32 lower-case hex digits.
    #[cfg(test)]
    pub fn trace_id(&self, request_index: u64) -> String {
        self.traceparent(request_index).1
    }

    /// The request's `traceparent` value and its trace id.
    pub fn traceparent(&self, request_index: u64) -> (HeaderValue, String) {
        let span = mix64(self.run ^ mix64(request_index)).max(1);
        // Written in place: through `format!` this cost more than the rest of the request's
        // headers.
        let mut value = *b"00-0123456789abcdef0123456789abcdef-0123456789abcdef-01";
        write_hex_u64(&mut value[3..19], self.run);
        write_hex_u64(&mut value[19..35], request_index);
        write_hex_u64(&mut value[36..52], span);
        let trace_id = std::str::from_utf8(&value[3..35])
            .expect("hex digits")
            .to_string();
        let header = HeaderValue::from_bytes(&value).expect("hex digits and dashes");
        (header, trace_id)
    }
}

/// The trace id of a `traceparent` value, when it is a well-formed version-00 one.
pub fn trace_id_of(traceparent: &str) -> Option<&str> {
    let mut parts = traceparent.split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let well_formed = parts.next().is_none()
        && version == "00"
        && hex(trace, 32)
        && hex(span, 16)
        && hex(flags, 2)
        && trace.bytes().any(|b| b != b'0')
        && span.bytes().any(|b| b != b'0');
    well_formed.then_some(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_is_well_formed_and_carries_the_index() {
        let ids = TraceIds::with_draw("run-c1", 7);
        let (header, trace_id) = ids.traceparent(12);
        let text = header.to_str().unwrap();
        assert_eq!(trace_id_of(text), Some(trace_id.as_str()));
        assert!(trace_id.ends_with("000000000000000c"), "{trace_id}");
        assert!(text.starts_with("00-") && text.ends_with("-01"), "{text}");
        assert_eq!(ids.traceparent(12), (header, trace_id.clone()));
        assert_ne!(ids.trace_id(13), trace_id);
    }

    #[test]
    fn the_traceparent_written_in_place_is_the_formatted_one() {
        for (draw, index) in [(7, 0), (1, 12), (u64::MAX, u64::MAX), (42, 1 << 40)] {
            let ids = TraceIds::with_draw("run-c1", draw);
            let span = mix64(ids.run ^ mix64(index)).max(1);
            let trace_id = format!("{:016x}{index:016x}", ids.run);
            let (header, id) = ids.traceparent(index);
            assert_eq!(
                header.to_str().unwrap(),
                format!("00-{trace_id}-{span:016x}-01")
            );
            assert_eq!(id, trace_id);
        }
    }

    #[test]
    fn runs_and_phases_never_share_trace_ids() {
        let a = TraceIds::with_draw("plan-20261205T000000Z-c1", 1);
        // The same run id in the same second, another draw.
        let b = TraceIds::with_draw("plan-20261205T000000Z-c1", 2);
        let c = TraceIds::with_draw("plan-20261205T000000Z-c2", 1);
        assert_ne!(a.trace_id(0), b.trace_id(0));
        assert_ne!(a.trace_id(0), c.trace_id(0));
        assert_ne!(
            TraceIds::new("x").trace_id(0),
            TraceIds::new("x").trace_id(0)
        );
    }

    #[test]
    fn malformed_traceparents_are_refused() {
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
        ] {
            assert_eq!(trace_id_of(bad), None, "{bad}");
        }
        assert_eq!(
            trace_id_of("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            Some("0af7651916cd43dd8448eb211c80319c")
        );
    }
}
