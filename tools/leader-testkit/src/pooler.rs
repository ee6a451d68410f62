//! PgBouncer in transaction mode in front of a server, for the pooler pass of the tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::HarnessError;
use leader_throwaway_pg::process::{
    free_port, owned_temp_dir, run, server_command, wait_for, watch_owner,
};

/// The login roles the pooler lets through: the superuser, the least-privilege test role and the
/// operator's (the dashboard's) test role.
pub const POOLER_USERS: [&str; 3] = ["postgres", "leader_app", "leader_operator"];

/// A PgBouncer 1.18 in `pool_mode = transaction` in front of a server on loopback, configured
/// as a user's pooler must be for sqlx: `ignore_startup_parameters = extra_float_digits`.
///
/// Every database name is forwarded to the same-named database (`* = host=.. port=..`), with a
/// small server pool (`default_pool_size = 4` unless given) so clients share server connections, which is
/// what breaks anything that leaves state on a connection.
#[derive(Debug)]
pub struct Pooler {
    dir: PathBuf,
    port: u16,
    settings: PoolerSettings,
    binary: PathBuf,
    stopped: bool,
}

/// The PgBouncer settings a [`Pooler`] can be started with; the rest are fixed (transaction
/// mode, trust authentication, `ignore_startup_parameters = extra_float_digits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolerSettings {
    /// `default_pool_size`: server connections per database and user.
    pub pool_size: u32,
    /// `server_login_retry` (PgBouncer's default, 15 s, when `None`): how long PgBouncer waits
    /// after a failed server login before it tries again.
    pub server_login_retry: Option<Duration>,
    /// `idle_transaction_timeout` (off when `None`): how long a client may sit idle inside a
    /// transaction before PgBouncer closes its server connection.
    pub idle_transaction_timeout: Option<Duration>,
    /// `server_idle_timeout` (PgBouncer's default, 600 s, when `None`): how long an unused server
    /// connection stays open. PgBouncer keeps a pool per database, so a test run that makes a
    /// database per test holds its server connections for every finished test's database until
    /// then; [`PoolerSettings::for_test_runs`] sets it short.
    pub server_idle_timeout: Option<Duration>,
    /// Whether `options` joins `ignore_startup_parameters`: PgBouncer then accepts a
    /// connection that sets startup options (as some deployments configure it, for clients that
    /// set `options`) and drops them, instead of refusing it.
    pub ignore_startup_options: bool,
}

impl Default for PoolerSettings {
    /// A pool of 4, PgBouncer's defaults otherwise.
    fn default() -> PoolerSettings {
        PoolerSettings {
            pool_size: 4,
            server_login_retry: None,
            idle_transaction_timeout: None,
            server_idle_timeout: None,
            ignore_startup_options: false,
        }
    }
}

impl PoolerSettings {
    /// The defaults, with finished tests' server connections closed after a second unused.
    ///
    /// Each [`TestDb`](crate::TestDb) is a new database, and PgBouncer keeps up to `pool_size`
    /// server connections to each one it has seen. With its default `server_idle_timeout` a run
    /// of some hundred tests through the pooler exhausts the server's `max_connections` ("sorry,
    /// too many clients already") with the connections of databases no test will use again.
    /// A live test that sits idle longer than that gets a new server connection at its next
    /// transaction, as a transaction-mode pooler may give it at any time.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_testkit::PoolerSettings;
    ///
    /// let settings = PoolerSettings::for_test_runs();
    /// assert_eq!(settings.server_idle_timeout, Some(Duration::from_secs(1)));
    /// assert_eq!(settings.pool_size, PoolerSettings::default().pool_size);
    /// ```
    pub fn for_test_runs() -> PoolerSettings {
        PoolerSettings {
            server_idle_timeout: Some(Duration::from_secs(1)),
            ..PoolerSettings::default()
        }
    }
}

/// The configuration of a pooler listening on `port` in front of `server_host:server_port`.
fn ini(
    dir: &Path,
    port: u16,
    server_host: &str,
    server_port: u16,
    settings: &PoolerSettings,
) -> String {
    let mut ini = format!(
        "[databases]\n* = host={server_host} port={server_port}\n\n[pgbouncer]\n\
         listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
         auth_type = trust\nauth_file = {dir}/userlist.txt\npool_mode = transaction\n\
         default_pool_size = {pool_size}\nmax_client_conn = 1000\nmax_db_connections = 0\n\
         ignore_startup_parameters = extra_float_digits{options}\n\
         logfile = {dir}/pgbouncer.log\npidfile = {dir}/pgbouncer.pid\n\
         admin_users = postgres\n",
        dir = dir.display(),
        pool_size = settings.pool_size,
        options = if settings.ignore_startup_options {
            ", options"
        } else {
            ""
        },
    );
    // PgBouncer takes seconds, with a fraction.
    if let Some(retry) = settings.server_login_retry {
        ini += &format!("server_login_retry = {}\n", retry.as_secs_f64());
    }
    if let Some(timeout) = settings.idle_transaction_timeout {
        ini += &format!("idle_transaction_timeout = {}\n", timeout.as_secs_f64());
    }
    if let Some(timeout) = settings.server_idle_timeout {
        ini += &format!("server_idle_timeout = {}\n", timeout.as_secs_f64());
    }
    ini
}

