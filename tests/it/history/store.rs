//! Recording and reading back, on both backends: the same rows bit for bit, retries that add
//! nothing, series with their marks, exclusions, alerts and retention.

use servebench::history::record::{self, RunSource};
use servebench::history::store::sql::Cell;
use servebench::history::store::{Retention, Table};
use servebench::history::{
    Alert, AlertState, Location, Moved, OpenMode, RunFilter, SeriesKey, Store, open,
};

use super::support::{backends, fresh_database, postgres, report, rich_sample, write_report};
use crate::common::{exclusive_run, quiet_run_options};

/// The tables without what differs by nature between two recordings: when each was made.
fn comparable(mut tables: Vec<Table>) -> Vec<Table> {
    for table in &mut tables {
        if let Some(at) = table.columns.iter().position(|c| c.name == "recorded_at") {
            for row in &mut table.rows {
                row[at] = Cell::Null;
            }
        }
    }
    tables
}

/// Cells equal, reals bit for bit.
fn assert_same_tables(a: &[Table], b: &[Table]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.name, y.name);
        assert_eq!(x.columns, y.columns, "{} columns", x.name);
        assert_eq!(x.rows.len(), y.rows.len(), "{} rows", x.name);
        for (rx, ry) in x.rows.iter().zip(&y.rows) {
            for ((cx, cy), column) in rx.iter().zip(ry).zip(&x.columns) {
                match (cx, cy) {
                    (Cell::Real(p), Cell::Real(q)) => {
                        assert_eq!(p.to_bits(), q.to_bits(), "{}.{}", x.name, column.name)
                    }
                    _ => assert_eq!(cx, cy, "{}.{}", x.name, column.name),
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_run_recorded_into_sqlite_and_postgres_exports_the_same_rows() {
    let Some(admin) = postgres("a run recorded into both backends") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/quickstart.yaml");
    let mut options = quiet_run_options(plan, &dir.path().join("run"));
    options.expand.set = vec!["duration=1s".to_string()];
    let outcome = {
        let _guard = exclusive_run().await;
        servebench::runner::run(options).await.expect("the run")
    };
    let report = outcome.report.expect("a report");
    let path = outcome.report_path.expect("its path");
    let tables = tokio::task::spawn_blocking(move || {
        [
            Location::Sqlite(dir.path().join("history.sqlite")),
            Location::Postgres(fresh_database(&admin)),
        ]
        .iter()
        .map(|location| {
            let mut store = open(location, OpenMode::Create).unwrap();
            let id = store.record(&report, Some(&path)).unwrap();
            assert_eq!(id, report.span.run_id);
            let stored = store.run(&id).unwrap();
            assert_eq!(stored.rows.phases.len(), report.phases.len());
            assert!(stored.rows.run.complete);
            // The records' set is named by its manifest, which lists each part's hash.
            let records = stored
                .rows
                .run
                .records_path
                .as_deref()
                .expect("records named");
            assert!(records.ends_with("requests/_manifest.json"), "{records}");
            assert_eq!(
                stored.rows.run.records_sha256.as_deref(),
                Some(
                    servebench::report::formats::records::sha256_file(records.as_ref())
                        .unwrap()
                        .as_str()
                )
            );
            comparable(store.tables().unwrap())
        })
        .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let figures = tables[0].iter().find(|t| t.name == "figures").unwrap();
    assert!(figures.rows.len() > 200, "{} figures", figures.rows.len());
    assert_same_tables(&tables[0], &tables[1]);
}

#[test]
fn stored_rows_read_back_as_recorded_and_a_retry_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let doc = rich_sample();
    let path = write_report(dir.path(), "r1", &doc, "run-1");
    let report = report(&serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap());
    let expected = record::rows(&report, Some(&path)).unwrap();
    for location in backends(dir.path(), "rows read back") {
        let mut store = open(&location, OpenMode::Create).unwrap();
        let id = store.record(&report, Some(&path)).unwrap();
        assert_eq!(
            store.record(&report, Some(&path)).unwrap(),
            id,
            "{location}"
        );
        assert_eq!(store.runs(&RunFilter::default()).unwrap().len(), 1);
        let stored = store.run(&id).unwrap();
        let mut want = expected.clone();
        want.run.started_at = "2026-11-30T10:00:00.000Z".to_string();
        assert_eq!(stored.rows, want, "{location}");
        // What the sample was decorated with came back.
        let phases = &stored.rows.phases;
        assert_eq!(phases[1].errors_by_cause.len(), 2);
        assert_eq!(phases[1].errors_by_cause[0].status, Some(503));
        let split = phases[1].split.as_ref().expect("split");
        assert_eq!(split.server_prefill_ms, 40.125);
        assert_eq!(
            phases[1].conditions.server_queue_share,
            Some(12.5 / 355.9375)
        );
        let ttft = phases[0]
            .figures
            .iter()
            .find(|f| f.figure == "ttft.p99")
            .unwrap();
        assert_eq!(
            ttft.value,
            report.phases[0]
                .summary
                .distribution(servebench::figure::Figure::Ttft)
                .unwrap()
                .p99
        );
        // A different report that reuses the run id is kept apart.
        let mut other = report.clone();
        other.span.started_at = "2026-12-01T10:00:00Z".to_string();
        assert_eq!(store.record(&other, None).unwrap(), "run-1-2");
    }
}

#[test]
fn a_series_is_every_run_in_time_order_with_its_marks() {
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "series marks") {
        let mut store = open(&location, OpenMode::Create).unwrap();
        let mut doc = rich_sample();
        // Recorded out of order: the series is in start order.
        for (id, day, partial) in [("b", "03", false), ("a", "01", false), ("c", "05", true)] {
            doc["run_id"] = id.into();
            doc["started_at"] = format!("2026-12-{day}T08:00:00+02:00").into();
            doc["partial"] = partial.into();
            store.record(&report(&doc), None).unwrap();
        }
        store.exclude("b", "the server was being upgraded").unwrap();
        assert!(store.exclude("nope", "x").is_err());
        let key = SeriesKey {
            plan: "gateway-demo".into(),
            phase: "gateway-c4".into(),
            target: "least-request".into(),
            figure: "ttft.p99".into(),
        };
        let points = store.series(&key).unwrap();
        let runs: Vec<&str> = points.iter().map(|p| p.run.as_str()).collect();
        assert_eq!(runs, ["a", "b", "c"], "{location}");
        assert_eq!(&*points[0].started_at, "2026-12-01T06:00:00.000Z");
        assert!(
            points.iter().all(|p| p.client_bound),
            "gateway-c4 is client-bound"
        );
        assert_eq!(
            points[1].excluded.as_deref(),
            Some("the server was being upgraded")
        );
        assert_eq!(
            points.iter().map(|p| p.partial).collect::<Vec<_>>(),
            [false, false, true]
        );
        assert!(store.keys(Some("gateway-demo")).unwrap().contains(&key));
        let complete = RunFilter {
            complete: Some(true),
            ..RunFilter::default()
        };
        assert_eq!(store.runs(&complete).unwrap().len(), 2);
        let since = RunFilter {
            since: Some("2026-12-02T00:00:00Z".into()),
            ..RunFilter::default()
        };
        let ids: Vec<String> = store
            .runs(&since)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, ["b", "c"]);
    }
}

#[test]
fn alerts_are_inserted_then_updated() {
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "alerts") {
        let mut store = open(&location, OpenMode::Create).unwrap();
        let alert = Alert {
            id: 0,
            plan: "p".into(),
            target: "t".into(),
            opened_by: "r2".into(),
            change_at: "r2".into(),
            moved: vec![Moved {
                phase: "c1".into(),
                figure: "ttft.p99".into(),
                change_at: "r2".into(),
                before: 0.1,
                after: 0.25,
            }],
            state: AlertState::Open,
            resolved_by: None,
            closed_at: None,
            superseded_by: None,
            note: None,
            former_ids: Vec::new(),
        };
        let ids = store.save_alerts(&[alert.clone(), alert.clone()]).unwrap();
        assert_eq!(ids.len(), 2);
        let saved = store.alerts(Some("p")).unwrap();
        assert_eq!(saved.len(), 2);
        assert_ne!(saved[0].id, saved[1].id);
        let mut acked = saved[0].clone();
        acked.state = AlertState::Acknowledged;
        acked.note = Some("new model version".into());
        store.save_alerts(std::slice::from_ref(&acked)).unwrap();
        let again = store.alerts(None).unwrap();
        assert_eq!(again.len(), 2, "{location}");
        assert_eq!(again[0], acked);
        assert!(store.alerts(Some("other")).unwrap().is_empty());
    }
}

#[test]
fn retention_keeps_the_newest_runs_of_each_plan() {
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "retention") {
        let mut store = open(&location, OpenMode::Create).unwrap();
        let mut doc = rich_sample();
        for (plan, n) in [("alpha", 4), ("beta", 2)] {
            for i in 0..n {
                doc["plan"]["name"] = plan.into();
                doc["run_id"] = format!("{plan}-{i}").into();
                doc["started_at"] = format!("2026-12-0{}T00:00:00Z", i + 1).into();
                store.record(&report(&doc), None).unwrap();
            }
        }
        let policy = Retention {
            keep_last: Some(2),
            before: None,
            dry_run: true,
        };
        assert_eq!(store.retain(&policy).unwrap(), ["alpha-0", "alpha-1"]);
        assert_eq!(
            store.runs(&RunFilter::default()).unwrap().len(),
            6,
            "dry run"
        );
        let policy = Retention {
            dry_run: false,
            before: Some("2026-12-02T00:00:00Z".into()),
            ..policy
        };
        assert_eq!(
            store.retain(&policy).unwrap(),
            ["alpha-0", "beta-0", "alpha-1"]
        );
        let left: Vec<String> = store
            .runs(&RunFilter::default())
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(left, ["beta-1", "alpha-2", "alpha-3"], "{location}");
        let tables = store.tables().unwrap();
        let figures = tables.iter().find(|t| t.name == "figures").unwrap();
        assert!(
            figures
                .rows
                .iter()
                .all(|r| !matches!(&r[0], Cell::Text(id) if id == "alpha-0")),
            "a deleted run's figures go with it"
        );
    }
}

