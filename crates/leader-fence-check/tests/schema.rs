//! Rule 4 with the schema: a qualified name is a column where the prepared schema says the
//! table has one, and a possible call everywhere else; a function is what its overloads that the
//! call's arguments may pick are. The accepted shapes are also run against PostgreSQL with a
//! superseded token in `tests/tests/fenced_sql.rs`.

mod support;

use leader_fence_check::{Hints, Schema, check, check_with};
use leader_schema::model::{Event, Volatility};
use support::prepared;

fn base() -> support::Prepared {
    prepared()
        .table(
            "jobs",
            "id bigint, owner text, runs integer, due timestamp with time zone",
        )
        .table("batch", "id bigint, note text")
        .table("webhooks", "id bigint, endpoint_id bigint, status text")
        .view(
            "due_jobs",
            "id bigint, due timestamp with time zone",
            &["jobs"],
        )
}

fn schema() -> Schema {
    base().schema()
}

fn errors(sql: &str, schema: &Schema) -> Vec<String> {
    check_with(sql, &Hints::default().with_schema(schema))
        .errors
        .into_iter()
        .map(|e| e.message)
        .collect()
}

/// Everyday claims that name columns through their table's alias where PostgreSQL evaluates
/// them before the gate: refused without the schema (each name may be a call), accepted with it.
const EVERYDAY: [&str; 5] = [
    "UPDATE jobs j SET owner = $3
       FROM (SELECT id FROM batch WHERE leader_fence($1, $2)) b WHERE j.id = b.id",
    "MERGE INTO jobs t USING (SELECT id FROM batch WHERE leader_fence($1, $2)) s ON t.id = s.id
     WHEN MATCHED THEN UPDATE SET runs = t.runs + 1",
    "WITH c AS (SELECT d.id FROM due_jobs d WHERE d.due < now() AND leader_fence($1, $2))
     UPDATE jobs o SET runs = o.runs + 1 FROM c WHERE o.id = c.id RETURNING o.id",
    "DELETE FROM jobs j USING (SELECT id FROM batch WHERE leader_fence($1, $2)) AS b (bid)
      WHERE j.id = b.bid",
    MERGE_ON,
];

/// A `MERGE` whose join condition reads both tables' columns before its gated `WHEN`.
const MERGE_ON: &str = "MERGE INTO jobs t USING batch s ON t.id = s.id
                        WHEN MATCHED AND leader_fence($1, $2) THEN UPDATE SET runs = t.runs + 1";

#[test]
fn everyday_qualified_columns_are_columns_where_the_schema_says_so() {
    let schema = schema();
    for sql in EVERYDAY {
        assert!(
            !check(sql).errors.is_empty(),
            "refused without the schema: {sql}"
        );
        assert_eq!(errors(sql, &schema), Vec::<String>::new(), "{sql}");
    }
}

#[test]
fn a_name_the_schema_does_not_give_is_still_a_possible_call() {
    let schema = schema();
    // No such column: PostgreSQL calls `take_budget(j)`, before the fence.
    let e = errors(
        "UPDATE jobs j SET owner = $3
           FROM (SELECT id FROM batch WHERE leader_fence($1, $2)) b WHERE j.take_budget = b.id",
        &schema,
    );
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with("`j.take_budget` may call a function `take_budget(j)`"),
        "{e:?}"
    );
    assert!(
        e[0].contains("`public.jobs`, as the test's schema has it, has no column `take_budget`"),
        "{e:?}"
    );
    // A table the migrations do not define: the message says where it looked and how to declare it.
    let e = errors(
        "UPDATE audit a SET seen = true
           FROM (SELECT id FROM batch WHERE leader_fence($1, $2)) b WHERE a.id = b.id",
        &schema,
    );
    assert!(
        e[0].contains("`#[fenced]` found no table, view or type `audit` in the test's schema")
            && e[0].ends_with("\nhelp: declare it in `leader-tables.sql`"),
        "{e:?}"
    );
    // An alias's column names replace the first columns' own names, of a sub-select too.
    let e = errors(
        "DELETE FROM jobs j USING (SELECT id FROM batch WHERE leader_fence($1, $2)) AS b (bid)
          WHERE j.id = b.id",
        &schema,
    );
    assert!(e[0].contains("`b.id` may call a function `id(b)`"), "{e:?}");
    let e = errors(&MERGE_ON.replace("batch s", "batch AS s (bid)"), &schema);
    assert!(e[0].contains("`s.id` may call a function `id(s)`"), "{e:?}");
    // Another schema's table of the same name is not this one.
    let e = errors(
        &MERGE_ON.replace("USING batch", "USING archive.batch"),
        &schema,
    );
    assert!(
        e[0].contains("found no table, view or type `archive.batch`"),
        "{e:?}"
    );
    let two = base().table("archive.batch", "old_id bigint").schema();
    let e = errors(MERGE_ON, &two);
    assert!(
        e[0].contains("`archive.batch`, as the test's schema has it, has no column `id`"),
        "unqualified, `batch` may be either table: {e:?}"
    );
    // Qualified, it is that schema's table only, and the message names it.
    let e = errors(
        &MERGE_ON.replace("USING batch", "USING archive.batch"),
        &two,
    );
    assert!(
        e[0].contains("`archive.batch`, as the test's schema has it, has no column `id`"),
        "{e:?}"
    );
    let e = errors(&MERGE_ON.replace("USING batch", "USING public.batch"), &two);
    assert!(e.is_empty(), "`public.batch` has `id`: {e:?}");
}

