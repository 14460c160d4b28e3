//! `history series`: one figure of one phase across runs, every point with its marks;
//! written out by `history::render::series`.

use crate::exit::Exit;
use std::path::PathBuf;

use super::{fail, open, to_json};
use crate::commands::emit;
use crate::history::searches::{CAPACITY, is_capacity};
use crate::history::{Location, OpenMode, SeriesKey, Store as _, render};
use crate::plan::diag::explain_figure_path as explain;
use crate::report::model::figure_path::FigurePath;

#[derive(Debug, clap::Args)]
pub struct SeriesArgs {
    #[arg(long)]
    pub plan: String,
    #[arg(long)]
    pub phase: String,
    #[arg(long)]
    pub target: String,
    /// A figure path as compare and gates write it: ttft.p99, output_tokens_per_second, …;
    /// `capacity` with a search's name as --phase.
    #[arg(long)]
    pub figure: String,
    #[arg(long, value_enum, default_value = "md")]
    pub format: SeriesFormat,
    /// Write here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The output format of `history series`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SeriesFormat {
    Md,
    Json,
    Csv,
}

pub fn run(location: &Location, args: &SeriesArgs) -> Exit {
    if let Err(e) = check_figure(&args.figure) {
        eprintln!("error: --figure: {e}");
        return Exit::InvalidInput;
    }
    let key = SeriesKey {
        plan: args.plan.clone(),
        phase: args.phase.clone(),
        target: args.target.clone(),
        figure: args.figure.clone(),
    };
    let store = match open(location, OpenMode::Existing) {
        Ok(store) => store,
        Err(e) => return fail(&e),
    };
    let points = match store.series(&key) {
        Ok(points) => points,
        Err(e) => return fail(&e),
    };
    if points.is_empty() {
        let known = store.keys(Some(&key.plan)).unwrap_or_default();
        eprintln!("error: {}", missing_series(&key, &known));
        return Exit::InvalidInput;
    }
    let text = match args.format {
        SeriesFormat::Json => to_json(&render::series_json(&key, &points)),
        SeriesFormat::Md => render::series_markdown(&key, &points),
        SeriesFormat::Csv => render::series_csv(&key, &points),
    };
    emit(&text, args.output.as_deref())
}

/// `Ok` for a figure path or `capacity`; else why not, with a "did you mean" when a name
/// is close, as `compare`'s gates give one.
fn check_figure(figure: &str) -> Result<(), String> {
    match figure.parse::<FigurePath>() {
        Ok(_) => Ok(()),
        Err(_) if is_capacity(figure) => Ok(()),
        Err(e) => Err(explain(figure, &e, &[CAPACITY])),
    }
}

/// Why a series has no points: the first of its phase, target and figure that the plan's
/// runs never recorded, with a did-you-mean from the names they did.
fn missing_series(key: &SeriesKey, known: &[SeriesKey]) -> String {
    let named = |what: &str, asked: &str, names: Vec<&str>| {
        let mut names = names;
        names.sort_unstable();
        names.dedup();
        let hint = crate::plan::diag::did_you_mean(asked, names.iter().copied())
            .unwrap_or_else(|| format!("it has {}", names.join(", ")));
        format!(
            "plan `{}` has no {what} `{asked}` in its runs; {hint}",
            key.plan
        )
    };
    if !known.iter().any(|k| k.phase == key.phase) {
        return named(
            "phase",
            &key.phase,
            known.iter().map(|k| k.phase.as_str()).collect(),
        );
    }
    let of_phase: Vec<&SeriesKey> = known.iter().filter(|k| k.phase == key.phase).collect();
    if !of_phase.iter().any(|k| k.target == key.target) {
        return named(
            "target",
            &key.target,
            of_phase.iter().map(|k| k.target.as_str()).collect(),
        );
    }
    format!(
        "phase `{}` against `{}` recorded no `{}` in plan `{}`'s runs",
        key.phase, key.target, key.figure, key.plan
    )
}

#[cfg(test)]
mod tests {
    use super::check_figure;

    #[test]
    fn an_unknown_figure_gets_the_close_name() {
        assert!(check_figure("ttft.p99").is_ok());
        assert!(check_figure("capacity").is_ok());
        let err = check_figure("ttft_p99").unwrap_err();
        assert!(err.ends_with("did you mean `ttft.p99`?"), "{err}");
        let err = check_figure("capacty").unwrap_err();
        assert!(err.ends_with("did you mean `capacity`?"), "{err}");
        let err = check_figure("ttft").unwrap_err();
        assert!(err.contains("name a statistic"), "{err}");
    }
}
