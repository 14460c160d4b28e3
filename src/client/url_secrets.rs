//! Secrets inside URLs: user info and key-like query parameters, found, taken out or
//! redacted wherever a URL is written down.

use super::REDACTED;

/// Query parameter names whose values are secret (matched case-insensitively, as a part of
/// the name: `api_key`, `x-token`, `sig`, `access_key`).
const SECRET_PARAMS: &[&str] = &["key", "token", "sig", "secret", "password", "auth"];

fn is_secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMS.iter().any(|p| name.contains(p))
}

/// Parts of a URL: scheme with `://`, user info (without `@`), the rest.
fn split(url: &str) -> (&str, Option<&str>, &str) {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return ("", None, url);
    };
    let (scheme, rest) = url.split_at(scheme_end);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => (scheme, Some(&rest[..at]), &rest[at + 1..]),
        None => (scheme, None, rest),
    }
}

/// `url` without its user info, and the user info percent-decoded as (user, password).
pub fn take_user_info(url: &str) -> (String, Option<(String, String)>) {
    match split(url) {
        (scheme, Some(info), rest) => {
            let (user, pass) = info.split_once(':').unwrap_or((info, ""));
            (
                format!("{scheme}{rest}"),
                Some((percent_decode(user), percent_decode(pass))),
            )
        }
        _ => (url.to_string(), None),
    }
}

/// The secret values a URL holds: user info (whole, decoded password) and secret query values.
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut secrets = Vec::new();
    let (_, info, rest) = split(url);
    if let Some(info) = info {
        secrets.push(info.to_string());
        if let Some((_, pass)) = info.split_once(':') {
            secrets.push(pass.to_string());
            secrets.push(percent_decode(pass));
        }
    }
    if let Some((_, query)) = rest.split_once('?') {
        let query = query.split('#').next().unwrap_or("");
        for pair in query.split('&') {
            if let Some((name, value)) = pair.split_once('=')
                && is_secret_param(name)
            {
                secrets.push(value.to_string());
                secrets.push(percent_decode(value));
            }
        }
    }
    secrets.retain(|s| !s.is_empty());
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    secrets
}

/// `url` fit to write down: user info and secret query values replaced by `<redacted>`.
pub fn redact_url(url: &str) -> String {
    let (scheme, info, rest) = split(url);
    let info = info.map_or(String::new(), |_| format!("{REDACTED}@"));
    let rest = match rest.split_once('?') {
        None => rest.to_string(),
        Some((path, query)) => {
            let (query, fragment) = match query.split_once('#') {
                Some((q, f)) => (q, format!("#{f}")),
                None => (query, String::new()),
            };
            let query = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) if is_secret_param(name) => format!("{name}={REDACTED}"),
                    _ => pair.to_string(),
                })
                .collect::<Vec<_>>()
                .join("&");
            format!("{path}?{query}{fragment}")
        }
    };
    format!("{scheme}{info}{rest}")
}

/// `text` with each secret replaced by `<redacted>`.
pub fn redact_text(mut text: String, secrets: &[String]) -> String {
    for secret in secrets {
        if !secret.is_empty() && text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    text
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_info_and_key_params_are_redacted() {
        let url = "https://bob:s3cr%40t@api.example/v1?api_key=K123&model=m&sig=ZZ#f";
        assert_eq!(
            redact_url(url),
            "https://<redacted>@api.example/v1?api_key=<redacted>&model=m&sig=<redacted>#f"
        );
        let secrets = url_secrets(url);
        for s in ["bob:s3cr%40t", "s3cr%40t", "s3cr@t", "K123", "ZZ"] {
            assert!(secrets.contains(&s.to_string()), "{s} in {secrets:?}");
        }
        assert!(!secrets.contains(&"m".to_string()));
        assert_eq!(
            redact_url("http://127.0.0.1:8000/v1"),
            "http://127.0.0.1:8000/v1"
        );
        // An `@` after the authority is no user info.
        assert_eq!(
            take_user_info("http://h/v1/a@b").0,
            "http://h/v1/a@b".to_string()
        );
    }
}
