//! What the benchmark binaries (`protocol-bench`, `runtime-bench`) share: the report file and its
//! markers, the facts about the machine, and the statistics over samples.
//!
//! * [`report`]: `--write PATH`, the generated-report markers, the report's header and Machine
//!   section, progress lines and exit codes.
//! * [`machine`]: CPU, memory, load and PostgreSQL settings, as the Machine section shows them.
//! * [`stats`]: medians, extremes and nearest-rank percentiles.

#![warn(missing_docs)]

pub mod machine;
pub mod report;
pub mod stats;

/// A benchmark step's result, with any error that may cross threads.
pub type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;
