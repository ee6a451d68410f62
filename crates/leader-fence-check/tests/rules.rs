//! The fence rules, case by case: what is accepted, what is refused and what the message says.
//! Every accepted shape here is also run against PostgreSQL with a superseded token in
//! `tests/tests/fenced_sql.rs`.

mod support;

use leader_fence_check::{Hints, check, check_with};

/// The fence calls of an accepted statement, as `(role, token)` placeholder numbers.
fn accepted(sql: &str) -> Vec<(usize, usize)> {
    let checked = check(sql);
    assert!(
        checked.errors.is_empty(),
        "expected {sql:?} to be accepted, got {:#?}",
        checked.errors
    );
    checked.fences.iter().map(|f| (f.role, f.token)).collect()
}

/// [`accepted`], on a schema in which `t`, `u` and `v` are tables with columns `id`, `a`, `b`.
/// Without a schema, a name may be a view whose column is a constant (`SELECT 1 AS id FROM x`),
/// which PostgreSQL pulls up into the query, so a condition on that column may read no column
/// and run before the fence: such a statement is refused without the schema.
fn accepted_on_tables(sql: &str) {
    let schema = support::prepared()
        .table("t", "id bigint, a bigint, b boolean")
        .table("u", "id bigint, a bigint, b boolean")
        .table("v", "id bigint, a bigint, b boolean")
        .schema();
    let checked = check_with(sql, &Hints::default().with_schema(&schema));
    assert!(
        checked.errors.is_empty(),
        "expected {sql:?} to be accepted on tables, got {:#?}",
        checked.errors
    );
    let unknown = refused(sql);
    assert!(
        unknown.contains("it is in a condition that reads no column"),
        "{unknown}"
    );
}

/// The messages of a refused statement, joined.
fn refused(sql: &str) -> String {
    let checked = check(sql);
    assert!(!checked.errors.is_empty(), "expected {sql:?} to be refused");
    checked
        .errors
        .iter()
        .map(|e| e.message.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn locking_select_with_the_fence_in_its_own_where() {
    assert_eq!(
        accepted(
            "SELECT id FROM jobs WHERE due <= now() AND leader_fence($1, $2) LIMIT 10 FOR UPDATE SKIP LOCKED"
        ),
        [(1, 2)]
    );
    assert_eq!(
        accepted(
            "SELECT id FROM t WHERE a AND (b AND leader_fence($1::text, $2::bigint)) FOR NO KEY UPDATE"
        ),
        [(1, 2)]
    );
    accepted("SELECT id FROM t WHERE leader_fence($1, $2) FOR KEY SHARE");
    accepted("SELECT id FROM t WHERE leader_fence($1, $2) FOR SHARE NOWAIT");
}

#[test]
fn for_update_of_several_tables_parses() {
    assert_eq!(
        accepted(
            "SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id
              WHERE t.active AND leader_fence($1, $2)
              FOR UPDATE OF j, t SKIP LOCKED"
        ),
        [(1, 2)]
    );
}

#[test]
fn update_through_a_locking_sub_select() {
    assert_eq!(
        accepted(
            "UPDATE outbox SET status = 'sending' WHERE id IN (SELECT id FROM outbox
              WHERE status = 'pending' AND leader_fence($2, $3) LIMIT $1 FOR UPDATE SKIP LOCKED)
             RETURNING id"
        ),
        [(2, 3)]
    );
    accepted(
        "UPDATE outbox SET status = 'sending' WHERE id = ANY (ARRAY (SELECT id FROM outbox
          WHERE leader_fence($1, $2) FOR UPDATE SKIP LOCKED))",
    );
    accepted(
        "DELETE FROM outbox o WHERE EXISTS (SELECT 1 FROM outbox i
          WHERE i.id = o.id AND leader_fence($1, $2) FOR UPDATE SKIP LOCKED)",
    );
    accepted(
        "UPDATE outbox SET status = 'sending' WHERE id = ANY (SELECT id FROM outbox
          WHERE leader_fence($1, $2) FOR UPDATE)",
    );
}

#[test]
fn cte_that_locks_then_update_from_it() {
    assert_eq!(
        accepted(
            "WITH c AS (SELECT id FROM outbox WHERE status = 'pending' AND leader_fence($1, $2)
                         ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)
             UPDATE outbox o SET status = 'sending' FROM c
              WHERE o.id = c.id AND leader_fence($1, $2) RETURNING o.id"
        ),
        [(1, 2), (1, 2)]
    );
    accepted(
        "WITH c AS (SELECT id FROM outbox WHERE leader_fence($1, $2) FOR UPDATE SKIP LOCKED)
         DELETE FROM outbox USING c WHERE id = c.id",
    );
    // `o.id` is read on outbox's rows while the join finds `c` empty; without the schema it
    // may be a call of a function `id(outbox)`.
    let e = refused(
        "WITH c AS (SELECT id FROM outbox WHERE leader_fence($1, $2) FOR UPDATE SKIP LOCKED)
         UPDATE outbox o SET status = 'sending' FROM c WHERE o.id = c.id RETURNING o.id",
    );
    assert!(e.contains("`o.id` may call a function `id(o)`"), "{e}");
    assert!(e.contains("given no schema"), "{e}");
    assert!(!e.contains("`c.id` may call"), "{e}");
}

#[test]
fn data_modifying_cte_with_its_own_fence() {
    accepted(
        "WITH claimed AS (UPDATE jobs SET owner = $2 WHERE owner IS NULL AND leader_fence($1, $2)
                          RETURNING id)
         SELECT id FROM claimed",
    );
    accepted(
        "WITH picked AS (SELECT id FROM jobs WHERE leader_fence($1, $2) LIMIT 5 FOR UPDATE SKIP LOCKED),
              claimed AS (UPDATE jobs SET owner = $2 FROM picked
                           WHERE jobs.id = picked.id AND leader_fence($1, $2) RETURNING jobs.id)
         SELECT id FROM claimed",
    );
}

#[test]
fn data_modifying_cte_gated_only_outside_is_refused() {
    let e = refused(
        "WITH claimed AS (UPDATE jobs SET owner = $2 WHERE owner IS NULL RETURNING id)
         SELECT id FROM claimed WHERE leader_fence($1, $2)",
    );
    assert!(e.contains("`UPDATE jobs` is not gated by the fence"), "{e}");
    assert!(
        e.contains("PostgreSQL runs a data-modifying WITH query to completion"),
        "{e}"
    );
    assert!(
        e.contains("line 1 of the SQL: `WITH claimed AS (UPDATE jobs"),
        "{e}"
    );
    let e = refused(
        "WITH gone AS (DELETE FROM jobs WHERE done RETURNING id)
         SELECT id FROM jobs WHERE leader_fence($1, $2) FOR UPDATE",
    );
    assert!(e.contains("`DELETE FROM jobs` is not gated"), "{e}");
}

