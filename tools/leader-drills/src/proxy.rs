//! A link the harness controls between a replica and the database: a TCP proxy on loopback that,
//! when severed, stops forwarding in both directions **without closing** either socket, so the
//! replica's connections hang as they do when a network drops packets (no reset, no FIN). New
//! connections are accepted but not connected onwards until the link heals. Its upstream can be
//! switched (a failover), which closes the open connections.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A severable link; dropping it stops accepting (open connections are left to their tasks).
#[derive(Debug)]
pub struct Link {
    port: u16,
    severed: watch::Sender<bool>,
    upstream: Arc<Mutex<SocketAddr>>,
    connections: Connections,
    accept: tokio::task::JoinHandle<()>,
}

type Connections = Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>;

impl Link {
    /// Listens on a free loopback port and forwards each connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Link> {
        Link::start_on("127.0.0.1", upstream).await
    }

    /// As [`Link::start`], listening on `address` (a veth pair's host end, so a replica in a
    /// network namespace reaches a server that listens on loopback only).
    pub async fn start_on(address: &str, upstream: SocketAddr) -> std::io::Result<Link> {
        let listener = TcpListener::bind((address, 0)).await?;
        let port = listener.local_addr()?.port();
        let (severed, _) = watch::channel(false);
        let upstream = Arc::new(Mutex::new(upstream));
        let connections = Connections::default();
        let accept = tokio::spawn(accept_loop(
            listener,
            severed.clone(),
            upstream.clone(),
            connections.clone(),
        ));
        Ok(Link {
            port,
            severed,
            upstream,
            connections,
            accept,
        })
    }

    /// The loopback port replicas connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops forwarding: bytes in flight are held, nothing is closed.
    pub fn sever(&self) {
        self.severed.send_replace(true);
    }

    /// Forwards again, held bytes first.
    pub fn heal(&self) {
        self.severed.send_replace(false);
    }

    /// Sends new connections to `upstream`, and closes the open ones (as a failover does), so the
    /// replica reconnects there.
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self
            .upstream
            .lock()
            .expect("the upstream lock is never poisoned") = upstream;
        for connection in self
            .connections
            .lock()
            .expect("the connections lock is never poisoned")
            .drain(..)
        {
            connection.abort();
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn open(severed: &mut watch::Receiver<bool>) -> bool {
    severed.wait_for(|severed| !severed).await.is_ok()
}

async fn accept_loop(
    listener: TcpListener,
    severed: watch::Sender<bool>,
    upstream: Arc<Mutex<SocketAddr>>,
    connections: Connections,
) {
    while let Ok((client, _)) = listener.accept().await {
        let mut gate = severed.subscribe();
        let upstream = *upstream
            .lock()
            .expect("the upstream lock is never poisoned");
        let connection = tokio::spawn(async move {
            if !open(&mut gate).await {
                return;
            }
            let Ok(server) = TcpStream::connect(upstream).await else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            tokio::join!(
                pump(client_read, server_write, gate.clone()),
                pump(server_read, client_write, gate)
            );
        });
        let mut open = connections
            .lock()
            .expect("the connections lock is never poisoned");
        open.retain(|c| !c.is_finished());
        open.push(connection);
    }
}

/// Copies `from` to `to`, holding everything while the link is severed. Ends when either side
/// closes; closing is forwarded only while the link is up.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut gate: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if !open(&mut gate).await {
            return;
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => 0,
            Ok(n) => n,
        };
        if !open(&mut gate).await {
            return;
        }
        if n == 0 || to.write_all(&buf[..n]).await.is_err() {
            let _ = to.shutdown().await;
            return;
        }
    }
}
