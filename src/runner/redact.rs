//! Secrets inside URLs: user info and key-like query parameters, moved out or redacted.
//!
//! A `base_url` with user info (`https://user:pass@host/v1`) never reaches the client: the
//! run takes the user info out and sends it as an `Authorization: Basic` header, a secret
//! header redacted like any other. Query parameters named like a key stay in the URL the
//! client uses but are replaced by `<redacted>` wherever the URL is written down.

use crate::client::REDACTED;
use crate::plan::Plan;

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

/// Move user info out of every target's `base_url` into an `Authorization: Basic` header
/// (unless the target already sets one), before anything connects or prints a URL.
pub fn move_user_info_to_headers(plan: &mut Plan) {
    for target in plan.targets.values_mut() {
        let Some(url) = &target.base_url else {
            continue;
        };
        let (clean, Some((user, pass))) = take_user_info(url) else {
            continue;
        };
        target.base_url = Some(clean);
        let has_auth = target
            .headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"));
        if !has_auth && target.api_key_env.is_none() {
            let token = base64(format!("{user}:{pass}").as_bytes());
            target
                .headers
                .insert("Authorization".to_string(), format!("Basic {token}"));
        }
    }
}

/// The environment variable that supplies a redacted header of a target:
/// `SERVEBENCH_SECRET_<TARGET>_<HEADER>`, upper case, other characters as `_`.
pub fn secret_env_var(target: &str, header: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("SERVEBENCH_SECRET_{}_{}", clean(target), clean(header))
}

/// Values a report redacted (a plan re-run from one): headers are filled from their
/// [`secret_env_var`] when it is set; what is still redacted is returned as problems, each
/// naming how to supply it. A run must not send the literal `<redacted>`.
pub fn fill_redacted(plan: &mut Plan) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, target) in plan.targets.iter_mut() {
        for (header, value) in target.headers.iter_mut() {
            if !value.contains(REDACTED) {
                continue;
            }
            let var = secret_env_var(name, header);
            match std::env::var(&var) {
                Ok(v) if !v.is_empty() => *value = v,
                _ => problems.push(format!(
                    "target `{name}`: header `{header}` was redacted in the report this plan \
                     came from; export {var} with its value, or give it through `api_key_env`"
                )),
            }
        }
        for (field, url) in [
            ("base_url", &target.base_url),
            ("metrics_url", &target.metrics_url),
        ] {
            if url.as_deref().is_some_and(|u| u.contains(REDACTED)) {
                let how = if field == "base_url" {
                    format!("pass --target {name}=URL with the full URL")
                } else {
                    "edit the plan's metrics_url".to_string()
                };
                problems.push(format!(
                    "target `{name}`: `{field}` holds a value redacted in the report this plan \
                     came from; {how}"
                ));
            }
        }
    }
    problems
}

/// Every URL secret in the plan's targets, for redacting text that may quote them.
pub fn plan_url_secrets(plan: &Plan) -> Vec<String> {
    let mut secrets: Vec<String> = plan
        .targets
        .values()
        .flat_map(|t| t.base_url.iter().chain(t.metrics_url.iter()))
        .flat_map(|u| url_secrets(u))
        .collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    secrets
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

fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
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

    #[test]
    fn redacted_headers_name_their_variable() {
        assert_eq!(
            secret_env_var("gpu-a", "x-api-key"),
            "SERVEBENCH_SECRET_GPU_A_X_API_KEY"
        );
    }

    #[test]
    fn user_info_becomes_basic_auth() {
        let (clean, info) = take_user_info("http://Aladdin:open%20sesame@127.0.0.1:9/v1");
        assert_eq!(clean, "http://127.0.0.1:9/v1");
        let (user, pass) = info.unwrap();
        assert_eq!((user.as_str(), pass.as_str()), ("Aladdin", "open sesame"));
        assert_eq!(
            base64(b"Aladdin:open sesame"),
            "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b""), "");
    }
}
