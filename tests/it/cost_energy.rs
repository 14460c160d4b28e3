//! A target's cost and power gauge against the simulator over loopback: the price per
//! million tokens is the hour's price over the window exactly, the sampled power integrates
//! to the simulator's own energy account within 2%, every new figure reaches report.json,
//! markdown and HTML, the phases CSV, `compare`, gates and the history (where a new price
//! starts no new segment), and bad settings are refused at their keys.

use std::path::Path;

use servebench::report::Report;
use servebench::report::compare::compare;

use crate::common::{history_ok, sim_series};
use servebench::report::compare::gate::Gate;
use servebench::report::figure_path::FigurePath;

/// Each new figure: its path, and its CSV column.
const FIGURES: [(&str, &str); 5] = [
    (
        "cost_per_million_output_tokens",
        "cost_per_million_output_tokens",
    ),
    ("cost_per_million_tokens", "cost_per_million_tokens"),
    ("energy.mean_watts", "energy_mean_watts"),
    (
        "energy.joules_per_output_token",
        "energy_joules_per_output_token",
    ),
    ("energy.joules_per_request", "energy_joules_per_request"),
];

/// Four requests at a time of 200 tokens each at 2 ms a token (±30% seeded jitter, so the
/// four drift apart rather than end together), for 8 s; the simulator draws nothing idle
/// and 50 W per running request, over two devices, sampled every 100 ms.
const PLAN: &str = "\
version: 1
name: cost-energy-e2e
seed: 5
targets:
  sim:
    simulator:
      prefill_tok_s: 0
      decode_ms_per_token: 2
      jitter: 0.3
      power: {idle_watts: 0, watts_per_running: 50, devices: 2}
    metrics_interval: 100ms
    cost: {per_hour: 12.5, currency: USD}
    power: {}
workloads:
  w: {input_tokens: 32, output_tokens: 200, ignore_eos: true}
phases:
  - {name: p, target: sim, workload: w, concurrency: 4, duration: 8s}
";