fn with_functions() -> Schema {
    base()
        .function("notify_claimed", "bigint", Volatility::Volatile)
        .function("price", "bigint", Volatility::Stable)
        .function("add_up", "bigint, bigint", Volatility::Immutable)
        .aggregate("sum_up", "bigint")
        .schema()
}

#[test]
fn a_volatile_function_of_the_migrations_stands_where_the_fence_has_held() {
    let schema = with_functions();
    // On the rows of a fenced level: PostgreSQL never evaluates it for a superseded leader.
    for sql in [
        "UPDATE jobs SET owner = $3 WHERE leader_fence($1, $2) AND due < now()
          RETURNING notify_claimed(id)",
        "SELECT notify_claimed(id) FROM jobs WHERE leader_fence($1, $2) FOR UPDATE SKIP LOCKED",
    ] {
        assert!(
            !check(sql).errors.is_empty(),
            "refused without the schema: {sql}"
        );
        assert_eq!(errors(sql, &schema), Vec::<String>::new(), "{sql}");
    }
    // In a LIMIT, and in a condition that reads no column: evaluated before the fence.
    let e = errors(
        "SELECT id FROM jobs WHERE leader_fence($1, $2)
          LIMIT (SELECT count(*) FROM batch WHERE notify_claimed(1) IS NULL) FOR UPDATE",
        &schema,
    );
    assert!(
        e[0].contains("cannot see what `notify_claimed(..)` does"),
        "{e:?}"
    );
    assert!(
        e[0].contains("has `public.notify_claimed(bigint)` VOLATILE"),
        "{e:?}"
    );
    // In a sub-select of a condition that reads no column: an init plan of the up-front
    // condition, evaluated beside the fence in PostgreSQL's order.
    let e = errors(
        "UPDATE jobs SET owner = $3 WHERE leader_fence($1, $2)
            AND (SELECT notify_claimed(7)) IS NULL",
        &schema,
    );
    assert!(e[0].contains("reads no column"), "{e:?}");
    // Written in the condition itself, a VOLATILE call keeps the condition from being one
    // PostgreSQL evaluates up front: it filters the rows, below the fence's One-Time Filter
    // (PostgreSQL 15: `Result (One-Time Filter: leader_fence(..)) -> Seq Scan (Filter:
    // (notify_claimed('7') IS NULL))`).
    assert_eq!(
        errors(
            "UPDATE jobs SET owner = $3 WHERE leader_fence($1, $2) AND notify_claimed(7) IS NULL",
            &schema,
        ),
        Vec::<String>::new()
    );
}

#[test]
fn stable_functions_stand_anywhere_and_aggregates_and_unknown_ones_nowhere() {
    let schema = with_functions();
    let sql = "UPDATE jobs SET owner = $3 WHERE leader_fence($1, $2) AND price(7) > 0";
    assert!(!check(sql).errors.is_empty());
    assert_eq!(errors(sql, &schema), Vec::<String>::new());
    // An aggregate runs its final function once even on no rows.
    let e = errors(
        "SELECT sum_up(id) FROM jobs WHERE leader_fence($1, $2) GROUP BY owner",
        &schema,
    );
    assert!(
        e[0].contains("has `public.sum_up(bigint)` as an aggregate"),
        "{e:?}"
    );
    // A function the migrations do not create may be an aggregate.
    let e = errors(
        "UPDATE jobs SET owner = $3 WHERE leader_fence($1, $2) RETURNING elsewhere(id)",
        &schema,
    );
    assert!(
        e[0].contains(
            "found no function `elsewhere` that takes these arguments in the test's schema"
        ),
        "{e:?}"
    );
}

