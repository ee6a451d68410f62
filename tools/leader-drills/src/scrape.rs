//! Reads a replica's `/metrics` (the runtime's Prometheus exporter, `drill-replica
//! --metrics-addr`), so a drill can check what a replica exports as well as what it logs.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use prometheus_parse::{Scrape, Value};

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
    let body = tokio::task::spawn_blocking(move || leader_testkit::get_metrics(addr)).await??;
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
