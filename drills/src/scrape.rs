//! Reads a replica's `/metrics` (the runtime's Prometheus exporter, `drill-replica
//! --metrics-addr`), so a drill can check what a replica exports as well as what it logs.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use prometheus_parse::{Scrape, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::run::DrillError;

/// A free port on loopback for a replica's exporter (the listener is closed again, so another
/// process could take it first: the replica then fails to start, which the drill reports).
pub fn free_local_addr() -> Result<SocketAddr, DrillError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?)
}

/// Every sample of the gauge `metric`, by its `role` label, from one `GET /metrics`.
pub async fn gauge_by_role(
    addr: SocketAddr,
    metric: &str,
) -> Result<BTreeMap<String, f64>, DrillError> {
    let body = get_metrics(addr).await?;
    let scrape = Scrape::parse(body.lines().map(|line| Ok(line.to_owned())))
        .map_err(|e| format!("the exposition from {addr} does not parse: {e}"))?;
    Ok(scrape
        .samples
        .into_iter()
        .filter(|sample| sample.metric == metric)
        .filter_map(|sample| {
            let role = sample.labels.get("role")?.to_owned();
            match sample.value {
                Value::Gauge(v) | Value::Untyped(v) => Some((role, v)),
                _ => None,
            }
        })
        .collect())
}

async fn get_metrics(addr: SocketAddr) -> Result<String, DrillError> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot reach the replica's /metrics on {addr}: {e}"))?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no HTTP response from {addr}/metrics"))?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return Err(format!(
            "{addr}/metrics answered {}",
            head.lines().next().unwrap_or("")
        )
        .into());
    }
    Ok(body.to_owned())
}
