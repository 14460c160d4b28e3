//! `servebench history ack`: acknowledge alerts with one reason: some by number, or every
//! open alert of a plan.

use crate::exit::Exit;
use crate::history::series::AlertState;
use crate::history::store::Store;

#[derive(Debug, clap::Args)]
pub struct AckArgs {
    /// The alerts' numbers, as `history trend` and `history gate` list them.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub alerts: Vec<i64>,
    /// Every open alert of --plan.
    #[arg(long, requires = "plan")]
    pub all: bool,
    /// The plan whose open alerts --all acknowledges.
    #[arg(long, requires = "all")]
    pub plan: Option<String>,
    /// Why they are acknowledged (kept with each alert and shown beside it).
    #[arg(long)]
    pub reason: String,
}

pub fn run(args: &AckArgs, store: &mut dyn Store) -> Exit {
    if args.reason.trim().is_empty() {
        eprintln!("error: give a reason with --reason");
        return Exit::InvalidInput;
    }
    let alerts = match store.alerts(args.plan.as_deref()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::RunFailed;
        }
    };
    let chosen = if args.all {
        alerts
            .into_iter()
            .filter(|a| a.state == AlertState::Open)
            .collect()
    } else {
        let mut ids = args.alerts.clone();
        ids.sort_unstable();
        ids.dedup();
        let mut chosen = Vec::new();
        // Every number is checked before any is acknowledged: a typo acknowledges nothing.
        for id in ids {
            match alerts.iter().find(|a| a.id == id) {
                None => {
                    eprintln!("error: no alert {id} in the history; nothing was acknowledged");
                    return Exit::InvalidInput;
                }
                Some(a) if a.state == AlertState::Resolved => {
                    eprintln!("error: alert {id} is already resolved; nothing was acknowledged");
                    return Exit::InvalidInput;
                }
                Some(a) => chosen.push(a.clone()),
            }
        }
        chosen
    };
    let acked: Vec<_> = chosen
        .into_iter()
        .map(|alert| crate::history::Alert {
            state: AlertState::Acknowledged,
            note: Some(args.reason.clone()),
            ..alert
        })
        .collect();
    if acked.is_empty() {
        // Only --all gets here: the plan has no open alert.
        println!("acknowledged 0 alerts: no alert of the plan is open");
        return Exit::Success;
    }
    match store.save_alerts(&acked) {
        Ok(()) => {
            let ids: Vec<String> = acked.iter().map(|a| a.id.to_string()).collect();
            let plural = if acked.len() == 1 { "" } else { "s" };
            match &args.plan {
                Some(plan) => println!(
                    "acknowledged {} alert{plural} of plan `{plan}`",
                    acked.len()
                ),
                None => println!(
                    "acknowledged {} alert{plural}: {}",
                    acked.len(),
                    ids.join(", ")
                ),
            }
            Exit::Success
        }
        Err(e) => {
            eprintln!("error: {e}");
            Exit::RunFailed
        }
    }
}
