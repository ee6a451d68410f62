//! Fault drills for `leader-runtime` on real processes: the reference application's replicas
//! (`drill-replica`) behind a link the harness can sever and a PgBouncer it can restart, on a
//! PostgreSQL it can restart, with every grant, claim, completion and effect recorded in the
//! database and checked afterwards by the reference application's own checks
//! (`billing_demo::checks`) plus the ledger's.
//!
//! * [`ledger`]: the long-tick role every fault lands in the middle of.
//! * [`advisory`]: the same role led by a session advisory lock, for comparison.
//! * [`netns`]: the severed link with the kernel's tools (a namespace and a veth pair per replica).
//! * [`proxy`]: the severable link in user space (the fallback, and re-pointing for a failover).
//! * [`fault`]: the faults and how each is injected and healed.
//! * [`scrape`]: a replica's exported metrics (`/metrics`), for the checks that read them.
//! * [`run`]: one drill run, from a fresh database to its checks and outage.
//!
//! `scripts/drill` is the command; see `docs/benchmarks/failure-correctness.md`.

pub mod advisory;
pub mod fault;
pub mod ledger;
pub mod netns;
pub mod proxy;
pub mod run;
pub mod scrape;
