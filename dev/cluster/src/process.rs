//! Child processes that cannot outlive the process that started them.
//!
//! Every component runs under a small `sh` watchdog that polls the owner's pid: when the owner
//! exits for any reason (end of a test binary, panic, `kill -9`), the watchdog stops the
//! component with SIGTERM, then SIGKILL after a grace period. A test binary keeps its control
//! plane in a static that is never dropped, so this is what guarantees no orphans; a handle
//! dropped earlier stops its component then.

use std::{
    fs::File,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use crate::Error;

const WATCHDOG: &str = r#"
owner=$1; log=$2; shift 2
"$@" >>"$log" 2>&1 &
child=$!
echo "$child" >"$log.pid"
stop() {
  kill -TERM "$child" 2>/dev/null
  i=0
  while kill -0 "$child" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
  kill -KILL "$child" 2>/dev/null
  wait "$child" 2>/dev/null
  exit 0
}
trap stop TERM INT HUP
while kill -0 "$owner" 2>/dev/null && kill -0 "$child" 2>/dev/null; do
  sleep 0.3 & wait $!
done
stop
"#;

/// A component process under its watchdog.
#[derive(Debug)]
pub struct Supervised {
    pub name: String,
    pub log: PathBuf,
    program: PathBuf,
    args: Vec<String>,
    watchdog: Child,
}

impl Supervised {
    /// Starts `program args...` with stdout and stderr written to a new `log`.
    pub fn spawn(name: &str, program: &Path, args: &[String], log: &Path) -> Result<Self, Error> {
        File::create(log)?;
        Self::start(name, program, args, log)
    }

    /// Starts the same program again, as a restart after a crash would, its output appended
    /// to the same log.
    pub fn respawn(&self) -> Result<Self, Error> {
        Self::start(&self.name, &self.program, &self.args, &self.log)
    }

    fn start(name: &str, program: &Path, args: &[String], log: &Path) -> Result<Self, Error> {
        let _ = std::fs::remove_file(format!("{}.pid", log.display()));
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("kuota-watchdog")
            .arg(std::process::id().to_string())
            .arg(log)
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(Self {
            name: name.to_string(),
            log: log.to_path_buf(),
            program: program.to_path_buf(),
            args: args.to_vec(),
            watchdog,
        })
    }

    /// True while the component (and so its watchdog) is running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.watchdog.try_wait(), Ok(None))
    }

    /// The component's own pid (not the watchdog's), once it has started.
    pub fn pid(&self) -> Option<u32> {
        let path = format!("{}.pid", self.log.display());
        for _ in 0..100 {
            if let Some(pid) = std::fs::read_to_string(&path)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                return Some(pid);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Kills the component with SIGKILL, as a crash would; the watchdog then exits too.
    pub fn kill_hard(&mut self) {
        if let Some(pid) = self.pid() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        let _ = self.watchdog.wait();
    }

    /// The last lines of the component's log, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Stops the component gracefully and waits for it.
    pub fn stop(mut self, timeout: Duration) {
        let pid = self.watchdog.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if !self.is_running() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.watchdog.kill();
        let _ = self.watchdog.wait();
    }
}

/// A handle dropped while its component runs (a test that panicked, a harness that returned
/// early) stops it, so that it cannot act on the shared control plane during the next test of
/// the same binary (an admitter left running would keep the leader Lease from the next one).
impl Drop for Supervised {
    fn drop(&mut self) {
        if self.is_running() {
            // The watchdog stops the component with SIGTERM, then SIGKILL after 5 s.
            let pid = self.watchdog.id().to_string();
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
            let _ = self.watchdog.wait();
        }
    }
}

/// Removes `dir` once the current process has exited (and its components with it).
pub fn remove_after_exit(dir: &Path) -> Result<(), Error> {
    Command::new("sh")
        .arg("-c")
        .arg(r#"while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; sleep 6; rm -rf "$2""#)
        .arg("kuota-janitor")
        .arg(std::process::id().to_string())
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok(())
}

/// Ports handed to components, below the kernel's default ephemeral range (32768 and up): a
/// port the kernel picked for us could be handed again to any outgoing connection (the API
/// server opens many to etcd) before the component binds it, which a CI run saw.
const PORTS: std::ops::Range<u32> = 20_000..32_000;

/// A TCP port on 127.0.0.1 that is free now and that this process has not handed out before.
/// Each process starts at its own offset, so concurrent test binaries rarely meet.
pub fn free_port() -> Result<u16, Error> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let span = PORTS.end - PORTS.start;
    let seed = std::process::id().wrapping_mul(7919)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.subsec_nanos());
    let _ = NEXT.compare_exchange(u32::MAX, seed % span, Ordering::SeqCst, Ordering::SeqCst);
    for _ in 0..span {
        let offset = NEXT.fetch_add(1, Ordering::SeqCst) % span;
        let port = u16::try_from(PORTS.start + offset).expect("PORTS lies below 65536");
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(Error::Io(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        format!("no free port in {PORTS:?}"),
    )))
}
