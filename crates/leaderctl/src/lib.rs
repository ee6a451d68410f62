//! `leaderctl`'s library: the presentation of `leader_status` that `leaderctl status` prints, for
//! tools that want the same table ([`table`]), and the preparation of an application's schema
//! that `leaderctl schema prepare` writes down ([`prepare`], reading the catalog with
//! [`catalog`]), for tools that prepare one without the command line. The command line itself is
//! the `leaderctl` binary (install it with `cargo install leaderctl`); its other commands are not
//! part of this library.
//!
//! ```no_run
//! # async fn show(pool: &sqlx::PgPool) -> Result<(), leader_core::StatementError> {
//! let rows = leader_core::status::read(pool, &leader_core::Timings::DEFAULT).await?;
//! print!("{}", leaderctl::table::Table::new(&rows));
//! # Ok(()) }
//! ```

pub mod catalog;
pub mod prepare;
pub mod table;
