use clap::Parser;

fn main() {
    let cli = servebench::commands::Cli::parse();
    std::process::exit(servebench::commands::run(cli).code());
}
