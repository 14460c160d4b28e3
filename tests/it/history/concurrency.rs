//! 16 recorders started at the same moment, 20 rounds, as real CI jobs would: separate
//! processes of the binary. Each process records its own report and its neighbour's, so
//! every report is recorded twice at once; every run must be there exactly once.

use std::collections::BTreeSet;
use std::process::Stdio;

use servebench::history::{Location, OpenMode, Store, open};

use super::support::{backends, rich_sample, servebench, write_report};

const RECORDERS: usize = 16;
const ROUNDS: usize = 20;

#[test]
fn sixteen_recorders_twenty_rounds_leave_every_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let doc = rich_sample();
    let reports: Vec<Vec<std::path::PathBuf>> = (0..ROUNDS)
        .map(|round| {
            (0..RECORDERS)
                .map(|i| {
                    let id = format!("round{round:02}-recorder{i:02}");
                    write_report(dir.path(), &id, &doc, &id)
                })
                .collect()
        })
        .collect();
    for location in backends(dir.path(), "16 concurrent recorders") {
        let target = location.to_string();
        let target = match &location {
            Location::Postgres(url) => url.clone(),
            Location::Sqlite(_) => target,
        };
        for round in &reports {
            let children: Vec<_> = (0..RECORDERS)
                .map(|i| {
                    servebench()
                        .args(["history", "record", "--history", &target])
                        .arg(&round[i])
                        .arg(&round[(i + 1) % RECORDERS])
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap()
                })
                .collect();
            for child in children {
                let out = child.wait_with_output().unwrap();
                assert!(
                    out.status.success(),
                    "{location}: a recorder failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        let store = open(&location, OpenMode::Existing).unwrap();
        let tables = store.tables().unwrap();
        let rows = |name: &str| &tables.iter().find(|t| t.name == name).unwrap().rows;
        let ids: Vec<String> = rows("runs")
            .iter()
            .map(|r| r[0].text().unwrap().to_string())
            .collect();
        let unique: BTreeSet<&String> = ids.iter().collect();
        assert_eq!(ids.len(), RECORDERS * ROUNDS, "{location}: runs");
        assert_eq!(unique.len(), ids.len(), "{location}: a run is there twice");
        let want: BTreeSet<String> = reports
            .iter()
            .flatten()
            .map(|p| {
                p.parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(unique.into_iter().cloned().collect::<BTreeSet<_>>(), want);
        let phases_per_run = doc["phases"].as_array().unwrap().len();
        assert_eq!(
            rows("phases").len(),
            ids.len() * phases_per_run,
            "{location}: phases"
        );
        let one = store.run(&ids[0]).unwrap();
        let figures_per_run: usize = one.rows.phases.iter().map(|p| p.figures.len()).sum();
        assert_eq!(
            rows("figures").len(),
            ids.len() * figures_per_run,
            "{location}: figures"
        );
    }
}