#[test]
fn the_source_names_round_trip() {
    for source in RunSource::ALL {
        assert_eq!(RunSource::named(source.name()), Some(source));
        let json = serde_json::to_value(source).unwrap();
        assert_eq!(json, serde_json::Value::from(source.name()));
    }
}

#[test]
fn a_plan_s_series_read_in_one_pass_are_the_series_read_one_by_one() {
    use servebench::history::synthetic;
    let dir = tempfile::tempdir().unwrap();
    for location in backends(dir.path(), "one-pass series") {
        let mut store = open(&location, OpenMode::Create).unwrap();
        for (n, mut rows) in synthetic::runs("nightly", 8, 3, &["ttft.p99", "e2e.p50"])
            .into_iter()
            .enumerate()
        {
            if n == 4 {
                rows.phases[1].trust = Some(servebench::metrics::trust::TrustVerdict::ClientBound);
            }
            store.record_rows(&rows).unwrap();
        }
        store.exclude("run-0002", "noisy").unwrap();
        // Another plan's runs in the same store (their run ids made unique by the store)
        // are no point of this plan's series.
        for rows in synthetic::runs("other", 3, 2, &["ttft.p99"]) {
            store.record_rows(&rows).unwrap();
        }
        let other = store.plan_series("other").unwrap();
        assert_eq!(other.len(), 2, "{location}");
        assert!(
            other.iter().all(|(_, points)| points.len() == 3),
            "{location}"
        );
        let one_by_one: Vec<(SeriesKey, Vec<servebench::history::Point>)> = store
            .keys(Some("nightly"))
            .unwrap()
            .into_iter()
            .map(|k| {
                let points = store.series(&k).unwrap();
                (k, points)
            })
            .collect();
        assert_eq!(one_by_one.len(), 6, "{location}");
        assert!(
            one_by_one.iter().all(|(_, points)| points.len() == 8),
            "{location}"
        );
        assert_eq!(
            store.plan_series("nightly").unwrap(),
            one_by_one,
            "{location}"
        );
    }
}
