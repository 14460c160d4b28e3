//! The report's sections, declared once: each one's id, anchor, title, when it is shown and
//! its body in each markup. The markdown and HTML writers walk [`SECTIONS`] in order.

use super::{
    backends, cancel_table, connections, interval_table, server_table, session_table, table,
};
use super::{chart_sections, html_sections, markdown_sections};
use super::{load_table, model_table, pareto, recovery_table, trust_table, until_table};
use crate::report::model::Report;

/// A human-readable markup the report is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    Markdown,
    Html,
}

/// Every section a report can have, in the order the writers print them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SectionId {
    Phases,
    LoadHeld,
    MarksAndRecovery,
    Cancellations,
    RunUntilStable,
    PercentileIntervals,
    ConcurrencySweeps,
    ParetoFrontier,
    LatencyPercentiles,
    CapacitySearches,
    Rechecks,
    EveryRequest,
    Repeats,
    PromptTokens,
    ClientTrust,
    Connections,
    Sessions,
    Models,
    Backends,
    Server,
    Errors,
}

/// Writes a section's body, everything under its heading.
pub type Body = fn(&mut String, &Report);

/// The markups a section is written in, with its body in each.
pub enum Bodies {
    Both {
        markdown: Body,
        html: Body,
    },
    /// A chart section: markdown has no charts, so it leaves the section out.
    HtmlOnly {
        html: Body,
    },
}

