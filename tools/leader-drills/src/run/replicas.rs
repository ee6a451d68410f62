//! The replicas of a run: `drill-replica` processes, each behind its own [`Link`] (and in its
//! own network namespace when the run severs with the kernel's tools), started, signalled and
//! stopped.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use super::servers::local;
use super::{DrillError, RunConfig, Servers};
use crate::fault::Fault;
use crate::netns::Namespaces;
use crate::proxy::Link;

pub(super) struct Replica {
    pub(super) name: String,
    pub(super) child: Child,
    pub(super) link: Link,
    /// With anchors ([`RunConfig::anchors`]): the link of the replica's direct connections (its
    /// anchor and watcher), to the server itself, never through the pooler.
    pub(super) anchor_link: Option<Link>,
    /// The namespace the replica runs in, if any (its link is then the veth pair).
    pub(super) netns: Option<usize>,
    pub(super) log: PathBuf,
}

impl Replica {
    pub(super) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Stops forwarding on the replica's links (connections hang, nothing is closed).
    pub(super) fn sever(&self) {
        self.link.sever();
        if let Some(anchor_link) = &self.anchor_link {
            anchor_link.sever();
        }
    }

    /// Forwards on the replica's links again.
    pub(super) fn heal(&self) {
        self.link.heal();
        if let Some(anchor_link) = &self.anchor_link {
            anchor_link.heal();
        }
    }
}

/// Sends `sig` (`KILL`, `TERM`, `STOP`, `CONT`) to process `pid`.
pub(super) async fn signal(pid: u32, sig: &str) -> Result<(), DrillError> {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .await?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -{sig} {pid} failed").into())
    }
}

/// The `drill-replica` binary beside the running `drill`.
pub fn replica_binary() -> Result<PathBuf, DrillError> {
    let path = std::env::current_exe()?.with_file_name("drill-replica");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} is missing: build it with `cargo build -p leader-drills --bins` (scripts/drill does)",
            path.display()
        )
        .into())
    }
}

impl Servers {
    /// Starts `config.replicas` replicas of the run's database `db`, each in its own namespace
    /// when `in_netns`.
    pub(super) async fn spawn_replicas(
        &self,
        db: &str,
        in_netns: bool,
        config: &RunConfig,
    ) -> Result<Vec<Replica>, DrillError> {
        let mut replicas = Vec::new();
        for i in 1..=config.replicas {
            replicas.push(
                self.spawn_replica(
                    db,
                    format!("replica-{i}"),
                    None,
                    in_netns.then_some(i),
                    None,
                    config,
                )
                .await?,
            );
        }
        Ok(replicas)
    }

    /// Starts the replica `name` on the run's database `db`, through a link to `upstream` (by
    /// default the pooler or the server, as the run goes), in namespace `netns` if given, with
    /// its metrics exported on `metrics` if given.
    pub(super) async fn spawn_replica(
        &self,
        db: &str,
        name: String,
        upstream: Option<u16>,
        netns: Option<usize>,
        metrics: Option<SocketAddr>,
        config: &RunConfig,
    ) -> Result<Replica, DrillError> {
        let upstream_port = upstream.unwrap_or(if config.via_pooler {
            self.pooler.port()
        } else {
            self.cluster.port()
        });
        // In a namespace, the replica reaches the servers (on loopback) through a forwarder on its
        // veth pair's host end; the kernel severs the pair, the forwarder never does.
        let link = match (netns, &self.netns) {
            (Some(i), Some(_)) => {
                Link::start_on(&Namespaces::host_addr(i), local(upstream_port)).await?
            }
            _ => Link::start(local(upstream_port)).await?,
        };
        let anchor_link = if config.anchors {
            Some(match (netns, &self.netns) {
                (Some(i), Some(_)) => {
                    Link::start_on(&Namespaces::host_addr(i), local(self.cluster.port())).await?
                }
                _ => Link::start(local(self.cluster.port())).await?,
            })
        } else {
            None
        };
        let log = self.log_dir.join(format!("{db}-{name}.log"));
        let file = std::fs::File::create(&log)?;
        let (mut command, host) = match (netns, &self.netns) {
            (Some(i), Some(namespaces)) => {
                let mut command = Command::new("ip");
                command
                    .args(namespaces.exec_prefix(i))
                    .arg(&self.replica_binary);
                (command, Namespaces::host_addr(i).to_string())
            }
            _ => (Command::new(&self.replica_binary), "127.0.0.1".to_owned()),
        };
        let url = format!("postgres://postgres@{host}:{}/{db}", link.port());
        let anchor_url = anchor_link.as_ref().map(|anchor| {
            format!(
                "--anchor-url=postgres://postgres@{host}:{}/{db}",
                anchor.port()
            )
        });
        let child = command
            .args(["--url", &url])
            .args(anchor_url)
            .args(["--holder", &name])
            .args(["--ttl-ms", &config.ttl.as_millis().to_string()])
            .args(config.advisory_lock.then_some("--advisory-lock"))
            .args(metrics.map(|addr| format!("--metrics-addr={addr}")))
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .kill_on_drop(true)
            .spawn()?;
        Ok(Replica {
            name,
            child,
            link,
            anchor_link,
            netns: netns.filter(|_| self.netns.is_some()),
            log,
        })
    }

    /// Whatever happened, every replica gets SIGCONT and SIGTERM, and a clean exit is expected
    /// of each one that was not killed; what else happened goes to `notes`.
    pub(super) async fn stop_replicas(
        &self,
        replicas: &mut [Replica],
        config: &RunConfig,
        notes: &mut Vec<String>,
    ) {
        for replica in replicas.iter_mut() {
            replica.heal();
            if let (Some(i), Some(namespaces)) = (replica.netns, &self.netns) {
                let _ = namespaces.heal(i);
            }
            if let Some(pid) = replica.pid() {
                let _ = signal(pid, "CONT").await;
                let _ = signal(pid, "TERM").await;
            }
        }
        for replica in replicas.iter_mut() {
            match tokio::time::timeout(Duration::from_secs(30), replica.child.wait()).await {
                Ok(Ok(status)) if status.success() => {}
                Ok(Ok(status)) => {
                    if !(status.code().is_none() && config.fault == Fault::Kill) {
                        notes.push(format!(
                            "{} exited with {status} (log: {})",
                            replica.name,
                            replica.log.display()
                        ));
                    }
                }
                _ => {
                    let _ = replica.child.kill().await;
                    notes.push(format!(
                        "{} did not exit within 30 s of SIGTERM (log: {})",
                        replica.name,
                        replica.log.display()
                    ));
                }
            }
        }
    }
}
