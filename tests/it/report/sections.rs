//! The report's sections declared once: each declared body writes, markdown and HTML print the
//! sections in the declared order, `shown_sections` agrees with the headings printed, and both
//! markups say what each section's blocks say.

use super::*;
use servebench::figure::Figure;
use servebench::metrics::recovery::{Baseline, Recovery, RecoveryBin, RecoverySettings};
use servebench::metrics::stability::{StableEstimate, UntilOutcome};
use servebench::metrics::trust::{ClientLoad, ClientTrust, TrustVerdict};
use servebench::metrics::{InFlight, Interval, LatencySplit, PercentileIntervals, ServerTimingGap};
use servebench::metrics::{SessionSummary, TurnFigures};
use servebench::plan::SearchLoad;
use servebench::report::render::document::{html_body, markdown_body};
use servebench::report::render::sections::{Markup, SECTIONS, SectionId, shown_sections};
use servebench::report::{
    ArmPair, ArmResult, BackendShare, GaugeRange, GaugesFrom, HookOutcome, HookStatus, HookWhen,
    MetricsPoint, PairFigure, PhaseMark, RepeatResult, RoundSpread, SearchResult, ServerMetrics,
    WindowSampling,
};

/// The sample report with something for every section to show.
pub(crate) fn report_with_every_section() -> Report {
    let mut r = sample_report(1.0);
    let p = &mut r.phases[0];
    add_marks_and_recovery(p);
    add_stability_and_trust(p);
    add_transport_hooks_and_mixes(p);
    p.server_metrics = Some(server_metrics());
    add_reasoning_and_acceptance(p);
    add_cost_and_energy(p);
    // Checked replies: a structured-output share and an accuracy.
    p.summary.structured_output = Some(servebench::metrics::reply_check::StructuredOutput {
        checked: 10,
        valid: 9,
        valid_share: 0.9,
        valid_share_ci95: [0.6, 0.98],
        invalid: Vec::new(),
    });
    p.summary.accuracy = Some(servebench::metrics::score::Accuracy {
        scored: 10,
        correct: 8,
        accuracy: 0.8,
        accuracy_ci95: [0.49, 0.94],
    });
    r.searches = vec![SearchResult {
        phase: "find".into(),
        load: SearchLoad::Concurrency,
        capacity: Some(4.0),
        lower_bound: false,
        capacity_interval: [Some(4.0), Some(16.0)],
        goodput: Some(2.0),
        bracket: [Some(4.0), Some(16.0)],
        start: None,
        stop_reason: "precision reached".into(),
        stop: None,
        probes: Vec::new(),
        work_sha256: None,
    }];
    r.repeats = vec![repeat_group()];
    // A decode rate for the gateway sweep (c1, c4, c16 on one route) gives it a frontier.
    for p in r
        .phases
        .iter_mut()
        .filter(|p| p.header.route == "least-request")
    {
        let ttft = *p.summary.distribution(Figure::Ttft).expect("ttft");
        let decode = Distribution {
            mean: 1.0 / ttft.p50,
            ..ttft
        };
        p.summary.figures.set(Figure::DecodeTokS, Some(decode));
    }
    r
}

/// Reasoning counted apart (some from the stream) and speculative-decoding acceptance with
/// its counters.
fn add_reasoning_and_acceptance(p: &mut PhaseResult) {
    p.summary.reasoning = Some(servebench::metrics::ReasoningSummary {
        requests: 4,
        total_reasoning_tokens: 120,
        total_content_tokens: 80,
        content_tokens_per_second: 40.0,
        counted_from_stream: 1,
    });
    p.summary.spec_decode = Some(servebench::metrics::SpecDecodeSummary {
        requests: 4,
        num_spec_steps: 20,
        num_draft_tokens: 60,
        num_accepted_draft_tokens: 36,
        acceptance_rate: Some(0.6),
        acceptance_rate_ci95: Some([0.5, 0.7]),
        acceptance_length: Some(2.8),
        acceptance_length_ci95: Some([2.5, 3.1]),
        acceptance_histogram: vec![2, 4, 6, 8],
        counters: servebench::metrics::SpecDecodeCounters::from_deltas(20.0, 60.0, 36.0),
    });
}

/// A priced target and a power gauge sampled through the window.
fn add_cost_and_energy(p: &mut PhaseResult) {
    p.cost = Some(servebench::metrics::cost::PhaseCost {
        currency: "USD".into(),
        per_hour: 12.5,
        window_cost: 0.15,
        per_million_output_tokens: Some(24.4),
        per_million_tokens: Some(7.9),
    });
    p.energy = Some(servebench::metrics::energy::PhaseEnergy {
        metric: "DCGM_FI_DEV_POWER_USAGE".into(),
        method: "trapezoid".into(),
        interval_s: 1.0,
        samples: 45,
        devices: 2,
        window_s: 43.2,
        max_gap_s: Some(1.0),
        joules: Some(17280.0),
        mean_watts: Some(400.0),
        joules_per_output_token: Some(2.8125),
        joules_per_request: Some(720.0),
        unavailable: None,
    });
}