fn value(report: &Report, path: &str) -> f64 {
    let path: FigurePath = path.parse().unwrap();
    path.value(&report.phases[0])
        .unwrap_or_else(|| panic!("{path}: no value"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cost_and_energy_of_a_simulator_run_reach_every_consumer() {
    let _guard = crate::common::exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let report = crate::common::run_plan_text(dir.path(), PLAN).await;
    let phase = &report.phases[0];
    let s = &phase.summary;
    assert!(s.success > 0 && s.errors == 0, "{s:?}");

    // Cost: 12.5 an hour over the window, per million tokens, to the last bit.
    let cost = phase.cost.as_ref().expect("a priced target has a cost");
    let window = 12.5 * s.elapsed / 3600.0;
    let per_output = window * 1e6 / s.total_output_tokens as f64;
    let per_token = window * 1e6 / (s.total_input_tokens + s.total_output_tokens) as f64;
    assert_eq!(cost.currency, "USD");
    assert_eq!(cost.per_million_output_tokens, Some(per_output));
    assert_eq!(cost.per_million_tokens, Some(per_token));

    // Energy: the trapezoid over the samples against the joules the simulator counted
    // between the scrapes around the window (it draws nothing idle, so all of them fell in
    // the window).
    let energy = phase.energy.as_ref().expect("power was asked for");
    assert_eq!(energy.unavailable, None, "{energy:?}");
    assert_eq!(
        (energy.method.as_str(), energy.interval_s, energy.devices),
        ("trapezoid", 0.1, 2)
    );
    let counted = phase.server_metrics.as_ref().unwrap().counter_deltas["servebench_sim:energy_joules_total"]
        / s.total_output_tokens as f64;
    let sampled = energy.joules_per_output_token.unwrap();
    eprintln!("joules per output token: sampled {sampled}, counted {counted}");
    assert!(
        (sampled - counted).abs() / counted <= 0.02,
        "sampled {sampled} J/token, the simulator counted {counted}: {energy:?}"
    );
    // Never more than four requests ran: at most 200 W.
    let watts = energy.mean_watts.unwrap();
    assert!(watts > 0.0 && watts <= 200.0 + 1e-9, "{watts}");
    assert_eq!(
        energy.joules_per_request,
        Some(energy.joules.unwrap() / s.requests as f64)
    );

    every_figure_in_each_format(dir.path(), &report);
    compared_and_gated(&report);
    recorded_in_the_history(dir.path());
}

/// report.json, markdown, HTML and the phases CSV.
fn every_figure_in_each_format(dir: &Path, report: &Report) {
    let out = dir.join("out");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    crate::common::assert_valid_report(&json);
    let phase = &json["phases"][0];
    for key in ["per_million_output_tokens", "per_million_tokens"] {
        assert!(phase["cost"][key].is_number(), "cost.{key}: {phase}");
    }
    for key in [
        "mean_watts",
        "joules_per_output_token",
        "joules_per_request",
    ] {
        assert!(phase["energy"][key].is_number(), "energy.{key}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(md.contains("## Cost and energy"), "{md}");
    assert!(html.contains("id=\"cost-and-energy\""));
    // The phase's row of the section: its figures to three significant digits, each also
    // in the HTML page.
    let section = md.split("## Cost and energy").nth(1).unwrap();
    let row = section
        .lines()
        .find(|l| l.starts_with("| p |"))
        .expect(section);
    let cells: Vec<&str> = row
        .split(" | ")
        .map(|c| c.trim_matches('|').trim())
        .collect();
    for (i, (path, _)) in FIGURES.iter().enumerate() {
        let cell = cells[i + 1];
        let shown: f64 = cell.trim_end_matches(" USD").parse().expect(cell);
        let v = value(report, path);
        assert!((shown - v).abs() <= v * 0.005, "{path}: {cell} for {v}");
        assert!(html.contains(cell), "{path}: {cell} not in the HTML");
    }
    // The method beside the figures (markdown escapes the name's underscores).
    assert!(
        cells[6].starts_with("trapezoid of")
            && cells[6].contains("DCGM\\_FI\\_DEV\\_POWER\\_USAGE")
            && cells[6].contains("over 2 devices")
            && cells[6].contains("every 0.100 s"),
        "{row}"
    );
    assert!(html.contains("trapezoid of") && html.contains("DCGM_FI_DEV_POWER_USAGE"));
    let csv_text = servebench::report::formats::csv::render_phases(report);
    let mut csv = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let row = csv.records().next().unwrap().unwrap();
    for (path, column) in FIGURES {
        let at = header.iter().position(|h| h == column).expect(column);
        assert_eq!(
            row[at].parse::<f64>().unwrap(),
            value(report, path),
            "{column}"
        );
    }
}

/// `compare` lists each figure; gates read them, relative and absolute.
fn compared_and_gated(report: &Report) {
    let listed: Vec<String> = compare("a", report, "b", report, &[]).phases[0]
        .metrics
        .iter()
        .map(|m| m.metric.clone())
        .collect();
    for (path, _) in FIGURES {
        assert!(listed.iter().any(|m| m == path), "{path} not compared");
    }
    for (path, _) in FIGURES {
        let v = value(report, path);
        let gates: Vec<Gate> = [
            format!("{path} <= +1%"),
            format!("p:{path} <= {}", v * 1.01),
            format!("{path} < {}", v * 0.5),
        ]
        .iter()
        .map(|g| g.parse().unwrap())
        .collect();
        let verdicts: Vec<bool> = compare("a", report, "b", report, &gates)
            .gates
            .iter()
            .map(|g| g.passed)
            .collect();
        assert_eq!(verdicts, [true, true, false], "{path}");
    }
}

/// `history record` of the run and of the same run at another price, then `history series`
/// of each figure: two points of the one deployment (a price starts no segment), and the
/// export holds them.
fn recorded_in_the_history(dir: &Path) {
    let report_path = dir.join("out/report.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    doc["run_id"] = "repriced".into();
    doc["plan"]["targets"]["sim"]["cost"]["per_hour"] = 20.0.into();
    let repriced = dir.join("repriced.json");
    std::fs::write(&repriced, serde_json::to_vec(&doc).unwrap()).unwrap();
    let store = dir.join("history.sqlite");
    let store = store.to_str().unwrap();
    history_ok(
        store,
        &[
            "record",
            report_path.to_str().unwrap(),
            repriced.to_str().unwrap(),
        ],
    );
    let report: Report = serde_json::from_value(doc).unwrap();
    for (path, _) in FIGURES {
        let series = sim_series(store, "cost-energy-e2e", "p", path);
        let points = series["points"].as_array().expect("points");
        assert_eq!(points.len(), 2, "{path}: {series}");
        assert_eq!(points[0]["deployment"], points[1]["deployment"], "{path}");
        assert_eq!(
            points[1]["value"].as_f64(),
            Some(value(&report, path)),
            "{path}"
        );
    }
    let export = dir.join("export");
    history_ok(
        store,
        &["export", "--format", "csv", export.to_str().unwrap()],
    );
    let figures = std::fs::read_to_string(export.join("figures.csv")).unwrap();
    for (path, _) in FIGURES {
        assert!(
            figures.contains(&format!(",{path},")),
            "{path} not exported"
        );
    }
}

/// `(target, want, at)`: a one-phase plan whose fourth line is `  sim: <target>` is refused
/// (exit 2) with an error holding `want` whose caret is at the column where `at` is.
#[test]
fn bad_cost_and_power_settings_are_refused_at_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let plan = |target: &str| {
        format!(
            "version: 1\nname: ce\ntargets:\n  sim: {target}\nworkloads:\n  \
             w: {{input_tokens: 16, output_tokens: 8}}\nphases:\n  \
             - {{name: p, target: sim, workload: w, concurrency: 1, requests: 4}}\n"
        )
    };
    let ok = "{simulator: {power: {idle_watts: 90}}, cost: {per_accelerator_hour: 2.5, \
              accelerators: 8, currency: EUR}, power: {metric: DCGM_FI_DEV_POWER_USAGE}}";
    let (code, stderr) = crate::common::validate_yaml(dir.path(), &plan(ok));
    assert_eq!(code, 0, "{stderr}");
    let cases = [
        (
            "{simulator: {}, cost: {per_hour: -1}}",
            "a price must be",
            "-1",
        ),
        (
            "{simulator: {}, cost: {per_accelerator_hour: 2, accelerators: 0}}",
            "at least one accelerator",
            "0}",
        ),
        (
            "{simulator: {}, cost: {per_hour: 1, per_accelerator_hour: 2, accelerators: 1}}",
            "are exclusive",
            "per_accelerator_hour",
        ),
        (
            "{simulator: {}, cost: {per_accelerator_hour: 2}}",
            "needs `accelerators`",
            "per_accelerator_hour",
        ),
        (
            "{simulator: {}, cost: {currency: USD}}",
            "needs `per_hour`",
            "cost",
        ),
        (
            "{simulator: {}, cost: {per_hour: 1, currency: dollars}}",
            "not a currency code",
            "dollars",
        ),
        (
            "{simulator: {}, cost: {per_hour: 1, curency: USD}}",
            "did you mean `currency`?",
            "curency",
        ),
        (
            "{simulator: {}, power: {metric: \"power usage\"}}",
            "not a Prometheus metric name",
            "\"power usage\"",
        ),
        (
            "{simulator: {}, metrics_interval: off, power: {}}",
            "`metrics_interval` is off",
            "power",
        ),
        (
            "{base_url: \"http://127.0.0.1:9/v1\", model: m, power: {}}",
            "needs the target's `metrics`",
            "power",
        ),
        (
            "{simulator: {power: {idle_watts: -5}}}",
            "finite number of watts",
            "-5",
        ),
        (
            "{simulator: {power: {devices: 0}}}",
            "must be at least 1",
            "0}",
        ),
    ];
    for (target, want, at) in cases {
        let yaml = plan(target);
        let column = yaml.lines().nth(3).unwrap().find(at).unwrap() + 1;
        let (code, stderr) = crate::common::validate_yaml(dir.path(), &yaml);
        assert_eq!(code, 2, "{target}: {stderr}");
        let error = stderr
            .split("error: ")
            .find(|e| e.contains(want))
            .unwrap_or_else(|| panic!("{target}: no `{want}` in {stderr}"));
        assert!(
            error.contains(&format!("plan.yaml:4:{column}\n")),
            "{target}: {error}"
        );
    }
}
