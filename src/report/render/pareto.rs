//! The Pareto frontier of a sweep's or a search's phases: the server's output throughput
//! against each user's decode rate and against TTFT p50, as a table and, in HTML, charts.

use indexmap::IndexMap;

use super::numfmt::{ms, sig3};
use super::svg::{self, FrontierPoint};
use super::table::{Align, Cell, Mark, Table, load_label};
use crate::figure::Figure;
use crate::report::model::{PhaseResult, Report};

/// Fewer points than this make no frontier worth drawing.
pub const MIN_POINTS: usize = 3;

/// What the section compares, stated once above its table.
pub const NOTE: &str = "Phases of one route and workload (a sweep, or a search's probes), \
rechecks and embeddings left out, when there are three or more. Output tok/s is the server's \
Σ output tokens / elapsed; tok/s per user is the mean over requests of the decode rate \
(output tokens − 1) / generation time. A phase is on a frontier when no other phase of its \
group is at least as good on both of its figures and better on one: more output tok/s and \
more tok/s per user, or more output tok/s and a lower TTFT p50. Client-bound phases are \
listed but on no frontier, as their latencies include client-side delay.";

/// One phase's place in its group.
pub struct Point<'a> {
    pub phase: &'a PhaseResult,
    pub output_tok_s: f64,
    pub tok_s_per_user: f64,
    pub ttft_p50_ms: f64,
    /// The client kept up, so the figures can be trusted.
    pub trusted: bool,
    pub on_per_user_frontier: bool,
    pub on_ttft_frontier: bool,
}

/// Which points no other point dominates (at least as good on both axes, better on one),
/// with both axes higher-is-better. A `None` point is on no frontier and dominates nothing.
pub fn frontier(points: &[Option<(f64, f64)>]) -> Vec<bool> {
    let dominates =
        |a: (f64, f64), b: (f64, f64)| a.0 >= b.0 && a.1 >= b.1 && (a.0 > b.0 || a.1 > b.1);
    points
        .iter()
        .map(|p| p.is_some_and(|p| !points.iter().flatten().any(|other| dominates(*other, p))))
        .collect()
}

/// A phase's point, when it generated tokens and has both figures.
fn point(p: &PhaseResult) -> Option<Point<'_>> {
    if p.header.recheck_of.is_some() || p.summary.encodes() {
        return None;
    }
    let ttft = p.summary.distribution(Figure::Ttft)?;
    let decode = p.summary.distribution(Figure::DecodeTokS)?;
    Some(Point {
        phase: p,
        output_tok_s: p.summary.output_tokens_per_second,
        tok_s_per_user: decode.mean,
        ttft_p50_ms: ttft.p50 * 1000.0,
        trusted: p.client_trust.as_ref().is_none_or(|t| t.is_trusted()),
        on_per_user_frontier: false,
        on_ttft_frontier: false,
    })
}

/// Groups of three or more points keyed by `route / workload`, in plan order, with their
/// frontiers marked.
pub fn groups(report: &Report) -> IndexMap<String, Vec<Point<'_>>> {
    let mut groups: IndexMap<String, Vec<Point>> = IndexMap::new();
    for p in report.phases.iter().filter_map(point) {
        groups
            .entry(format!(
                "{} / {}",
                p.phase.header.route, p.phase.header.workload
            ))
            .or_default()
            .push(p);
    }
    groups.retain(|_, ps| ps.len() >= MIN_POINTS);
    for ps in groups.values_mut() {
        let axes = |y: fn(&Point) -> f64| -> Vec<Option<(f64, f64)>> {
            ps.iter()
                .map(|p| p.trusted.then(|| (p.output_tok_s, y(p))))
                .collect()
        };
        let per_user = frontier(&axes(|p| p.tok_s_per_user));
        let ttft = frontier(&axes(|p| -p.ttft_p50_ms));
        for ((p, u), t) in ps.iter_mut().zip(per_user).zip(ttft) {
            p.on_per_user_frontier = u;
            p.on_ttft_frontier = t;
        }
    }
    groups
}

