//! The Rust side's generator for `#[fenced]` (issue 32): function bodies built from every
//! combination of where the SQL comes from, how it is sent, through which executor and in what
//! position, with a fenced or an unfenced claim, and the verdict the contract gives each.
//!
//! The contract: a body whose claim is unfenced, whose SQL the macro cannot read (`format!`, a
//! closure's argument, a `macro_rules!` of the body), whose fence binds do not come from the
//! function's fence parameter (a nested fn or an impl in the body, which take their own), or
//! that sends through `raw_sql` (which binds nothing) is refused; a readable, fenced claim is
//! accepted.
//!
//! Two tests read it: `leader-macros` runs every body through the macro's parse and validate
//! steps (seconds, with the false rejections by dimension), and `ui-tests`'
//! `generated_sends` compiles them all with rustc, twice: as written with `#[fenced]`, and
//! without it, where every body must compile, so that a refusal is the macro's and not a
//! type error.
//!
//! ```
//! let cases = send_generator::cases();
//! let literal = cases
//!     .iter()
//!     .find(|c| c.origin == send_generator::Origin::Literal && c.fenced)
//!     .unwrap();
//! assert!(!literal.must_refuse());
//! assert!(literal.source("claim_0").contains("leader_fence($1, $2)"));
//! ```

#![forbid(unsafe_code)]

use std::fmt::Write as _;
use std::ops::Range;

const FENCED_SQL: &str = "UPDATE jobs SET claimed_by = $2 WHERE id IN (SELECT id FROM jobs WHERE claimed_by IS NULL AND leader_fence($1, $2) ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)";
const UNFENCED_SQL: &str = "UPDATE jobs SET claimed_by = $2 WHERE id IN (SELECT id FROM jobs WHERE claimed_by IS NULL AND $1::text IS NOT NULL ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)";

/// Where the SQL text comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    Literal,
    Concat,
    ConstInBody,
    Format,
    ClosureArgument,
    MacroRules,
}

/// How the statement is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Form {
    Query,
    QueryAs,
    QueryScalar,
    /// `sqlx::query!`, which needs a database (or prepared offline data) to compile.
    QueryMacro,
    ExecutorMethod,
    ExecutorByPath,
    AliasedImport,
    RawSql,
}

/// Which executor it goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Executor {
    Pool,
    Transaction,
    Connection,
    Generic,
}

/// Where in the function the send stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Position {
    Top,
    Closure,
    AsyncBlock,
    SpawnedTask,
    NestedFn,
    ImplInBody,
}

const ORIGINS: [Origin; 6] = [
    Origin::Literal,
    Origin::Concat,
    Origin::ConstInBody,
    Origin::Format,
    Origin::ClosureArgument,
    Origin::MacroRules,
];
const FORMS: [Form; 8] = [
    Form::Query,
    Form::QueryAs,
    Form::QueryScalar,
    Form::QueryMacro,
    Form::ExecutorMethod,
    Form::ExecutorByPath,
    Form::AliasedImport,
    Form::RawSql,
];
const EXECUTORS: [Executor; 4] = [
    Executor::Pool,
    Executor::Transaction,
    Executor::Connection,
    Executor::Generic,
];
const POSITIONS: [Position; 6] = [
    Position::Top,
    Position::Closure,
    Position::AsyncBlock,
    Position::SpawnedTask,
    Position::NestedFn,
    Position::ImplInBody,
];

/// One generated body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub origin: Origin,
    pub form: Form,
    pub executor: Executor,
    pub position: Position,
    pub fenced: bool,
}

impl Case {
    /// Whether a send of this form can be written with this origin at all: `sqlx::query!` takes a
    /// string literal only, and a closure's argument feeds `sqlx::query` only.
    fn writable(&self) -> bool {
        match (self.form, self.origin) {
            (Form::QueryMacro, origin) => origin == Origin::Literal,
            (_, Origin::ClosureArgument) => self.form == Form::Query,
            _ => true,
        }
    }

    /// What the contract says of this body: refused unless the claim is fenced, readable, bound
    /// from the function's own fence parameter, and sent with its binds.
    pub fn must_refuse(&self) -> bool {
        !self.fenced
            || matches!(
                self.origin,
                Origin::Format | Origin::ClosureArgument | Origin::MacroRules
            )
            || matches!(self.position, Position::NestedFn | Position::ImplInBody)
            || self.form == Form::RawSql
    }

    /// The case's place in each dimension, for tables of false rejections.
    pub fn dimensions(&self) -> [String; 4] {
        [
            format!("origin {:?}", self.origin),
            format!("form {:?}", self.form),
            format!("executor {:?}", self.executor),
            format!("position {:?}", self.position),
        ]
    }