/// Where the `pgbouncer` binary is, if installed.
pub fn pgbouncer_binary() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.push("/usr/sbin".into());
    dirs.into_iter()
        .map(|d| d.join("pgbouncer"))
        .find(|p| p.is_file())
}

impl Pooler {
    /// Starts PgBouncer in front of `server_host:server_port`; returns once it accepts
    /// connections.
    ///
    /// # Errors
    ///
    /// [`HarnessError::NoPgBouncer`] if it is not installed, or the failing step's output.
    pub fn start(server_host: &str, server_port: u16) -> Result<Pooler, HarnessError> {
        Pooler::start_with(server_host, server_port, PoolerSettings::default())
    }

    /// As [`Pooler::start`], with `default_pool_size = pool_size` server connections per
    /// database and user (the demo and the drills use 2).
    ///
    /// # Errors
    ///
    /// As [`Pooler::start`].
    pub fn start_with_pool_size(
        server_host: &str,
        server_port: u16,
        pool_size: u32,
    ) -> Result<Pooler, HarnessError> {
        Pooler::start_with(
            server_host,
            server_port,
            PoolerSettings {
                pool_size,
                ..PoolerSettings::default()
            },
        )
    }

    /// As [`Pooler::start`], with `settings`.
    ///
    /// # Errors
    ///
    /// As [`Pooler::start`].
    pub fn start_with(
        server_host: &str,
        server_port: u16,
        settings: PoolerSettings,
    ) -> Result<Pooler, HarnessError> {
        let binary = pgbouncer_binary().ok_or(HarnessError::NoPgBouncer)?;
        let dir = owned_temp_dir("leader-pgbouncer")?;
        let port = free_port()?;
        let users: String = POOLER_USERS
            .iter()
            .map(|u| format!("\"{u}\" \"\"\n"))
            .collect();
        std::fs::write(dir.join("userlist.txt"), users)
            .map_err(HarnessError::io("write userlist"))?;
        let ini = ini(&dir, port, server_host, server_port, &settings);
        let ini_path = dir.join("pgbouncer.ini");
        std::fs::write(&ini_path, ini).map_err(HarnessError::io("write pgbouncer.ini"))?;
        if leader_throwaway_pg::process::is_root() {
            run(
                Command::new("chown").arg("-R").arg("postgres:").arg(&dir),
                "chown the pooler dir",
            )?;
        }
        watch_owner(&format!(
            "kill $(cat {dir}/pgbouncer.pid) 2>/dev/null; rm -rf {dir}",
            dir = dir.display()
        ))?;
        run(
            server_command(&binary).arg("-d").arg(&ini_path),
            "start pgbouncer",
        )?;
        let ready = wait_for(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let pooler = Pooler {
            dir,
            port,
            settings,
            binary,
            stopped: false,
        };
        if !ready {
            return Err(HarnessError::Command {
                what: "wait for pgbouncer",
                output: std::fs::read_to_string(pooler.dir.join("pgbouncer.log"))
                    .unwrap_or_default(),
            });
        }
        Ok(pooler)
    }

    /// The pooler's URL for the `postgres` database; swap the database name for others.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The loopback port the pooler listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the pooler (every client connection is closed) and starts it again on the same
    /// port; returns once it accepts connections.
    ///
    /// # Errors
    ///
    /// [`HarnessError::Command`] with the pooler's log if it does not come back.
    pub fn restart(&self) -> Result<(), HarnessError> {
        let pid_file = self.dir.join("pgbouncer.pid");
        if let Ok(pid) = std::fs::read_to_string(&pid_file) {
            let _ = Command::new("kill")
                .arg(pid.trim())
                .stderr(Stdio::null())
                .status();
        }
        wait_for(Duration::from_secs(10), || !pid_file.exists());
        run(
            server_command(&self.binary)
                .arg("-d")
                .arg(self.dir.join("pgbouncer.ini")),
            "restart pgbouncer",
        )?;
        if wait_for(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
        }) {
            Ok(())
        } else {
            Err(HarnessError::Command {
                what: "wait for the restarted pgbouncer",
                output: std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default(),
            })
        }
    }

    /// Points the pooler at another server (a promoted standby, a primary), as an operator
    /// re-points a pooler after a failover: rewrites its configuration and reloads it (SIGHUP).
    /// Clients stay connected; PgBouncer closes each server connection to the old server once
    /// it is released and opens the next ones to the new server.
    ///
    /// # Errors
    ///
    /// [`HarnessError::Io`] if the configuration cannot be written, [`HarnessError::Command`]
    /// if the reload signal cannot be sent.
    pub fn repoint(&self, server_host: &str, server_port: u16) -> Result<(), HarnessError> {
        let ini_path = self.dir.join("pgbouncer.ini");
        std::fs::write(
            &ini_path,
            ini(
                &self.dir,
                self.port,
                server_host,
                server_port,
                &self.settings,
            ),
        )
        .map_err(HarnessError::io("rewrite pgbouncer.ini"))?;
        let pid = std::fs::read_to_string(self.dir.join("pgbouncer.pid"))
            .map_err(HarnessError::io("read pgbouncer.pid"))?;
        run(
            Command::new("kill").args(["-HUP", pid.trim()]),
            "reload pgbouncer",
        )
        .map_err(HarnessError::from)
    }

    /// Stops the pooler and removes its files.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pgbouncer.pid")) {
            let _ = Command::new("kill")
                .arg(pid.trim())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Pooler {
    fn drop(&mut self) {
        self.stop();
    }
}
