//! `servebench schema plan|plan-expanded|report`: print a generated JSON schema.

use clap::ValueEnum;

use crate::exit::Exit;
use crate::plan::schema::{expanded_schema, plan_schema, to_pretty};
use crate::report::model::schema::report_schema;

#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    #[arg(value_enum)]
    pub kind: SchemaKind,
}

/// Which schema `schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    /// The authoring schema plan files point at (templates accepted).
    Plan,
    /// The concrete plan `expand` prints and a report embeds.
    PlanExpanded,
    /// The report.json a run writes (and `report --format json` prints).
    Report,
}

pub fn run(args: &SchemaArgs) -> Exit {
    let value = match args.kind {
        SchemaKind::Plan => plan_schema(),
        SchemaKind::PlanExpanded => expanded_schema(),
        SchemaKind::Report => report_schema(),
    };
    print!("{}", to_pretty(&value));
    Exit::Success
}
