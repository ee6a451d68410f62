//! `fence-histories [--histories N] [--claims K] [--seed S] [--write PATH]`: the differential over
//! generated migration histories (`fence_differential::history_run`), for the figures in
//! `docs/benchmarks/fence-differential-histories.md`.
//!
//! It runs on the server in `DATABASE_URL`, or starts its own throwaway PostgreSQL when that is
//! unset, prints the page, and with `--write` puts it in the file between the generated-report
//! markers. It exits with 1 when the checker accepted a statement that acted as the superseded
//! leader. `FENCE_HISTORIES_DEBUG=1` prints why PostgreSQL refused each history it skipped and
//! each statement it refused.

#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::time::Instant;

use fence_differential::Res;
use fence_differential::history_run::{self, Settings};
use fence_differential::outcome::Class;
use fence_differential::page::{self, RunFacts};

const NAME: &str = "fence-histories";
const USAGE: &str = "usage: fence-histories [--histories N] [--claims K] [--seed S] [--write PATH]";

fn parse(mut args: impl Iterator<Item = String>) -> Result<(Settings, Option<String>), String> {
    let mut settings = Settings {
        histories: 500,
        claims: 45,
        seed: 1,
    };
    let mut write = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        let number = |text: String, name: &str| -> Result<u64, String> {
            text.parse().map_err(|e| format!("{name}: {e}"))
        };
        match arg.as_str() {
            "--histories" => {
                settings.histories = number(value("--histories")?, "--histories")? as usize
            }
            "--claims" => settings.claims = number(value("--claims")?, "--claims")? as usize,
            "--seed" => settings.seed = number(value("--seed")?, "--seed")?,
            "--write" => write = Some(value("--write")?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok((settings, write))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (settings, write) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(error) => {
            if !error.is_empty() {
                eprintln!("{NAME}: {error}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&settings, write.as_deref()).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(settings: &Settings, write: Option<&str>) -> Res<bool> {
    let date = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string();
    let load_before = page::load_average();
    let started = Instant::now();
    let step = (settings.histories / 10).max(1);
    let outcome = history_run::run(settings, |done| {
        if done % step == 0 {
            eprintln!("{NAME}: {done} of {} histories", settings.histories);
        }
    })
    .await?;
    let db = leader_testkit::TestDb::unmigrated().await;
    let server_version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(db.admin())
        .await?;
    let facts = RunFacts {
        command: format!(
            "cargo run --release -p fence-differential --bin {NAME} -- --histories {} --claims {} \
             --seed {} --write docs/benchmarks/fence-differential-histories.md",
            settings.histories, settings.claims, settings.seed
        ),
        date,
        elapsed: started.elapsed(),
        load_before,
        load_after: page::load_average(),
        server_version,
    };
    let page = page::page(
        "The fence checker against PostgreSQL, on generated migration histories",
        NAME,
        &facts,
        &history_run::markdown(&outcome, settings),
    );
    println!("{page}");
    if let Some(path) = write {
        generated_block::write(path, &generated_block::Markers::report(NAME), &page)?;
        eprintln!("{NAME}: wrote {path}");
    }
    let holes = outcome
        .classes
        .get(&Class::AcceptedUnsafe)
        .copied()
        .unwrap_or(0);
    if holes > 0 {
        eprintln!(
            "{NAME}: the checker accepted {holes} statements that acted as the superseded leader"
        );
    }
    Ok(holes == 0)
}