/// Two marks around a fault and the recovery measured between them.
fn add_marks_and_recovery(p: &mut PhaseResult) {
    p.marks = vec![
        PhaseMark {
            name: "fault-on".into(),
            offset_s: 1.0,
            when: HookWhen::During,
        },
        PhaseMark {
            name: "fault-off".into(),
            offset_s: 2.0,
            when: HookWhen::During,
        },
    ];
    let bin = |start_s: f64, errors: u64| RecoveryBin {
        start_s,
        requests: 4,
        errors,
        ttft_p50_ms: Some(150.0),
        outside: errors > 0,
    };
    p.recovery = Some(Recovery {
        fault_on_s: 1.0,
        fault_off_s: Some(2.0),
        baseline: Baseline {
            source: "pre-fault".into(),
            requests: 8,
            error_rate: 0.0,
            ttft_p50_ms: Some(150.0),
        },
        settings: RecoverySettings::default(),
        outage_start_s: Some(1.0),
        outage_end_s: Some(2.25),
        outage_s: Some(1.25),
        time_to_recover_s: Some(0.25),
        bins: (0..12)
            .map(|i| bin(f64::from(i) * 0.25, u64::from((4..9).contains(&i))))
            .collect(),
    });
}

/// A `run until stable` outcome, load in flight, a TTFT interval and a client-bound verdict.
fn add_stability_and_trust(p: &mut PhaseResult) {
    p.until = Some(UntilOutcome {
        stopped_by: "stable".into(),
        within: 0.05,
        checks: 3,
        checked_at_s: 12.0,
        estimates: vec![StableEstimate {
            metric: "ttft.p50".into(),
            samples: 24,
            estimate: Some(0.16),
            half_width: Some(0.004),
            relative: Some(0.025),
            halves_change: None,
            verdict: DriftVerdict::Stable,
        }],
        verdict: DriftVerdict::Stable,
        warning: None,
    });
    p.summary.in_flight = Some(InFlight {
        requests: 3.9,
        tokens: 1200.0,
        mean_latency_s: 0.4,
    });
    let ttft = p.summary.figures.get_mut(Figure::Ttft).expect("ttft");
    ttft.ci95 = Some(PercentileIntervals {
        p50: Some(Interval {
            lo: ttft.p50 * 0.95,
            hi: ttft.p50 * 1.05,
            rank_lo: 7,
            rank_hi: 18,
            coverage: 0.97,
        }),
        p95: None,
        p99: None,
    });
    p.client_trust = Some(ClientTrust {
        verdict: TrustVerdict::ClientBound,
        reasons: vec!["client CPU 95.0% above 90%".into()],
        load: ClientLoad {
            wall_s: 12.0,
            ticks: 1200,
            cpu_share: Some(0.95),
            ..ClientLoad::default()
        },
        send_lag_p99_ms: None,
    });
}

/// Connections with a latency split, a hook with output, sessions, models and cancellations.
fn add_transport_hooks_and_mixes(p: &mut PhaseResult) {
    p.transport.connections_opened = 3;
    p.transport.server_timing_gap = Some(ServerTimingGap {
        requests: 20,
        split: Some(LatencySplit {
            requests: 20,
            e2e_ms: 1800.0,
            ..LatencySplit::default()
        }),
    });
    p.hooks = vec![HookOutcome {
        when: HookWhen::Before,
        action: "exec ./reset.sh".into(),
        outcome: HookStatus::Ok,
        duration_ms: 0.0,
        detail: String::new(),
        exit_status: None,
        output_tail: vec!["reset".into()],
        mark: None,
    }];
    p.sessions = Some(SessionSummary {
        sessions: 4,
        complete: 4,
        duration: None,
        turns: vec![TurnFigures {
            turn: 0,
            requests: 4,
            ..TurnFigures::default()
        }],
    });
    let group = servebench::metrics::MixFigures {
        requests: 4,
        share: 1.0,
        ..Default::default()
    };
    p.models = vec![servebench::metrics::ModelFigures {
        model: "adapter-a".into(),
        of: group.clone(),
    }];
    p.archetypes = vec![servebench::metrics::ArchetypeFigures {
        archetype: "short-chat".into(),
        of: group,
    }];
    p.cancellations = Some(servebench::metrics::cancellation::Cancellations {
        cancelled: 2,
        share: 0.5,
        mean_tokens_before_cancel: 8.0,
        first_cancel_s: 1.0,
        before: None,
        after: None,
        change: None,
        capacity_lost: false,
        server_aborted: None,
    });
}

