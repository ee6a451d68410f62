//! The differential over migration histories: for each generated history ([`crate::history`]),
//! a fresh database, the history applied and its schema prepared as `leaderctl schema prepare`
//! prepares an application's ([`leaderctl::prepare`], the file written and read back), rows seeded
//! in every table, the role granted to a holder that is then superseded and to the live one;
//! then claims over that schema ([`crate::history_claims`]) checked with the prepared schema and
//! run, in rolled-back transactions, as the superseded leader (and, where that did nothing, as
//! the live one), under the plan PostgreSQL chooses.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use leader_fence_check::{Hints, Schema};
use leader_schema::PreparedSchema;
use leader_schema::model::RelationKind;
use leader_testkit::TestDb;
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::Res;
use crate::history::{History, history};
use crate::history_claims::offer;
use crate::outcome::Class;
use crate::probe::{FenceBinds, Probe, Ran};
use crate::schema::{ROLE, superseded_and_live};

/// What a run does.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How many histories PostgreSQL accepts to run claims on.
    pub histories: usize,
    /// Claims per history.
    pub claims: usize,
    pub seed: u64,
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub histories: usize,
    /// Histories PostgreSQL refused (a generated statement that is not valid there).
    pub refused_histories: usize,
    pub files: usize,
    /// Operations the accepted histories did, by kind.
    pub ops: BTreeMap<&'static str, usize>,
    /// Statements by class.
    pub classes: BTreeMap<Class, usize>,
    /// Statements by shape and class.
    pub shapes: BTreeMap<&'static str, BTreeMap<Class, usize>>,
    /// The first accepted statements that acted as the superseded leader, with their history.
    pub holes: Vec<(String, History)>,
    /// Safe statements that acted as the live leader, and how many of them were refused.
    pub live_safe: usize,
    pub live_refused: usize,
}

/// Runs the histories; `progress` is called after each with the number done.
///
/// # Errors
///
/// If the database fails (a statement PostgreSQL refuses is a `pg_error`, not an error).
pub async fn run(settings: &Settings, mut progress: impl FnMut(usize)) -> Res<Outcome> {
    let mut rng = StdRng::seed_from_u64(settings.seed);
    let mut outcome = Outcome::default();
    while outcome.histories < settings.histories {
        let history = history(&mut rng);
        if one_history(&mut rng, settings, &history, &mut outcome).await? {
            outcome.histories += 1;
            outcome.files += history.files.len();
            for op in &history.ops {
                *outcome.ops.entry(op).or_default() += 1;
            }
            progress(outcome.histories);
        } else {
            outcome.refused_histories += 1;
        }
    }
    Ok(outcome)
}

/// Applies and checks one history; false when PostgreSQL refuses it.
async fn one_history(
    rng: &mut StdRng,
    settings: &Settings,
    history: &History,
    outcome: &mut Outcome,
) -> Res<bool> {
    let dir = tempfile::Builder::new()
        .prefix("fence-history-")
        .tempdir()?;
    std::fs::create_dir(dir.path().join("migrations"))?;
    for (name, sql) in &history.files {
        std::fs::write(dir.path().join("migrations").join(name), sql)?;
    }
    let db = TestDb::unmigrated().await;
    let options = (*db.admin().connect_options()).clone();
    let prepared = match leaderctl::prepare::prepare(&options, dir.path(), "migrations").await {
        Ok((prepared, _)) => prepared,
        Err(leaderctl::prepare::PrepareError::Refused(why)) => {
            if std::env::var_os("FENCE_HISTORIES_DEBUG").is_some() {
                eprintln!("refused: {why}");
            }
            return Ok(false);
        }
        Err(other) => return Err(other.to_string().into()),
    };
    // What the macros read is the file: write it and read it back.
    let prepared = PreparedSchema::from_file_text(&prepared.to_file_text())?;
    let offer = offer(&prepared);
    if offer.is_empty() {
        return Ok(false);
    }
    let (stale, live) = superseded_and_live(&db).await?;
    let tables = seed(&db, &prepared).await?;
    let schema = Schema::new(prepared.clone(), "the history's prepared schema");
    let mut probe = Probe::connect_to(&db, false, tables).await?;
    for claim in offer.claims(rng, settings.claims) {
        let hints = Hints::default().with_schema(&schema);
        let checked = leader_fence_check::check_with(&claim.sql, &hints);
        let accepted = checked.errors.is_empty() && checked.statements == 1;
        let fence = |token| {
            Some(FenceBinds {
                role: ROLE.as_str(),
                token,
                shard: None,
            })
        };
        let class = match probe.run(&claim.sql, fence(stale)).await? {
            Ran::Error { message, .. } => {
                if std::env::var_os("FENCE_HISTORIES_DEBUG").is_some() {
                    eprintln!("pg_error: {message}: {}", claim.sql);
                }
                Class::PgError
            }
            Ran::Effect(effect) if effect.any() && accepted => Class::AcceptedUnsafe,
            Ran::Effect(effect) if effect.any() => Class::RefusedUnsafe,
            Ran::Effect(_) if accepted => Class::AcceptedSafe,
            Ran::Effect(_) => Class::RefusedSafe,
        };
        if matches!(class, Class::AcceptedSafe | Class::RefusedSafe)
            && matches!(probe.run(&claim.sql, fence(live)).await?, Ran::Effect(e) if e.any())
        {
            outcome.live_safe += 1;
            outcome.live_refused += usize::from(class == Class::RefusedSafe);
        }
        if class == Class::AcceptedUnsafe && outcome.holes.len() < 10 {
            outcome.holes.push((claim.sql.clone(), history.clone()));
        }
        *outcome.classes.entry(class).or_default() += 1;
        *outcome
            .shapes
            .entry(claim.shape)
            .or_default()
            .entry(class)
            .or_default() += 1;
    }
    Ok(true)
}

