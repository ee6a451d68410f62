//! A private PostgreSQL cluster from the machine's binaries, removed when its owner goes away.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::HarnessError;
use crate::process::{free_port, owned_temp_dir, run, server_command, watch_owner};

/// A private PostgreSQL cluster on a free loopback port, with trust authentication for the
/// superuser `postgres`.
///
/// * Binaries come from `PATH` (`initdb`, `pg_ctl`), else from `pg_config --bindir`.
/// * As root, every server command runs through `runuser -u postgres` on a directory that user
///   owns, since PostgreSQL refuses to run as root.
/// * It is removed on drop, and a detached watchdog removes it when the owning process ends
///   however it ends (a test process that exits without dropping statics, or is killed).
/// * Tuned for throwaway use (`fsync = off`): never point it at data you want to keep.
#[derive(Debug)]
pub struct Cluster {
    dir: PathBuf,
    port: u16,
    bindir: PathBuf,
    stopped: bool,
}

fn find_bindir() -> Result<PathBuf, HarnessError> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Ok(dir);
            }
        }
    }
    let out = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .map_err(|_| HarnessError::NoBinaries)?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if dir.join("initdb").is_file() {
        Ok(dir)
    } else {
        Err(HarnessError::NoBinaries)
    }
}

impl Cluster {
    /// Initialises and starts a cluster; returns once it accepts connections.
    ///
    /// # Errors
    ///
    /// [`HarnessError`] naming the step that failed, with the server's output.
    pub fn start() -> Result<Cluster, HarnessError> {
        let bindir = find_bindir()?;
        let dir = owned_temp_dir("leader-pg")?;
        let data = dir.join("data");
        run(
            server_command(&bindir.join("initdb"))
                .arg("-D")
                .arg(&data)
                .args(["-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"])
                .args(["--locale=C", "--no-instructions"]),
            "initdb",
        )?;
        let mut cluster = Cluster {
            dir: dir.clone(),
            port: 0,
            bindir: bindir.clone(),
            stopped: false,
        };
        watch_owner(&format!(
            "{} -D {} stop -m immediate >/dev/null 2>&1; rm -rf {}",
            bindir.join("pg_ctl").display(),
            data.display(),
            dir.display()
        ))?;
        let mut last_error = None;
        for _ in 0..3 {
            let port = free_port()?;
            let options = format!(
                "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
                 -c synchronous_commit=off -c full_page_writes=off -c max_connections=300",
                dir.display()
            );
            let started = run(
                server_command(&bindir.join("pg_ctl"))
                    .arg("-D")
                    .arg(&data)
                    .arg("-l")
                    .arg(dir.join("server.log"))
                    .args(["-o", &options, "-w", "-t", "60", "start"]),
                "pg_ctl start",
            );
            match started {
                Ok(()) => {
                    cluster.port = port;
                    return Ok(cluster);
                }
                Err(err) => last_error = Some(err),
            }
        }
        Err(last_error.expect("three attempts were made"))
    }

    /// The superuser URL of the `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's log file.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// Stops the server at once and removes the cluster.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let _ = server_command(&self.bindir.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["stop", "-m", "immediate"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}
