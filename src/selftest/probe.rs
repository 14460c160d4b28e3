//! Process and thread measurements: per-thread CPU clocks, peak RSS, the open-file limit.

use std::os::unix::thread::JoinHandleExt;

/// CPU seconds used so far by the whole process, every thread together.
pub fn process_cpu_s() -> f64 {
    clock_s(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The CPU-time clock of another thread, while it runs.
pub fn cpu_clock_of<T>(thread: &std::thread::JoinHandle<T>) -> Option<libc::clockid_t> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: the handle keeps the thread joinable, so its pthread_t is valid; `clock` is a
    // valid out-pointer.
    let rc = unsafe { libc::pthread_getcpuclockid(thread.as_pthread_t(), &mut clock) };
    (rc == 0).then_some(clock)
}

/// A clock's reading in seconds (0 if it cannot be read).
pub fn clock_s(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The process's peak resident set (`VmHWM`), bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Restart the peak RSS from the current RSS (Linux ≥ 4.0); false when not possible.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Raise the soft open-file limit to the hard one (4,096 streams need two sockets each when
/// the simulator runs in-process); returns the limit now in force.
pub fn raise_nofile_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: `raised` is a valid rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    Some(limit.rlim_cur)
}
