//! `history series` written out: one figure of one phase across runs, every point with its
//! marks. Markdown shows one unit down the value columns (named in their headings); CSV and
//! JSON keep the stored value bit for bit beside the stored unit's symbol.

use serde_json::json;

use super::{Shown, unit_of};
use crate::history::searches::{SearchAnswer, is_capacity};
use crate::history::{Point, SeriesKey};
use crate::report::render::document::{Block, Document};
use crate::report::render::table::{Align, Cell, Table};

/// The series as a markdown page.
pub fn markdown(key: &SeriesKey, points: &[Point]) -> String {
    document(key, points).markdown()
}

/// The series as a [`Document`]: a table of runs, values in one unit.
pub(crate) fn document(key: &SeriesKey, points: &[Point]) -> Document {
    let shown = Shown::for_values(
        &key.figure,
        points
            .iter()
            .flat_map(|p| [Some(p.value), p.interval.map(|i| i.1)])
            .flatten(),
    );
    let interval = if is_capacity(&key.figure) {
        "Interval (from its probes)"
    } else {
        "95% interval"
    };
    let (value_head, interval_head) = (shown.label("Value"), shown.label(interval));
    let mut table = Table::new(&[
        ("Run", Align::Left),
        ("Started", Align::Left),
        (&value_head, Align::Right),
        (&interval_head, Align::Right),
        ("Work", Align::Left),
        ("Deployment", Align::Left),
        ("Marks", Align::Left),
    ]);
    table.rows = points
        .iter()
        .map(|p| {
            vec![
                Cell::plain(p.run.clone()),
                Cell::plain(p.started_at.to_string()),
                Cell::plain(shown.number(p.value)),
                Cell::plain(p.interval.map_or(String::new(), |(lo, hi)| {
                    format!("{} – {}", shown.number(lo), shown.number(hi))
                })),
                Cell::plain(short(&p.work)),
                Cell::plain(short(&p.deployment)),
                Cell::plain(marks(p)),
            ]
        })
        .collect();
    Document {
        title: format!(
            "{} of {} on {} ({})",
            key.figure, key.phase, key.target, key.plan
        ),
        blocks: vec![Block::Table(table)],
    }
}

/// The series as JSON: its key, the stored unit's symbol and every point as stored.
pub fn json(key: &SeriesKey, points: &[Point]) -> serde_json::Value {
    json!({ "key": key, "unit": unit_of(&key.figure).symbol(), "points": points })
}

/// The series as CSV: each point's stored value and its unit's symbol, its interval,
/// hashes, marks and conditions.
pub fn csv(key: &SeriesKey, points: &[Point]) -> String {
    const HEAD: [&str; 15] = [
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
    let unit = unit_of(&key.figure).symbol();
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let mut writer = csv::Writer::from_writer(Vec::new());
    // Writing to memory cannot fail.
    let _ = writer.write_record(HEAD);
    for p in points {
        let _ = writer.write_record([
            p.run.clone(),
            p.started_at.to_string(),
            p.value.to_string(),
            unit.to_string(),
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
        ]);
    }
    String::from_utf8(writer.into_inner().unwrap_or_default()).unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::synthetic::point;

    fn key(figure: &str) -> SeriesKey {
        SeriesKey {
            plan: "nightly".into(),
            phase: "c8".into(),
            target: "sim".into(),
            figure: figure.into(),
        }
    }

    #[test]
    fn markdown_names_the_unit_once_and_every_value_is_in_it() {
        // 14.5 ms beside 196 ms: the same column, no switch to seconds.
        let mut points = vec![point(1, 0.0145), point(2, 0.196)];
        points[1].interval = Some((0.19, 0.2));
        let md = markdown(&key("ttft.p99"), &points);
        assert!(md.contains("| Value (ms) | 95% interval (ms) |"), "{md}");
        assert!(md.contains("| 14.5 |"), "{md}");
        assert!(md.contains("| 196 | 190 – 200 |"), "{md}");
        assert!(!md.contains(" s |"), "{md}");
        let rate = markdown(&key("output_tokens_per_second"), &[point(1, 812.0)]);
        assert!(
            rate.contains("| Value (tok/s) |") && rate.contains("| 812 |"),
            "{rate}"
        );
    }

    #[test]
    fn csv_and_json_carry_the_stored_value_and_its_unit() {
        let points = [point(1, 1.001)];
        let text = csv(&key("e2e.p99"), &points);
        let mut rows = csv::Reader::from_reader(text.as_bytes());
        let row = rows.records().next().unwrap().unwrap();
        assert_eq!((&row[2], &row[3]), ("1.001", "s"));
        let doc = json(&key("output_tokens_per_second"), &points);
        assert_eq!(doc["unit"], "tok/s");
        assert_eq!(doc["points"][0]["value"], 1.001);
    }
}
