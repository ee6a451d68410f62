//! `leaderctl`: see and steer leader-runtime's leadership without writing SQL, and set a service
//! up with its migrations in one step.
//!
//! # Install
//!
//! ```sh
//! cargo install leaderctl                # once published on crates.io
//! cargo install --path crates/leaderctl   # from a checkout of this repository
//! cargo run -p leaderctl -- --help       # in the repository, without installing
//! ```
//!
//! # Commands, and what each needs
//!
//! | command | needs |
//! |---|---|
//! | `migrations write DIR [--role NAME]... [--grant LOGIN]... [--force]` | no database: writes the framework's migrations into `DIR`, plus the roles migration and the grant `DIR` still lacks ([`migrations`]) |
//! | `roles add NAME... --dir DIR` | no database: writes what registering the roles still takes ([`roles`]) |
//! | `roles reshard ROLE COUNT --dir DIR` | no database: writes the migration giving a role COUNT shards ([`reshard`]) |
//! | `migrate [--dir DIR] [--lock-timeout-secs SECS]` | a **direct** connection (not through PgBouncer or RDS Proxy: sqlx's migration lock is a session advisory lock) as the schema's owner ([`migrate`]) |
//! | `status`, `pause`, `unpause`, `clear-cooldown`, `check` | the application's login role, granted with `leader_grant_app_role`; a transaction-mode pooler works |
//! | `dashboard [--listen ADDR] [--allow-writes]` | an operator's login, granted with `leader_grant_operator_role` (never the owner or the application's); writes take a token from `LEADER_DASHBOARD_TOKEN` ([`dashboard`]) |
//!
//! The setup of a new service, from nothing:
//!
//! ```sh
//! leaderctl migrations write migrations/ --role billing --role email_outbox --grant my_app
//! leaderctl migrate --dir migrations/ --database-url postgres://owner@db:5432/app   # direct
//! leaderctl check --role billing --role email_outbox --database-url postgres://my_app@pooler:6432/app
//! ```
//!
//! Every statement the operator commands send is one simple-protocol query with its values
//! inlined by `leader-core` (the lease API and `leader_core::status`), so they work through a
//! transaction-mode pooler. Every error is one line on stderr saying what to do, and the exit code
//! says its kind ([`failure`]).

mod check;
mod connect;
mod dashboard;
mod failure;
mod grant;
mod migrate;
mod migrations;
mod operate;
mod reshard;
mod roles;
mod schema_file;
mod status;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::failure::Failure;

/// The exit codes, said in every command's help.
macro_rules! exit_codes {
    () => {
        "\
Exit codes:
  0  done
  1  refused: unknown role or shard, malformed role name, role already paused, a migration file that
     differs from the framework's without --force, `roles add` with nothing to write, a folder
     `migrate --dir` cannot apply, a migration that failed, a pooler under `migrate`, a dashboard
     that cannot listen, lacks its token or would run as a login that may write the leases, or a
     malformed command line
  2  cannot reach the database, or the framework schema is missing there"
    };
}

const EXIT_CODES: &str = exit_codes!();

/// The top-level help's epilogue: how to install, what each command needs, the exit codes.
const OVERVIEW: &str = concat!(
    "\
Install:
  cargo install leaderctl                once published on crates.io
  cargo install --path crates/leaderctl  from a checkout of leader-runtime
  cargo run -p leaderctl -- ARGS         in that repository, without installing

What each command needs:
  migrations write, roles add, roles reshard
      no database: they write files into your migrations folder
  migrate
      a DIRECT connection to PostgreSQL, not through PgBouncer or RDS Proxy (sqlx's migration
      lock is a session advisory lock), as the role that owns the schema
  status, pause, unpause, clear-cooldown, check
      the application's login role, granted with leader_grant_app_role; a transaction-mode
      pooler works
  dashboard
      an operator's login, granted with leader_grant_operator_role (it refuses the owner and
      the application's login); --allow-writes takes its token from LEADER_DASHBOARD_TOKEN

A new service, from nothing:
  leaderctl migrations write migrations/ --role billing --grant my_app
  leaderctl migrate --dir migrations/ --database-url postgres://owner@db:5432/app

",
    exit_codes!()
);

/// See and steer leader-runtime's leadership: who leads each role, pause and unpause a role,
/// clear a cooldown, check a database, and write and apply the migrations an application needs.
#[derive(Debug, Parser)]
#[command(name = "leaderctl", version, after_help = OVERVIEW)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the database is (commands that talk to one).
#[derive(Debug, clap::Args)]
struct Database {
    /// The database to connect to, as the application's login role (a PgBouncer in transaction
    /// mode works too).
    #[arg(long, env = "DATABASE_URL", value_name = "URL", hide_env_values = true)]
    database_url: String,
}

