//! What the benchmark binaries (`protocol-bench`, `runtime-bench`, `fence-bench`,
//! `fence-instructions`) share: the report file and its markers, the facts about the machine, the
//! statistics over samples, and the fence benchmarks' database.
//!
//! * [`fence_schema`]: the outbox, the lease and the fence's parts the fence benchmarks measure.
//! * [`report`]: a bench's `main` (`--write PATH` and the exit code), the generated-report
//!   markers, a run's start and span, the report's header and Machine section, progress lines.
//! * [`machine`]: CPU, memory, load and PostgreSQL settings, as the Machine section shows them.
//! * [`stats`]: medians, extremes and nearest-rank percentiles.

#![warn(missing_docs)]

pub mod fence_schema;
pub mod machine;
pub mod report;
pub mod server_log;
pub mod stats;

/// A benchmark step's result, with any error that may cross threads.
pub type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;
