//! `with-postgres [--require-pooler] -- COMMAND...`: runs COMMAND with `DATABASE_URL` pointing
//! at a throwaway PostgreSQL cluster (unless already set) and `LEADER_POOLER_URL` at a
//! transaction-mode PgBouncer in front of it (when PgBouncer is installed), then removes both.
//! Exits with COMMAND's exit code.

use std::process::{Command, ExitCode};
use std::str::FromStr;

use leader_testkit::{Cluster, Pooler, PoolerSettings, pgbouncer_binary};
use sqlx::postgres::PgConnectOptions;

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let require_pooler = args.first().is_some_and(|a| a == "--require-pooler");
    if require_pooler {
        args.remove(0);
    }
    if args.first().is_some_and(|a| a == "--") {
        args.remove(0);
    }
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: with-postgres [--require-pooler] -- COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let mut cluster = None;
    let server_url = match std::env::var("DATABASE_URL") {
        Ok(url) => url,
        Err(_) => match Cluster::start() {
            Ok(started) => {
                let url = started.url();
                eprintln!("with-postgres: throwaway cluster at {url}");
                cluster = Some(started);
                url
            }
            Err(err) => {
                eprintln!("with-postgres: {err}");
                return ExitCode::from(2);
            }
        },
    };
    let mut pooler = None;
    if pgbouncer_binary().is_some() {
        let options = match PgConnectOptions::from_str(&server_url) {
            Ok(options) => options,
            Err(err) => {
                eprintln!("with-postgres: DATABASE_URL is not a PostgreSQL URL: {err}");
                return ExitCode::from(2);
            }
        };
        match Pooler::start_with(
            options.get_host(),
            options.get_port(),
            PoolerSettings::for_test_runs(),
        ) {
            Ok(started) => {
                eprintln!(
                    "with-postgres: pgbouncer (transaction mode) at {}",
                    started.url()
                );
                pooler = Some(started);
            }
            Err(err) => {
                eprintln!("with-postgres: {err}");
                return ExitCode::from(2);
            }
        }
    } else if require_pooler {
        eprintln!(
            "with-postgres: {}",
            leader_testkit::HarnessError::NoPgBouncer
        );
        return ExitCode::from(2);
    }
    let mut command = Command::new(program);
    command.args(rest).env("DATABASE_URL", &server_url);
    if let Some(pooler) = &pooler {
        command.env("LEADER_POOLER_URL", pooler.url());
    }
    let status = command.status();
    drop(pooler);
    drop(cluster);
    match status {
        Ok(status) => ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(err) => {
            eprintln!("with-postgres: could not run {program}: {err}");
            ExitCode::from(2)
        }
    }
}
