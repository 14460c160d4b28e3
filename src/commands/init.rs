//! `servebench init [--target NAME=URL] [-o FILE]`: probe a server and write a starter plan.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::client::{Endpoint, ModelsError};
use crate::exit::Exit;
use crate::plan::starter::{Discovery, starter_plan};
use crate::runner::endpoint::resolve;
use crate::workload::tokens::server_root;

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The plan's target: its name and an OpenAI-compatible server's base URL, including
    /// `/v1`, as `run --target` takes it; the embedded simulator when omitted.
    #[arg(long, value_name = "NAME=URL")]
    pub target: Option<String>,
    /// Where to write the plan; an existing file is never overwritten.
    #[arg(short, long, value_name = "FILE", default_value = "plan.yaml")]
    pub output: PathBuf,
}

pub fn run(args: &InitArgs) -> Exit {
    if args.output.exists() {
        eprintln!(
            "error: {} exists; init never overwrites a file\n  = help: name another file with -o",
            args.output.display()
        );
        return Exit::InvalidInput;
    }
    let target = match args.target.as_deref().map(named_target).transpose() {
        Ok(target) => target,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::InvalidInput;
        }
    };
    let discovery = match &target {
        None => Discovery::simulator(DEFAULT_TARGET_NAME),
        Some((name, url)) => {
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: cannot start the runtime: {e}");
                    return Exit::RunFailed;
                }
            };
            match runtime.block_on(probe(name, url)) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Exit::RunFailed;
                }
            }
        }
    };
    let file = args
        .output
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = starter_plan(&discovery, &file);
    // `create_new` so a file that appeared since the check is not overwritten either.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&args.output)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    match written {
        Ok(()) => {
            println!("wrote {}", args.output.display());
            for note in [&discovery.tokenizer_note, &discovery.metrics_note] {
                println!("  {}", note.lines().next().unwrap_or_default());
            }
            Exit::Success
        }
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", args.output.display());
            Exit::RunFailed
        }
    }
}

/// The target's name when `--target` gives none, or no server at all.
const DEFAULT_TARGET_NAME: &str = "server";

/// `--target NAME=URL` as its name and URL. A bare URL, the old form, is still read (as
/// target `server`) with a note.
fn named_target(arg: &str) -> Result<(String, String), String> {
    let is_url = |s: &str| s.starts_with("http://") || s.starts_with("https://");
    if is_url(arg) {
        eprintln!(
            "note: `--target URL` is deprecated and will be removed; write `--target \
             {DEFAULT_TARGET_NAME}={arg}` (NAME=URL, as `run --target` takes it)"
        );
        return Ok((DEFAULT_TARGET_NAME.to_string(), arg.to_string()));
    }
    let example = format!("for example --target {DEFAULT_TARGET_NAME}=http://127.0.0.1:8000/v1");
    let Some((name, url)) = arg.split_once('=') else {
        return Err(format!("--target {arg}: expected NAME=URL ({example})"));
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(format!(
            "--target {arg}: {name:?} is not a target name: use letters, digits, `_`, `-` or `.`"
        ));
    }
    if !is_url(url) {
        return Err(format!(
            "--target {arg}: expected an http:// or https:// URL after `=` ({example})"
        ));
    }
    Ok((name.to_string(), url.to_string()))
}

/// How long each probe waits for the server.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Ask the server for its models, and whether it serves `/tokenize` and `/metrics`.
async fn probe(name: &str, base_url: &str) -> Result<Discovery, String> {
    // The URL as a plan target would give it, resolved the way a run resolves one.
    let target = crate::plan::Target {
        base_url: Some(base_url.to_string()),
        ..Default::default()
    };
    let endpoint = resolve(&target, Path::new("")).map_err(|e| e.to_string())?;
    let root = server_root(&endpoint.base_url);
    let client = endpoint
        .side_client(Some(PROBE_TIMEOUT))
        .map_err(|e| e.to_string())?;

    let (model, model_note) = probe_models(&endpoint, &client).await?;
    let (tokenizer, tokenizer_note) = probe_tokenize(&client, &root, model.as_deref()).await;
    let (metrics_url, metrics_note) = probe_metrics(&client, &root).await;
    Ok(Discovery {
        target_name: name.to_string(),
        base_url: Some(endpoint.base_url),
        model,
        model_note,
        tokenizer,
        tokenizer_note,
        metrics_url,
        metrics_note,
    })
}

/// The served models, listed by the run's own model discovery: the first is the plan's, with
/// a note on the others.
async fn probe_models(
    endpoint: &Endpoint,
    client: &reqwest::Client,
) -> Result<(Option<String>, String), String> {
    let models_url = endpoint.models_url();
    let ids = endpoint
        .list_models(client, PROBE_TIMEOUT)
        .await
        .map_err(|why| match why {
            ModelsError::Unreachable(why) => format!("cannot list models at {models_url}: {why}"),
            ModelsError::Unusable(why) => format!("cannot list models: {models_url} {why}"),
        })?;
    Ok(match ids.as_slice() {
        [] => (
            None,
            format!("{models_url} listed no model; set the name the server expects"),
        ),
        [only] => (Some(only.clone()), format!("from {models_url}")),
        [first, rest @ ..] => (
            Some(first.clone()),
            format!(
                "the first of {} models at {models_url}; the others: {}",
                rest.len() + 1,
                rest.join(", ")
            ),
        ),
    })
}

/// Whether the server tokenizes (`/tokenize`), which picks the plan's tokenizer.
async fn probe_tokenize(
    client: &reqwest::Client,
    root: &str,
    model: Option<&str>,
) -> (&'static str, String) {
    let tokenize_url = format!("{root}/tokenize");
    let body = serde_json::json!({"model": model.unwrap_or_default(), "prompt": "Hello"});
    let tokenize = client
        .post(&tokenize_url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await;
    match tokenize {
        Ok(r) if r.status().is_success() => (
            "server",
            format!(
                "{tokenize_url} answered, so prompts are sized with the server's own tokenizer"
            ),
        ),
        Ok(r) => (
            "builtin",
            format!(
                "{tokenize_url} answered {}, so prompts are sized with the embedded BPE table;\n\
                 point `tokenizer:` at the model's tokenizer.json for exact sizes",
                r.status()
            ),
        ),
        Err(e) => (
            "builtin",
            format!(
                "{tokenize_url} could not be reached ({e}), so prompts are sized with the \
                 embedded BPE table;\npoint `tokenizer:` at the model's tokenizer.json for exact sizes"
            ),
        ),
    }
}

/// Whether the server has Prometheus metrics to scrape.
async fn probe_metrics(client: &reqwest::Client, root: &str) -> (Option<String>, String) {
    let metrics = format!("{root}/metrics");
    let scraped = client.get(&metrics).send().await;
    match scraped {
        Ok(r) if r.status().is_success() => (
            Some(metrics.clone()),
            format!("{metrics} answered: server metrics are scraped before and after each phase"),
        ),
        Ok(r) => (
            None,
            format!(
                "{metrics} answered {}: no server metrics in the report",
                r.status()
            ),
        ),
        Err(e) => (
            None,
            format!("{metrics} could not be reached ({e}): no server metrics in the report"),
        ),
    }
}
