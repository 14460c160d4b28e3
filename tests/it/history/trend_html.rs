//! The HTML trend report as a person reads it: a table per phase, the watched figures'
//! charts first and the rest folded, axes in the figure's unit, one provenance legend per
//! chart, no line across an import, and a page that stays small at 1,000 runs.

use servebench::history::record::RunSource;
use servebench::history::store::{MemoryStore, Store as _};
use servebench::history::synthetic::{self, Shape};
use servebench::history::trend::{DEFAULT_WATCH, Settings};

use super::trends::{FIGURES, render_store, rendered};

/// The page from phase `phase`'s heading up to the next heading of its rank.
fn phase_section<'a>(page: &'a str, phase: &str) -> &'a str {
    let start = page
        .find(&format!(">{phase} → default</h2>"))
        .unwrap_or_else(|| panic!("no section for {phase}"));
    let rest = &page[start..];
    let end = rest.find("<h2").unwrap_or(rest.len());
    &rest[..end]
}

/// Each chart's SVG text, in page order.
fn charts(text: &str) -> Vec<&str> {
    text.split("<svg")
        .skip(1)
        .map(|s| s.split("</svg>").next().unwrap_or(s))
        .collect()
}

/// The figure a chart draws, from its title (`phase-00 → default · ttft.p99`).
fn figure_of(chart: &str) -> &str {
    let title = chart.split("<title>").nth(1).unwrap_or_default();
    let title = title.split("</title>").next().unwrap_or_default();
    title.rsplit(" · ").next().unwrap_or_default()
}

/// A figure's row of a phase table.
fn row<'a>(section: &'a str, figure: &str) -> &'a str {
    let start = section
        .find(&format!("<tr><td>{figure}</td>"))
        .unwrap_or_else(|| panic!("no row for {figure}: {section}"));
    let rest = &section[start..];
    &rest[..rest.find("</tr>").unwrap_or(rest.len())]
}

#[test]
fn each_phase_has_a_table_of_its_figures_in_their_units() {
    let (_, page) = rendered(40, 3);
    for phase in ["phase-00", "phase-01", "phase-02"] {
        let section = phase_section(&page, phase);
        let table = &section[..section.find("<svg").unwrap()];
        assert!(
            table.contains("<th>Figure</th><th>Latest</th><th>Level</th>"),
            "{table}"
        );
        for figure in FIGURES {
            row(table, figure);
        }
        let latest = |figure: &str| row(table, figure).split("<td").nth(2).unwrap_or_default();
        assert!(latest("ttft.p99").ends_with(" ms</td>"), "{table}");
        assert!(
            latest("output_tokens_per_second").ends_with(" tok/s</td>"),
            "{table}"
        );
        assert!(latest("error_rate").ends_with("%</td>"), "{table}");
    }
    // Phase 0 steps by 15% two thirds of the way: its open alert's row gives the level
    // before and after.
    let alerted = row(phase_section(&page, "phase-00"), "ttft.p99");
    assert!(alerted.contains("<td class=\"bad\">#"), "{alerted}");
    assert!(
        alerted.contains(" open: ") && alerted.contains(" ms → "),
        "{alerted}"
    );
    // Phase 1 has no step: no alert in its rows.
    assert!(!phase_section(&page, "phase-01").contains("class=\"bad\""));
}

#[test]
fn watched_figures_are_charted_first_and_the_rest_folded() {
    let (_, page) = rendered(40, 2);
    let section = phase_section(&page, "phase-01");
    let fold = section.find("<details>").expect("a fold");
    let (open, folded) = (charts(&section[..fold]), charts(&section[fold..]));
    assert_eq!(open.len() + folded.len(), FIGURES.len());
    let open_figures: Vec<&str> = open.iter().map(|c| figure_of(c)).collect();
    assert!(
        open_figures.iter().all(|f| DEFAULT_WATCH.contains(f)),
        "{open_figures:?}"
    );
    let watched_here = FIGURES
        .iter()
        .filter(|f| DEFAULT_WATCH.contains(*f))
        .count();
    assert_eq!(open.len(), watched_here, "{open_figures:?}");
    assert!(
        folded
            .iter()
            .all(|c| !DEFAULT_WATCH.contains(&figure_of(c))),
        "{section}"
    );
    // Each chart's y axis names its unit.
    for (figure, label) in [
        ("ttft.p99", "ttft.p99 (ms)"),
        (
            "output_tokens_per_second",
            "output_tokens_per_second (tok/s)",
        ),
        ("error_rate", "error_rate (%)"),
        ("requests", "requests"),
    ] {
        let chart = charts(section)
            .into_iter()
            .find(|c| figure_of(c) == figure)
            .unwrap();
        assert!(chart.contains(&format!(">{label}</text>")), "{chart}");
    }
}

