//! `history series`: one figure of one phase across runs, every point with its marks.

use crate::exit::Exit;
use std::path::PathBuf;

use super::{fail, md_table, open, to_json};
use crate::commands::emit;
use crate::figure::Unit;
use crate::history::render::unit_of;
use crate::history::searches::{CAPACITY, SearchAnswer, is_capacity};
use crate::history::{Location, OpenMode, Point, SeriesKey, Store as _};
use crate::report::model::figure_path::{FigurePath, explain};
use crate::report::render::numfmt;

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
        SeriesFormat::Json => to_json(
            &serde_json::json!({ "key": key, "unit": unit_of(&key.figure).symbol(), "points": points }),
        ),
        SeriesFormat::Md => markdown(&key, &points),
        SeriesFormat::Csv => csv(&points, unit_of(&key.figure)),
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

/// What marks a point: excluded, partial, client-bound, a capacity's lower bound.
fn marks(p: &Point) -> String {
    let mut marks = Vec::new();
    if let Some(reason) = &p.excluded {
        marks.push(format!("excluded: {reason}"));
    }
    if p.partial {
        marks.push("partial".to_string());
    }
    if p.client_bound {
        marks.push("client-bound".to_string());
    }
    if let Some(mark) = p.search.and_then(SearchAnswer::mark) {
        marks.push(mark.to_string());
    }
    marks.join("; ")
}

fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

fn markdown(key: &SeriesKey, points: &[Point]) -> String {
    let unit = unit_of(&key.figure);
    // One unit down the column: times under 100 s in milliseconds, as reports print them.
    let shown = |v: f64| numfmt::figure_value(v, unit);
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            vec![
                p.run.clone(),
                p.started_at.to_string(),
                shown(p.value),
                p.interval
                    .map(|(lo, hi)| format!("{} – {}", shown(lo), shown(hi)))
                    .unwrap_or_default(),
                short(&p.work),
                short(&p.deployment),
                marks(p),
            ]
        })
        .collect();
    format!(
        "# {} of {} on {} ({})\n\n{}",
        key.figure,
        key.phase,
        key.target,
        key.plan,
        md_table(
            &[
                "Run",
                "Started",
                "Value",
                if is_capacity(&key.figure) {
                    "Interval (from its probes)"
                } else {
                    "95% interval"
                },
                "Work",
                "Deployment",
                "Marks"
            ],
            &rows
        )
    )
}

fn csv(points: &[Point], unit: Unit) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let head = [
        "run",
        "started_at",
        "value",
        "unit",
        "interval_lo",
        "interval_hi",
        "work_sha256",
        "deployment_sha256",
        "client_bound",
        "partial",
        "excluded",
        "cached_token_ratio",
        "server_queue_share",
        "server_uptime_s",
        "search",
    ];
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let mut rows = vec![head.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    rows.extend(points.iter().map(|p| {
        vec![
            p.run.clone(),
            p.started_at.to_string(),
            p.value.to_string(),
            unit.symbol().to_string(),
            opt(p.interval.map(|i| i.0)),
            opt(p.interval.map(|i| i.1)),
            p.work.to_string(),
            p.deployment.to_string(),
            p.client_bound.to_string(),
            p.partial.to_string(),
            p.excluded.clone().unwrap_or_default(),
            opt(p.conditions.cached_token_ratio),
            opt(p.conditions.server_queue_share),
            opt(p.conditions.server_uptime_s),
            p.search.map(|a| a.name().to_string()).unwrap_or_default(),
        ]
    }));
    for row in rows {
        // Writing to memory cannot fail.
        let _ = writer.write_record(&row);
    }
    String::from_utf8(writer.into_inner().unwrap_or_default()).unwrap_or_default()
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