#[test]
fn a_gate_on_rows_is_in_time_for_a_lock_on_a_table_not_on_a_view() {
    let schema = schema();
    // PostgreSQL locks a table's rows as the query returns them, after the semi-join that the
    // fenced sub-select empties.
    let on_table = "SELECT id FROM jobs
                     WHERE id IN (SELECT id FROM batch WHERE leader_fence($1, $2))
                       FOR UPDATE SKIP LOCKED";
    assert!(
        !check(on_table).errors.is_empty(),
        "refused without the schema"
    );
    assert_eq!(errors(on_table, &schema), Vec::<String>::new());
    // A view it may not flatten runs as a query of its own, and the lock is pushed into it.
    let e = errors(&on_table.replace("FROM jobs", "FROM due_jobs"), &schema);
    assert!(e[0].contains("may be a view"), "{e:?}");
    // A table the schema does not know may be such a view.
    let e = errors(
        &on_table.replace("FROM jobs", "FROM archived_jobs"),
        &schema,
    );
    assert!(e[0].contains("may be a view"), "{e:?}");
}

/// The differential's schema: `take_budget(q)` is VOLATILE and writes `budget`.
fn with_take_budget() -> Schema {
    prepared()
        .table("q", "id bigint, grp integer, status text, owner bigint")
        .table("budget", "spent integer")
        .function("take_budget", "q", Volatility::Volatile)
        .function("bump", "bigint", Volatility::Volatile)
        .schema()
}

/// The differential test's two finds (seed 1, 100,000 statements): a VOLATILE call in the `LIMIT`
/// of a sub-select that a fenced level reads. That level's fence did not keep PostgreSQL from
/// running the `LIMIT`'s sub-select (an init plan) for a superseded leader.
#[test]
fn a_volatile_call_is_not_protected_by_a_fence_around_the_level_it_is_in() {
    let schema = with_take_budget();
    for sql in [
        "DELETE FROM q t0 USING (SELECT t3.id AS id, t3.grp AS grp, t3.status AS status, t3.owner AS owner FROM (SELECT coalesce(max(t1.id), 1) AS id, max(t1.grp) AS grp, max(t1.status) AS status, max(t1.owner) AS owner FROM q t1 WHERE leader_fence($1, $2) ORDER BY 1 LIMIT (SELECT t2.take_budget FROM q t2 ORDER BY t2.id LIMIT 1)) t3 WHERE leader_fence($1, $2) ORDER BY 1 LIMIT 1) t4 WHERE t0.id = t4.id AND t0.id = ANY (SELECT (SELECT coalesce(max(t5.id), 1)) AS id FROM q t5 WHERE leader_fence($1, $2))",
        "MERGE INTO q t0 USING q t1 ON t0.id = t1.id WHEN MATCHED AND t1.id = ANY (SELECT t4.id AS id FROM (SELECT t2.id AS id, t2.grp AS grp, t2.status AS status, t2.owner AS owner FROM q t2 WHERE leader_fence($1, $2) ORDER BY 1 LIMIT (SELECT take_budget(t3) FROM q t3 ORDER BY t3.id LIMIT 1)) t4 WHERE leader_fence($1, $2)) THEN UPDATE SET status = 'm'",
        "UPDATE q t0 SET status = 'u' WHERE t0.id IN (SELECT t3.id * take_budget(t0) AS id FROM (SELECT t1.id AS id, t1.grp AS grp, t1.status AS status, t1.owner AS owner FROM q t1 WHERE leader_fence($1, $2) ORDER BY 1 LIMIT (SELECT take_budget(t2) FROM q t2 ORDER BY t2.id LIMIT 1)) t3 WHERE leader_fence($1, $2))",
    ] {
        let e = errors(sql, &schema);
        assert!(
            e.iter()
                .any(|e| e.contains("cannot see what `take_budget(..)` does")
                    || e.contains("may call a function `take_budget(t2)`")),
            "{sql}\n{e:?}"
        );
    }
}