#[test]
fn gated_sub_select_under_or_gates_nothing() {
    let e = refused(
        "UPDATE jobs SET owner = $3 WHERE (status = 'failed' AND attempts < 5)
            OR id IN (SELECT id FROM jobs WHERE status = 'pending' AND leader_fence($1, $2)
                       FOR UPDATE SKIP LOCKED)",
    );
    assert!(e.contains("`UPDATE jobs` is not gated by the fence"), "{e}");
    assert!(
        e.contains("the fence is nested") || e.contains("under OR"),
        "{e}"
    );
    refused(
        "UPDATE jobs SET a = 1 WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE leader_fence($1, $2))",
    );
    refused(
        "UPDATE jobs SET a = 1 WHERE id NOT IN (SELECT id FROM jobs WHERE leader_fence($1, $2))",
    );
    refused(
        "UPDATE jobs SET a = 1 WHERE id <> ALL (SELECT id FROM jobs WHERE leader_fence($1, $2))",
    );
    refused(
        "UPDATE jobs SET a = 1 WHERE coalesce(id = (SELECT min(id) FROM jobs WHERE leader_fence($1, $2)), true)",
    );
}

#[test]
fn fence_under_or_not_case_or_inside_an_expression() {
    assert!(
        refused("SELECT id FROM t WHERE a = 1 OR leader_fence($1, $2) FOR UPDATE")
            .contains("the fence is under OR")
    );
    assert!(
        refused("UPDATE t SET a = 1 WHERE NOT leader_fence($1, $2)")
            .contains("the fence is under NOT")
    );
    assert!(
        refused(
            "SELECT id FROM t WHERE CASE WHEN a THEN leader_fence($1, $2) ELSE true END FOR UPDATE"
        )
        .contains("the fence is inside CASE")
    );
    assert!(
        refused("SELECT id FROM t WHERE leader_fence($1, $2) = true FOR UPDATE")
            .contains("the fence is nested")
    );
    assert!(
        refused("SELECT id FROM t WHERE a AND (b OR (c AND leader_fence($1, $2))) FOR UPDATE")
            .contains("the fence is under OR")
    );
}

#[test]
fn fence_only_in_set_values_select_list_or_returning() {
    let e = refused("UPDATE t SET fenced = leader_fence($1, $2) WHERE id = 1");
    assert!(e.contains("`UPDATE t` is not gated"), "{e}");
    assert!(e.contains("a fence elsewhere"), "{e}");
    refused("UPDATE t SET a = 1 WHERE id = 1 RETURNING leader_fence($1, $2)");
    refused("SELECT id, leader_fence($1, $2) FROM t FOR UPDATE");
}

#[test]
fn locking_sub_select_needs_its_own_fence() {
    let e = refused(
        "UPDATE t SET a = 1 WHERE id IN (SELECT id FROM u WHERE leader_fence($1, $2)) AND id IN
           (SELECT id FROM t WHERE b FOR UPDATE SKIP LOCKED)",
    );
    assert!(
        e.contains("the row-locking `SELECT … FROM t … FOR UPDATE` is not gated"),
        "{e}"
    );
    assert!(
        e.contains("does not stop this query from locking rows"),
        "{e}"
    );
    assert!(e.contains("line 2 of the SQL"), "{e}");
    // A WITH query that only reads runs as far as a query reads it: under a one-time fence, not
    // at all (PostgreSQL 15: `LockRows (never executed)`); read up front, in full.
    accepted(
        "WITH c AS (SELECT id FROM t FOR UPDATE) UPDATE t SET a = 1 FROM c
          WHERE id = c.id AND leader_fence($1, $2)",
    );
    accepted("WITH c AS (SELECT id FROM t FOR UPDATE) SELECT 1 WHERE leader_fence($1, $2)");
    let e = refused(
        "WITH c AS (SELECT id FROM t FOR UPDATE) UPDATE t SET a = 1
          WHERE leader_fence($1, $2) AND EXISTS (SELECT 1 FROM c)",
    );
    assert!(e.contains("WITH query"), "{e}");
    refused(
        "WITH c AS (SELECT id FROM t FOR UPDATE), d AS (SELECT id FROM c)
         UPDATE t SET a = 1 FROM d WHERE t.id = d.id",
    );
    // In a WITH RECURSIVE whose queries read one declared after them, every one is taken to
    // run.
    accepted(
        "WITH RECURSIVE c AS (SELECT id FROM t FOR UPDATE) UPDATE t SET a = 1 FROM c
          WHERE id = c.id AND leader_fence($1, $2)",
    );
    refused(
        "WITH RECURSIVE d AS (SELECT id FROM c), c AS (SELECT id FROM t FOR UPDATE)
         UPDATE t SET a = 1 FROM d WHERE t.id = d.id AND leader_fence($1, $2)",
    );
    // A one-time fence of the enclosing query stops everything that reads its rows, a
    // sub-select in its FROM or in a condition on its columns included.
    accepted("SELECT * FROM (SELECT id FROM t FOR UPDATE) s WHERE leader_fence($1, $2)");
    accepted_on_tables(
        "SELECT id FROM t WHERE leader_fence($1, $2) AND id IN (SELECT id FROM u FOR SHARE)",
    );
    accepted_on_tables(
        "UPDATE t SET a = 1 WHERE leader_fence($1, $2) AND id IN
           (SELECT id FROM t WHERE b FOR UPDATE SKIP LOCKED)",
    );
    // But not a condition that reads none of its columns: PostgreSQL may evaluate that once,
    // up front, beside the fence and before it.
    let e = refused(
        "SELECT id FROM t WHERE leader_fence($1, $2) AND EXISTS (SELECT 1 FROM u FOR UPDATE)",
    );
    assert!(e.contains("may evaluate once up front"), "{e}");
    // Nor a LIMIT, which PostgreSQL evaluates before the query it limits reads a row.
    let e = refused(
        "SELECT id FROM t WHERE leader_fence($1, $2)
          LIMIT (SELECT count(*) FROM (SELECT 1 FROM u FOR UPDATE) l)",
    );
    assert!(e.contains("LIMIT or OFFSET"), "{e}");
}
#[test]
fn conditions_of_a_flattened_sub_select_join_the_fence_up_front() {
    // PostgreSQL merges a plain sub-select in FROM into the query around it, and a sub-select
    // of `EXISTS` or `IN` into a semi-join: a condition of it that reads none of its columns
    // becomes one more up-front condition beside the outer fence, evaluated in PostgreSQL's
    // order. Found by `fence-differential` (seed 1, 100 000 statements).
    let e = refused(
        "SELECT s.id FROM (SELECT t0.id FROM t t0 WHERE EXISTS (SELECT 1 FROM u FOR UPDATE)) s
          WHERE leader_fence($1, $2)",
    );
    assert!(e.contains("may flatten into the query around it"), "{e}");
    let e = refused(
        "UPDATE t SET a = 1 FROM (SELECT id FROM t s WHERE (SELECT u.f FROM u LIMIT 1) = 1) g
          WHERE t.id = g.id AND leader_fence($1, $2)",
    );
    assert!(e.contains("`u.f` may call a function"), "{e}");
    refused(
        "SELECT id FROM t WHERE leader_fence($1, $2)
            AND id IN (SELECT id FROM u WHERE EXISTS (SELECT 1 FROM v FOR UPDATE))",
    );
    refused(
        "SELECT id FROM t WHERE leader_fence($1, $2)
            AND EXISTS (SELECT 1 FROM u WHERE u.id = t.id AND EXISTS (SELECT 1 FROM v FOR UPDATE)
                         LIMIT 1)",
    );
    // Flattened twice, and through an arm of UNION ALL.
    refused(
        "SELECT id FROM (SELECT id FROM (SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u FOR SHARE))
          a) b WHERE leader_fence($1, $2)",
    );
    refused(
        "SELECT id FROM (SELECT id FROM t UNION ALL
                         SELECT id FROM u WHERE EXISTS (SELECT 1 FROM v FOR SHARE)) s
          WHERE leader_fence($1, $2)",
    );
    // What keeps a sub-select a query of its own keeps the outer fence in front of it.
    for own in ["LIMIT 5", "OFFSET 0", "ORDER BY 1", "FOR UPDATE"] {
        accepted(&format!(
            "SELECT * FROM (SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u FOR UPDATE) {own}) s
              WHERE leader_fence($1, $2)"
        ));
    }
    accepted(
        "SELECT * FROM (SELECT grp FROM t WHERE EXISTS (SELECT 1 FROM u FOR UPDATE) GROUP BY grp)
          s WHERE leader_fence($1, $2)",
    );
    accepted(
        "SELECT * FROM (WITH w AS (SELECT 1) SELECT id FROM t
                         WHERE EXISTS (SELECT 1 FROM u FOR UPDATE)) s
          WHERE leader_fence($1, $2)",
    );
    // A condition that reads the sub-select's rows is evaluated on them, after the fence.
    accepted_on_tables(
        "SELECT * FROM (SELECT id FROM t WHERE id IN (SELECT id FROM u FOR UPDATE)) s
          WHERE leader_fence($1, $2)",
    );
}

