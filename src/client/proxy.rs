//! An explicit HTTP proxy per target: a `CONNECT` tunnel for `https` targets, requests in
//! absolute form for `http` ones. Environment proxy variables are never consulted.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::setup_error::ClientError;

/// Longest proxy response head read before giving up.
const MAX_HEAD: usize = 16 * 1024;

/// Where the proxy listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Proxy {
    pub host: String,
    pub port: u16,
}

impl Proxy {
    /// `http://host:port` (port 80 when absent); credentials and other schemes are refused.
    pub fn parse(url: &str) -> Result<Proxy, ClientError> {
        // The URL is not quoted back: it may hold credentials.
        let bad = |why: &str| ClientError(format!("invalid proxy URL: {why}"));
        let parsed = reqwest::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
        if parsed.scheme() != "http" {
            return Err(bad("expected an http:// proxy URL"));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad("proxy credentials are not supported"));
        }
        let host = parsed
            .host_str()
            .ok_or_else(|| bad("no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = parsed.port_or_known_default().unwrap_or(80);
        Ok(Proxy { host, port })
    }

    pub fn shown(&self) -> String {
        format!("proxy {}:{}", self.host, self.port)
    }
}

/// Ask the proxy on `tcp` for a tunnel to `authority` (`host:port`); `Ok` once it answers 2xx.
pub(crate) async fn tunnel(tcp: &mut TcpStream, authority: &str) -> Result<(), String> {
    let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    tcp.write_all(request.as_bytes())
        .await
        .map_err(|e| format!("CONNECT {authority} through the proxy: {e}"))?;
    // The tunnel's far side says nothing until the TLS client speaks, so reading past the
    // head cannot swallow its bytes.
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Err(format!(
                "CONNECT {authority}: the proxy's answer has no end"
            ));
        }
        let n = tcp
            .read(&mut buf)
            .await
            .map_err(|e| format!("CONNECT {authority} through the proxy: {e}"))?;
        if n == 0 {
            return Err(format!(
                "CONNECT {authority}: the proxy closed the connection"
            ));
        }
        head.extend_from_slice(&buf[..n]);
    }
    let status_line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let status_line = String::from_utf8_lossy(status_line);
    let status = status_line.split_whitespace().nth(1).unwrap_or_default();
    if status.starts_with('2') && status.len() == 3 {
        Ok(())
    } else {
        Err(format!(
            "CONNECT {authority}: the proxy answered {:?}",
            status_line.chars().take(80).collect::<String>()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_urls() {
        assert_eq!(
            Proxy::parse("http://127.0.0.1:3128").expect("valid"),
            Proxy {
                host: "127.0.0.1".into(),
                port: 3128
            }
        );
        assert_eq!(Proxy::parse("http://proxy").expect("valid").port, 80);
        assert!(Proxy::parse("socks5://127.0.0.1:1080").is_err());
        let err = Proxy::parse("http://user:hunter2@proxy:3128").expect_err("credentials");
        assert!(!err.0.contains("hunter2"), "{err}");
    }
}
