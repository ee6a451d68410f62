//! Reading a process's Prometheus exposition: one plain `GET /metrics`, for tests and drills that
//! check what a runtime exports (its exporter is `leader_runtime::prometheus`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

/// One `GET /metrics` over HTTP/1.0 to `addr`: the body of a 200 answer, or why there is none
/// (nothing listening yet, another status). Blocks until the server closes the connection.
pub fn get_metrics(addr: SocketAddr) -> Result<String, String> {
    let mut stream =
        TcpStream::connect(addr).map_err(|e| format!("cannot reach {addr}/metrics: {e}"))?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|e| e.to_string())?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no end of headers from {addr}/metrics in {response:?}"))?;
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        return Err(format!(
            "{addr}/metrics answered {}",
            head.lines().next().unwrap_or("")
        ));
    }
    Ok(body.to_owned())
}