#[test]
fn a_gate_that_reads_no_column_of_its_query_is_evaluated_once_before_it() {
    // PostgreSQL runs the sub-select of such a condition as an init plan and the condition as a
    // One-Time Filter above the query's scans: the sub-select in FROM, which locks rows as it
    // reads them, never runs for a superseded leader.
    let locking = |gate: &str| {
        format!(
            "SELECT b.id FROM (SELECT id FROM t ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED) b
              WHERE b.id > 0 AND {gate}"
        )
    };
    for gate in [
        "EXISTS (SELECT 1 FROM u WHERE leader_fence($1, $2))",
        "EXISTS (SELECT * FROM u WHERE leader_fence($1, $2))",
        "1 = (SELECT 1 FROM u WHERE leader_fence($1, $2))",
        "1 IN (SELECT u.id FROM u WHERE leader_fence($1, $2))",
        "$3::int = ANY (ARRAY (SELECT v.n FROM u v WHERE leader_fence($1, $2)))",
    ] {
        accepted(&locking(gate));
    }
    // Not once: it reads a column of the query (a semi-join, or a condition per row), it may
    // (`id` may be `b`'s where `u` has none), or it calls a function outside the sub-select.
    for gate in [
        "EXISTS (SELECT 1 FROM u WHERE u.id = b.id AND leader_fence($1, $2))",
        "EXISTS (SELECT 1 FROM u WHERE id = 1 AND leader_fence($1, $2))",
        "b.id IN (SELECT u.id FROM u WHERE leader_fence($1, $2))",
        "floor(random()) = (SELECT 1 FROM u WHERE leader_fence($1, $2))",
    ] {
        let e = refused(&locking(gate));
        assert!(e.contains("lock"), "{gate}: {e}");
    }
    // The query's LIMIT is still evaluated before it.
    refused(
        "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE leader_fence($1, $2))
          LIMIT (SELECT count(*) FROM v FOR UPDATE)",
    );
}

#[test]
fn conditions_on_an_outer_column_read_no_column_of_their_query() {
    // `a` may be a column of `t`, outside the sub-select: to the sub-select it is a parameter,
    // so the condition may run before the sub-select's fence.
    refused(
        "SELECT * FROM t WHERE EXISTS (SELECT id FROM u WHERE leader_fence($1, $2)
                                          AND a IN (SELECT id FROM v FOR UPDATE))",
    );
    // In a sub-select in FROM that is not LATERAL, only its own table can give `a`.
    accepted_on_tables(
        "SELECT * FROM t, (SELECT id FROM u WHERE leader_fence($1, $2)
                              AND a IN (SELECT id FROM v FOR UPDATE)) s",
    );
    refused(
        "SELECT * FROM t, LATERAL (SELECT id FROM u WHERE leader_fence($1, $2)
                                      AND a IN (SELECT id FROM v FOR UPDATE)) s",
    );
}