/// The differential test's third find: a lock on a `WITH` query's rows locks nothing, so the
/// statement's result, a row from no rows, is asked of as any claim's.
#[test]
fn a_lock_that_lands_nowhere_does_not_excuse_the_result() {
    let e = errors(
        "WITH c0 AS (SELECT coalesce(max(t0.id), 1) AS id FROM jobs t0 WHERE leader_fence($1, $2))
         SELECT t1.id FROM c0 t1 FOR UPDATE",
        &schema(),
    );
    assert!(
        e.iter().any(|e| e.contains("would still get rows back")),
        "{e:?}"
    );
}

/// `(x).f` is `x.f` where no query the reference can see has a column `x`; where one may, `x`
/// is that column, and `.f` selects from it, or calls `f` on it.
#[test]
fn a_field_of_a_bare_name_is_the_tables_column_where_no_column_has_that_name() {
    let schema = schema();
    let sql = "UPDATE jobs j SET runs = 1
                 FROM (SELECT id FROM batch WHERE leader_fence($1, $2)) b WHERE (j).id = b.id";
    assert!(!check(sql).errors.is_empty(), "refused without the schema");
    assert_eq!(errors(sql, &schema), Vec::<String>::new());
    let e = errors(
        &sql.replace("(j).id = b.id", "(j).take_budget = b.id"),
        &schema,
    );
    assert!(e[0].contains("has no column `take_budget`"), "{e:?}");
    // `j` is a column of `b` here, so `(j).id` is `id` applied to that column.
    let e = errors(
        "UPDATE jobs j SET runs = 1
           FROM (SELECT id AS j FROM batch WHERE leader_fence($1, $2)) b WHERE (j).id = b.j",
        &schema,
    );
    assert!(e[0].contains("not a table's row the schema knows"), "{e:?}");
}

/// An uncorrelated sub-select in a condition is an init plan, and a scan PostgreSQL rescans
/// (each run of a correlated sub-select rescans the nodes under it that do not depend on the
/// outer row) evaluates its index keys then, before the fence above it: PostgreSQL 15 ran
/// `take_budget` for a superseded leader in this statement with an index on `q.id`.
#[test]
fn a_volatile_call_in_an_init_plan_of_a_condition_is_not_protected_by_the_fence() {
    let schema = with_take_budget();
    let e = errors(
        "UPDATE q t0 SET status = 'u' WHERE t0.id IN (SELECT t1.id * t0.grp FROM q t1
           WHERE leader_fence($1, $2)
             AND t1.id = (SELECT take_budget(t2) FROM q t2 ORDER BY t2.id LIMIT 1))",
        &schema,
    );
    assert!(
        e.iter()
            .any(|e| e.contains("cannot see what `take_budget(..)` does")),
        "{e:?}"
    );
}

/// A column of a sub-select (or view) PostgreSQL pulls up into the query becomes its
/// expression there: computed from constants, a condition on it reads no column and runs once,
/// up front, beside the fence. Found by `fence-differential` (seed 7, 10,000 statements):
/// PostgreSQL 15 ran the `LIMIT`'s `take_budget` for a superseded leader in the first statement.
#[test]
fn a_condition_on_a_pulled_up_constant_column_reads_no_column() {
    let schema = prepared()
        .table("q", "id bigint, grp integer, status text, owner bigint")
        .table("budget", "spent integer")
        .function("take_budget", "q", Volatility::Volatile)
        .view("v_const", "id bigint, grp integer", &["q"])
        .schema();
    let guarded = "<> ALL (SELECT t2.id FROM q t2 WHERE leader_fence($1, $2) ORDER BY 1
                    LIMIT (SELECT take_budget(t3) FROM q t3 ORDER BY t3.id LIMIT 1))";
    for refused in [
        format!(
            "SELECT t1.id FROM (SELECT 1::bigint AS id FROM q t0) t1
              WHERE t1.id {guarded} AND leader_fence($1, $2)"
        ),
        // Folded: `CASE WHEN true THEN 1 ELSE t0.id END` is 1, `coalesce(1, ..)` is 1.
        format!(
            "SELECT t1.id FROM (SELECT CASE WHEN true THEN 1 ELSE t0.id END AS id FROM q t0) t1
              WHERE t1.id {guarded} AND leader_fence($1, $2)"
        ),
        format!(
            "SELECT t0.id FROM q t0 WHERE coalesce(1, t0.id) {guarded} AND leader_fence($1, $2)"
        ),
        // A strict operator given a bind parameter, which may be NULL when PostgreSQL plans.
        format!("SELECT t0.id FROM q t0 WHERE (t0.id + $3) {guarded} AND leader_fence($1, $2)"),
        // Pulled up twice, and through a view whose definition the file does not follow.
        format!(
            "SELECT s.id FROM (SELECT t1.id FROM (SELECT 2::bigint AS id FROM q) t1) s
              WHERE s.id {guarded} AND leader_fence($1, $2)"
        ),
        format!("SELECT v.id FROM v_const v WHERE v.id {guarded} AND leader_fence($1, $2)"),
    ] {
        let e = errors(&refused, &schema);
        assert!(
            e.iter()
                .any(|e| e.contains("cannot see what `take_budget(..)` does")),
            "{refused}\n{e:?}"
        );
    }
    for accepted in [
        // A stored column, through a sub-select pulled up or one that keeps its own query.
        format!(
            "SELECT t1.id FROM (SELECT t0.id AS id FROM q t0) t1
              WHERE t1.id {guarded} AND leader_fence($1, $2)"
        ),
        format!(
            "SELECT t1.id FROM (SELECT 1::bigint AS id FROM q t0 LIMIT 5) t1
              WHERE t1.id {guarded} AND leader_fence($1, $2)"
        ),
        format!("SELECT t0.id FROM q t0 WHERE (t0.id + 1) {guarded} AND leader_fence($1, $2)"),
    ] {
        assert_eq!(
            errors(&accepted, &schema),
            Vec::<String>::new(),
            "{accepted}"
        );
    }
}

