//! The Rust side's generator (issue 32): `#[fenced]` function bodies built from every combination
//! of where the SQL comes from, how it is sent, through which executor and in what position, with
//! a fenced or an unfenced claim, each run through the macro's own parse and validate steps.
//!
//! The contract it checks: a body whose claim is unfenced, whose SQL the macro cannot read
//! (`format!`, a closure's argument, a `macro_rules!` of the body), or whose fence binds do not
//! come from the function's fence parameter (a nested fn or an impl in the body, which take their
//! own) is refused; a readable, fenced claim is accepted. A body accepted against the contract is
//! a hole and fails the test. One refused though readable and fenced is a false rejection: the
//! test prints their share by dimension, and fails on any (96 of 304 were, all a `const` declared
//! in the body, until the macro read those).
//!
//! The bodies are not compiled: the macro decides from tokens, so running its steps is what
//! shows its verdict, and 3,000-odd bodies take seconds instead of a build each. (A body here may
//! not type-check as written: a generic executor used twice, say. The macro does not type-check
//! either.)

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::str::FromStr;

use proc_macro2::TokenStream;

const FENCED_SQL: &str = "UPDATE jobs SET claimed_by = $2 WHERE id IN (SELECT id FROM jobs WHERE claimed_by IS NULL AND leader_fence($1, $2) ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)";
const UNFENCED_SQL: &str = "UPDATE jobs SET claimed_by = $2 WHERE id IN (SELECT id FROM jobs WHERE claimed_by IS NULL AND $1::text IS NOT NULL ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)";

/// Where the SQL text comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Origin {
    Literal,
    Concat,
    ConstInBody,
    Format,
    ClosureArgument,
    MacroRules,
}

/// How the statement is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Form {
    Query,
    QueryAs,
    QueryScalar,
    QueryMacro,
    ExecutorMethod,
    ExecutorByPath,
    AliasedImport,
    RawSql,
}

/// Which executor it goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Executor {
    Pool,
    Transaction,
    Connection,
    Generic,
}

/// Where in the function the send stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Position {
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
#[derive(Debug, Clone, Copy)]
struct Case {
    origin: Origin,
    form: Form,
    executor: Executor,
    position: Position,
    fenced: bool,
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
    fn must_refuse(&self) -> bool {
        !self.fenced
            || matches!(
                self.origin,
                Origin::Format | Origin::ClosureArgument | Origin::MacroRules
            )
            || matches!(self.position, Position::NestedFn | Position::ImplInBody)
            || self.form == Form::RawSql
    }

    /// The function, as source text.
    fn source(&self) -> String {
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
            Position::SpawnedTask => format!(
                "tokio::spawn(async move {{\n{statement}\nOk::<(), sqlx::Error>(())\n}}).await.unwrap()?;"
            ),
            Position::NestedFn => format!(
                "async fn inner<E: sqlx::PgExecutor<'static>>(pool: &PgPool, ex: E, f: Fence) -> sqlx::Result<()> {{\n{statement}\nOk(())\n}}\ninner(pool, ex, fence).await?;"
            ),
            Position::ImplInBody => format!(
                "struct Claims;\nimpl Claims {{\nasync fn run<E: sqlx::PgExecutor<'static>>(pool: &PgPool, ex: E, f: Fence) -> sqlx::Result<()> {{\n{statement}\nOk(())\n}}\n}}\nClaims::run(pool, ex, fence).await?;"
            ),
        };
        format!(
            "async fn claim<E: sqlx::PgExecutor<'static>>(pool: &PgPool, ex: E, fence: Fence) -> sqlx::Result<()> {{\n{body}\nOk(())\n}}"
        )
    }
}

/// Every writable case.
fn cases() -> Vec<Case> {
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

/// Whether `#[fenced]` refuses `source` (its parse or its validation reports an error).
fn refused(source: &str) -> bool {
    let item = TokenStream::from_str(source)
        .unwrap_or_else(|e| panic!("a generated body does not tokenize: {e}\n{source}"));
    match super::parse::parse(item) {
        Err(_) => true,
        Ok(fenced) => super::validate::validate(&fenced, None).is_err(),
    }
}

#[test]
fn every_generated_body_gets_the_verdict_the_contract_gives_it() {
    let cases = cases();
    let mut holes = Vec::new();
    let mut false_rejections: BTreeMap<String, usize> = BTreeMap::new();
    let (mut readable_fenced, mut refused_total) = (0usize, 0usize);
    for case in &cases {
        let source = case.source();
        let verdict = refused(&source);
        refused_total += usize::from(verdict);
        if case.must_refuse() {
            if !verdict {
                holes.push(format!("{case:?}\n{source}"));
            }
        } else {
            readable_fenced += 1;
            if verdict {
                for key in [
                    format!("origin {:?}", case.origin),
                    format!("form {:?}", case.form),
                    format!("executor {:?}", case.executor),
                    format!("position {:?}", case.position),
                ] {
                    *false_rejections.entry(key).or_default() += 1;
                }
            }
        }
    }
    let rejected: usize = false_rejections
        .iter()
        .filter(|(k, _)| k.starts_with("origin"))
        .map(|(_, n)| n)
        .sum();
    let mut report = format!(
        "{} bodies ({} readable and fenced), {refused_total} refused; {} accepted against the \
         contract; {rejected} readable, fenced bodies refused ({:.1} %)\n",
        cases.len(),
        readable_fenced,
        holes.len(),
        100.0 * rejected as f64 / readable_fenced.max(1) as f64
    );
    for (key, n) in &false_rejections {
        let _ = writeln!(report, "  refused though readable and fenced, {key}: {n}");
    }
    println!("{report}");
    assert!(
        holes.is_empty(),
        "{report}\n{} bodies accepted against the contract; the first:\n{}",
        holes.len(),
        holes[0]
    );
    assert_eq!(
        rejected, 0,
        "{report}\nreadable, fenced bodies refused: none was when this generator was last changed"
    );
}