/// Where the database is, for `migrate`.
#[derive(Debug, clap::Args)]
struct DirectDatabase {
    /// The database to migrate, connected to directly (not through PgBouncer or RDS Proxy) as
    /// the role that owns the schema.
    #[arg(long, env = "DATABASE_URL", value_name = "URL", hide_env_values = true)]
    database_url: String,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Every role's state, holder, token, expiry, last completed tick, cooldown, pause and when it
    /// is next due.
    ///
    /// A sharded role is one line (its shard count and how many shards are in each state) with
    /// one indented line per shard under it (`  3/8` is shard 3 of 8); with --json, one object
    /// per shard, each with `shard_index` and `shard_count` (0 and 1 for an unsharded role).
    #[command(after_help = EXIT_CODES)]
    Status {
        #[command(flatten)]
        db: Database,
        /// One JSON array of the rows instead of the table (with --watch, one array per line).
        #[arg(long)]
        json: bool,
        /// Redraw every --interval-ms until Ctrl-C.
        #[arg(long)]
        watch: bool,
        /// How often --watch redraws, in milliseconds.
        #[arg(long, default_value_t = 1000, value_name = "MS", requires = "watch",
              value_parser = clap::value_parser!(u64).range(50..))]
        interval_ms: u64,
    },
    /// Pause a role cluster-wide (every shard of a sharded role, or with --shard one): its
    /// holder's fence is false at once and no replica acquires it.
    ///
    /// A role or shard already paused is refused and left as it is: the first pause's author
    /// and reason stand. A role counts as paused when every shard of it is.
    #[command(after_help = EXIT_CODES)]
    Pause {
        #[command(flatten)]
        db: Database,
        /// The role to pause.
        role: String,
        /// Pause only this shard of a sharded role (its index, from 0; `status` lists them).
        #[arg(long, value_name = "INDEX")]
        shard: Option<u32>,
        /// Who is pausing it (recorded, shown by `status`).
        #[arg(long, value_name = "NAME")]
        by: String,
        /// Why (recorded, shown by `status`).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Lift a pause: the role is due at the next ACQUIRE, subject to its interval and cooldown.
    ///
    /// A pause of a held role left a cooldown until that lease would have expired (at most one
    /// TTL after the pause): until its next RENEW the paused holder may still be working.
    #[command(after_help = EXIT_CODES)]
    Unpause {
        #[command(flatten)]
        db: Database,
        /// The role to unpause.
        role: String,
        /// Unpause only this shard of a sharded role (of a role paused whole, the others stay
        /// paused).
        #[arg(long, value_name = "INDEX")]
        shard: Option<u32>,
    },
    /// Clear the cooldown a failed, panicked or lost tick set, e.g. once a fix has shipped.
    ///
    /// It clears the wait a pause of a held role left as well, for when the paused holder is
    /// known to be gone.
    #[command(after_help = EXIT_CODES)]
    ClearCooldown {
        #[command(flatten)]
        db: Database,
        /// The role whose cooldown to clear.
        role: String,
    },
    /// Run the start-up schema check and print each problem with its fix.
    #[command(after_help = EXIT_CODES)]
    Check {
        #[command(flatten)]
        db: Database,
        /// Also check that this role is registered and seeded (repeatable); ROLE:COUNT also
        /// checks that its rows have the COUNT shards the code leads it with (1: unsharded), as
        /// the runtime does at start-up.
        #[arg(long = "role", value_name = "ROLE[:COUNT]")]
        roles: Vec<String>,
    },
    /// Apply the framework's migrations (or DIR's) over a direct connection, printing each one
    /// applied or already applied.
    ///
    /// Without --dir, the framework's migrations embedded in this binary; with --dir, DIR's
    /// alone, which must hold the framework's files as `migrations write DIR` writes them (sqlx
    /// keeps one table of applied migrations, so one set is applied, the one your application's
    /// sqlx::migrate! applies). Needs a direct connection as the schema's owner: sqlx's
    /// migration lock is a session advisory lock, which a transaction-mode pooler (PgBouncer,
    /// RDS Proxy) breaks; migrate refuses a pooler (exit 1) before it sends anything.
    #[command(after_help = EXIT_CODES)]
    Migrate {
        #[command(flatten)]
        db: DirectDatabase,
        /// Apply this migrations folder (the framework's files in it included) instead of the
        /// framework's migrations alone.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// How long to wait for sqlx's migration lock (another migrator may hold it).
        #[arg(long, default_value_t = 60, value_name = "SECS",
              value_parser = clap::value_parser!(u64).range(1..))]
        lock_timeout_secs: u64,
    },
    /// Write the migrations an application needs: the framework's, its roles, its login's grant.
    #[command(subcommand)]
    Migrations(MigrationsCommand),
    /// The application's roles migrations.
    #[command(subcommand)]
    Roles(RolesCommand),
    /// The schema `#[fenced]` and `#[leader_role]` read: prepare it from the migrations, check
    /// it in CI, declare a table's shard key.
    #[command(subcommand)]
    Schema(SchemaCommand),
    /// Serve the operator's web page: every role's state, holder, history and health, and why a
    /// role is not running with its fix (docs/leaderctl.md, "dashboard").
    #[command(after_help = EXIT_CODES)]
    Dashboard(dashboard::Args),
}