#[test]
fn init_plans_a_rescan_evaluates_are_not_kept_by_the_fence_around_them() {
    let schema = prepared()
        .table("q", "id bigint, grp integer, status text, owner bigint")
        .schema();
    // Each run of the correlated sub-select rescans its plan, and the index scan of `t1`,
    // rescanned, takes its key from the scalar sub-select (an init plan) before the fence
    // above it is evaluated: PostgreSQL 15 locked `q`'s first row for a superseded leader.
    let e = errors(
        "UPDATE q t0 SET status = 'u' WHERE t0.id IN (SELECT t1.id * t0.grp FROM q t1
           WHERE leader_fence($1, $2)
             AND t1.id = (SELECT t2.id FROM q t2 ORDER BY t2.id LIMIT 1 FOR UPDATE))",
        &schema,
    );
    assert!(
        e.iter().any(|e| e.contains("the row-locking `SELECT")),
        "{e:?}"
    );
    // A rescanned `Limit` recomputes its count, through a sub-select in FROM too.
    let e = errors(
        "UPDATE q t0 SET status = 'u' WHERE t0.id IN (SELECT t3.id * t0.grp
           FROM (SELECT t1.id FROM q t1 WHERE leader_fence($1, $2) ORDER BY 1
                  LIMIT (SELECT count(*) FROM (SELECT 1 FROM q t2 FOR UPDATE) l)) t3
          WHERE leader_fence($1, $2))",
        &schema,
    );
    assert!(
        e.iter().any(|e| e.contains("the row-locking `SELECT")),
        "{e:?}"
    );
    for accepted in [
        // The statement's own plan is never rescanned: its one-time fence keeps them.
        "UPDATE q t0 SET status = 'u' WHERE leader_fence($1, $2)
           AND t0.id = (SELECT t2.id FROM q t2 ORDER BY t2.id LIMIT 1 FOR UPDATE)",
        // A sub-select in IN is a sub-plan or a join, evaluated when its level runs.
        "UPDATE q t0 SET status = 'u' WHERE t0.id IN (SELECT t1.id * t0.grp FROM q t1
           WHERE leader_fence($1, $2)
             AND t1.id IN (SELECT t2.id FROM q t2 ORDER BY t2.id LIMIT 1 FOR UPDATE))",
    ] {
        let e = errors(accepted, &schema);
        assert!(e.is_empty(), "{accepted}\n{e:?}");
    }
}

