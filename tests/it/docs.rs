//! The documentation's commands: every line of every ```sh block in README.md and docs/*.md
//! is run (or, for the few that build the crate, counted), following the convention stated
//! in README.md under "Documentation".

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::common::exclusive_run_blocking;

/// Every page, with how many command lines the test runs and how many it only counts
/// (other tools that build the crate). A new or removed command changes these on purpose.
const PAGES: &[(&str, usize, usize)] = &[
    ("README.md", 10, 1),
    ("docs/plans.md", 18, 0),
    ("docs/measurement.md", 4, 0),
    ("docs/workloads.md", 16, 0),
    ("docs/simulator.md", 19, 0),
    ("docs/reports.md", 15, 0),
    ("docs/history.md", 19, 0),
    ("docs/sharding.md", 11, 0),
    ("docs/performance.md", 5, 2),
    ("docs/hardening.md", 0, 5),
    ("docs/connections.md", 0, 0),
    ("docs/real-servers.md", 3, 5),
    ("docs/report-formats.md", 3, 0),
    ("docs/plans-as-code.md", 4, 0),
    ("docs/trends.md", 0, 0),
];

/// Commands of other tools that the docs show but a test cannot run: they build this crate
/// (or install a fuzzer), so they are counted, never run.
const COUNTED_ONLY: &[&str] = &[
    "cargo test",
    "cargo bench",
    "cargo install",
    "cargo fuzz",
    "RUSTC_BOOTSTRAP=1 cargo fuzz",
    // Installs the real engines (tests/real/); `.ci/run` runs it, and the real-engine tests
    // then start the same server the docs start by hand.
    "bash tests/real/setup.sh",
];

/// The address the docs use for "your server"; the test serves a simulator in its place.
const DOC_SERVER: [&str; 2] = ["127.0.0.1:8000", "localhost:8000"];

/// The longest any one documented command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(180);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Debug, PartialEq)]
enum Kind {
    /// `servebench …`, `cargo run … -- …` or `curl …`: run, exit code checked.
    Run,
    /// `servebench sim …`: serves until stopped; must answer `/health`.
    Serve,
    /// A tool from [`COUNTED_ONLY`].
    Counted,
}

#[derive(Debug)]
struct DocCommand {
    line: usize,
    /// The command as a shell line, comment removed, server address substituted later.
    text: String,
    kind: Kind,
    expect: i32,
    extra_args: String,
}

#[derive(Debug)]
struct Script {
    line: usize,
    text: String,
    commands: usize,
}

#[derive(Debug, Default)]
struct Page {
    commands: Vec<DocCommand>,
    scripts: Vec<Script>,
    files: Vec<(String, String)>,
}

/// Split a page into its sh commands, sh scripts and file blocks.
fn parse_page(label: &str, text: &str) -> Page {
    let mut page = Page::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].starts_with("```") {
            end += 1;
        }
        assert!(end < lines.len(), "{label}:{}: unclosed code block", i + 1);
        let body = &lines[start..end];
        let words: Vec<&str> = info.split_whitespace().collect();
        if let Some(name) = words.iter().find_map(|w| w.strip_prefix("file=")) {
            page.files.push((name.to_string(), body.join("\n") + "\n"));
        }
        if words.first() == Some(&"sh") {
            let logical = logical_lines(label, start, body);
            if words.contains(&"script") {
                page.scripts.push(Script {
                    line: start,
                    text: body.join("\n") + "\n",
                    commands: logical.len(),
                });
            } else {
                for (line, command, comment) in logical {
                    page.commands
                        .push(classify(label, line, &command, &comment));
                }
            }
        }
        i = end + 1;
    }
    page
}

