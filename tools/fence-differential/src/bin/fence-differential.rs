//! `fence-differential [--cases N] [--seed S] [--shrinks K] [--no-live] [--reads-are-claims]
//! [--sharded] [--index-scans] [--chosen-plan-only] [--write PATH] [--false-rejections PATH]`: the long run of the
//! generated differential test, for the figures
//! in `docs/benchmarks/fence-differential.md` (and, with `--sharded`,
//! `docs/benchmarks/fence-differential-shards.md`). `--reads-are-claims` also counts rows
//! returned by a statement that only reads as acting, which the checker's contract allows.
//! `--sharded` runs the statements as shard claims on a role of two shards (see
//! `Settings::sharded`). `--index-scans` runs them with `enable_seqscan = off`, so that the
//! plans read the tables through their indexes, as on large tables (`Settings::index_scans`).
//! A statement that did nothing as the superseded leader is run again under each forced plan
//! (`probe::Plan`); `--chosen-plan-only` measures the plan PostgreSQL chose alone.
//! `--false-rejections` writes, for each reason the checker refused a
//! statement safe on PostgreSQL for, the first false rejections that acted as the live leader:
//! the claims to look at when making the checker accept more.
//!
//! It runs on the server in `DATABASE_URL`, or starts its own throwaway PostgreSQL when that is
//! unset, prints the page, and with `--write` puts it in the file between the generated-report
//! markers (whatever it found: the page is where the holes are listed). It exits with 1 when the
//! checker accepted a statement that acted as the superseded leader.

#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::time::Instant;

use fence_differential::outcome::Class;
use fence_differential::page::{self, RunFacts};
use fence_differential::runner::{self, Settings};
use fence_differential::schema::Fixture;
use fence_differential::{Res, report};

const NAME: &str = "fence-differential";
const USAGE: &str = "usage: fence-differential [--cases N] [--seed S] [--shrinks K] [--no-live] \
                     [--reads-are-claims] [--sharded] [--index-scans] [--chosen-plan-only] \
                     [--write PATH] [--false-rejections PATH]";

/// What the command line asks for.
struct Args {
    settings: Settings,
    write: Option<String>,
    false_rejections: Option<String>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut settings = Settings::new(100_000, 1);
    let mut write = None;
    let mut false_rejections = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--cases" => settings.cases = number(&value("--cases")?, "--cases")?,
            "--seed" => settings.seed = number(&value("--seed")?, "--seed")?,
            "--shrinks" => settings.max_shrinks = number(&value("--shrinks")?, "--shrinks")?,
            "--no-live" => settings.live = false,
            "--reads-are-claims" => settings.reads_are_claims = true,
            "--sharded" => settings.sharded = true,
            "--index-scans" => settings.index_scans = true,
            "--chosen-plan-only" => settings.forced_plans = false,
            "--write" => write = Some(value("--write")?),
            "--false-rejections" => false_rejections = Some(value("--false-rejections")?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Args {
        settings,
        write,
        false_rejections,
    })
}

fn number<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|e| format!("{name}: {e}"))
}

/// The command that reproduces a run of `settings` and writes the page.
fn command(settings: &Settings) -> String {
    let defaults = Settings::new(settings.cases, settings.seed);
    let mut command = format!(
        "cargo run --release -p fence-differential -- --cases {} --seed {}",
        settings.cases, settings.seed
    );
    if settings.max_shrinks != defaults.max_shrinks {
        command += &format!(" --shrinks {}", settings.max_shrinks);
    }
    if !settings.live {
        command += " --no-live";
    }
    if settings.reads_are_claims {
        command += " --reads-are-claims";
    }
    if settings.index_scans {
        command += " --index-scans";
    }
    if !settings.forced_plans {
        command += " --chosen-plan-only";
    }
    if settings.sharded {
        command += " --sharded";
    }
    let page = match (settings.sharded, settings.index_scans) {
        (false, false) => "fence-differential.md",
        (true, false) => "fence-differential-shards.md",
        (false, true) => "fence-differential-index-scans.md",
        (true, true) => "fence-differential-shards-index-scans.md",
    };
    command + " --write docs/benchmarks/" + page
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(error) => {
            if !error.is_empty() {
                eprintln!("{NAME}: {error}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs and reports; returns whether no accepted statement acted.
async fn run(args: Args) -> Res<bool> {
    let settings = &args.settings;
    let fixture = if settings.sharded {
        Fixture::sharded().await?
    } else {
        Fixture::new().await?
    };
    let server_version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(fixture.db.admin())
        .await?;
    eprintln!(
        "{NAME}: {} statements from seed {}",
        settings.cases, settings.seed
    );
    let date = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string();
    let load_before = page::load_average();
    let started = Instant::now();
    let step = (settings.cases / 10).max(1);
    let outcome = runner::run(&fixture, settings, |done| {
        if done % step == 0 {
            eprintln!("{NAME}: {done} of {}", settings.cases);
        }
    })
    .await?;
    let facts = RunFacts {
        command: command(settings),
        date,
        elapsed: started.elapsed(),
        load_before,
        load_after: page::load_average(),
        server_version,
    };
    if let Some(path) = &args.false_rejections {
        std::fs::write(path, report::false_rejection_samples(&outcome))
            .map_err(|e| format!("cannot write {path}: {e}"))?;
        eprintln!("{NAME}: wrote the false rejections' samples to {path}");
    }
    let page = page::page(
        "The fence checker against PostgreSQL, on generated claims",
        NAME,
        &facts,
        &report::markdown(&outcome),
    );
    println!("{page}");
    if let Some(path) = &args.write {
        generated_block::write(path, &generated_block::Markers::report(NAME), &page)?;
        eprintln!("{NAME}: wrote {path}");
    }
    let holes = outcome.total.of(Class::AcceptedUnsafe);
    if holes > 0 {
        eprintln!(
            "{NAME}: the checker accepted {holes} statements that acted as the superseded leader"
        );
    }
    Ok(holes == 0)
}