#[test]
fn gated_from_items_and_joins() {
    // A join empties the rows of a query that changes them...
    accepted(
        "UPDATE t SET a = 1 FROM (SELECT id FROM u WHERE leader_fence($1, $2)) g WHERE id = g.id",
    );
    accepted(
        "WITH g AS (SELECT id FROM u WHERE leader_fence($1, $2))
         DELETE FROM t USING g WHERE id = g.id",
    );
    // ...but the gated side is the optional one of a left join: every row of t comes through.
    refused(
        "WITH g AS (SELECT gid FROM u WHERE leader_fence($1, $2))
         DELETE FROM t USING t AS x LEFT JOIN g ON x.id = g.gid WHERE x.id = t.id",
    );
    // A join does not stop a lock: PostgreSQL may lock t's rows (in a view it cannot
    // flatten, as it reads them) before the join finds the gated side empty.
    let e = refused(
        "SELECT t.id FROM t JOIN (SELECT id FROM u WHERE leader_fence($1, $2)) g ON g.id = t.id
          FOR UPDATE OF t",
    );
    assert!(e.contains("a view PostgreSQL cannot flatten"), "{e}");
    refused("SELECT t.id FROM t JOIN u ON u.id = t.id AND leader_fence($1, $2) FOR UPDATE OF t");
    accepted("SELECT t.id FROM t JOIN u ON u.id = t.id WHERE leader_fence($1, $2) FOR UPDATE OF t");
}
#[test]
fn set_operations() {
    accepted(
        "UPDATE t SET a = 1 WHERE id IN (SELECT id FROM u WHERE leader_fence($1, $2)
                                         UNION SELECT id FROM v WHERE leader_fence($1, $2))",
    );
    refused(
        "UPDATE t SET a = 1 WHERE id IN (SELECT id FROM u WHERE leader_fence($1, $2)
                                         UNION SELECT id FROM v)",
    );
    accepted(
        "UPDATE t SET a = 1 WHERE id IN (SELECT id FROM u WHERE leader_fence($1, $2)
                                         INTERSECT SELECT id FROM v)",
    );
    refused(
        "UPDATE t SET a = 1 WHERE id IN (SELECT id FROM u EXCEPT
                                         SELECT id FROM v WHERE leader_fence($1, $2))",
    );
}

#[test]
fn aggregates_return_a_row_from_nothing() {
    let e = refused(
        "UPDATE t SET a = 1 WHERE EXISTS (SELECT count(*) FROM u WHERE leader_fence($1, $2))",
    );
    assert!(e.contains("`UPDATE t` is not gated"), "{e}");
    refused(
        "UPDATE t SET a = 1 WHERE id IN (SELECT coalesce(max(id), 0) FROM u WHERE leader_fence($1, $2))",
    );
    refused("INSERT INTO log SELECT 1 FROM u WHERE leader_fence($1, $2) HAVING true");
    accepted(
        "UPDATE t SET a = 1 WHERE id IN (SELECT max(id) FROM u WHERE leader_fence($1, $2) GROUP BY k)",
    );
    accepted("SELECT id, row_number() OVER () FROM u WHERE leader_fence($1, $2) FOR UPDATE");
}

#[test]
fn grouping_sets_with_the_empty_set_return_a_row_from_nothing() {
    for groups in [
        "()",
        "ROLLUP (k)",
        "CUBE (k)",
        "GROUPING SETS ((k), ())",
        "(), ()",
    ] {
        let e = refused(&format!(
            "INSERT INTO log (k) SELECT 1 FROM u WHERE leader_fence($1, $2) GROUP BY {groups}"
        ));
        assert!(
            e.contains("grouping sets include the empty set"),
            "{groups}: {e}"
        );
    }
    for groups in ["k", "k, ROLLUP (j)", "GROUPING SETS ((k), (j))"] {
        accepted(&format!(
            "INSERT INTO log (k) SELECT 1 FROM u WHERE leader_fence($1, $2) GROUP BY {groups}"
        ));
    }
}

#[test]
fn an_aggregate_of_the_outer_query_written_in_a_sub_select() {
    // `max(u.id)` reads only the outer query's column, so it is the outer query's aggregate:
    // the outer query returns a row from no rows.
    let e =
        refused("INSERT INTO log (k) SELECT (SELECT max(u.id)) FROM u WHERE leader_fence($1, $2)");
    assert!(e.contains("an aggregate in one of its sub-selects"), "{e}");
    // An unqualified column may be the outer query's too.
    refused("INSERT INTO log (k) SELECT (SELECT max(id) FROM v) FROM u WHERE leader_fence($1, $2)");
    // Qualified with the sub-select's own table, it is the sub-select's.
    accepted(
        "INSERT INTO log (k) SELECT (SELECT max(v.id) FROM v) FROM u WHERE leader_fence($1, $2)",
    );
    accepted(
        "INSERT INTO log (k) SELECT (SELECT count(*) FROM v) FROM u WHERE leader_fence($1, $2)",
    );
    // In WHERE an aggregate cannot be the outer query's (PostgreSQL refuses it there).
    accepted("UPDATE t SET a = 1 WHERE leader_fence($1, $2) AND id > (SELECT max(id) FROM v)");
}
#[test]
fn insert_select_and_merge() {
    accepted("INSERT INTO log (job_id) SELECT id FROM jobs WHERE leader_fence($1, $2) FOR UPDATE");
    accepted(
        "INSERT INTO log AS l (job_id) SELECT id FROM jobs WHERE leader_fence($1, $2)
         ON CONFLICT (job_id) DO UPDATE SET seen = excluded.seen WHERE l.seen < excluded.seen",
    );
    let e = refused("INSERT INTO log (job_id) VALUES ($1)");
    assert!(e.contains("`INSERT INTO log` is not gated"), "{e}");
    assert!(e.contains("`INSERT … VALUES` always inserts"), "{e}");
    assert!(
        e.contains("INSERT … SELECT … WHERE … AND leader_fence($2, $3)"),
        "{e}"
    );
    accepted(
        "MERGE INTO jobs j USING (SELECT id AS queue_id FROM queue WHERE leader_fence($1, $2)) q
            ON id = q.queue_id
         WHEN MATCHED THEN UPDATE SET runs = j.runs + 1
         WHEN NOT MATCHED THEN INSERT (id) VALUES (q.queue_id)",
    );
    // The join condition is read on the target's rows whatever the source holds.
    let e = refused(
        "MERGE INTO jobs j USING (SELECT id FROM queue WHERE leader_fence($1, $2)) q ON j.id = q.id
         WHEN MATCHED THEN UPDATE SET runs = j.runs + 1",
    );
    assert!(e.contains("`j.id` may call a function `id(j)`"), "{e}");
    let e = refused(
        "MERGE INTO jobs j USING queue q ON j.id = q.id AND leader_fence($1, $2)
         WHEN NOT MATCHED THEN INSERT (id) VALUES (q.id)",
    );
    assert!(e.contains("`MERGE INTO jobs` is not gated"), "{e}");
    accepted(
        "MERGE INTO jobs USING (SELECT id AS qid FROM queue) q ON id = q.qid
         WHEN MATCHED AND leader_fence($1, $2) THEN UPDATE SET runs = runs + 1",
    );
    // A fenced join condition matches no target row: `WHEN MATCHED` acts on none, and a
    // clause that does nothing needs no gate.
    accepted(
        "MERGE INTO jobs USING (SELECT id AS qid FROM queue) q ON id = q.qid AND leader_fence($1, $2)
         WHEN MATCHED AND q.qid > 0 THEN UPDATE SET runs = runs + 1
         WHEN MATCHED THEN DELETE
         WHEN NOT MATCHED THEN DO NOTHING",
    );
    // But every source row is then unmatched, and every target row unmatched by the source.
    refused(
        "MERGE INTO jobs USING (SELECT id AS qid FROM queue) q ON id = q.qid AND leader_fence($1, $2)
         WHEN MATCHED THEN DELETE WHEN NOT MATCHED BY SOURCE THEN DELETE",
    );
}
#[test]
fn reads_are_not_claims_but_their_result_is_gated_when_they_claim() {
    // A plain read neither changes nor locks rows: it is not a claim.
    let read = check("SELECT id FROM jobs WHERE due");
    assert!(read.errors.is_empty() && read.claims == 0, "{read:?}");
    assert_eq!(check("SELECT pg_advisory_xact_lock($1)").errors, []);
    assert_eq!(
        check("SELECT id FROM jobs WHERE leader_fence($1, $2)").claims,
        0
    );
    // A statement that changes rows returns nothing to a superseded leader.
    let e = refused(
        "WITH done AS (UPDATE jobs SET a = 1 WHERE leader_fence($1, $2) RETURNING id)
         SELECT count(*) FROM done",
    );
    assert!(
        e.contains("the claim `SELECT … FROM done` is not gated"),
        "{e}"
    );
    assert!(e.contains("aggregates without GROUP BY"), "{e}");
    let claim = check("SELECT id FROM jobs WHERE leader_fence($1, $2) FOR UPDATE");
    assert_eq!((claim.claims, claim.errors.len()), (1, 0));
}
#[test]
fn missing_fence_and_the_suggested_placeholders() {
    let e = refused("UPDATE jobs SET a = 1 WHERE id = $1");
    assert!(
        e.contains("add `AND leader_fence($2, $3)` to its own WHERE"),
        "{e}"
    );
    let e = refused("SELECT id FROM jobs FOR UPDATE SKIP LOCKED");
    assert!(e.contains("add `AND leader_fence($1, $2)`"), "{e}");
    let e = refused("UPDATE t SET a = $12 WHERE a OR leader_fence($4, $5)");
    assert!(e.contains("`AND leader_fence($4, $5)`"), "{e}");
}