#[test]
fn every_chart_lists_its_provenance_change_once_under_the_plot() {
    let (_, page) = rendered(40, 2);
    let all = charts(&page);
    assert_eq!(all.len(), 2 * FIGURES.len());
    let (strips, charted): (Vec<&str>, Vec<&str>) = all
        .into_iter()
        .partition(|c| c.contains("class=\"chart strip\""));
    assert!(!charted.is_empty());
    for chart in charted {
        assert_eq!(chart.matches("class=\"lg\"").count(), 1, "{chart}");
        assert!(
            chart.contains(">1 at run-0021: target.default.engine_version: 0.9.1 → 0.9.2<"),
            "{chart}"
        );
    }
    // A steady figure's strip has no legend; its line breaks at the change.
    for strip in strips {
        assert_eq!(line_pieces(strip).len(), 2, "{strip}");
    }
}

/// Runs of one phase, the first `imported` recorded from AIPerf with its own provenance,
/// the rest by servebench: each figure at 5% noise around its own level.
fn imported_then_servebench(runs: usize, imported: usize) -> MemoryStore {
    let figures = ["ttft.p99", "tpot.p50", "output_tokens_per_second"];
    let values: Vec<Vec<f64>> = (0..figures.len())
        .map(|f| {
            let shape = Shape {
                runs,
                level: 0.5 + f as f64,
                noise: 0.05,
                step: None,
            };
            synthetic::values(&shape, f as u64 + 7)
        })
        .collect();
    let mut store = MemoryStore::new();
    for n in 1..=runs {
        let by_aiperf = n <= imported;
        let provenance = if by_aiperf {
            serde_json::json!({"tool": "aiperf 0.3", "host": {"cpu": "arm64, 8 cores"}, "target": {"default": {"engine_version": "0.9.1"}}})
        } else {
            serde_json::json!({"tool": "servebench", "host": {"cpu": "x86-64, 16 cores"}, "target": {"default": {"engine_version": "0.9.2"}}})
        };
        let row = figures
            .iter()
            .enumerate()
            .map(|(f, name)| (name.to_string(), values[f][n - 1]))
            .collect();
        let mut rows = synthetic::run_rows("nightly", n, provenance, &[("phase-00".into(), row)]);
        if by_aiperf {
            rows.run.source = RunSource::Aiperf;
            rows.run.tool = "aiperf".into();
        }
        store.record_rows(&rows).unwrap();
    }
    store
}

/// The x coordinates of each piece of a chart's line.
fn line_pieces(chart: &str) -> Vec<Vec<f64>> {
    chart
        .split("class=\"run-line\"")
        .skip(1)
        .map(|piece| {
            let points = piece.split("points=\"").nth(1).unwrap_or_default();
            let points = points.split('"').next().unwrap_or_default();
            points
                .split(' ')
                .filter_map(|xy| xy.split(',').next()?.parse().ok())
                .collect()
        })
        .collect()
}

#[test]
fn runs_of_an_import_and_of_servebench_are_not_joined_by_a_line() {
    let mut store = imported_then_servebench(40, 15);
    let (_, page) = render_store(&mut store, &Settings::default());
    let all = charts(&page);
    assert_eq!(all.len(), 3);
    for chart in all {
        let pieces = line_pieces(chart);
        let lengths: Vec<usize> = pieces.iter().map(Vec::len).collect();
        assert_eq!(lengths, [15, 25], "{chart}");
        let (before, after) = (&pieces[0], &pieces[1]);
        assert!(
            before.iter().all(|x| x < &after[0]),
            "the pieces do not overlap: {chart}"
        );
        // Three labels changed at once: one numbered rule, one legend line.
        assert_eq!(chart.matches("class=\"lg\"").count(), 1, "{chart}");
        assert!(chart.contains(">1 at run-0016: "), "{chart}");
        assert_eq!(
            chart.matches("stroke-dasharray=\"4 3\"").count(),
            1,
            "{chart}"
        );
    }
}

#[test]
fn a_thousand_runs_of_twenty_phases_stay_well_under_five_megabytes() {
    let (_, page) = rendered(1000, 20);
    let all = charts(&page);
    assert_eq!(all.len(), 20 * FIGURES.len());
    assert!(page.len() < 4_000_000, "{} bytes", page.len());
    // A run's dot with its value in a tooltip.
    let dots = |chart: &str| {
        let dots = chart.split("class=\"runs\"").nth(1).unwrap_or_default();
        let dots = dots.split("</g>").next().unwrap_or_default();
        dots.matches("<title>run-").count()
    };
    let section = phase_section(&page, "phase-07");
    let fold = section.find("<details>").expect("a fold");
    let (open, folded) = (charts(&section[..fold]), charts(&section[fold..]));
    assert!(!open.is_empty() && !folded.is_empty());
    // Watched figures: the newest 60 runs point by point; the folded rest as lines alone
    // (the steady ones as strips).
    assert!(open.iter().all(|c| dots(c) == 60), "{section}");
    assert!(folded.iter().all(|c| dots(c) == 0), "{section}");
    for chart in all {
        // At most 60 older points on the line, and the newest 60.
        let on_line: usize = line_pieces(chart).iter().map(Vec::len).sum();
        assert!(
            (90..=122).contains(&on_line),
            "{on_line} points on the line of {}",
            figure_of(chart)
        );
    }
    println!(
        "trend HTML, 1,000 runs × 20 phases × 16 figures: {} bytes",
        page.len()
    );
}
