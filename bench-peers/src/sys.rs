//! The few OS facts and knobs the harness needs: RSS, the open-file limit,
//! and a description of the machine for the report header.

use std::time::{SystemTime, UNIX_EPOCH};

/// Resident set size of this process in bytes, from `/proc/self/statm`.
pub(crate) fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .expect("statm has a resident field");
    pages * page_size()
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions; it only reads a constant.
    #[allow(unsafe_code)]
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// Raises the soft RLIMIT_NOFILE to the hard limit (the idle scenario holds
/// two descriptors per connection) and returns the new soft limit.
pub(crate) fn raise_nofile() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit for the duration of the call.
    #[allow(unsafe_code)]
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    if got != 0 {
        return 0;
    }
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `want` is a valid rlimit; raising soft to hard needs no privilege.
        #[allow(unsafe_code)]
        let set = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) };
        if set == 0 {
            return want.rlim_cur;
        }
    }
    lim.rlim_cur
}

/// `nproc` and the CPU model name, for the report header.
pub(crate) fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    format!("{cores} cores (nproc), {model}, Linux {kernel}")
}

/// Today's date (UTC) as YYYY-MM-DD and the time as HH:MM.
pub(crate) fn now_utc() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let (h, m) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02} UTC")
}

static PIN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns on [`pin_to_cpu`] (the `--pin` option).
pub(crate) fn enable_pinning() {
    PIN.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `--pin` is on.
pub(crate) fn pinning() -> bool {
    PIN.load(std::sync::atomic::Ordering::Relaxed)
}

/// With `--pin`, pins the calling thread to CPU `cpu` (modulo the CPUs
/// available), so the two ends of a TCP job always run on different cores.
/// Off by default: on a loaded machine a pinned thread cannot escape a busy
/// core, which inflates round-trip times. Best effort.
pub(crate) fn pin_to_cpu(cpu: usize) {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 || !pinning() {
        return;
    }
    // SAFETY: `set` is a plain bitmask owned by this frame; CPU_ZERO/CPU_SET
    // only write inside it, and sched_setaffinity reads `size_of` bytes of it.
    #[allow(unsafe_code)]
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu % n, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The 1-minute load average, from `/proc/loadavg`.
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| "?".into())
}

/// The lockgate tree the run was built from: `git describe`-like, best effort.
pub(crate) fn tree() -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(head) => {
            let dirty = git(&["status", "--porcelain", "--", "src", "tokio-lockgate/src"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head} + uncommitted changes")
            } else {
                head
            }
        }
        None => "unknown".into(),
    }
}

/// CPU time (user + system) the calling thread has used.
pub(crate) fn thread_cpu() -> std::time::Duration {
    // SAFETY: `usage` is a plain struct owned by this frame, which
    // getrusage fills in; RUSAGE_THREAD names the calling thread.
    #[allow(unsafe_code)]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}
