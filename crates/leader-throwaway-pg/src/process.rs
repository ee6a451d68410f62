//! Running the server's programs (and PgBouncer's): as the `postgres` OS user when root, with temp dirs that user
//! owns, a watchdog that cleans up after the owning process, and polling for readiness.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::ClusterError;

/// True when this process runs as root (PostgreSQL then refuses to run as us).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Runs `program` as the `postgres` OS user when we are root, else as ourselves.
pub fn server_command(program: &Path) -> Command {
    if is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

/// A free TCP port on loopback.
///
/// # Errors
///
/// [`ClusterError::Io`] if no socket can be bound.
pub fn free_port() -> Result<u16, ClusterError> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(ClusterError::io("find a free port"))?;
    Ok(listener
        .local_addr()
        .map_err(ClusterError::io("find a free port"))?
        .port())
}

/// Runs `cmd` to its end: [`ClusterError::Command`] naming `what`, with everything it printed,
/// unless it succeeds.
///
/// # Errors
///
/// [`ClusterError::Io`] if it cannot be started, [`ClusterError::Command`] if it fails.
pub fn run(cmd: &mut Command, what: &'static str) -> Result<(), ClusterError> {
    let out = cmd.output().map_err(ClusterError::io(what))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(ClusterError::Command {
            what,
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        })
    }
}

/// A directory the server user owns, under the system temp dir, named `PREFIX-PID-RANDOM`.
///
/// # Errors
///
/// [`ClusterError::Io`] if it cannot be created, [`ClusterError::Command`] if `chown` fails.
pub fn owned_temp_dir(prefix: &str) -> Result<PathBuf, ClusterError> {
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir).map_err(ClusterError::io("create the temp dir"))?;
    if is_root() {
        run(
            Command::new("chown").arg("postgres:").arg(&dir),
            "chown the temp dir to postgres",
        )?;
    }
    Ok(dir)
}

/// Starts a detached watchdog that runs `cleanup` (a shell snippet) once this process is gone.
///
/// # Errors
///
/// [`ClusterError::Io`] if the watchdog cannot be started.
pub fn watch_owner(cleanup: &str) -> Result<(), ClusterError> {
    let script = format!(
        "while [ -d /proc/{pid} ]; do sleep 1; done; {cleanup}",
        pid = std::process::id()
    );
    let mut cmd = if is_root() {
        let mut cmd = Command::new("setsid");
        cmd.args(["runuser", "-u", "postgres", "--", "sh", "-c", &script]);
        cmd
    } else {
        let mut cmd = Command::new("setsid");
        cmd.args(["sh", "-c", &script]);
        cmd
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(ClusterError::io("start the cleanup watchdog"))?;
    Ok(())
}

/// Waits until `check` succeeds or `timeout` passes.
pub fn wait_for(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}
