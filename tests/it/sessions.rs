//! Session workloads: each turn carries the server's real previous replies, think time
//! between turns, an affinity header per session, and figures by turn.

use std::collections::BTreeMap;

use servebench::figure::Figure;
use servebench::report::{PhaseResult, Report};
use servebench::runner::run;
use servebench::sim::{SimConfig, SimPrefixCache, serve};

use crate::common::{assert_valid_report, exclusive_run, quiet_run_options};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_turn_carries_the_servers_real_replies_after_its_think_time() {
    let _exclusive = exclusive_run().await;
    let (addr, sim) = serve(SimConfig {
        seed: Some(5),
        decode_ms_per_token: Some(0.2),
        jitter: Some(0.0),
        max_running: Some(64),
        record_requests: Some(true),
        prefix_cache: Some(SimPrefixCache {
            capacity_tokens: 200_000,
            block_tokens: Some(16),
        }),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "version: 1\nname: sessions\nseed: 9\ntargets:\n  sim: {{base_url: http://{addr}/v1, model: sim}}\n\
             workloads:\n  agent:\n    input_tokens: 120\n    output_tokens: 12\n    ignore_eos: true\n\
             \x20   session: {{turns: 3, user_tokens: 20, think_time: 30ms, affinity_header: x-session-id}}\n\
             phases:\n  - {{name: chat, target: sim, workload: agent, concurrency: 2, requests: 12}}\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    run(quiet_run_options(plan, &out))
        .await
        .expect("the run completes");
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_valid_report(&value);
    let report: Report = serde_json::from_value(value).unwrap();
    let phase = &report.phases[0];
    assert_eq!(phase.summary.requests, 12);
    assert_eq!(phase.summary.errors, 0);

    // The server's view.
    assert_each_turn_carries_its_session(sim.requests());
    // The client's view.
    assert_turns_follow_think_time(phase);

    // Figures by turn: the history grows, and the prefix cache serves more of it each turn.
    let sessions = phase.sessions.as_ref().expect("sessions summary");
    assert_eq!((sessions.sessions, sessions.complete), (4, 4));
    assert_eq!(sessions.turns.len(), 3);
    let mean = |t: usize, f| sessions.turns[t].figures.get(f).expect("by turn").mean;
    let prompt = |t: usize| mean(t, Figure::InputTokens);
    let cached = |t: usize| mean(t, Figure::CachedTokens);
    assert!(
        prompt(0) < prompt(1) && prompt(1) < prompt(2),
        "{sessions:?}"
    );
    assert!(
        cached(1) > cached(0) && cached(2) > cached(1),
        "{sessions:?}"
    );
    assert!(
        sessions.duration.as_ref().unwrap().min >= 0.06,
        "two think times at least"
    );
    let md = servebench::report::formats::markdown::render(&report);
    assert!(md.contains("## Sessions by turn"), "{md}");
    sim.shutdown().await;
}

/// Four sessions of three turns as the server saw them, told apart by the affinity header.
fn assert_each_turn_carries_its_session(requests: Vec<servebench::sim::SeenRequest>) {
    let mut by_session: BTreeMap<String, Vec<servebench::sim::SeenRequest>> = BTreeMap::new();
    for seen in requests {
        let session = seen
            .headers
            .iter()
            .find(|(k, _)| k == "x-session-id")
            .map(|(_, v)| v.clone())
            .expect("every turn names its session");
        by_session.entry(session).or_default().push(seen);
    }
    assert_eq!(by_session.len(), 4, "{:?}", by_session.keys());
    for (session, turns) in &by_session {
        assert_eq!(turns.len(), 3, "{session}");
        for pair in turns.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            let reply = before.reply.as_deref().expect("the reply was sent");
            assert!(!reply.is_empty());
            // The next turn is the whole previous conversation, the server's own reply
            // verbatim, and one new user message.
            let n = before.messages.len();
            assert_eq!(after.messages.len(), n + 2, "{session}");
            assert_eq!(after.messages[..n], before.messages[..], "{session}");
            assert_eq!(
                after.messages[n],
                ("assistant".to_string(), reply.to_string())
            );
            assert_eq!(after.messages[n + 1].0, "user");
        }
    }
}

/// The records: turns in order, each sent at least the think time after the reply before it
/// ended.
fn assert_turns_follow_think_time(phase: &PhaseResult) {
    let mut records: Vec<_> = phase.request_timings.iter().collect();
    records.sort_by_key(|r| r.request_index);
    for r in &records {
        assert_eq!(r.turn, Some(r.request_index % 3), "{r:?}");
        assert_eq!(r.session, Some(r.request_index / 3), "{r:?}");
    }
    for pair in records.windows(2) {
        if pair[1].turn != Some(0) {
            let previous_end = pair[0].start_offset_ms + pair[0].e2e_ms;
            assert!(
                pair[1].start_offset_ms >= previous_end + 30.0,
                "turn sent {:.1} ms after the reply",
                pair[1].start_offset_ms - previous_end
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_starts_sessions_at_its_rate_and_each_runs_to_its_end() {
    let _exclusive = exclusive_run().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    // 20 sessions/s, constant: session k arrives at 50·k ms; 5 sessions of 3 turns.
    std::fs::write(
        &plan,
        "version: 1\nname: open-sessions\nseed: 2\ntargets:\n  sim: {simulator: {decode_ms_per_token: 0.5, jitter: 0}}\n\
         workloads:\n  agent:\n    input_tokens: 64\n    output_tokens: 6\n    ignore_eos: true\n\
         \x20   session: {turns: 3, user_tokens: 8, think_time: 20ms}\n\
         phases:\n  - {name: open, workload: agent, target: sim, rate: {rps: 20, arrival: constant}, requests: 15}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    run(quiet_run_options(plan, &out))
        .await
        .expect("the run completes");
    let report = servebench::report::read_report(&out.join("report.json")).unwrap();
    let phase = &report.phases[0];
    assert_eq!((phase.summary.requests, phase.summary.errors), (15, 0));
    let sessions = phase.sessions.as_ref().expect("sessions");
    assert_eq!((sessions.sessions, sessions.complete), (5, 5));
    for r in &phase.request_timings {
        let (session, turn) = (r.session.unwrap(), r.turn.unwrap());
        assert_eq!(r.request_index, session * 3 + turn, "{r:?}");
        if turn == 0 {
            // A session's arrival is its first turn's schedule; later turns follow replies.
            let scheduled = r.scheduled_offset_ms.expect("an arrival time");
            assert!((scheduled - 50.0 * session as f64).abs() < 1e-6, "{r:?}");
            assert!(r.send_lag_ms.is_some_and(|lag| lag < 50.0), "{r:?}");
        } else {
            assert_eq!(r.scheduled_offset_ms, None, "{r:?}");
        }
    }
    // Sessions overlap: the second starts before the first has ended.
    let end_of_first = phase
        .request_timings
        .iter()
        .filter(|r| r.session == Some(0))
        .map(|r| r.start_offset_ms + r.e2e_ms)
        .fold(0.0, f64::max);
    assert!(
        end_of_first > 50.0,
        "first session ended at {end_of_first:.1} ms"
    );
}

#[test]
fn sessions_refuse_completions_targets() {
    let plan = "version: 1\nname: s\ntargets:\n  c: {simulator: {}, api: completions}\n\
        workloads:\n  agent: {input_tokens: 50, session: {turns: 2, affinity_header: \"bad header\"}}\n\
        phases:\n  - {name: comp, target: c, workload: agent, concurrency: 1, requests: 4}\n";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin!("servebench"))
        .arg("validate")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("sessions carry chat history"), "{stderr}");
    assert!(stderr.contains("not a valid HTTP header name"), "{stderr}");
    assert!(stderr.contains("plan.yaml:"), "file:line:col: {stderr}");
}