#[test]
fn fence_in_a_comment_or_a_string_fences_nothing() {
    for sql in [
        "UPDATE t SET a = 1 WHERE id = 1 -- AND leader_fence($1, $2)",
        "UPDATE t SET a = 1 WHERE id = 1 /* leader_fence($1, $2) */",
        "UPDATE t SET a = 'leader_fence($1, $2)' WHERE note = 'AND leader_fence($1, $2)'",
    ] {
        let e = refused(sql);
        assert!(e.contains("appears only in a comment or a string"), "{e}");
    }
    // With a real fence elsewhere, the hint is not the comment one.
    let e = refused(
        "UPDATE t SET a = 1 WHERE leader_fence($1, $2) AND EXISTS (SELECT 1 FROM t FOR UPDATE) -- leader_fence",
    );
    assert!(!e.contains("comment"), "{e}");
}

#[test]
fn comments_around_a_real_fence_are_fine() {
    accepted(
        "-- claim the next batch\nSELECT id FROM t -- rows\nWHERE a = 1\n  AND leader_fence($1, $2) -- the fence\nFOR UPDATE SKIP LOCKED",
    );
}

#[test]
fn fence_arguments_are_bind_parameters() {
    let e = refused("UPDATE t SET a = 1 WHERE leader_fence('billing', $1)");
    assert!(e.contains("two bind parameters, never literals"), "{e}");
    refused("UPDATE t SET a = 1 WHERE leader_fence($1, 42)");
    refused("UPDATE t SET a = 1 WHERE leader_fence($1)");
    refused("UPDATE t SET a = 1 WHERE leader_fence($1, $2 + 1)");
}

#[test]
fn unknown_functions_are_refused() {
    let e = refused("SELECT id FROM t WHERE leader_fence($1, $2) AND claim_row(id) FOR UPDATE");
    assert!(e.contains("cannot see what `claim_row(..)` does"), "{e}");
    refused("SELECT id FROM t WHERE leader_fence($1, $2) AND public.now() < due");
    // A VOLATILE built-in stands only where the fence has held: not in a LIMIT.
    let e = refused("SELECT id FROM t WHERE leader_fence($1, $2) LIMIT nextval('s')");
    assert!(e.contains("`nextval` is a VOLATILE built-in"), "{e}");
    accepted("SELECT id, nextval('s') FROM t WHERE leader_fence($1, $2)");
    accepted(
        "SELECT id FROM t WHERE leader_fence($1, $2) AND due <= pg_catalog.now() - make_interval(secs => 5)",
    );
    accepted(
        "SELECT id FROM t WHERE leader_fence($1, $2) AND extract(epoch FROM due) > 0 AND coalesce(a, b) AND greatest(1, 2) > 0",
    );
}