    /// The function, named `name`, as source text: `async fn name<E>(pool: &PgPool, ex: E,
    /// fence: Fence) -> sqlx::Result<()>`, with `PgPool` and `Fence` in scope where it stands.
    pub fn source(&self, name: &str) -> String {
        let sql = if self.fenced {
            FENCED_SQL
        } else {
            UNFENCED_SQL
        };
        // A nested fn or an impl takes a fence of its own, `f`; everything else binds the
        // function's `fence`.
        let fence = match self.position {
            Position::NestedFn | Position::ImplInBody => "f",
            _ => "fence",
        };
        let (prelude, text) = match self.origin {
            Origin::Literal => (String::new(), format!("{sql:?}")),
            Origin::Concat => {
                let (a, b) = sql.split_at(sql.len() / 2);
                (String::new(), format!("concat!({a:?}, {b:?})"))
            }
            Origin::ConstInBody => (format!("const CLAIM: &str = {sql:?};\n"), "CLAIM".into()),
            Origin::Format => (
                String::new(),
                format!("sqlx::AssertSqlSafe(format!(\"{{}}\", {sql:?}))"),
            ),
            Origin::ClosureArgument => (
                "let make = |sql: &'static str| sqlx::query(sql);\n".into(),
                format!("{sql:?}"),
            ),
            Origin::MacroRules => (
                format!("macro_rules! claim_sql {{ () => {{ {sql:?} }}; }}\n"),
                "claim_sql!()".into(),
            ),
        };
        let (ex_prelude, ex, ex_end) = match self.executor {
            Executor::Pool => (String::new(), "pool", String::new()),
            Executor::Transaction => (
                "let mut tx = pool.begin().await?;\n".into(),
                "&mut *tx",
                "tx.commit().await?;\n".into(),
            ),
            Executor::Connection => (
                "let mut conn = pool.acquire().await?;\n".into(),
                "&mut *conn",
                String::new(),
            ),
            Executor::Generic => (String::new(), "ex", String::new()),
        };
        let binds = format!(".bind({fence}.role()).bind({fence}.token())");
        let builder = match self.origin {
            Origin::ClosureArgument => format!("make({text}){binds}"),
            _ => format!("sqlx::query({text}){binds}"),
        };
        let send = match self.form {
            Form::Query => format!("{builder}.execute({ex}).await?;"),
            Form::QueryAs => {
                format!("sqlx::query_as::<_, (i64,)>({text}){binds}.fetch_all({ex}).await?;")
            }
            Form::QueryScalar => {
                format!("sqlx::query_scalar::<_, i64>({text}){binds}.fetch_all({ex}).await?;")
            }
            Form::QueryMacro => {
                format!(
                    "sqlx::query!({text}, {fence}.role(), {fence}.token()).execute({ex}).await?;"
                )
            }
            Form::ExecutorMethod => {
                format!("use sqlx::Executor as _;\n({ex}).execute({builder}).await?;")
            }
            Form::ExecutorByPath => match self.executor {
                Executor::Generic => format!("E::execute({ex}, {builder}).await?;"),
                _ => format!("sqlx::Executor::execute({ex}, {builder}).await?;"),
            },
            Form::AliasedImport => format!(
                "use sqlx::query as run_claim;\nrun_claim({text}){binds}.execute({ex}).await?;"
            ),
            Form::RawSql => format!("sqlx::raw_sql({text}).execute({ex}).await?;"),
        };
        let statement = format!("{prelude}{ex_prelude}{send}\n{ex_end}");
        let body = match self.position {
            Position::Top => statement,
            Position::Closure => format!(
                "let run = || async {{\n{statement}\nOk::<(), sqlx::Error>(())\n}};\nrun().await?;"
            ),
            Position::AsyncBlock => {
                format!("async {{\n{statement}\nOk::<(), sqlx::Error>(())\n}}.await?;")
            }
            // A task outlives the call: it takes a pool of its own ('static, as `tokio::spawn`
            // wants), the executor and the fence.
            Position::SpawnedTask => format!(
                "let pool: &'static PgPool = Box::leak(Box::new(pool.clone()));\ntokio::spawn(async move {{\n{statement}\nOk::<(), sqlx::Error>(())\n}}).await.unwrap()?;"
            ),
            Position::NestedFn => format!(
                "async fn inner<E: sqlx::PgExecutor<'static>>(pool: &PgPool, ex: E, f: Fence) -> sqlx::Result<()> {{\n{statement}\nOk(())\n}}\ninner(pool, ex, fence).await?;"
            ),
            Position::ImplInBody => format!(
                "struct Claims;\nimpl Claims {{\nasync fn run<E: sqlx::PgExecutor<'static>>(pool: &PgPool, ex: E, f: Fence) -> sqlx::Result<()> {{\n{statement}\nOk(())\n}}\n}}\nClaims::run(pool, ex, fence).await?;"
            ),
        };
        format!(
            "async fn {name}<E: sqlx::PgExecutor<'static> + Send + 'static>(pool: &PgPool, ex: E, fence: Fence) -> sqlx::Result<()> {{\n{body}\nOk(())\n}}"
        )
    }
}

/// Every writable case.
pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    for origin in ORIGINS {
        for form in FORMS {
            for executor in EXECUTORS {
                for position in POSITIONS {
                    for fenced in [true, false] {
                        let case = Case {
                            origin,
                            form,
                            executor,
                            position,
                            fenced,
                        };
                        if case.writable() {
                            all.push(case);
                        }
                    }
                }
            }
        }
    }
    all
}

/// A program holding one function per case, `claim_{i}` for `cases[i]`, each under
/// `attribute` (`"#[fenced]"`, or `""` for the functions as plain Rust), and the lines (from 1)
/// each function takes, so that a compiler message can be laid at its case's door.
pub fn program(cases: &[Case], attribute: &str) -> (String, Vec<Range<usize>>) {
    let mut text = String::from(
        "#![allow(unused)]\nuse leader_runtime::{Fence, fenced};\nuse sqlx::PgPool;\n\nfn main() {}\n",
    );
    let mut lines = Vec::with_capacity(cases.len());
    for (i, case) in cases.iter().enumerate() {
        let start = text.lines().count() + 1;
        let _ = writeln!(
            text,
            "\n{attribute}\n{}",
            case.source(&format!("claim_{i}"))
        );
        lines.push(start..text.lines().count() + 1);
    }
    (text, lines)
}
