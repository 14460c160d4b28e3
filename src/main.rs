use clap::Parser;

fn main() {
    let cli = servebench::cli::Cli::parse();
    std::process::exit(servebench::cli::run(cli));
}
