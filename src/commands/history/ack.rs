//! `servebench history ack`: acknowledge an alert with a reason.

use crate::exit::Exit;
use crate::history::series::AlertState;
use crate::history::store::Store;

#[derive(Debug, clap::Args)]
pub struct AckArgs {
    /// The alert's number, as `history trend` lists it.
    pub alert: i64,
    /// Why it is acknowledged (kept with the alert and shown beside it).
    #[arg(long)]
    pub reason: String,
}

pub fn run(args: &AckArgs, store: &mut dyn Store) -> Exit {
    let alerts = match store.alerts(None) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::RunFailed;
        }
    };
    let Some(alert) = alerts.into_iter().find(|a| a.id == args.alert) else {
        eprintln!("error: no alert {} in the history", args.alert);
        return Exit::InvalidInput;
    };
    if alert.state == AlertState::Resolved {
        eprintln!("error: alert {} is already resolved", args.alert);
        return Exit::InvalidInput;
    }
    if args.reason.trim().is_empty() {
        eprintln!("error: give a reason with --reason");
        return Exit::InvalidInput;
    }
    let acked = crate::history::Alert {
        state: AlertState::Acknowledged,
        note: Some(args.reason.clone()),
        ..alert
    };
    match store.save_alerts(&[acked]) {
        Ok(()) => {
            println!("alert {} acknowledged", args.alert);
            Exit::Success
        }
        Err(e) => {
            eprintln!("error: {e}");
            Exit::RunFailed
        }
    }
}
