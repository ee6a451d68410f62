//! The Prometheus exporter (feature `prometheus`): the runtime's [metrics](crate::metrics) on
//! `/metrics`, at an address the application chooses.
//!
//! [`install`] makes `metrics-exporter-prometheus` this process's metrics recorder and serves
//! its text exposition over HTTP. Every metric carries its `# HELP` line, and
//! `leader_tick_duration_seconds` is a histogram with buckets from 5 ms to one hour, so both an
//! outbox's millisecond ticks and an hourly job's long ones land in a bucket of their own;
//! `leader_schedule_start_delay_seconds` is a histogram with buckets from 10 ms to ten minutes. The
//! names are exported as the table in [`crate::metrics`] gives them (units already in the names,
//! `_total` on the counter).

use std::net::SocketAddr;

use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder};

/// Upper bounds (seconds) of the `leader_tick_duration_seconds` buckets.
const TICK_DURATION_BUCKETS: [f64; 18] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
    1_800.0, 3_600.0,
];

/// Upper bounds (seconds) of the `leader_schedule_start_delay_seconds` buckets: a tick normally
/// starts well under a second after its instant, and minutes late after a takeover or an outage.
const START_DELAY_BUCKETS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 120.0, 600.0,
];

/// Why [`install`] could not serve the metrics.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExporterError {
    /// The address could not be listened on (taken, or not this host's).
    #[error("cannot serve /metrics on {addr}: {reason}; choose a free address on this host")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// What the operating system said.
        reason: String,
    },
    /// Another recorder (or an earlier `install`) already receives this process's metrics.
    #[error(
        "cannot install the Prometheus exporter: this process already has a metrics recorder; \
         install the exporter once, before anything else installs a recorder"
    )]
    RecorderAlreadyInstalled,
    /// `install` was called outside a tokio runtime.
    #[error(
        "cannot start the Prometheus exporter outside a tokio runtime; call install from inside \
         the runtime that runs the leader runtime (e.g. in an async main)"
    )]
    NoTokioRuntime,
    /// The exporter refused its configuration (not expected: the configuration is fixed).
    #[error("cannot start the Prometheus exporter: {0}")]
    Other(String),
}

/// Serves this process's metrics in the Prometheus text format on `http://{addr}/metrics`,
/// from a task on the current tokio runtime, until the process ends.
///
/// Call it once, from inside the tokio runtime, before [`Runtime::run`](crate::Runtime::run):
/// the runtime's metrics are recorded by whichever recorder is installed when they are first
/// set. It describes every metric (`# HELP`) itself. Nothing is served unless the recorder could
/// be installed, so an error leaves the process as it was.
///
/// # Errors
///
/// [`ExporterError::Listen`] when `addr` cannot be listened on (it names the address and the
/// operating system's reason), [`ExporterError::RecorderAlreadyInstalled`] when the process
/// already has a metrics recorder, [`ExporterError::NoTokioRuntime`] outside a tokio runtime.
///
/// # Examples
///
/// ```
/// use leader_runtime::prometheus::{self, ExporterError};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // Port 0 picks a free port; a service gives its scrape port, e.g. "0.0.0.0:9464".
/// let addr = "127.0.0.1:0".parse().unwrap();
/// prometheus::install(addr).expect("serves /metrics");
/// assert!(matches!(
///     prometheus::install(addr),
///     Err(ExporterError::RecorderAlreadyInstalled)
/// ));
/// # }
/// ```
pub fn install(addr: SocketAddr) -> Result<(), ExporterError> {
    let handle =
        tokio::runtime::Handle::try_current().map_err(|_| ExporterError::NoTokioRuntime)?;
    let _entered = handle.enter();
    let (recorder, exporter) = PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(
            Matcher::Full(crate::metrics::TICK_DURATION_SECONDS.to_owned()),
            &TICK_DURATION_BUCKETS,
        )
        .and_then(|builder| {
            builder.set_buckets_for_metric(
                Matcher::Full(crate::metrics::SCHEDULE_START_DELAY_SECONDS.to_owned()),
                &START_DELAY_BUCKETS,
            )
        })
        .and_then(PrometheusBuilder::build)
        .map_err(|error| match error {
            BuildError::FailedToCreateHTTPListener(reason) => {
                ExporterError::Listen { addr, reason }
            }
            other => ExporterError::Other(other.to_string()),
        })?;
    metrics::set_global_recorder(recorder).map_err(|_| ExporterError::RecorderAlreadyInstalled)?;
    crate::metrics::describe();
    handle.spawn(async move {
        if let Err(error) = exporter.await {
            tracing::error!(%addr, ?error, "the Prometheus exporter stopped serving /metrics");
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{ExporterError, install};

    #[tokio::test]
    async fn a_taken_address_is_refused_with_one_line_naming_it() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let error = install(addr).unwrap_err();
        assert!(matches!(error, ExporterError::Listen { .. }), "{error:?}");
        let line = error.to_string();
        assert!(line.contains(&addr.to_string()), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn outside_a_tokio_runtime_it_says_so() {
        let addr = "127.0.0.1:0".parse().unwrap();
        assert!(matches!(install(addr), Err(ExporterError::NoTokioRuntime)));
    }
}