#[test]
fn a_limit_is_evaluated_where_its_query_runs_or_is_rescanned() {
    let schema = with_take_budget();
    // Under the statement's one-time fence the sub-select in FROM never runs, and the
    // statement's plan is never rescanned: its LIMIT is never computed (PostgreSQL 15 wrote no
    // row of `budget` for a superseded leader; the differential's false rejections held 3,775
    // such statements in 100,000).
    for accepted in [
        "SELECT t3.id FROM (SELECT t1.id FROM q t1 WHERE leader_fence($1, $2) ORDER BY 1
           LIMIT (SELECT take_budget(t2) FROM q t2 ORDER BY t2.id LIMIT 1)) t3
          WHERE leader_fence($1, $2)",
        "SELECT t3.id FROM (SELECT t1.id FROM q t1 ORDER BY 1
           LIMIT (SELECT t2.take_budget FROM q t2 ORDER BY t2.id LIMIT 1)) t3
          WHERE leader_fence($1, $2)",
    ] {
        let e = errors(accepted, &schema);
        assert!(e.is_empty(), "{accepted}\n{e:?}");
    }
    // The statement's own LIMIT is computed before its fence.
    let e = errors(
        "SELECT t1.id FROM q t1 WHERE leader_fence($1, $2)
          LIMIT (SELECT take_budget(t2) FROM q t2 ORDER BY t2.id LIMIT 1)",
        &schema,
    );
    assert!(e.iter().any(|e| e.contains("LIMIT or OFFSET")), "{e:?}");
    // A correlated sub-select rescans its plan at each run, and a rescanned Limit recomputes
    // its count, a call written in it too, though the fence keeps the Limit from running.
    let e = errors(
        "SELECT t0.id FROM q t0 WHERE t0.id IN (SELECT s.id * t0.grp
           FROM (SELECT t1.id FROM q t1 ORDER BY 1 LIMIT bump(t0.id)) s
          WHERE leader_fence($1, $2))",
        &schema,
    );
    assert!(
        e.iter()
            .any(|e| e.contains("cannot see what `bump(..)` does") || e.contains("`bump`")),
        "{e:?}"
    );
}

#[test]
fn a_limit_that_counts_a_gated_query_is_zero_and_nothing_below_it_runs() {
    let schema = with_take_budget();
    // `count(*)` of no rows is 0, and a Limit of 0 returns before it reads a row: no lock, no
    // call below it.
    for accepted in [
        "SELECT t1.id FROM q t1 ORDER BY 1
          LIMIT (SELECT count(*) FROM q t2 WHERE leader_fence($1, $2)) FOR UPDATE SKIP LOCKED",
        "SELECT t1.id * take_budget(t1) FROM q t1
          LIMIT (SELECT count(*) FROM q t2 WHERE leader_fence($1, $2))",
        "(SELECT id FROM q FOR UPDATE) UNION ALL (SELECT id FROM q FOR UPDATE)
          LIMIT (SELECT count(*) FROM q t2 WHERE leader_fence($1, $2))",
        "SELECT t1.id FROM q t1 ORDER BY 1
          LIMIT (SELECT count(DISTINCT t2.grp) FROM q t2 WHERE leader_fence($1, $2)) FOR UPDATE",
    ] {
        let e = errors(accepted, &schema);
        assert!(e.is_empty(), "{accepted}\n{e:?}");
    }
    // Any other value of an empty query is NULL, and a NULL limit is no limit; a GROUP BY
    // or HAVING may leave no row to count; a count of the outer query's column is the outer
    // query's aggregate.
    for limit in [
        "(SELECT max(t2.id) FROM q t2 WHERE leader_fence($1, $2))",
        "(SELECT count(t1.id) FROM q t2 WHERE leader_fence($1, $2))",
        "(SELECT count(*) FROM q t2 WHERE leader_fence($1, $2) GROUP BY t2.grp)",
        "(SELECT count(*) FROM q t2 WHERE leader_fence($1, $2) HAVING count(*) > 0)",
        "(SELECT count(*) FROM q t2 WHERE t2.id > 0)",
    ] {
        let e = errors(
            &format!("SELECT t1.id FROM q t1 ORDER BY 1 LIMIT {limit} FOR UPDATE SKIP LOCKED"),
            &schema,
        );
        assert!(!e.is_empty(), "{limit} was taken for a limit of 0");
    }
}