#[test]
fn other_statements_are_refused() {
    for (sql, kind) in [
        ("CREATE TABLE x (id int)", "CREATE"),
        ("CALL do_work()", "CALL"),
        ("DO $$ BEGIN END $$", "DO"),
        ("COPY t FROM STDIN", "COPY"),
        ("EXPLAIN ANALYZE DELETE FROM t", "EXPLAIN"),
        ("TRUNCATE t", "TRUNCATE"),
    ] {
        let e = refused(sql);
        assert!(e.contains(&format!("cannot check a `{kind}")), "{sql}: {e}");
    }
    // Each says why it cannot be fenced and the fenced form that does its work, never to send
    // it elsewhere (which would only move it out of the check).
    for (sql, help) in [
        (
            "COPY t FROM STDIN",
            "help: insert with a fenced `INSERT INTO t (…) SELECT",
        ),
        (
            "COPY t TO STDOUT",
            "help: insert with a fenced `INSERT INTO t (…) SELECT",
        ),
        (
            "DECLARE c CURSOR FOR SELECT id FROM t FOR UPDATE",
            "help: claim a batch with a fenced locking `SELECT",
        ),
        (
            "FETCH 10 FROM c",
            "help: claim a batch with a fenced locking `SELECT",
        ),
        (
            "TRUNCATE t",
            "help: delete with a fenced `DELETE FROM t WHERE",
        ),
        (
            "CALL do_work()",
            "help: write each of its statements in the function",
        ),
        (
            "CREATE TABLE x (id int)",
            "help: change the schema in a migration",
        ),
    ] {
        let e = refused(sql);
        let lines: Vec<&str> = e.lines().collect();
        assert!(
            lines.len() == 3
                && lines[0].ends_with("it cannot be fenced")
                && lines[1].starts_with("note: ")
                && lines[2].starts_with(help),
            "{sql}: {e}"
        );
        assert!(!e.contains("outside"), "{sql}: {e}");
    }
    // The forms the help shows are accepted.
    accepted(
        "INSERT INTO t (id) SELECT id FROM unnest($3::bigint[]) AS v(id) WHERE leader_fence($1, $2)",
    );
    accepted(
        "SELECT id FROM t WHERE leader_fence($1, $2) ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED",
    );
    let e = refused("SELECT id INTO copy FROM t WHERE leader_fence($1, $2)");
    assert!(e.contains("`SELECT … INTO` creates a table"), "{e}");
    // Statements that touch no row of the application's tables may stand beside a claim.
    for sql in [
        "BEGIN",
        "COMMIT",
        "SET LOCAL lock_timeout = '1s'",
        "SHOW lock_timeout",
    ] {
        let checked = check(sql);
        assert!(
            checked.errors.is_empty() && checked.claims == 0,
            "{sql}: {checked:?}"
        );
    }
}
#[test]
fn parse_errors_and_statement_counts() {
    let e = refused("UPDATE t SET WHERE");
    assert!(
        e.starts_with("the claim's SQL does not parse as PostgreSQL: "),
        "{e}"
    );
    assert_eq!(check("").statements, 0);
    let two = check(
        "UPDATE t SET a = 1 WHERE leader_fence($1, $2); DELETE FROM t WHERE leader_fence($1, $2)",
    );
    assert_eq!(two.statements, 2);
    assert!(two.errors.is_empty());
    assert_eq!(two.fences.len(), 2);
    let one_bad = check("UPDATE t SET a = 1 WHERE leader_fence($1, $2); DELETE FROM t");
    assert_eq!(one_bad.errors.len(), 1);
    // The hint about a fence in a comment or string reads the statement's own text only.
    assert!(
        !one_bad.errors[0].message.contains("comment"),
        "{:?}",
        one_bad.errors
    );
    let commented =
        check("UPDATE t SET a = 1 WHERE leader_fence($1, $2); DELETE FROM t -- leader_fence");
    assert!(
        commented.errors[0].message.contains("comment"),
        "{:?}",
        commented.errors
    );
}

#[test]
fn recursive_with_needs_a_fence_in_its_own_parts() {
    refused(
        "WITH RECURSIVE r AS (SELECT id FROM t WHERE leader_fence($1, $2)
                              UNION ALL SELECT t.id FROM t JOIN r ON t.parent = r.id)
         UPDATE t SET a = 1 FROM r WHERE t.id = r.id",
    );
}

#[test]
fn with_query_names_shadow_tables_only_where_in_scope() {
    // `g` in the outer query is the table g: the gated WITH query is only inside the sub-select.
    refused(
        "UPDATE t SET a = 1 FROM g WHERE t.id = g.id AND t.id IN
           (WITH g AS (SELECT id FROM u WHERE leader_fence($1, $2)) SELECT id FROM g)
           OR true",
    );
    // A schema-qualified name is a table, not the WITH query.
    refused(
        "WITH g AS (SELECT id FROM u WHERE leader_fence($1, $2))
         UPDATE t SET a = 1 FROM public.g WHERE t.id = g.id",
    );
}

#[test]
fn where_current_of_is_not_gated() {
    refused("UPDATE t SET a = 1 WHERE CURRENT OF c");
}

#[test]
fn error_ranges_point_at_the_node() {
    let sql = "SELECT id FROM t\nWHERE a OR leader_fence($1, $2) FOR UPDATE";
    let checked = check(sql);
    let at = checked.errors[0].at.clone().expect("a location");
    assert_eq!(&sql[at], "t");
    let sql = "UPDATE t SET a = 1 WHERE leader_fence('r', 1)";
    let checked = check(sql);
    let at = checked.errors[0].at.clone().expect("a location");
    assert_eq!(&sql[at], "leader_fence('r', 1)");
}

#[test]
fn locks_land_where_postgresql_takes_them() {
    // The locking clause applies to the sub-select, which PostgreSQL cannot flatten (LIMIT):
    // it locks rows as it reads them, before the outer IN removes them.
    let e = refused(
        "SELECT s.id FROM (SELECT id FROM jobs ORDER BY id LIMIT 8) s
          WHERE s.id IN (SELECT id FROM jobs WHERE leader_fence($1, $2)) FOR UPDATE",
    );
    assert!(
        e.contains("applies to the sub-select `s` in its FROM"),
        "{e}"
    );
    refused(
        "SELECT id FROM (SELECT id FROM jobs LIMIT 8) s
          WHERE id = ANY (ARRAY (SELECT id FROM jobs WHERE leader_fence($1, $2))) FOR UPDATE",
    );
    // With the fence in the sub-select, or as a one-time filter of the locking query, no row
    // is read at all.
    accepted(
        "SELECT id FROM (SELECT id FROM jobs WHERE leader_fence($1, $2) LIMIT 8) s FOR UPDATE",
    );
    accepted(
        "SELECT id FROM (SELECT id FROM jobs LIMIT 8) s WHERE leader_fence($1, $2) FOR UPDATE",
    );
    // A table may be a view PostgreSQL cannot flatten: a gate on the rows it reads is too late.
    let e = refused(
        "SELECT id FROM jobs_view WHERE id IN (SELECT id FROM jobs WHERE leader_fence($1, $2))
          FOR UPDATE",
    );
    assert!(e.contains("a view PostgreSQL cannot flatten"), "{e}");
    assert!(e.contains("evaluates once before it reads any row"), "{e}");
}

