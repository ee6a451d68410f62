//! A private PostgreSQL cluster from the machine's binaries, removed when its owner goes away.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::ClusterError;
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

fn find_bindir() -> Result<PathBuf, ClusterError> {
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
        .map_err(|_| ClusterError::NoBinaries)?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if dir.join("initdb").is_file() {
        Ok(dir)
    } else {
        Err(ClusterError::NoBinaries)
    }
}

impl Cluster {
    /// Initialises and starts a cluster; returns once it accepts connections.
    ///
    /// # Errors
    ///
    /// [`ClusterError`] naming the step that failed, with the server's output.
    pub fn start() -> Result<Cluster, ClusterError> {
        Cluster::start_with(
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300",
        )
    }

    /// As [`Cluster::start`], but durable as a production server is (`fsync`,
    /// `synchronous_commit` and `full_page_writes` at PostgreSQL's defaults, on): for benchmarks
    /// whose figures must include the commit's WAL flush.
    ///
    /// # Errors
    ///
    /// As [`Cluster::start`].
    pub fn start_durable() -> Result<Cluster, ClusterError> {
        Cluster::start_with("-c max_connections=300")
    }

    fn start_with(settings: &str) -> Result<Cluster, ClusterError> {
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
                "-p {port} -k {} -c listen_addresses=127.0.0.1 {settings}",
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

    /// Restarts the server with `pg_ctl restart -m <mode>` (`fast` or `immediate`), keeping its
    /// data, port and options; returns once it accepts connections again.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Command`] with `pg_ctl`'s output.
    pub fn restart(&self, mode: &str) -> Result<(), ClusterError> {
        run(
            server_command(&self.bindir.join("pg_ctl"))
                .arg("-D")
                .arg(self.dir.join("data"))
                .arg("-l")
                .arg(self.log_path())
                .args(["-m", mode, "-w", "-t", "60", "restart"]),
            "pg_ctl restart",
        )
    }

    /// Makes an asynchronous streaming standby of this server with `pg_basebackup -R` and starts
    /// it on a port of its own, read-only until [`Cluster::promote`]; returns once it accepts
    /// connections. It is removed like any [`Cluster`].
    ///
    /// # Errors
    ///
    /// [`ClusterError::Command`] naming the step that failed, with its output.
    pub fn start_standby(&self) -> Result<Cluster, ClusterError> {
        let dir = owned_temp_dir("leader-pg-standby")?;
        let data = dir.join("data");
        // pg_basebackup sits beside the real pg_ctl (PATH may hold only symlinks to a few tools).
        let tools = std::fs::canonicalize(self.bindir.join("pg_ctl"))
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| self.bindir.clone());
        run(
            server_command(&tools.join("pg_basebackup"))
                .arg("-D")
                .arg(&data)
                .args([
                    "-R",
                    "-c",
                    "fast",
                    "-X",
                    "stream",
                    "-h",
                    "127.0.0.1",
                    "-U",
                    "postgres",
                ])
                .args(["-p", &self.port.to_string()]),
            "pg_basebackup",
        )?;
        watch_owner(&format!(
            "{} -D {} stop -m immediate >/dev/null 2>&1; rm -rf {}",
            self.bindir.join("pg_ctl").display(),
            data.display(),
            dir.display()
        ))?;
        let port = free_port()?;
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c hot_standby=on -c max_connections=300 \
             -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            dir.display()
        );
        let standby = Cluster {
            dir: dir.clone(),
            port,
            bindir: self.bindir.clone(),
            stopped: false,
        };
        run(
            server_command(&self.bindir.join("pg_ctl"))
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(dir.join("server.log"))
                .args(["-o", &options, "-w", "-t", "60", "start"]),
            "pg_ctl start (standby)",
        )
        .map_err(|error| ClusterError::Command {
            what: "pg_ctl start (standby)",
            output: format!(
                "{error}\n{}",
                std::fs::read_to_string(standby.log_path()).unwrap_or_default()
            ),
        })?;
        Ok(standby)
    }

    /// Promotes a standby to a writable primary (`pg_ctl promote -w`).
    ///
    /// # Errors
    ///
    /// [`ClusterError::Command`] with `pg_ctl`'s output.
    pub fn promote(&self) -> Result<(), ClusterError> {
        run(
            server_command(&self.bindir.join("pg_ctl"))
                .arg("-D")
                .arg(self.dir.join("data"))
                .args(["-w", "-t", "60", "promote"]),
            "pg_ctl promote",
        )
    }

    /// Stops the server at once (`-m immediate`, a crash), keeping its data: [`Cluster::restart`]
    /// brings it back.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Command`] with `pg_ctl`'s output.
    pub fn crash(&self) -> Result<(), ClusterError> {
        run(
            server_command(&self.bindir.join("pg_ctl"))
                .arg("-D")
                .arg(self.dir.join("data"))
                .args(["-m", "immediate", "stop"]),
            "pg_ctl stop -m immediate",
        )
    }

    /// Stops the server cleanly (`-m fast`, a shutdown checkpoint), keeping its data: for
    /// [`Cluster::single_user`], or [`Cluster::restart`] to bring it back.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Command`] with `pg_ctl`'s output.
    pub fn shut_down(&self) -> Result<(), ClusterError> {
        run(
            server_command(&self.bindir.join("pg_ctl"))
                .arg("-D")
                .arg(self.dir.join("data"))
                .args(["-m", "fast", "-w", "-t", "60", "stop"]),
            "pg_ctl stop -m fast",
        )
    }

    /// A command that runs `postgres --single` on `database` of this cluster as the server's
    /// owner, each line of its standard input one statement, behind `wrapper` (a program and its
    /// arguments, such as `valgrind --tool=callgrind`; empty for none). The server must be shut
    /// down first ([`Cluster::shut_down`]).
    pub fn single_user(&self, database: &str, wrapper: &[&str]) -> Command {
        let postgres = self.bindir.join("postgres");
        let mut cmd = match wrapper.split_first() {
            None => server_command(&postgres),
            Some((program, args)) => {
                let mut cmd = server_command(Path::new(program));
                cmd.args(args).arg(&postgres);
                cmd
            }
        };
        cmd.arg("--single")
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg(database)
            .current_dir(&self.dir);
        cmd
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
