//! The store's schema versions: an older store is migrated with its rows kept, a newer one
//! is refused untouched, a file that is not a store is never overwritten.

use servebench::history::store::{open_at_version, schema};
use servebench::history::{HistoryError, Location, OpenMode, RunFilter, Store, open};

use super::support::{backends, report, rich_sample, servebench};

#[test]
fn an_older_store_is_migrated_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "migration") {
        let mut old = open_at_version(&location, OpenMode::Create, 1).unwrap();
        old.record(&report(&rich_sample()), None).unwrap();
        // Version 1 has no alerts table yet.
        assert!(old.alerts(None).is_err(), "{location}");
        drop(old);
        let store = open(&location, OpenMode::Existing).unwrap();
        assert_eq!(store.runs(&RunFilter::default()).unwrap().len(), 1);
        assert!(
            store.alerts(None).unwrap().is_empty(),
            "{location}: migrated to version 2"
        );
    }
}

#[test]
fn a_store_written_by_a_newer_version_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "newer schema") {
        let mut store = open(&location, OpenMode::Create).unwrap();
        store.record(&report(&rich_sample()), None).unwrap();
        schema::set_version(store.driver(), schema::SCHEMA_VERSION + 1).unwrap();
        drop(store);
        let before = match &location {
            Location::Sqlite(path) => Some(std::fs::read(path).unwrap()),
            Location::Postgres(_) => None,
        };
        let Err(e) = open(&location, OpenMode::Create) else {
            panic!("{location}: a newer store opened");
        };
        assert!(
            matches!(e, HistoryError::NewerSchema { found, .. } if found == schema::SCHEMA_VERSION + 1)
        );
        let text = e.to_string();
        assert!(
            text.contains("newer") && text.contains("upgrade servebench"),
            "{text}"
        );
        if let (Some(before), Location::Sqlite(path)) = (before, &location) {
            assert_eq!(std::fs::read(path).unwrap(), before);
        }
        // The command says so and exits 3.
        let out = servebench()
            .args(["history", "list", "--history", &location.to_string()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert!(String::from_utf8_lossy(&out.stderr).contains("newer"));
    }
}

#[test]
fn a_file_that_is_not_a_store_gives_a_clear_error_and_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("history.sqlite");
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&garbage, &bytes).unwrap();
    let location = Location::Sqlite(garbage.clone());
    let Err(e) = open(&location, OpenMode::Create) else {
        panic!("garbage opened as a store");
    };
    assert!(matches!(e, HistoryError::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains("not a SQLite database"), "{e}");
    assert!(e.to_string().contains("left as it is"), "{e}");
    assert_eq!(std::fs::read(&garbage).unwrap(), bytes);
    // A run that cannot record still writes its report and exits 0, with a warning.
    let out = servebench()
        .args(["history", "record", "--history"])
        .arg(&garbage)
        .arg(super::support::write_report(
            dir.path(),
            "r",
            &rich_sample(),
            "r",
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(std::fs::read(&garbage).unwrap(), bytes);

    // Another program's SQLite database is not taken over either.
    let foreign = dir.path().join("other.sqlite");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(conn);
    let Err(e) = open(&Location::Sqlite(foreign), OpenMode::Create) else {
        panic!("a foreign database opened as a store");
    };
    assert!(
        e.to_string().contains("not a servebench history store"),
        "{e}"
    );
}

#[test]
fn reading_a_missing_store_is_an_error_not_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere.sqlite");
    let Err(e) = open(&Location::Sqlite(path.clone()), OpenMode::Existing) else {
        panic!("opened a missing store");
    };
    assert!(e.to_string().contains("no history store"), "{e}");
    assert!(!path.exists());
}

#[test]
fn a_v3_store_with_per_figure_alerts_migrates_to_one_alert_per_change() {
    use servebench::history::AlertState;
    use servebench::history::store::sql::Cell;
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "alert migration") {
        let old = open_at_version(&location, OpenMode::Create, 3).unwrap();
        // Two changes of plan `p` against `sim`: at run-13 three figures, two acknowledged
        // and one open; at run-20 two figures, both acknowledged, with their reasons.
        let rows: [(&str, &str, &str, &str, Option<&str>); 5] = [
            (
                "c1",
                "tpot.p50",
                "run-13",
                "acknowledged",
                Some("decode change"),
            ),
            ("c8", "tpot.p50", "run-13", "open", None),
            (
                "c1",
                "e2e.p99",
                "run-13",
                "acknowledged",
                Some("decode change"),
            ),
            (
                "c1",
                "ttft.p99",
                "run-20",
                "acknowledged",
                Some("new tokenizer"),
            ),
            (
                "c4",
                "ttft.p99",
                "run-20",
                "acknowledged",
                Some("new tokenizer"),
            ),
        ];
        for (phase, figure, at, state, note) in rows {
            old.driver()
                .execute(
                    "INSERT INTO alerts (plan, phase, target, figure, opened_by, change_at,
                        before_value, after_value, state, resolved_by, note)
                     VALUES ('p', $1, 'sim', $2, $3, $3, 4.0, 6.0, $4, NULL, $5)",
                    &[
                        Cell::from(phase),
                        Cell::from(figure),
                        Cell::from(at),
                        Cell::from(state),
                        Cell::from(note),
                    ],
                )
                .unwrap();
        }
        drop(old);
        let store = open(&location, OpenMode::Existing).unwrap();
        let alerts = store.alerts(None).unwrap();
        assert_eq!(alerts.len(), 2, "{location}: {alerts:#?}");
        let (first, second) = (&alerts[0], &alerts[1]);
        assert_eq!((first.id, first.former_ids.clone()), (1, vec![2, 3]));
        assert_eq!(first.change_at, "run-13");
        assert_eq!(first.moved.len(), 3);
        assert_eq!(first.state, AlertState::Open, "one member was open");
        assert_eq!(first.note.as_deref(), Some("decode change"));
        assert_eq!((second.id, second.former_ids.clone()), (4, vec![5]));
        assert_eq!(second.state, AlertState::Acknowledged);
        assert_eq!(second.note.as_deref(), Some("new tokenizer"));
        assert_eq!(second.phases(), ["c1", "c4"]);
        drop(store);
        // An old number still acknowledges the alert it was grouped into; new alerts are
        // numbered after every old one.
        let out = servebench()
            .args(["history", "--history", &location.to_string()])
            .args(["ack", "2", "--reason", "both phases"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{location}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut store = open(&location, OpenMode::Existing).unwrap();
        let alerts = store.alerts(None).unwrap();
        assert_eq!(alerts[0].state, AlertState::Acknowledged);
        assert_eq!(alerts[0].note.as_deref(), Some("both phases"));
        let mut fresh = alerts[1].clone();
        fresh.id = 0;
        let ids = store.save_alerts(&[fresh]).unwrap();
        assert_eq!(ids, vec![6], "{location}");
    }
}
