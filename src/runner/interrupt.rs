//! Interrupts: the first SIGINT or SIGTERM stops new requests and leaves a partial report;
//! the second exits at once.

use std::path::PathBuf;
use std::time::Duration;

use crate::scheduler::Stops;

use super::output::{self, Journal};

/// After the first interrupt, in-flight requests get this long before they are cancelled.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// First interrupt (SIGINT or SIGTERM): stop starting requests, give in-flight ones a short
/// grace, then write a partial report. Second: flush the journal, close the records' last
/// part and exit at once.
pub(super) fn install_interrupt_handler(
    stops: Stops,
    journal: Journal,
    out_dir: PathBuf,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        #[cfg(unix)]
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let mut interrupts = 0;
        loop {
            #[cfg(unix)]
            let sigterm = async {
                match terminate.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            #[cfg(not(unix))]
            let sigterm = std::future::pending::<()>();
            tokio::select! {
                result = tokio::signal::ctrl_c() => if result.is_err() { return },
                _ = sigterm => {}
            }
            interrupts += 1;
            if interrupts == 1 {
                eprintln!(
                    "\ninterrupted: no new requests; waiting up to {}s for in-flight ones, then writing a partial report to {} (interrupt again to exit at once)",
                    INTERRUPT_GRACE.as_secs(),
                    out_dir.display()
                );
                stops.stop_starting.cancel();
                let abort = stops.abort_in_flight.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(INTERRUPT_GRACE).await;
                    abort.cancel();
                });
            } else {
                let _ = journal.flush();
                super::output::finish_records(&journal);
                eprintln!(
                    "interrupted again: exiting now; finished requests are in {}",
                    out_dir.join(output::PARTS_DIR).display()
                );
                std::process::exit(crate::exit::Exit::RunFailed.code());
            }
        }
    })
}