/// One row per point of every group.
pub fn table(report: &Report) -> Table {
    let mut t = Table::new(&[
        ("Group", Align::Left),
        ("Phase", Align::Left),
        ("Load", Align::Left),
        ("Output tok/s", Align::Right),
        ("Tok/s per user", Align::Right),
        ("TTFT p50 (ms)", Align::Right),
        ("Frontier: tok/s per user", Align::Left),
        ("Frontier: TTFT", Align::Left),
    ]);
    let flag = |p: &Point, on: bool| match (p.trusted, on) {
        (false, _) => Cell::marked("client-bound", Mark::Warn),
        (true, true) => Cell::marked("yes", Mark::Good),
        (true, false) => Cell::plain("no"),
    };
    for (name, ps) in groups(report) {
        for p in &ps {
            t.rows.push(vec![
                Cell::plain(name.clone()),
                Cell::plain(p.phase.header.phase.clone()),
                Cell::plain(load_label(p.phase)),
                Cell::plain(sig3(p.output_tok_s)),
                Cell::plain(sig3(p.tok_s_per_user)),
                Cell::plain(ms(p.ttft_p50_ms)),
                flag(p, p.on_per_user_frontier),
                flag(p, p.on_ttft_frontier),
            ]);
        }
    }
    t
}

/// Two charts per group: output tok/s against tok/s per user and against TTFT p50.
pub fn charts(report: &Report) -> Vec<String> {
    let mut charts = Vec::new();
    for (name, ps) in groups(report) {
        let chart_points = |x: fn(&Point) -> f64, on: fn(&Point) -> bool| -> Vec<FrontierPoint> {
            ps.iter()
                .map(|p| FrontierPoint {
                    label: load_label(p.phase),
                    x: x(p),
                    y: p.output_tok_s,
                    on_frontier: on(p),
                    trusted: p.trusted,
                })
                .collect()
        };
        charts.push(svg::frontier_chart(
            &format!("{name}: output tok/s vs tok/s per user"),
            "tok/s per user (mean decode rate)",
            &chart_points(|p| p.tok_s_per_user, |p| p.on_per_user_frontier),
            // Throughput rises as each user's rate falls: the top right stays clear.
            false,
        ));
        charts.push(svg::frontier_chart(
            &format!("{name}: output tok/s vs TTFT p50"),
            "TTFT p50 (ms)",
            &chart_points(|p| p.ttft_p50_ms, |p| p.on_ttft_frontier),
            // Throughput rises with TTFT: the top left stays clear.
            true,
        ));
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::frontier;

    #[test]
    fn a_dominated_point_is_off_the_frontier() {
        // (2, 2) beats (1, 1) on both; (3, 0.5) and (0.5, 3) trade one for the other.
        let on = frontier(&[
            Some((1.0, 1.0)),
            Some((2.0, 2.0)),
            Some((3.0, 0.5)),
            Some((0.5, 3.0)),
        ]);
        assert_eq!(on, [false, true, true, true]);
    }

    #[test]
    fn a_point_better_on_one_axis_only_dominates_its_tie() {
        // Equal throughput, more per user: the first is dominated.
        assert_eq!(
            frontier(&[Some((5.0, 1.0)), Some((5.0, 2.0))]),
            [false, true]
        );
    }

    #[test]
    fn identical_points_are_both_on_the_frontier() {
        let on = frontier(&[Some((5.0, 2.0)), Some((5.0, 2.0)), Some((1.0, 1.0))]);
        assert_eq!(on, [true, true, false]);
    }

    #[test]
    fn a_single_point_is_its_own_frontier() {
        assert_eq!(frontier(&[Some((1.0, 1.0))]), [true]);
    }

    #[test]
    fn a_left_out_point_is_on_no_frontier_and_dominates_nothing() {
        let on = frontier(&[None, Some((1.0, 1.0)), Some((0.5, 2.0))]);
        // Without the left-out point neither of the others is dominated.
        assert_eq!(on, [false, true, true]);
        assert_eq!(
            frontier(&[Some((9.0, 9.0)), Some((1.0, 1.0))]),
            [true, false]
        );
    }
}
