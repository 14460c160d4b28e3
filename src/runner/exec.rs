//! `exec` hooks: a local program run without a shell, in its own process group so a timeout
//! kills everything it started; its exit status and the tail of its output go to the report.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Lines of output kept for the report.
pub(crate) const TAIL_LINES: usize = 20;
/// Longest line kept; the rest of a longer one is dropped.
const MAX_LINE_BYTES: usize = 1000;
/// How long to wait for the output pipe to close after the program ended (a child it left
/// running may hold it open).
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// What a finished (or killed) program left.
#[derive(Debug)]
pub(super) struct ExecRun {
    /// Exit code; a signal number is given as `128 + signal`, as shells do.
    pub exit_status: Option<i32>,
    /// The last lines of stdout and stderr, interleaved as written.
    pub output_tail: Vec<String>,
    /// `Ok(detail)` for exit 0, `Err(reason)` otherwise.
    pub result: Result<String, String>,
}

/// The environment a program gets besides the runner's own.
pub(super) struct ExecEnv<'a> {
    pub dir: &'a Path,
    pub vars: Vec<(&'static str, String)>,
}

/// Run `command` with `timeout`, killing its process group when the time is up.
pub(super) async fn run_exec(command: &[String], env: &ExecEnv<'_>, timeout: Duration) -> ExecRun {
    let failed = |reason: String| ExecRun {
        exit_status: None,
        output_tail: Vec::new(),
        result: Err(reason),
    };
    let Some((program, args)) = command.split_first() else {
        return failed("`exec` needs a program".into());
    };
    let (reader, writer) = match pipe_pair() {
        Ok(pair) => pair,
        Err(e) => return failed(format!("cannot make a pipe: {e}")),
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(env.dir)
        .stdin(Stdio::null())
        .stdout(writer.0)
        .stderr(writer.1)
        .process_group(0);
    for (key, value) in &env.vars {
        cmd.env(key, value);
    }
    let spawned = cmd.spawn();
    // The command holds our copies of the pipe's write end; the reader sees EOF only once
    // they are gone.
    drop(cmd);
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return failed(format!("cannot start `{program}`: {e}")),
    };
    let tail = Arc::new(Mutex::new(Tail::default()));
    let reading = tokio::task::spawn_blocking({
        let tail = Arc::clone(&tail);
        move || read_into(reader, &tail)
    });
    let pid = child.id();
    let (status, timed_out) = tokio::select! {
        status = child.wait() => (status, false),
        _ = tokio::time::sleep(timeout) => {
            kill_group(pid);
            (child.wait().await, true)
        }
    };
    let _ = tokio::time::timeout(PIPE_GRACE, reading).await;
    let output_tail = tail.lock().map(|t| t.lines()).unwrap_or_default();
    let exit_status = status
        .as_ref()
        .ok()
        .and_then(|s| s.code().or_else(|| s.signal().map(|n| 128 + n)));
    let result = match (&status, timed_out) {
        (_, true) => Err(format!(
            "`{program}` timed out after {:.1}s; its process group was killed",
            timeout.as_secs_f64()
        )),
        (Err(e), false) => Err(format!("waiting for `{program}`: {e}")),
        (Ok(s), false) if s.success() => Ok("exit 0".to_string()),
        (Ok(s), false) => Err(match (s.code(), s.signal()) {
            (Some(code), _) => format!("`{program}` exited with status {code}"),
            (None, Some(signal)) => format!("`{program}` was killed by signal {signal}"),
            (None, None) => format!("`{program}` ended abnormally"),
        }),
    };
    ExecRun {
        exit_status,
        output_tail,
        result,
    }
}

/// One pipe whose write end serves as both stdout and stderr, so the tail keeps their order.
fn pipe_pair() -> std::io::Result<(std::io::PipeReader, (Stdio, Stdio))> {
    let (reader, writer) = std::io::pipe()?;
    let second = writer.try_clone()?;
    Ok((reader, (Stdio::from(writer), Stdio::from(second))))
}

fn kill_group(pid: Option<u32>) {
    let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) else {
        return;
    };
    // SAFETY: kill(2) with a negative pid signals the process group the child leads
    // (`process_group(0)`); it touches no memory of ours.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

fn read_into(mut reader: std::io::PipeReader, tail: &Mutex<Tail>) {
    let mut buf = [0u8; 8192];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut t) = tail.lock() {
                    t.push(&buf[..n]);
                }
            }
        }
    }
}

/// The last [`TAIL_LINES`] lines of a byte stream, each cut at [`MAX_LINE_BYTES`].
#[derive(Debug, Default)]
pub(crate) struct Tail {
    done: std::collections::VecDeque<String>,
    current: Vec<u8>,
}

impl Tail {
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        for part in bytes.split_inclusive(|&b| b == b'\n') {
            let (text, ends) = match part.strip_suffix(b"\n") {
                Some(text) => (text, true),
                None => (part, false),
            };
            let room = MAX_LINE_BYTES.saturating_sub(self.current.len());
            self.current
                .extend_from_slice(&text[..text.len().min(room)]);
            if ends {
                let line = std::mem::take(&mut self.current);
                self.done.push_back(finish(&line));
                if self.done.len() > TAIL_LINES {
                    self.done.pop_front();
                }
            }
        }
    }

    /// The kept lines, an unterminated last line included.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.done.iter().cloned().collect();
        if !self.current.is_empty() {
            lines.push(finish(&self.current));
            if lines.len() > TAIL_LINES {
                lines.remove(0);
            }
        }
        lines
    }
}

fn finish(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8_lossy(line).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines_across_any_split() {
        let text: String = (1..=30).map(|i| format!("line {i}\n")).collect::<String>() + "end";
        let whole = {
            let mut t = Tail::default();
            t.push(text.as_bytes());
            t.lines()
        };
        let expected: Vec<String> = (12..=30)
            .map(|i| format!("line {i}"))
            .chain(["end".to_string()])
            .collect();
        assert_eq!(whole, expected);
        let mut bytewise = Tail::default();
        for b in text.as_bytes() {
            bytewise.push(std::slice::from_ref(b));
        }
        assert_eq!(bytewise.lines(), expected);
    }

    #[test]
    fn a_long_line_is_cut() {
        let mut t = Tail::default();
        t.push(&vec![b'x'; 5000]);
        t.push(b"\r\nnext\n");
        let lines = t.lines();
        assert_eq!(lines[0].len(), MAX_LINE_BYTES);
        assert_eq!(lines[1], "next");
    }
}