/// Join continuation lines (`\` at the end, or an open quote) into shell lines; drop
/// whole-line comments. Each result: 1-based line, command, trailing comment.
fn logical_lines(label: &str, first: usize, body: &[&str]) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut comment = String::new();
    let mut quote: Option<char> = None;
    let mut began = 0;
    for (k, raw) in body.iter().enumerate() {
        if current.is_empty() && quote.is_none() {
            let t = raw.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            began = first + k + 1;
        }
        let mut code_end = raw.len();
        let mut prev_space = true;
        for (pos, c) in raw.char_indices() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == '#' && prev_space => {
                    code_end = pos;
                    comment = raw[pos + 1..].trim().to_string();
                    break;
                }
                None => {}
            }
            prev_space = c.is_whitespace();
        }
        let code = raw[..code_end].trim_end();
        if quote.is_some() {
            current.push_str(code);
            current.push('\n');
        } else if let Some(head) = code.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
        } else {
            current.push_str(code);
            out.push((
                began,
                current.trim().to_string(),
                std::mem::take(&mut comment),
            ));
            current.clear();
        }
    }
    assert!(
        current.is_empty() && quote.is_none(),
        "{label}:{began}: a shell line is left open (quote or trailing backslash)"
    );
    out
}

fn classify(label: &str, line: usize, command: &str, comment: &str) -> DocCommand {
    let expect = comment
        .strip_prefix("exit ")
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .map(|n| n.parse().expect("an exit code"))
        .unwrap_or(0);
    let extra_args = comment
        .split_once("tested with ")
        .map(|(_, rest)| {
            rest.split([')', ';'])
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    let mut text = command.to_string();
    for prefix in ["cargo run --release -- ", "cargo run -- "] {
        if let Some(rest) = command.strip_prefix(prefix) {
            text = format!("servebench {rest}");
        }
    }
    let first_words = |n: usize| {
        text.split_whitespace()
            .take(n)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let kind = if first_words(2) == "servebench sim" {
        Kind::Serve
    } else if first_words(1) == "servebench" || first_words(1) == "curl" {
        Kind::Run
    } else if COUNTED_ONLY
        .iter()
        .any(|tool| first_words(tool.split_whitespace().count()) == *tool)
    {
        Kind::Counted
    } else {
        panic!(
            "{label}:{line}: `{command}` is neither a servebench, `cargo run --`, curl nor a \
             counted cargo command; the docs test cannot run it (see README.md, Documentation)"
        )
    };
    DocCommand {
        line,
        text,
        kind,
        expect,
        extra_args,
    }
}

/// A loopback port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

fn substitute_server(text: &str, addr: &str) -> String {
    DOC_SERVER
        .iter()
        .fold(text.to_string(), |t, doc| t.replace(doc, addr))
}

/// Refuse a command that would send traffic off this machine.
fn assert_loopback_only(label: &str, line: usize, text: &str) {
    let sends_nothing = text.contains("--dry-run")
        || ["expand", "validate"].contains(&text.split_whitespace().nth(1).unwrap_or(""));
    for (pos, _) in text.match_indices("://") {
        let host: String = text[pos + 3..]
            .chars()
            .take_while(|c| !matches!(c, ':' | '/' | '\'' | '"' | ' '))
            .collect();
        assert!(
            sends_nothing || host == "127.0.0.1" || host == "localhost",
            "{label}:{line}: `{text}` would reach {host}; use 127.0.0.1:8000 for a server \
             (the test serves a simulator there) or --dry-run"
        );
    }
}

/// `from` copied to `to`, folders (such as `plans/common/`) included.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A scratch directory with the repository's plans and schemas copied (commands may write
/// there) and its tests and examples linked, plus the page's file blocks.
fn scratch(page: &Page) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    for copied in ["plans", "schemas"] {
        copy_tree(&root().join(copied), &dir.path().join(copied));
    }
    for linked in ["tests", "examples"] {
        std::os::unix::fs::symlink(root().join(linked), dir.path().join(linked)).unwrap();
    }
    std::fs::create_dir(dir.path().join("home")).unwrap();
    for (name, body) in &page.files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    dir
}

/// A shell in `dir` with the debug binary first on PATH, in its own process group.
fn shell(dir: &Path, program: &str, script: &str, log: &str) -> Command {
    let bin = PathBuf::from(assert_cmd::cargo::cargo_bin!("servebench"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(program);
    cmd.arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir.join("home"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join(format!("{log}.out"))).unwrap())
        .stderr(std::fs::File::create(dir.join(format!("{log}.err"))).unwrap());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd
}

fn kill_group(child: &std::process::Child) {
    // SAFETY: kill(2) on the process group this test created; no memory is touched.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
}

/// Run to completion (or the limit), then clean up anything it left in the background.
fn wait_with_limit(mut cmd: Command, what: &str) -> ExitStatus {
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let deadline = Instant::now() + COMMAND_LIMIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            kill_group(&child);
            return status;
        }
        if Instant::now() > deadline {
            kill_group(&child);
            panic!("{what}: still running after {COMMAND_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn logs(dir: &Path, log: &str) -> String {
    let read = |ext: &str| {
        let text = std::fs::read_to_string(dir.join(format!("{log}.{ext}"))).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    };
    format!("stdout:\n{}\nstderr:\n{}", read("out"), read("err"))
}

fn answers_health(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    let mut reply = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut reply).is_ok()
        && reply.starts_with("HTTP/1.1 200")
}

/// `servebench sim …` on a free port: it must come up and answer `/health`.
fn check_server(label: &str, dir: &Path, cmd: &DocCommand, log: &str) {
    let port = free_port();
    let mut words: Vec<String> = cmd.text.split_whitespace().map(String::from).collect();
    match words.iter().position(|w| w == "--port") {
        Some(at) => words[at + 1] = port.to_string(),
        None => words.extend(["--port".to_string(), port.to_string()]),
    }
    if let Some(at) = words.iter().position(|w| w == "--host") {
        assert_eq!(
            words[at + 1],
            "127.0.0.1",
            "{label}:{}: tests serve on loopback only",
            cmd.line
        );
    }
    let what = format!("{label}:{}: `{}`", cmd.line, cmd.text);
    let mut child = shell(dir, "sh", &format!("exec {}", words.join(" ")), log)
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let up = loop {
        if answers_health(port) {
            break true;
        }
        if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    kill_group(&child);
    let _ = child.wait();
    assert!(up, "{what}: never answered /health\n{}", logs(dir, log));
}

/// Run every command and script of one page; return (run, counted).
fn check_page(label: &str) -> (usize, usize) {
    let text = std::fs::read_to_string(root().join(label)).unwrap();
    let page = parse_page(label, &text);
    let dir = scratch(&page);
    let _machine = exclusive_run_blocking();

    // The server the docs call 127.0.0.1:8000: the reader's, so it serves whichever model a
    // plan names (plans written for a real server name its model).
    let config = servebench::sim::SimConfig {
        accept_any_model: Some(true),
        ..servebench::sim::SimConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (addr, _sim) = runtime
        .block_on(servebench::sim::serve(config))
        .expect("the test simulator starts");
    let server = addr.to_string();

    let (mut run, mut counted) = (0, 0);
    for (n, cmd) in page.commands.iter().enumerate() {
        let log = format!("cmd{n}");
        let what = format!("{label}:{}: `{}`", cmd.line, cmd.text);
        match cmd.kind {
            Kind::Counted => counted += 1,
            Kind::Serve => {
                check_server(label, dir.path(), cmd, &log);
                run += 1;
            }
            Kind::Run => {
                let mut line = substitute_server(&cmd.text, &server);
                if !cmd.extra_args.is_empty() {
                    line = format!("{line} {}", cmd.extra_args);
                }
                if let Some(rest) = line.strip_prefix("curl ") {
                    assert!(
                        line.contains(&server),
                        "{what}: curl only the test's server"
                    );
                    let curl = Command::new("curl").arg("--version").output();
                    assert!(
                        curl.is_ok_and(|o| o.status.success()),
                        "{what}: the docs test runs the documented curl commands; install curl"
                    );
                    line = format!("curl --silent --show-error --fail {rest}");
                }
                assert_loopback_only(label, cmd.line, &line);
                let status = wait_with_limit(shell(dir.path(), "sh", &line, &log), &what);
                assert_eq!(
                    status.code(),
                    Some(cmd.expect),
                    "{what} (run as `{line}`): expected exit {}\n{}",
                    cmd.expect,
                    logs(dir.path(), &log)
                );
                run += 1;
            }
        }
    }
    for (n, script) in page.scripts.iter().enumerate() {
        // A script starts its own server, so it gets its own port for 8000.
        let port = free_port();
        let text = substitute_server(&script.text, &format!("127.0.0.1:{port}"))
            .replace("--port 8000", &format!("--port {port}"));
        assert_loopback_only(label, script.line, &text);
        let log = format!("script{n}");
        let what = format!("{label}:{}: script", script.line);
        let status = wait_with_limit(
            shell(dir.path(), "bash", &format!("set -e\n{text}"), &log),
            &what,
        );
        assert!(
            status.success(),
            "{what} failed ({status})\n{}",
            logs(dir.path(), &log)
        );
        run += script.commands;
    }
    (run, counted)
}

fn check(label: &str) {
    let &(_, want_run, want_counted) = PAGES
        .iter()
        .find(|(page, _, _)| *page == label)
        .expect("a page listed in PAGES");
    let (run, counted) = check_page(label);
    assert_eq!(
        (run, counted),
        (want_run, want_counted),
        "{label}: commands run and counted changed; update PAGES in tests/it/docs.rs"
    );
}

#[test]
fn every_page_is_listed() {
    let mut found: BTreeSet<String> = BTreeSet::from(["README.md".to_string()]);
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            found.insert(format!("docs/{name}"));
        }
    }
    let listed: BTreeSet<String> = PAGES.iter().map(|(p, _, _)| p.to_string()).collect();
    assert_eq!(found, listed, "pages on disk vs PAGES in tests/it/docs.rs");
}

#[test]
fn the_convention_reads_lines_markers_and_blocks() {
    let text = "intro\n```sh\n# a comment line\nservebench validate x.yaml   # exit 2: bad\n\
                servebench expand x.yaml \\\n  --set a=1\ncurl localhost:8000/v1 -d '{\n  \"a\": 1}'\n\
                cargo test\nservebench selftest  # long (tested with --quick)\n```\n\
                ```yaml file=x.yaml\nversion: 1\n```\n```sh script\nA=1\necho $A\n```\n";
    let page = parse_page("t.md", text);
    let got: Vec<(usize, &str, &Kind, i32, &str)> = page
        .commands
        .iter()
        .map(|c| {
            (
                c.line,
                c.text.as_str(),
                &c.kind,
                c.expect,
                c.extra_args.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (4, "servebench validate x.yaml", &Kind::Run, 2, ""),
            (
                5,
                "servebench expand x.yaml    --set a=1",
                &Kind::Run,
                0,
                ""
            ),
            (
                7,
                "curl localhost:8000/v1 -d '{\n  \"a\": 1}'",
                &Kind::Run,
                0,
                ""
            ),
            (9, "cargo test", &Kind::Counted, 0, ""),
            (10, "servebench selftest", &Kind::Run, 0, "--quick"),
        ]
    );
    assert_eq!(
        page.files,
        [("x.yaml".to_string(), "version: 1\n".to_string())]
    );
    assert_eq!(page.scripts.len(), 1);
    assert_eq!(page.scripts[0].commands, 2);
}

#[test]
#[should_panic(expected = "would reach gateway")]
fn a_command_to_another_host_is_refused() {
    assert_loopback_only(
        "t.md",
        1,
        "servebench run p.yaml --target a=http://gateway:8080/v1",
    );
}

#[test]
fn readme_commands_run() {
    check("README.md");
}

#[test]
fn plans_page_commands_run() {
    check("docs/plans.md");
}

#[test]
fn measurement_page_commands_run() {
    check("docs/measurement.md");
}

#[test]
fn workloads_page_commands_run() {
    check("docs/workloads.md");
}

#[test]
fn simulator_page_commands_run() {
    check("docs/simulator.md");
}

#[test]
fn reports_page_commands_run() {
    check("docs/reports.md");
}

#[test]
fn history_page_commands_run() {
    check("docs/history.md");
}

#[test]
fn sharding_page_commands_run() {
    check("docs/sharding.md");
}

#[test]
fn performance_page_commands_run() {
    check("docs/performance.md");
}

#[test]
fn hardening_page_commands_run() {
    check("docs/hardening.md");
}

#[test]
fn connections_page_commands_run() {
    check("docs/connections.md");
}

#[test]
fn real_servers_page_commands_run() {
    check("docs/real-servers.md");
}

#[test]
fn report_formats_page_commands_run() {
    check("docs/report-formats.md");
}

#[test]
fn plans_as_code_page_commands_run() {
    check("docs/plans-as-code.md");
}

#[test]
fn trends_page_commands_run() {
    check("docs/trends.md");
}