pub enum Title {
    Fixed(&'static str),
    /// A title that names what the report measured.
    PerReport(fn(&Report) -> &'static str),
}

pub struct Section {
    pub id: SectionId,
    /// The HTML heading's `id`; for a section markdown prints too, the anchor GitHub gives
    /// its heading, so one link works in both.
    pub anchor: &'static str,
    pub title: Title,
    pub shown: fn(&Report) -> bool,
    pub bodies: Bodies,
}

impl Section {
    pub fn title(&self, report: &Report) -> &'static str {
        match self.title {
            Title::Fixed(title) => title,
            Title::PerReport(title) => title(report),
        }
    }

    /// The section's body in `markup`, when it is written there.
    pub fn body(&self, markup: Markup) -> Option<Body> {
        match (&self.bodies, markup) {
            (Bodies::Both { markdown, .. }, Markup::Markdown) => Some(*markdown),
            (Bodies::Both { html, .. } | Bodies::HtmlOnly { html }, Markup::Html) => Some(*html),
            (Bodies::HtmlOnly { .. }, Markup::Markdown) => None,
        }
    }
}

fn always(_: &Report) -> bool {
    true
}

/// The report's sections in print order.
pub const SECTIONS: [Section; 21] = [
    Section {
        id: SectionId::Phases,
        anchor: "phases",
        title: Title::Fixed("Phases"),
        shown: always,
        bodies: Bodies::Both {
            markdown: markdown_sections::phases,
            html: html_sections::phases,
        },
    },
    Section {
        id: SectionId::LoadHeld,
        anchor: "load-as-held",
        title: Title::Fixed("Load as held"),
        shown: |r| !load_table::table(r).is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::load_held,
            html: html_sections::load_held,
        },
    },
    Section {
        id: SectionId::MarksAndRecovery,
        anchor: "marks-and-recovery",
        title: Title::Fixed("Marks and recovery"),
        shown: |r| !recovery_table::marks(r).is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::marks_and_recovery,
            html: html_sections::marks_and_recovery,
        },
    },
    Section {
        id: SectionId::Cancellations,
        anchor: "cancellations",
        title: Title::Fixed("Cancellations"),
        shown: cancel_table::shown,
        bodies: Bodies::Both {
            markdown: cancel_table::markdown,
            html: cancel_table::html,
        },
    },
    Section {
        id: SectionId::RunUntilStable,
        anchor: "run-until-stable",
        title: Title::Fixed("Run until stable"),
        shown: |r| !until_table::table(r).is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::run_until_stable,
            html: html_sections::run_until_stable,
        },
    },
    Section {
        id: SectionId::PercentileIntervals,
        anchor: "percentile-intervals",
        title: Title::Fixed("Percentile intervals"),
        shown: |r| !interval_table::intervals(r).table.is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::percentile_intervals,
            html: html_sections::percentile_intervals,
        },
    },
    Section {
        id: SectionId::ConcurrencySweeps,
        anchor: "concurrency-sweeps",
        title: Title::Fixed("Concurrency sweeps"),
        shown: |r| !chart_sections::sweeps(r).is_empty(),
        bodies: Bodies::HtmlOnly {
            html: chart_sections::concurrency_sweeps,
        },
    },
    Section {
        id: SectionId::ParetoFrontier,
        anchor: "pareto-frontier",
        title: Title::Fixed("Pareto frontier"),
        shown: |r| !pareto::groups(r).is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::pareto_frontier,
            html: html_sections::pareto_frontier,
        },
    },
    Section {
        id: SectionId::LatencyPercentiles,
        anchor: "latency-percentiles-per-phase",
        title: Title::Fixed("Latency percentiles per phase"),
        shown: |r| chart_sections::percentile_rows(r).any(),
        bodies: Bodies::HtmlOnly {
            html: chart_sections::latency_percentiles,
        },
    },
    Section {
        id: SectionId::CapacitySearches,
        anchor: "capacity-searches",
        title: Title::Fixed("Capacity searches"),
        shown: |r| !r.searches.is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::capacity_searches,
            html: html_sections::capacity_searches,
        },
    },
    Section {
        id: SectionId::Rechecks,
        anchor: "rechecks",
        title: Title::Fixed("Rechecks"),
        shown: |r| !r.rechecks.is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::rechecks,
            html: html_sections::rechecks,
        },
    },
    Section {
        id: SectionId::EveryRequest,
        anchor: "every-request",
        title: Title::PerReport(chart_sections::every_request_title),
        // Always: a report without records says so here.
        shown: always,
        bodies: Bodies::HtmlOnly {
            html: chart_sections::every_request,
        },
    },
    Section {
        id: SectionId::Repeats,
        anchor: "repeats",
        title: Title::Fixed("Repeats"),
        shown: |r| !r.repeats.is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::repeats,
            html: html_sections::repeats,
        },
    },
    Section {
        id: SectionId::PromptTokens,
        anchor: "prompt-tokens-planned-vs-actual",
        title: Title::Fixed("Prompt tokens: planned vs actual"),
        shown: |r| !table::prompt_tokens(r).is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::prompt_tokens,
            html: html_sections::prompt_tokens,
        },
    },
    Section {
        id: SectionId::ClientTrust,
        anchor: "client-trust",
        title: Title::Fixed("Client trust"),
        shown: |r| !trust_table::table(r).is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::client_trust,
            html: html_sections::client_trust,
        },
    },
    Section {
        id: SectionId::Connections,
        anchor: "connections-and-server-timing",
        title: Title::Fixed("Connections and server timing"),
        shown: |r| !connections::table(r).is_empty() || !connections::warnings(r).is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::connections,
            html: html_sections::connections,
        },
    },
    Section {
        id: SectionId::Sessions,
        anchor: "sessions-by-turn",
        title: Title::Fixed("Sessions by turn"),
        shown: |r| !session_table::table(r).is_empty(),
        bodies: Bodies::Both {
            markdown: markdown_sections::sessions,
            html: html_sections::sessions,
        },
    },
    Section {
        id: SectionId::Models,
        anchor: "by-model",
        title: Title::Fixed("By model"),
        shown: |r| r.phases.iter().any(|p| !p.models.is_empty()),
        bodies: Bodies::Both {
            markdown: model_table::markdown,
            html: model_table::html,
        },
    },
    Section {
        id: SectionId::Backends,
        anchor: "backends-behind-the-gateway",
        title: Title::Fixed("Backends behind the gateway"),
        shown: |r| {
            !backends::table(r).is_empty()
                || !backends::warnings(r).is_empty()
                || !backends::notes(r).is_empty()
        },
        bodies: Bodies::Both {
            markdown: markdown_sections::backends,
            html: html_sections::backends,
        },
    },
    Section {
        id: SectionId::Server,
        anchor: "server",
        title: Title::Fixed("Server"),
        shown: |r| server_table::sampled(r).next().is_some(),
        bodies: Bodies::Both {
            markdown: markdown_sections::server,
            html: html_sections::server,
        },
    },
    Section {
        id: SectionId::Errors,
        anchor: "errors",
        title: Title::Fixed("Errors"),
        // Always: "no failed requests" is worth saying.
        shown: always,
        bodies: Bodies::Both {
            markdown: markdown_sections::errors,
            html: html_sections::errors,
        },
    },
];

/// The sections `report` shows, in print order: every one the HTML page prints (markdown
/// prints those of them it has a body for).
pub fn shown_sections(report: &Report) -> Vec<SectionId> {
    SECTIONS
        .iter()
        .filter(|s| (s.shown)(report))
        .map(|s| s.id)
        .collect()
}

/// The sections `report` shows in `markup`, in print order, each with its body there.
pub fn printed(report: &Report, markup: Markup) -> Vec<(&'static Section, Body)> {
    SECTIONS
        .iter()
        .filter(|s| (s.shown)(report))
        .filter_map(|s| Some((s, s.body(markup)?)))
        .collect()
}
