//! Secrets inside URLs: user info and key-like query parameters, moved out or redacted.
//!
//! A `base_url` with user info (`https://user:pass@host/v1`) never reaches the client: the
//! run takes the user info out and sends it as an `Authorization: Basic` header, a secret
//! header redacted like any other. Query parameters named like a key stay in the URL the
//! client uses but are replaced by `<redacted>` wherever the URL is written down.

use crate::client::REDACTED;
pub use crate::client::url_secrets::{redact_text, redact_url, take_user_info, url_secrets};
use crate::plan::Plan;

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
        let metrics = target.metrics.iter().flat_map(|m| m.urls());
        let urls = (target.base_url.iter().map(|u| ("base_url", u.as_str())))
            .chain(metrics.map(|u| ("metrics", u)));
        for (field, url) in urls {
            if url.contains(REDACTED) {
                let how = if field == "base_url" {
                    format!("pass --target {name}=URL with the full URL")
                } else {
                    "edit the plan's `metrics`".to_string()
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
        .flat_map(|t| {
            let metrics = t.metrics.iter().flat_map(|m| m.urls());
            t.base_url.iter().map(String::as_str).chain(metrics)
        })
        .flat_map(url_secrets)
        .collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    secrets
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
