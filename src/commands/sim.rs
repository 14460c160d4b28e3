//! `servebench sim`: load settings, serve on the given address until Ctrl-C.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use crate::exit::Exit;
use crate::sim::{SimConfig, config_file::load_config, serve_on};

#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to listen on; its API is at http://HOST:PORT/v1.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Simulator settings (YAML, or JSON when the name ends in .json).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Seed for jitter, output lengths and fault draws (overrides the file's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Run the simulator in the foreground.
pub fn run(args: SimArgs) -> Exit {
    let mut config = match &args.config {
        Some(path) => match load_config(path) {
            Ok(config) => config,
            Err(message) => {
                eprintln!("error: {message}");
                return Exit::InvalidInput;
            }
        },
        None => SimConfig::default(),
    };
    if args.seed.is_some() {
        config.seed = args.seed;
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return Exit::RunFailed;
        }
    };
    let model = config
        .model
        .clone()
        .unwrap_or_else(|| crate::sim::DEFAULT_MODEL.to_string());
    let other_names = if config.accept_any_model == Some(true) {
        "and any other name"
    } else {
        "(404 `model_not_found` for another; `accept_any_model: true` in --config serves any)"
    };
    runtime.block_on(async move {
        let addr = SocketAddr::new(args.host, args.port);
        let (local, handle) = match serve_on(config, addr).await {
            Ok(served) => served,
            Err(err) if err.kind() == std::io::ErrorKind::InvalidInput => {
                eprintln!("error: {err}");
                return Exit::InvalidInput;
            }
            Err(err) => {
                eprintln!("error: cannot listen on {addr}: {err}");
                return Exit::RunFailed;
            }
        };
        eprintln!(
            "servebench sim: serving model `{model}` {other_names} on http://{local}/v1 (Ctrl-C stops)"
        );
        if let Err(err) = tokio::signal::ctrl_c().await {
            eprintln!("error: cannot wait for Ctrl-C: {err}");
        }
        handle.shutdown().await;
        Exit::Success
    })
}