/// Two backends sharing the load and the server sampled over the window.
fn server_metrics() -> ServerMetrics {
    ServerMetrics {
        backends: ["a", "b"]
            .iter()
            .map(|name| BackendShare {
                name: name.to_string(),
                requests: 12.0,
                share: Some(0.5),
                ..BackendShare::default()
            })
            .collect(),
        normalized_gauges: [(
            "requests_running".to_string(),
            GaugeRange {
                min: 0.0,
                max: 4.0,
                mean: Some(3.5),
            },
        )]
        .into(),
        gauges_from: GaugesFrom::Window,
        timeline: (0..4)
            .map(|i| MetricsPoint {
                t_s: f64::from(i),
                requests_running: Some(1.0),
                ..MetricsPoint::default()
            })
            .collect(),
        sampling: Some(WindowSampling {
            interval_s: 1.0,
            samples: 4,
            span_s: 3.0,
            ..WindowSampling::default()
        }),
        ..ServerMetrics::default()
    }
}

/// Two arms over two rounds whose difference exceeds their spread.
fn repeat_group() -> RepeatResult {
    let spread = RoundSpread {
        metric: "ttft.p50".into(),
        pooled: Some(0.16),
        rounds: vec![0.15, 0.17],
        min: Some(0.15),
        max: Some(0.17),
    };
    let arm = |name: &str| ArmResult {
        arm: name.into(),
        phases: vec![format!("{name}-1"), format!("{name}-2")],
        pooled: Default::default(),
        spread: vec![spread.clone()],
    };
    RepeatResult {
        group: "speed".into(),
        rounds: 2,
        arms: vec![arm("fast"), arm("slow")],
        pairs: vec![ArmPair {
            a: "fast".into(),
            b: "slow".into(),
            metrics: vec![PairFigure {
                metric: "ttft.p50".into(),
                difference: 0.1,
                spread: 0.02,
                exceeds_spread: true,
            }],
        }],
    }
}

/// Every report the checks below run on: the sample, every seed, one with every section.
fn reports() -> Vec<(String, Report)> {
    let mut reports = vec![
        ("sample".to_string(), sample_report(1.0)),
        ("every section".to_string(), report_with_every_section()),
    ];
    for seed in std::fs::read_dir("tests/fixtures/seeds").expect("seeds") {
        let path = seed.expect("entry").path();
        let report = report::read_report(&path).expect("seed reads");
        reports.push((path.display().to_string(), report));
    }
    reports
}

fn section(id: SectionId) -> &'static servebench::report::render::sections::Section {
    SECTIONS.iter().find(|s| s.id == id).expect("declared")
}

/// The text of each `## ` heading, in order.
fn markdown_headings(md: &str) -> Vec<&str> {
    md.lines().filter_map(|l| l.strip_prefix("## ")).collect()
}

/// The `id` and text of each `<h2>`, in order.
fn html_headings(html: &str) -> Vec<(&str, &str)> {
    html.split("<h2 id=\"")
        .skip(1)
        .map(|rest| {
            let (id, rest) = rest.split_once("\">").expect("id closes");
            let (title, _) = rest.split_once("</h2>").expect("heading closes");
            (id, title)
        })
        .collect()
}

/// GitHub's anchor for a markdown heading: lower case, punctuation dropped, spaces to dashes.
fn github_anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn the_full_report_shows_every_declared_section() {
    let shown = shown_sections(&report_with_every_section());
    let declared: Vec<SectionId> = SECTIONS.iter().map(|s| s.id).collect();
    assert_eq!(shown, declared);
}

#[test]
fn every_section_has_a_body_that_writes_in_each_markup_it_claims() {
    let report = report_with_every_section();
    for s in &SECTIONS {
        assert!(
            s.printed_in(Markup::Html),
            "{:?} is not in the HTML page",
            s.id
        );
        let blocks = (s.body)(&report);
        let mut html = String::new();
        html_body(&mut html, &blocks);
        assert!(!html.trim().is_empty(), "{:?} wrote no HTML", s.id);
        if s.printed_in(Markup::Markdown) {
            let mut markdown = String::new();
            markdown_body(&mut markdown, &blocks);
            assert!(!markdown.trim().is_empty(), "{:?} wrote no markdown", s.id);
            assert!(
                !markdown.contains("<svg"),
                "{:?}: a chart in markdown",
                s.id
            );
        }
    }
    // The chart sections are the ones markdown leaves out.
    let html_only: Vec<SectionId> = SECTIONS
        .iter()
        .filter(|s| !s.printed_in(Markup::Markdown))
        .map(|s| s.id)
        .collect();
    assert_eq!(
        html_only,
        [
            SectionId::ConcurrencySweeps,
            SectionId::LatencyPercentiles,
            SectionId::EveryRequest,
        ]
    );
}

