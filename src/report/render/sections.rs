//! The report's sections, declared once: each one's id, anchor, title, when it is shown, its
//! body as blocks and the markups it is printed in. The markdown and HTML writers walk
//! [`SECTIONS`] in order and print each body with their own printer.

use super::document::Block;
use super::interval_table;
use super::section_blocks as blocks;
use super::{backends, cancel_table, chart_sections, connections, cost_energy_table};
use super::{checks_table, trust_table, until_table};
use super::{load_table, pareto, recovery_table, server_table, session_table, table};
use crate::report::model::Report;

/// A human-readable markup the report is written in.
pub use super::document::Markup;

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
    Archetypes,
    Backends,
    Server,
    Errors,
    Reasoning,
    SpeculativeDecoding,
    CostAndEnergy,
    CheckedReplies,
}

/// A section's body, everything under its heading, built once for every markup.
pub type Body = fn(&Report) -> Vec<Block>;

/// The markups a section is printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markups {
    Both,
    /// A chart section: markdown has no charts, so it leaves the section out.
    HtmlOnly,
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
    pub body: Body,
    pub markups: Markups,
}

impl Section {
    pub fn title(&self, report: &Report) -> &'static str {
        match self.title {
            Title::Fixed(title) => title,
            Title::PerReport(title) => title(report),
        }
    }

    /// Whether `markup` prints the section.
    pub fn printed_in(&self, markup: Markup) -> bool {
        markup == Markup::Html || self.markups == Markups::Both
    }
}

fn always(_: &Report) -> bool {
    true
}

/// The report's sections in print order.
pub const SECTIONS: [Section; 26] = [
    Section {
        id: SectionId::Phases,
        anchor: "phases",
        title: Title::Fixed("Phases"),
        shown: always,
        body: blocks::phases,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::LoadHeld,
        anchor: "load-as-held",
        title: Title::Fixed("Load as held"),
        shown: |r| !load_table::table(r).is_empty(),
        body: blocks::load_held,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::MarksAndRecovery,
        anchor: "marks-and-recovery",
        title: Title::Fixed("Marks and recovery"),
        shown: |r| !recovery_table::marks(r).is_empty(),
        body: blocks::marks_and_recovery,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::Cancellations,
        anchor: "cancellations",
        title: Title::Fixed("Cancellations"),
        shown: cancel_table::shown,
        body: blocks::cancellations,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::RunUntilStable,
        anchor: "run-until-stable",
        title: Title::Fixed("Run until stable"),
        shown: |r| !until_table::table(r).is_empty(),
        body: blocks::run_until_stable,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::PercentileIntervals,
        anchor: "percentile-intervals",
        title: Title::Fixed("Percentile intervals"),
        shown: |r| !interval_table::intervals(r).table.is_empty(),
        body: blocks::percentile_intervals,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::ConcurrencySweeps,
        anchor: "concurrency-sweeps",
        title: Title::Fixed("Concurrency sweeps"),
        shown: |r| !chart_sections::sweeps(r).is_empty(),
        body: chart_sections::concurrency_sweeps,
        markups: Markups::HtmlOnly,
    },
    Section {
        id: SectionId::ParetoFrontier,
        anchor: "pareto-frontier",
        title: Title::Fixed("Pareto frontier"),
        shown: |r| !pareto::groups(r).is_empty(),
        body: blocks::pareto_frontier,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::LatencyPercentiles,
        anchor: "latency-percentiles-per-phase",
        title: Title::Fixed("Latency percentiles per phase"),
        shown: |r| chart_sections::percentile_rows(r).any(),
        body: chart_sections::latency_percentiles,
        markups: Markups::HtmlOnly,
    },
    Section {
        id: SectionId::CapacitySearches,
        anchor: "capacity-searches",
        title: Title::Fixed("Capacity searches"),
        shown: |r| !r.searches.is_empty(),
        body: blocks::capacity_searches,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::Rechecks,
        anchor: "rechecks",
        title: Title::Fixed("Rechecks"),
        shown: |r| !r.rechecks.is_empty(),
        body: blocks::rechecks,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::EveryRequest,
        anchor: "every-request",
        title: Title::PerReport(chart_sections::every_request_title),
        // Always: a report without records says so here.
        shown: always,
        body: chart_sections::every_request,
        markups: Markups::HtmlOnly,
    },
    Section {
        id: SectionId::Repeats,
        anchor: "repeats",
        title: Title::Fixed("Repeats"),
        shown: |r| !r.repeats.is_empty(),
        body: blocks::repeats,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::PromptTokens,
        anchor: "prompt-tokens-planned-vs-actual",
        title: Title::Fixed("Prompt tokens: planned vs actual"),
        shown: |r| !table::prompt_tokens(r).is_empty(),
        body: blocks::prompt_tokens,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::ClientTrust,
        anchor: "client-trust",
        title: Title::Fixed("Client trust"),
        shown: |r| !trust_table::table(r).is_empty(),
        body: blocks::client_trust,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::Connections,
        anchor: "connections-and-server-timing",
        title: Title::Fixed("Connections and server timing"),
        shown: |r| !connections::table(r).is_empty() || !connections::warnings(r).is_empty(),
        body: blocks::connections,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::Sessions,
        anchor: "sessions-by-turn",
        title: Title::Fixed("Sessions by turn"),
        shown: |r| !session_table::table(r).is_empty(),
        body: blocks::sessions,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::Models,
        anchor: "by-model",
        title: Title::Fixed("By model"),
        shown: |r| r.phases.iter().any(|p| !p.models.is_empty()),
        body: blocks::models,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::Archetypes,
        anchor: "by-archetype",
        title: Title::Fixed("By archetype"),
        shown: |r| r.phases.iter().any(|p| !p.archetypes.is_empty()),
        body: blocks::archetypes,
        markups: Markups::Both,
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
        body: blocks::backends,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::Server,
        anchor: "server",
        title: Title::Fixed("Server"),
        shown: |r| server_table::sampled(r).next().is_some(),
        body: blocks::server,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::Errors,
        anchor: "errors",
        title: Title::Fixed("Errors"),
        // Always: "no failed requests" is worth saying.
        shown: always,
        body: blocks::errors,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::Reasoning,
        anchor: "reasoning-and-content-tokens",
        title: Title::Fixed("Reasoning and content tokens"),
        shown: super::token_split::reasoning_shown,
        body: super::token_split::reasoning_blocks,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::SpeculativeDecoding,
        anchor: "speculative-decoding",
        title: Title::Fixed("Speculative decoding"),
        shown: super::token_split::spec_shown,
        body: super::token_split::spec_blocks,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::CostAndEnergy,
        anchor: "cost-and-energy",
        title: Title::Fixed("Cost and energy"),
        shown: cost_energy_table::shown,
        body: cost_energy_table::blocks,
        markups: Markups::Both,
    },
    Section {
        id: SectionId::CheckedReplies,
        anchor: "checked-replies",
        title: Title::Fixed("Checked replies"),
        shown: checks_table::shown,
        body: checks_table::blocks,
        markups: Markups::Both,
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

/// The sections `report` shows in `markup`, in print order.
pub fn printed(report: &Report, markup: Markup) -> Vec<&'static Section> {
    SECTIONS
        .iter()
        .filter(|s| (s.shown)(report) && s.printed_in(markup))
        .collect()
}
