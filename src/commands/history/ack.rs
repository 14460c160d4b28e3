//! `servebench history ack`: acknowledge alerts with one reason: some by number, or every
//! open alert of a plan.

use crate::exit::Exit;
use crate::history::Alert;
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
        match named(&args.alerts, &alerts) {
            Ok(chosen) => chosen,
            Err(message) => {
                eprintln!("error: {message}; nothing was acknowledged");
                return Exit::InvalidInput;
            }
        }
    };
    let acked: Vec<_> = chosen
        .into_iter()
        .map(|alert| Alert {
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
        Ok(_) => {
            println!("{}", acknowledged(&acked, args.plan.as_deref()));
            Exit::Success
        }
        Err(e) => {
            eprintln!("error: {e}");
            Exit::RunFailed
        }
    }
}

/// The live alerts `ids` name, each once. Every number is checked before any is
/// acknowledged, so a typo acknowledges nothing.
fn named(ids: &[i64], alerts: &[Alert]) -> Result<Vec<Alert>, String> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut chosen: Vec<Alert> = Vec::new();
    for id in ids {
        // An older store's number names the alert it was grouped into.
        let alert = alerts
            .iter()
            .find(|a| a.id == id)
            .or_else(|| alerts.iter().find(|a| a.answers_to(id)))
            .ok_or_else(|| format!("no alert {id} in the history"))?;
        if !alert.state.live() {
            let word = if alert.state == AlertState::Superseded {
                format!(
                    "superseded by alert {}",
                    alert.superseded_by.map_or("–".into(), |n| n.to_string())
                )
            } else {
                "already resolved".to_string()
            };
            return Err(format!("alert {id} is {word}"));
        }
        if !chosen.iter().any(|c| c.id == alert.id) {
            chosen.push(alert.clone());
        }
    }
    Ok(chosen)
}

fn acknowledged(acked: &[Alert], plan: Option<&str>) -> String {
    let plural = if acked.len() == 1 { "" } else { "s" };
    match plan {
        Some(plan) => format!(
            "acknowledged {} alert{plural} of plan `{plan}`",
            acked.len()
        ),
        None => {
            let ids: Vec<String> = acked.iter().map(|a| a.id.to_string()).collect();
            format!(
                "acknowledged {} alert{plural}: {}",
                acked.len(),
                ids.join(", ")
            )
        }
    }
}