#[test]
fn anchors_are_unique_and_markdown_sections_keep_githubs() {
    let report = sample_report(1.0);
    let mut anchors: Vec<&str> = SECTIONS.iter().map(|s| s.anchor).collect();
    anchors.sort_unstable();
    anchors.dedup();
    assert_eq!(anchors.len(), SECTIONS.len(), "an anchor used twice");
    for s in SECTIONS.iter().filter(|s| s.printed_in(Markup::Markdown)) {
        assert_eq!(s.anchor, github_anchor(s.title(&report)), "{:?}", s.id);
    }
}

#[test]
fn both_markups_print_the_shown_sections_in_the_declared_order() {
    for (name, report) in reports() {
        let shown = shown_sections(&report);
        let html = report::formats::html::render(&report);
        let printed: Vec<(&str, &str)> = html_headings(&html);
        let expected: Vec<(&str, &str)> = shown
            .iter()
            .map(|&id| (section(id).anchor, section(id).title(&report)))
            .collect();
        assert_eq!(printed, expected, "{name}: HTML headings");

        let toc = html.split("<nav class=\"toc\">").nth(1).expect("contents");
        let toc = toc.split("</nav>").next().expect("contents close");
        let linked: Vec<&str> = toc
            .split("href=\"#")
            .skip(1)
            .filter_map(|l| l.split('"').next())
            .collect();
        let anchors: Vec<&str> = expected.iter().map(|(a, _)| *a).collect();
        assert_eq!(linked, anchors, "{name}: contents");

        let md = report::formats::markdown::render(&report);
        let in_markdown: Vec<&str> = shown
            .iter()
            .map(|&id| section(id))
            .filter(|s| s.printed_in(Markup::Markdown))
            .map(|s| s.title(&report))
            .collect();
        assert_eq!(
            markdown_headings(&md),
            in_markdown,
            "{name}: markdown headings"
        );
    }
}

#[test]
fn a_section_is_shown_only_when_its_report_has_it() {
    let full = report_with_every_section();
    let sample = sample_report(1.0);
    let shown = shown_sections(&sample);
    for absent in [
        SectionId::MarksAndRecovery,
        SectionId::RunUntilStable,
        SectionId::CapacitySearches,
        SectionId::Repeats,
        SectionId::ClientTrust,
        SectionId::Sessions,
        SectionId::Server,
    ] {
        assert!(!shown.contains(&absent), "{absent:?} in the sample");
        assert!(
            shown_sections(&full).contains(&absent),
            "{absent:?} in the full report"
        );
    }
    // Always there, even with nothing in them.
    let mut bare = sample.clone();
    bare.phases.clear();
    bare.rechecks.clear();
    assert_eq!(
        shown_sections(&bare),
        [
            SectionId::Phases,
            SectionId::EveryRequest,
            SectionId::Errors
        ]
    );
}

#[test]
fn every_column_and_fact_label_is_in_sentence_case() {
    let mut report = report_with_every_section();
    report.metadata.insert("gpu_count".into(), 8.into());
    let html = report::formats::html::render(&report);
    let labels: Vec<&str> = html
        .split("<th>")
        .skip(1)
        .filter_map(|rest| rest.split("</th>").next())
        .collect();
    assert!(labels.len() > 100, "{} labels", labels.len());
    for label in [
        "GPU count",
        "Engine",
        "Late wakes",
        "Duration (ms)",
        "Client queue",
        "Sessions complete",
        "Prefix-cache hits",
        "Round min",
        "Running (min / mean / max)",
    ] {
        assert!(labels.contains(&label), "{label} is not a label");
    }
    for label in labels {
        // A percentile's name stays as written (`p50 [95% interval] (ms)`); the backends'
        // bar column has no label.
        let percentile =
            label.starts_with('p') && label[1..].starts_with(|c: char| c.is_ascii_digit());
        let lower = label.starts_with(|c: char| c.is_lowercase());
        assert!(
            !lower || percentile,
            "a label not in sentence case: {label:?}"
        );
    }
}

#[test]
fn the_docs_list_every_section_in_order_with_its_markup() {
    let docs = std::fs::read_to_string("docs/reports.md").expect("docs");
    let rows: Vec<(String, String)> = docs
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("| `#"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[2].trim_matches('`').to_string(), cells[4].to_string())
        })
        .collect();
    let declared: Vec<(String, String)> = SECTIONS
        .iter()
        .map(|s| {
            let markup = if s.printed_in(Markup::Markdown) {
                "both"
            } else {
                "HTML"
            };
            (format!("#{}", s.anchor), markup.to_string())
        })
        .collect();
    assert_eq!(rows, declared, "docs/reports.md's table of sections");
}
