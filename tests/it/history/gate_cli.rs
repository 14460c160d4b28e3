//! What the history's command line refuses or says plainly, on a synthetic store: a
//! `--plan` it holds no run of, a baseline with no gates to check.

use super::trends::{address, history_cmd, recorded};

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_plan_the_store_holds_no_run_of_fails_every_reading_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let baselines = dir.path().join("baselines.yaml");
    std::fs::write(&baselines, "pinned: {run: run-0003}\n").unwrap();
    let baselines = baselines.display().to_string();
    for location in recorded(dir.path(), "unknown plans on PostgreSQL", 12) {
        let path = address(&location);
        let series = [
            "series", "--plan", "nightyl", "--phase", "phase-00", "--target", "default",
            "--figure", "ttft.p99",
        ];
        let asked: [&[&str]; 5] = [
            &["gate", "--plan", "nightyl"],
            &["trend", "--plan", "nightyl"],
            &["list", "--plan", "nightyl"],
            &["baseline", "--plan", "nightyl", "--baselines", &baselines],
            &series,
        ];
        for args in asked {
            let out = history_cmd(&path).args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
            assert!(
                text(&out).contains(&format!(
                    "no runs of plan `nightyl` in {location}; did you mean `nightly`?"
                )),
                "{args:?}: {}",
                text(&out)
            );
        }
        let far = history_cmd(&path)
            .args(["gate", "--plan", "gateway"])
            .output()
            .unwrap();
        assert_eq!(far.status.code(), Some(2));
        assert!(
            text(&far).contains("it holds runs of `nightly`"),
            "{}",
            text(&far)
        );
    }
}