#[test]
fn attribute_notation_is_a_call() {
    // In a LIMIT, evaluated before the fence of the query it limits.
    let e = refused(
        "SELECT id FROM jobs WHERE leader_fence($1, $2)
          LIMIT (SELECT q.take_budget FROM queue q LIMIT 1) FOR UPDATE",
    );
    assert!(
        e.contains("`q.take_budget` may call a function `take_budget(q)`"),
        "{e}"
    );
    assert!(e.contains("LIMIT or OFFSET"), "{e}");
    let e = refused(
        "SELECT id FROM jobs WHERE leader_fence($1, $2)
          LIMIT (SELECT (q).take_budget FROM queue q LIMIT 1) FOR UPDATE",
    );
    assert!(e.contains("`(…).take_budget` may call a function"), "{e}");
    // On the rows of a query that reads none when the fence is false, it is never evaluated.
    accepted(
        "SELECT j.id, j.due FROM jobs j WHERE leader_fence($1, $2) AND j.due < now() FOR UPDATE",
    );
    // A column the sub-select names is a column.
    accepted(
        "UPDATE jobs SET a = 1 FROM (SELECT id AS jid FROM jobs WHERE leader_fence($1, $2)) s
          WHERE id = s.jid",
    );
    // A read is a claim if it may call a function, even where no superseded leader evaluates
    // it: it must then return nothing to one (count(*) returns a row from no rows).
    let e = refused("SELECT count(*) FROM q t WHERE leader_fence($1, $2) AND t.take_budget = 1");
    assert!(e.contains("aggregates without GROUP BY"), "{e}");
    assert_eq!(
        check("SELECT t.id FROM q t WHERE leader_fence($1, $2)").claims,
        1
    );
    let read = check("SELECT q.take_budget FROM queue q");
    assert_eq!(read.claims, 1, "{read:?}");
    assert!(
        read.errors[0].message.contains("`q.take_budget` may call"),
        "{read:?}"
    );
    assert!(check("SELECT q.* FROM queue q").errors.is_empty());
}