/// Seeds three rows in every table of the history (a partitioned table's through its
/// partitions), and returns the tables to measure: each as `ONLY schema.name`, with its rows,
/// and `ledger`.
async fn seed(db: &TestDb, schema: &PreparedSchema) -> Res<Vec<(String, i64)>> {
    let mut tables = vec![("ONLY public.ledger".to_owned(), 0)];
    for relation in &schema.relations {
        let name = &relation.name.name;
        if relation.kind != RelationKind::Table
            || name.starts_with("leader_")
            || name.starts_with("_sqlx")
            || name == "ledger"
        {
            continue;
        }
        let columns: Vec<&str> = relation.columns.iter().map(|c| c.name.as_str()).collect();
        let rows: Vec<String> = (1..=3)
            .map(|i| {
                let values: Vec<String> = relation
                    .columns
                    .iter()
                    .map(|c| match (c.name.as_str(), c.type_name.as_str()) {
                        ("kind", _) => "'a'".to_owned(),
                        (_, "integer" | "bigint") => i.to_string(),
                        (_, "text") => format!("'t{i}'"),
                        (_, "boolean") => "true".to_owned(),
                        _ => "NULL".to_owned(),
                    })
                    .collect();
                format!("({})", values.join(", "))
            })
            .collect();
        let mut sql = String::new();
        write!(
            sql,
            "INSERT INTO {} ({}) VALUES {}",
            relation.name,
            columns.join(", "),
            rows.join(", ")
        )?;
        // A table whose insert trigger writes `ledger`: the ledger starts with its rows.
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(db.admin())
            .await?;
        tables.push((format!("ONLY {}", relation.name), 3));
    }
    let ledger: i64 = sqlx::query_scalar("SELECT count(*) FROM public.ledger")
        .fetch_one(db.admin())
        .await?;
    tables[0].1 = ledger;
    Ok(tables)
}

/// The report: totals, by shape, the operations the histories did, and any hole found.
pub fn markdown(outcome: &Outcome, settings: &Settings) -> String {
    let mut w = String::new();
    let total: usize = outcome.classes.values().sum();
    let count = |class| outcome.classes.get(&class).copied().unwrap_or(0);
    let _ = writeln!(w, "## Totals\n");
    let _ = writeln!(
        w,
        "{} migration histories ({} files; {} more that PostgreSQL refused were skipped) from \
         seed {}, {} claims each: {total} statements, each checked by \
         `leader_fence_check::check_with` with the history's prepared schema (written to the \
         file's text and read back) and run on the history's database as the superseded leader \
         (and, where it did nothing, as the live one), under the plan PostgreSQL chose.\n",
        outcome.histories, outcome.files, outcome.refused_histories, settings.seed, settings.claims
    );
    let _ = writeln!(w, "| class | statements | share |\n|---|---:|---:|");
    for class in Class::ALL {
        let n = count(class);
        let _ = writeln!(
            w,
            "| `{}` | {n} | {:.1} % |",
            class.name(),
            100.0 * n as f64 / total.max(1) as f64
        );
    }
    let _ = writeln!(
        w,
        "\nAmong the safe statements that acted as the live leader, the checker refused {} of \
         {} ({:.1} %).\n",
        outcome.live_refused,
        outcome.live_safe,
        100.0 * outcome.live_refused as f64 / outcome.live_safe.max(1) as f64
    );
    let _ = writeln!(w, "## By shape\n");
    let _ = writeln!(
        w,
        "| shape | statements | accepted unsafe | accepted safe | refused unsafe | refused safe | pg_error |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for (shape, classes) in &outcome.shapes {
        let of = |class| classes.get(&class).copied().unwrap_or(0);
        let _ = writeln!(
            w,
            "| {shape} | {} | {} | {} | {} | {} | {} |",
            classes.values().sum::<usize>(),
            of(Class::AcceptedUnsafe),
            of(Class::AcceptedSafe),
            of(Class::RefusedUnsafe),
            of(Class::RefusedSafe),
            of(Class::PgError)
        );
    }
    let _ = writeln!(w, "\n## What the histories did\n");
    let _ = writeln!(w, "| operation | times |\n|---|---:|");
    for (op, n) in &outcome.ops {
        let _ = writeln!(w, "| {op} | {n} |");
    }
    let _ = writeln!(
        w,
        "\n## Accepted statements that acted as the superseded leader\n"
    );
    if outcome.holes.is_empty() {
        let _ = writeln!(w, "None.\n");
    }
    for (sql, history) in &outcome.holes {
        let _ = writeln!(w, "```sql\n{sql}\n```\n\nIts history:\n");
        for (name, text) in &history.files {
            let _ = writeln!(w, "```sql\n-- {name}\n{text}```\n");
        }
    }
    w
}