/// Functions are resolved as PostgreSQL resolves a call: by schema, name, argument count and
/// the argument types the SQL shows. An IMMUTABLE `score(integer)` is not refused for a VOLATILE
/// `score(text)`; a call either may be counts VOLATILE.
#[test]
fn a_call_is_what_the_overloads_its_arguments_may_pick_are() {
    let schema = base()
        .function("score", "integer", Volatility::Immutable)
        .function("score", "text", Volatility::Volatile)
        .function("billing.score", "bigint", Volatility::Volatile)
        .schema();
    for accepted in [
        "UPDATE jobs SET runs = score(5) WHERE leader_fence($1, $2) AND score(runs) > 0",
        "UPDATE jobs SET runs = 1 WHERE public.score(2::int) > 0 AND leader_fence($1, $2)",
        "UPDATE jobs SET runs = 1 WHERE public.score(jobs.runs) > 0 AND leader_fence($1, $2)",
    ] {
        assert_eq!(
            errors(accepted, &schema),
            Vec::<String>::new(),
            "{accepted}"
        );
    }
    // A string literal's type PostgreSQL picks among the candidates: either overload.
    // (Each in a LIMIT, which PostgreSQL evaluates before the fence.)
    let e = errors(
        "SELECT id FROM jobs WHERE leader_fence($1, $2) LIMIT score('7') FOR UPDATE",
        &schema,
    );
    assert!(
        e[0].contains("has `public.score(text)` VOLATILE") && e[0].contains("may be any of"),
        "{e:?}"
    );
    // Unqualified, an integer fits `billing.score(bigint)` too (an implicit cast), which the
    // search path may pick: both are candidates.
    for sql in [
        "SELECT id FROM jobs WHERE leader_fence($1, $2) LIMIT score(7) FOR UPDATE",
        "SELECT id FROM jobs WHERE leader_fence($1, $2) LIMIT score(2::int) FOR UPDATE",
    ] {
        let e = errors(sql, &schema);
        assert!(
            e[0].contains("`billing.score(bigint)` VOLATILE"),
            "{sql}: {e:?}"
        );
    }
}

/// A function `ALTER FUNCTION … STABLE` made stable is stable: the catalog says so.
#[test]
fn a_function_made_stable_stands_anywhere() {
    let schema = base()
        .function("price", "bigint", Volatility::Stable)
        .schema();
    let sql = "UPDATE jobs SET runs = 1 WHERE price(id) > 0 AND leader_fence($1, $2)";
    assert_eq!(errors(sql, &schema), Vec::<String>::new());
}

/// `t.f` where `t` has no column `f` calls `f(t)` only if a function takes `t`'s row: no such
/// function, and PostgreSQL refuses the statement; a STABLE one changes nothing.
#[test]
fn attribute_notation_calls_what_takes_the_tables_row() {
    let schema = base()
        .function("label", "jobs", Volatility::Stable)
        .function("take", "batch", Volatility::Volatile)
        .schema();
    let sql = "UPDATE jobs j SET runs = 1 FROM batch b
                WHERE j.label = b.note AND leader_fence($1, $2)";
    assert_eq!(errors(sql, &schema), Vec::<String>::new());
    // Read on `batch`'s rows before the gate on rows (the fenced `IN`) removes them.
    let e = errors(
        "UPDATE jobs j SET runs = 1 FROM batch b
          WHERE b.take = 1 AND j.id IN (SELECT id FROM batch WHERE leader_fence($1, $2))",
        &schema,
    );
    assert!(
        e[0].contains("`b.take` may call a function `take(b)`")
            && e[0].contains("`public.take(batch)` VOLATILE"),
        "{e:?}"
    );
}

/// A statement-level trigger fires once per statement even when it changes no row: a claim
/// that fires one is refused however it is fenced, through a view too; a row-level one is not
/// in the schema's list and changes nothing for a superseded leader.
#[test]
fn a_claim_that_fires_a_statement_level_trigger_is_refused() {
    let schema = base()
        .statement_trigger("jobs", "audit_jobs", &[Event::Update, Event::Insert])
        .with_rule("batch", Event::Delete)
        .schema();
    let e = errors(
        "UPDATE jobs SET runs = runs + 1 WHERE leader_fence($1, $2)",
        &schema,
    );
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("fires the statement-level trigger `audit_jobs` on `public.jobs`")
            && e[0].contains("make the trigger `FOR EACH ROW`"),
        "{e:?}"
    );
    let e = errors(
        "UPDATE due_jobs SET due = now() WHERE leader_fence($1, $2)",
        &schema,
    );
    assert!(e[0].contains("`audit_jobs`"), "through the view: {e:?}");
    let e = errors("DELETE FROM batch WHERE leader_fence($1, $2)", &schema);
    assert!(e[0].contains("a rule on `public.batch`"), "{e:?}");
    // Other events, other tables: accepted.
    for accepted in [
        "DELETE FROM jobs WHERE leader_fence($1, $2)",
        "UPDATE batch SET note = 'x' WHERE leader_fence($1, $2)",
    ] {
        assert_eq!(
            errors(accepted, &schema),
            Vec::<String>::new(),
            "{accepted}"
        );
    }
}

