//! Faults switched on and off over HTTP while the simulator runs (`POST`/`DELETE /sim/faults`),
//! so a test or a plan can start and end an outage without restarting the server. Only
//! loopback peers may switch them.

use std::net::SocketAddr;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::SimFault;
use super::faults::SwitchedFaults;
use super::generate::SimBody;

/// A control body is a fault rule or a short list of them; nothing larger is read.
const MAX_CONTROL_BYTES: usize = 64 * 1024;

/// The connection's peer, put on each request by the connection that read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub SocketAddr);

/// One rule or a list, as `POST /sim/faults` takes them.
#[derive(Deserialize)]
#[serde(untagged)]
enum Rules {
    One(SimFault),
    Many(Vec<SimFault>),
}

/// `GET` lists the switched rules, `POST` replaces them, `DELETE` clears them.
pub(crate) async fn handle(
    switched: &SwitchedFaults,
    request: Request<Incoming>,
) -> Response<SimBody> {
    let peer = request.extensions().get::<Peer>().map(|p| p.0);
    if !peer.is_some_and(|p| is_loopback(&p)) {
        return reply(
            StatusCode::FORBIDDEN,
            json!({"error": "faults may be switched from loopback only"}),
        );
    }
    match *request.method() {
        Method::GET => reply(StatusCode::OK, json!({"faults": switched.current()})),
        Method::DELETE => {
            switched.set(Vec::new());
            reply(StatusCode::OK, json!({"faults": []}))
        }
        Method::POST => match read_rules(request).await {
            Ok(rules) => {
                switched.set(rules.clone());
                reply(StatusCode::OK, json!({ "faults": rules }))
            }
            Err(message) => reply(StatusCode::BAD_REQUEST, json!({ "error": message })),
        },
        _ => reply(
            StatusCode::METHOD_NOT_ALLOWED,
            json!({"error": "use GET, POST or DELETE for /sim/faults"}),
        ),
    }
}

pub(crate) fn is_loopback(peer: &SocketAddr) -> bool {
    match peer.ip() {
        std::net::IpAddr::V4(ip) => ip.is_loopback(),
        // `::ffff:127.0.0.1` from a dual-stack listener is loopback too.
        std::net::IpAddr::V6(ip) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

async fn read_rules(request: Request<Incoming>) -> Result<Vec<SimFault>, String> {
    let body = Limited::new(request.into_body(), MAX_CONTROL_BYTES)
        .collect()
        .await
        .map_err(|e| format!("could not read the body: {e}"))?
        .to_bytes();
    let rules = match serde_json::from_slice::<Rules>(&body) {
        Ok(Rules::One(rule)) => vec![rule],
        Ok(Rules::Many(rules)) => rules,
        // The untagged error says nothing useful; one rule's own error does.
        Err(_) => vec![
            serde_json::from_slice::<SimFault>(&body)
                .map_err(|e| format!("not a fault rule (or a list of them): {e}"))?,
        ],
    };
    // The same checks as rules in the simulator's settings.
    let mut problems = Vec::new();
    for (index, rule) in rules.iter().enumerate() {
        super::settings::check_fault(&mut problems, index, rule);
    }
    if problems.is_empty() {
        Ok(rules)
    } else {
        Err(problems.join("; "))
    }
}

fn reply(status: StatusCode, value: serde_json::Value) -> Response<SimBody> {
    let mut response = Response::new(SimBody::full(value.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimFaultKind;

    #[test]
    fn only_loopback_peers_switch() {
        for (addr, ok) in [
            ("127.0.0.1:1", true),
            ("127.8.0.2:1", true),
            ("[::1]:1", true),
            ("[::ffff:127.0.0.1]:1", true),
            ("10.0.0.1:1", false),
            ("[::ffff:192.168.1.2]:1", false),
            ("[2001:db8::1]:1", false),
        ] {
            let peer: SocketAddr = addr.parse().unwrap();
            assert_eq!(is_loopback(&peer), ok, "{addr}");
        }
    }

    #[test]
    fn switched_rules_select_until_cleared() {
        let switched = SwitchedFaults::default();
        assert!(switched.select(1, 1).is_none());
        switched.set(vec![SimFault {
            kind: SimFaultKind::Status,
            probability: Some(1.0),
            every: None,
            at: vec![],
            status: Some(503),
            seconds: None,
            after_tokens: None,
        }]);
        assert_eq!(switched.select(1, 7).map(|f| f.status), Some(Some(503)));
        switched.set(Vec::new());
        assert!(switched.select(1, 8).is_none());
    }
}
