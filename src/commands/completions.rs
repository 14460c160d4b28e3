//! `servebench completions SHELL`: print a shell completion script.

use clap::CommandFactory;

use super::Cli;
use crate::exit::Exit;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub fn run(args: &CompletionsArgs) -> Exit {
    let mut command = Cli::command();
    let name = command.get_name().to_string();
    clap_complete::generate(args.shell, &mut command, name, &mut std::io::stdout());
    Exit::Success
}