/// `pg_notify` is a VOLATILE built-in: under the level's one-time fence PostgreSQL never calls
/// it for a superseded leader; before the fence it does.
#[test]
fn pg_notify_stands_where_the_fence_has_held() {
    let schema = schema();
    for accepted in [
        "SELECT pg_notify('claimed', id::text) FROM jobs WHERE leader_fence($1, $2) FOR UPDATE",
        "UPDATE jobs SET runs = 1 WHERE leader_fence($1, $2) RETURNING pg_notify('c', id::text)",
        // A VOLATILE call keeps its condition from being evaluated up front.
        "UPDATE jobs SET runs = 1 WHERE leader_fence($1, $2) AND pg_notify('c', 'x') IS NULL",
    ] {
        assert_eq!(
            errors(accepted, &schema),
            Vec::<String>::new(),
            "{accepted}"
        );
    }
    let e = errors(
        "UPDATE jobs SET runs = 1 WHERE leader_fence($1, $2) AND (SELECT pg_notify('c', 'x')) IS NULL",
        &schema,
    );
    assert!(e[0].contains("`pg_notify` is a VOLATILE built-in"), "{e:?}");
}

/// The columns of a claim's own sub-selects and `WITH` queries are named as PostgreSQL names
/// them: a cast after its column, `coalesce(..)` as `coalesce`, a recursive `WITH` query's by
/// its column list; and a range whose bound is a fenced aggregate of no rows is null.
#[test]
fn a_claims_own_columns_are_named_as_postgresql_names_them() {
    let schema = schema();
    for accepted in [
        "UPDATE jobs j SET runs = 1
           FROM (SELECT id::bigint, coalesce(note, '') FROM batch WHERE leader_fence($1, $2)) b
          WHERE j.id = b.id AND b.coalesce <> 'x'",
        "WITH RECURSIVE chain (job, depth) AS (
             SELECT id, 0 FROM batch WHERE leader_fence($1, $2)
             UNION ALL SELECT c.job, c.depth + 1 FROM chain c WHERE c.depth < 3)
         UPDATE jobs j SET runs = c.depth FROM chain c WHERE j.id = c.job",
        "UPDATE jobs SET runs = 0
          WHERE due BETWEEN now() - interval '1 day'
                        AND (SELECT max(due) FROM jobs WHERE leader_fence($1, $2))",
    ] {
        assert_eq!(
            errors(accepted, &schema),
            Vec::<String>::new(),
            "{accepted}"
        );
    }
    // `NOT BETWEEN` a NULL bound may be true.
    let e = errors(
        "UPDATE jobs SET runs = 0
          WHERE due NOT BETWEEN now() AND (SELECT max(due) FROM jobs WHERE leader_fence($1, $2))",
        &schema,
    );
    assert!(e[0].contains("is not gated by the fence"), "{e:?}");
}

/// A read of a recursive `WITH` query in its own definition reads its working table, empty when
/// its first arm is; a read of a sibling declared after it is not.
#[test]
fn only_a_recursive_querys_read_of_itself_is_empty_with_its_first_arm() {
    let schema = schema();
    let e = errors(
        "WITH RECURSIVE a AS (SELECT id FROM b), b AS (SELECT id FROM batch)
         UPDATE jobs SET runs = 1 WHERE id IN (SELECT id FROM a)",
        &schema,
    );
    assert!(e[0].contains("is not gated by the fence"), "{e:?}");
}

/// A view PostgreSQL rewrites into its one table and pulls up into the query that reads it is
/// locked as that table is, after the query's conditions; one whose columns call a function may
/// not be pulled up.
#[test]
fn a_lock_on_a_view_read_as_its_table_lands_after_the_gate_on_rows() {
    let schema = base()
        .updatable_view(
            "open_jobs",
            "id bigint, owner text",
            &["jobs"],
            " SELECT jobs.id,\n    jobs.owner::text AS owner\n   FROM jobs\n  WHERE jobs.runs = 0;",
        )
        .updatable_view(
            "labelled_jobs",
            "id bigint, label text",
            &["jobs"],
            " SELECT jobs.id,\n    upper(jobs.owner) AS label\n   FROM jobs;",
        )
        .schema();
    let claim = |view: &str| {
        format!(
            "SELECT id FROM {view} WHERE id IN (SELECT id FROM batch WHERE leader_fence($1, $2))
               FOR UPDATE SKIP LOCKED"
        )
    };
    assert_eq!(errors(&claim("open_jobs"), &schema), Vec::<String>::new());
    let e = errors(&claim("labelled_jobs"), &schema);
    assert!(e[0].contains("may be a view"), "{e:?}");
}