/// The exit codes of `schema prepare` and `schema shard-key`.
const SCHEMA_EXIT_CODES: &str = "\
Exit codes:
  0  written (with --check: the file is current)
  1  refused: a migration or leader-tables.sql that fails on an empty database, a folder sqlx
     cannot read, no Cargo.toml in the crate's directory, with --check a file that is missing or
     out of date, a shard key already declared, or a malformed command line
  2  cannot start a throwaway PostgreSQL, or cannot reach the server --database-url names";

#[derive(Debug, Subcommand)]
enum SchemaCommand {
    /// Apply the crate's migrations and leader-tables.sql to an empty database as sqlx runs
    /// them (by version, up files only; the framework's migrations first when the folder holds
    /// none of them), read PostgreSQL's catalog, and write leader-schema.json next to
    /// Cargo.toml, which `#[fenced]` and `#[leader_role]` read at compile time.
    ///
    /// The database is a throwaway PostgreSQL started from the machine's binaries (as root too),
    /// or, with --database-url / DATABASE_URL, a fresh database created on that server and
    /// dropped after (the URL's own database is not touched). Commit the file; a build whose
    /// migrations changed since fails until it is prepared again.
    #[command(after_help = SCHEMA_EXIT_CODES)]
    Prepare {
        /// The crate's directory, where Cargo.toml is and the file is written.
        #[arg(long, value_name = "PATH", default_value = ".")]
        manifest_dir: PathBuf,
        /// The migrations folder, relative to the crate's directory.
        #[arg(long, value_name = "DIR", default_value = "migrations")]
        dir: String,
        /// Write nothing; exit 1 unless the file is what a prepare writes now (for CI).
        #[arg(long)]
        check: bool,
        /// A server to prepare on, where this user may create a database (a throwaway
        /// PostgreSQL is started without it).
        #[arg(long, env = "DATABASE_URL", value_name = "URL", hide_env_values = true)]
        database_url: Option<String>,
    },
    /// Write the next migration of DIR declaring COLUMN the shard key of TABLE: every shard
    /// claim on TABLE must select its rows by `leader_shard_of(COLUMN, $count) = $index`, which
    /// `#[fenced]` checks. Apply it, then `schema prepare`. No database is needed.
    #[command(after_help = SCHEMA_EXIT_CODES)]
    ShardKey {
        /// The table, schema-qualified or not, as the migrations name it.
        table: String,
        /// Its key column.
        column: String,
        /// The application's migrations folder.
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum MigrationsCommand {
    /// Write the framework's migrations into an application's migrations folder, and with
    /// --role and --grant the roles migration and the login role's grant: every migration a new
    /// service needs, in one step.
    ///
    /// Idempotent: each framework file is said to be new, unchanged or out of date; each role
    /// already registered and seeded, and each login role already granted, by DIR's migrations
    /// is said to be so, and nothing is written for it. No database is needed; apply the result
    /// with `leaderctl migrate --dir DIR` (a direct connection), your application's
    /// sqlx::migrate!, or `sqlx migrate run`.
    #[command(after_help = EXIT_CODES)]
    Write {
        /// The application's migrations folder (created if missing).
        dir: PathBuf,
        /// Overwrite framework files that differ from this leaderctl's.
        #[arg(long)]
        force: bool,
        /// Register this leader role (repeatable): the migration `roles add` writes, with only
        /// what DIR's migrations do not do yet (the CHECK entry, the row).
        #[arg(long = "role", value_name = "NAME")]
        roles: Vec<String>,
        /// Grant this login role (the one your application connects as) what the protocol needs
        /// (repeatable): a migration running SELECT leader_grant_app_role('LOGIN'), unless one of
        /// DIR's migrations already calls it for that role.
        #[arg(long = "grant", value_name = "LOGIN")]
        grants: Vec<String>,
        /// Grant this login role what `leaderctl dashboard` needs (repeatable): a migration
        /// running SELECT leader_grant_operator_role('LOGIN') (reads, and the audited operator
        /// functions; no write on any table), unless one of DIR's migrations already does.
        #[arg(long = "operator", value_name = "LOGIN")]
        operators: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum RolesCommand {
    /// Write the next migration of DIR with whatever registering these roles still takes: the
    /// role CHECK re-created with every role DIR's migrations already register plus these (if
    /// one is missing from it), and a row seeded for each role DIR's migrations do not seed.
    ///
    /// A role in the CHECK but never seeded (added by hand to get past `#[leader_role]`'s compile
    /// error) gets its row. When every role is registered and seeded already, it writes nothing
    /// and exits 1 saying so. A .down.sql is written too when DIR's migrations are reversible.
    /// No database is needed.
    #[command(after_help = EXIT_CODES)]
    Add {
        /// The roles to register.
        #[arg(required = true, value_name = "NAME")]
        names: Vec<String>,
        /// The application's migrations folder.
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
    },
    /// Write the next migration of DIR giving a seeded role COUNT shards (1 unshards it):
    /// `SELECT leader_reshard('ROLE', COUNT)`, with the safe procedure in a comment, and a
    /// .down.sql restoring the count DIR's migrations gave it before when DIR is reversible.
    ///
    /// Apply the migration, then deploy replicas leading the role with COUNT shards: replicas
    /// still running the old count are refused and their fences fail, so the two never claim a
    /// key at once. No database is needed.
    #[command(after_help = EXIT_CODES)]
    Reshard {
        /// The role.
        role: String,
        /// Its new shard count, 1 to 1024.
        count: u32,
        /// The application's migrations folder.
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
    },
}

async fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Status {
            db,
            json,
            watch,
            interval_ms,
        } => {
            let pool = connect::connect(&db.database_url).await?;
            let interval = watch.then(|| std::time::Duration::from_millis(interval_ms));
            status::run(&pool, json, interval).await
        }
        Command::Pause {
            db,
            role,
            shard,
            by,
            reason,
        } => {
            let pool = connect::connect(&db.database_url).await?;
            match shard {
                Some(shard) => {
                    operate::pause_shard(&pool, &role, shard, &by, reason.as_deref()).await
                }
                None => operate::pause(&pool, &role, &by, reason.as_deref()).await,
            }
        }
        Command::Unpause { db, role, shard } => {
            let pool = connect::connect(&db.database_url).await?;
            match shard {
                Some(shard) => operate::unpause_shard(&pool, &role, shard).await,
                None => operate::unpause(&pool, &role).await,
            }
        }
        Command::ClearCooldown { db, role } => {
            let pool = connect::connect(&db.database_url).await?;
            operate::clear_cooldown(&pool, &role).await
        }
        Command::Check { db, roles } => {
            let pool = connect::connect(&db.database_url).await?;
            check::run(&pool, &roles).await
        }
        Command::Migrate {
            db,
            dir,
            lock_timeout_secs,
        } => {
            migrate::run(
                &db.database_url,
                dir.as_deref(),
                std::time::Duration::from_secs(lock_timeout_secs),
            )
            .await
        }
        Command::Migrations(MigrationsCommand::Write {
            dir,
            force,
            roles,
            grants,
            operators,
        }) => migrations::write(&dir, force, &roles, &grants, &operators),
        Command::Roles(RolesCommand::Add { names, dir }) => roles::add(&dir, &names),
        Command::Roles(RolesCommand::Reshard { role, count, dir }) => {
            reshard::reshard(&dir, &role, count)
        }
        Command::Schema(SchemaCommand::Prepare {
            manifest_dir,
            dir,
            check,
            database_url,
        }) => schema_file::prepare(&manifest_dir, &dir, database_url.as_deref(), check).await,
        Command::Schema(SchemaCommand::ShardKey { table, column, dir }) => {
            schema_file::shard_key(&dir, &table, &column)
        }
        Command::Dashboard(args) => dashboard::run(args).await,
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help and --version.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => return Failure::usage(&err).report(),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            return Failure::unreachable(format!("cannot start the async runtime: {e}")).report();
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