#[test]
fn the_queue_pop() {
    // An empty scalar sub-select is null, and `id = null` is never true.
    accepted(
        "UPDATE jobs SET owner = $3
          WHERE id = (SELECT id FROM jobs WHERE owner IS NULL AND leader_fence($1, $2)
                       ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING id",
    );
    accepted(
        "DELETE FROM jobs
          WHERE (SELECT id FROM jobs WHERE leader_fence($1, $2) LIMIT 1 FOR UPDATE SKIP LOCKED) = id",
    );
    // Not through an operator that is true for null.
    refused(
        "UPDATE jobs SET owner = $3
          WHERE id IS NOT DISTINCT FROM (SELECT id FROM jobs WHERE leader_fence($1, $2) LIMIT 1)",
    );
}

#[test]
fn the_fence_may_be_schema_qualified() {
    assert_eq!(
        accepted("SELECT id FROM jobs WHERE public.leader_fence($1, $2) FOR UPDATE SKIP LOCKED"),
        [(1, 2)]
    );
}

#[test]
fn a_scalar_aggregate_that_is_null_from_no_rows_gates_a_comparison() {
    for aggregate in [
        "min(id)",
        "max(id)",
        "sum(id)",
        "avg(id)",
        "pg_catalog.max(id)",
        "max(id) FILTER (WHERE id > 0)",
        "min(DISTINCT id)",
        "bit_and(id)",
    ] {
        accepted(&format!(
            "UPDATE t SET a = 1 WHERE id < (SELECT {aggregate} FROM u WHERE leader_fence($1, $2))"
        ));
        accepted(&format!(
            "DELETE FROM t WHERE (SELECT {aggregate} FROM u WHERE leader_fence($1, $2)) >= id"
        ));
    }
    for aggregate in ["array_agg(id)", "array_agg(id ORDER BY id)"] {
        accepted(&format!(
            "UPDATE t SET a = 1 WHERE ids = (SELECT {aggregate} FROM u WHERE leader_fence($1, $2))"
        ));
    }
    accepted(
        "UPDATE t SET a = 1 WHERE name <> (SELECT string_agg(name, ',') FROM u WHERE leader_fence($1, $2))",
    );
    for aggregate in ["bool_and(done)", "bool_or(done)", "every(done)"] {
        // A bare boolean sub-select in WHERE: NULL is not true.
        accepted(&format!(
            "UPDATE t SET a = 1 WHERE (SELECT {aggregate} FROM u WHERE leader_fence($1, $2))"
        ));
    }
    // Grouped, it returns no row from no rows: a gate too.
    accepted(
        "UPDATE t SET a = 1 WHERE id < (SELECT min(id) FROM u WHERE leader_fence($1, $2) GROUP BY k)",
    );
    accepted(
        "UPDATE t SET a = 1 WHERE id < (SELECT count(*) FROM u WHERE leader_fence($1, $2) GROUP BY k)",
    );
}

#[test]
fn a_scalar_aggregate_that_is_not_null_from_no_rows_does_not_gate() {
    for sub_select in [
        // count returns 0 from no rows.
        "SELECT count(*) FROM u WHERE leader_fence($1, $2)",
        "SELECT count(id) FROM u WHERE leader_fence($1, $2)",
        // coalesce (or any expression) around the aggregate makes a value.
        "SELECT coalesce(min(id), 0) FROM u WHERE leader_fence($1, $2)",
        "SELECT min(id) IS NULL FROM u WHERE leader_fence($1, $2)",
        // HAVING and grouping sets with the empty set.
        "SELECT min(id) FROM u WHERE leader_fence($1, $2) HAVING count(*) = 0",
        "SELECT min(id) FROM u WHERE leader_fence($1, $2) GROUP BY ()",
        "SELECT min(id) FROM u WHERE leader_fence($1, $2) GROUP BY ROLLUP (k)",
        // Not gated at all.
        "SELECT min(id) FROM u",
        // Two aggregates: a row of its own.
        "SELECT min(id), count(*) FROM u WHERE leader_fence($1, $2)",
        // An aggregate of the outer query, written in the sub-select's select list.
        "SELECT (SELECT min(u.id)) FROM u WHERE leader_fence($1, $2)",
    ] {
        let e = refused(&format!("UPDATE t SET a = 1 WHERE id < ({sub_select})"));
        assert!(e.contains("`UPDATE t` is not gated"), "{sub_select}: {e}");
    }
    // A NULL row exists: EXISTS is true.
    refused("UPDATE t SET a = 1 WHERE EXISTS (SELECT min(id) FROM u WHERE leader_fence($1, $2))");
    // `ALL` of no rows is true: only the NULL row of an aggregate makes it null.
    refused("UPDATE t SET a = 1 WHERE id <> ALL (SELECT id FROM u WHERE leader_fence($1, $2))");
    refused(
        "UPDATE t SET a = 1 WHERE id <> ALL (SELECT count(*) FROM u WHERE leader_fence($1, $2))",
    );
    // Not a strict comparison: IS DISTINCT FROM is true against NULL.
    refused(
        "UPDATE t SET a = 1 WHERE id IS DISTINCT FROM ANY (SELECT min(id) FROM u WHERE leader_fence($1, $2))",
    );
    // Not a comparison: IS DISTINCT FROM is true against NULL.
    refused(
        "UPDATE t SET a = 1 WHERE id IS DISTINCT FROM (SELECT min(id) FROM u WHERE leader_fence($1, $2))",
    );
    // A window function returns a row per input row: none from no rows, which gates.
    accepted(
        "UPDATE t SET a = 1 WHERE id < (SELECT min(id) OVER () FROM u WHERE leader_fence($1, $2))",
    );
    // An aggregate the rules do not know is a call they cannot see into.
    refused("UPDATE t SET a = 1 WHERE id < (SELECT my_min(id) FROM u WHERE leader_fence($1, $2))");
    // Where the row itself is what counts, a NULL row is a row: INSERT … SELECT inserts it.
    let e = refused("INSERT INTO log (k) SELECT min(id) FROM u WHERE leader_fence($1, $2)");
    assert!(e.contains("aggregates without GROUP BY"), "{e}");
}

#[test]
fn any_all_and_not_in_over_the_null_row_of_an_aggregate_gate() {
    // `x = NULL` is null, and so is `ANY` or `ALL` of nulls and `NOT` of null: no row passes.
    for condition in [
        "id IN (SELECT min(id) FROM u WHERE leader_fence($1, $2))",
        "id = ANY (SELECT max(id) FROM u WHERE leader_fence($1, $2))",
        "id <> ALL (SELECT max(id) FROM u WHERE leader_fence($1, $2))",
        "id NOT IN (SELECT min(id) FROM u WHERE leader_fence($1, $2))",
        "id = ANY (ARRAY (SELECT min(id) FROM u WHERE leader_fence($1, $2)))",
        "id <> ALL (ARRAY (SELECT min(id) FROM u WHERE leader_fence($1, $2)))",
        "NOT (id < (SELECT min(id) FROM u WHERE leader_fence($1, $2)))",
    ] {
        accepted(&format!("UPDATE t SET a = 1 WHERE {condition}"));
    }
    // An empty sub-select: `NOT IN` and `<> ALL` of nothing are true.
    for condition in [
        "id NOT IN (SELECT id FROM u WHERE leader_fence($1, $2))",
        "id <> ALL (ARRAY (SELECT id FROM u WHERE leader_fence($1, $2)))",
        "NOT (id IN (SELECT min(id) FROM u WHERE leader_fence($1, $2) GROUP BY k))",
    ] {
        let e = refused(&format!("UPDATE t SET a = 1 WHERE {condition}"));
        assert!(e.contains("`UPDATE t` is not gated"), "{condition}: {e}");
    }
}

#[test]
fn case_gates_when_no_arm_can_be_true() {
    for condition in [
        "CASE WHEN leader_fence($1, $2) THEN id > 2 ELSE false END",
        "CASE WHEN owner IS NULL THEN leader_fence($1, $2) ELSE false END",
        "CASE WHEN owner IS NULL THEN leader_fence($1, $2) END",
        "CASE WHEN a THEN leader_fence($1, $2) WHEN b THEN NULL ELSE leader_fence($1, $2) END",
        "CASE status WHEN 'new' THEN leader_fence($1, $2) ELSE false END",
        "CASE WHEN leader_fence($1, $2) THEN true ELSE NULL::boolean END",
    ] {
        accepted(&format!("UPDATE t SET a = 1 WHERE {condition}"));
    }
    for condition in [
        // An arm or the ELSE can be true without the fence.
        "CASE WHEN a THEN leader_fence($1, $2) ELSE true END",
        "CASE WHEN a THEN leader_fence($1, $2) WHEN b THEN c ELSE false END",
        "CASE WHEN leader_fence($1, $2) THEN false ELSE id > 2 END",
        // In a simple CASE the WHEN values are not conditions.
        "CASE leader_fence($1, $2) WHEN true THEN id > 2 ELSE false END",
    ] {
        let e = refused(&format!("UPDATE t SET a = 1 WHERE {condition}"));
        assert!(e.contains("`UPDATE t` is not gated"), "{condition}: {e}");
    }
}

#[test]
fn or_gates_when_every_arm_does() {
    accepted(
        "UPDATE t SET a = 1 WHERE (leader_fence($1, $2) AND a) OR (b AND leader_fence($1, $2))",
    );
    accepted(
        "DELETE FROM t WHERE id IN (SELECT id FROM u WHERE leader_fence($1, $2))
            OR id = ANY (SELECT id FROM v WHERE leader_fence($1, $2))",
    );
    let e = refused("UPDATE t SET a = 1 WHERE (leader_fence($1, $2) AND a) OR b");
    assert!(e.contains("under OR"), "{e}");
}

#[test]
fn having_that_removes_the_group_of_no_rows() {
    // On no rows `count` is 0 and `min` NULL: these HAVINGs remove the one group.
    for having in [
        "count(*) > 1",
        "count(*) >= 1",
        "0 < count(id)",
        "count(*) <> 0",
        "min(id) > 3",
        "max(id) = max(id)",
    ] {
        accepted(&format!(
            "INSERT INTO log (k) SELECT 1 FROM u WHERE leader_fence($1, $2) HAVING {having}"
        ));
        accepted(&format!(
            "SELECT 1 FROM u WHERE leader_fence($1, $2) GROUP BY () HAVING {having}"
        ));
    }
    // A gate in HAVING removes every group, the one from no rows included; the aggregates'
    // arguments are still evaluated on the rows the level reads.
    accepted(
        "INSERT INTO log (k) SELECT max(id) FROM u GROUP BY ROLLUP (k) HAVING leader_fence($1, $2)",
    );
    accepted(
        "INSERT INTO log (k) SELECT k FROM u GROUP BY k
          HAVING k IN (SELECT k FROM v WHERE leader_fence($1, $2))",
    );
    let e = refused(
        "INSERT INTO log (k) SELECT max(take_budget(u)) FROM u HAVING leader_fence($1, $2)",
    );
    assert!(e.contains("take_budget"), "{e}");
    for having in [
        "count(*) = 0",
        "count(*) < 5",
        "count(*) >= 0",
        "sum(id) IS NULL",
        "coalesce(min(id), 0) = 0",
        "count(*) > 1 OR true",
        // An aggregate of the enclosing query is a constant here.
        "(SELECT count(t.id) FROM t) > 1",
    ] {
        let e = refused(&format!(
            "INSERT INTO log (k) SELECT 1 FROM u WHERE leader_fence($1, $2) HAVING {having}"
        ));
        assert!(e.contains("returns a row from no rows"), "{having}: {e}");
    }
    // A correlated aggregate of the outer query, in HAVING: not this level's group.
    let e = refused(
        "SELECT (SELECT 1 FROM u WHERE leader_fence($1, $2) HAVING count(t.id) > 1) FROM t FOR UPDATE",
    );
    assert!(e.contains("FOR UPDATE"), "{e}");
}
