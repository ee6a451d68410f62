//! The fence rules, case by case: what is accepted, what is refused and what the message says.
//! Every accepted shape here is also run against PostgreSQL with a superseded token in
//! `tests/tests/fenced_sql.rs`.

use leader_fence_check::check;

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
             UPDATE outbox o SET status = 'sending' FROM c WHERE o.id = c.id RETURNING o.id"
        ),
        [(1, 2)]
    );
    accepted(
        "WITH c AS (SELECT id FROM outbox WHERE leader_fence($1, $2) FOR UPDATE SKIP LOCKED)
         DELETE FROM outbox o USING c WHERE o.id = c.id",
    );
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
              claimed AS (UPDATE jobs SET owner = $2 FROM picked WHERE jobs.id = picked.id RETURNING jobs.id)
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
        "UPDATE t SET a = 1 WHERE leader_fence($1, $2) AND id IN
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
    refused(
        "WITH c AS (SELECT id FROM t FOR UPDATE) UPDATE t SET a = 1 FROM c
          WHERE t.id = c.id AND leader_fence($1, $2)",
    );
    refused("SELECT * FROM (SELECT id FROM t FOR UPDATE) s WHERE leader_fence($1, $2)");
    refused("SELECT id FROM t WHERE leader_fence($1, $2) AND id IN (SELECT id FROM u FOR SHARE)");
}

#[test]
fn gated_from_items_and_joins() {
    accepted(
        "SELECT t.id FROM t JOIN (SELECT id FROM u WHERE leader_fence($1, $2)) g ON g.id = t.id
          FOR UPDATE OF t",
    );
    accepted("SELECT t.id FROM t JOIN u ON u.id = t.id AND leader_fence($1, $2) FOR UPDATE OF t");
    accepted(
        "WITH g AS (SELECT id FROM u WHERE leader_fence($1, $2))
         SELECT t.id FROM g LEFT JOIN t ON t.id = g.id FOR UPDATE OF t",
    );
    // The gated side is the optional one: every row of t comes through.
    refused(
        "WITH g AS (SELECT id FROM u WHERE leader_fence($1, $2))
         SELECT t.id FROM t LEFT JOIN g ON t.id = g.id FOR UPDATE OF t",
    );
    refused(
        "SELECT t.id FROM t FULL JOIN (SELECT id FROM u WHERE leader_fence($1, $2)) g ON g.id = t.id
          FOR UPDATE OF t",
    );
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
    refused("SELECT 1 FROM u WHERE leader_fence($1, $2) HAVING true");
    accepted(
        "UPDATE t SET a = 1 WHERE id IN (SELECT max(id) FROM u WHERE leader_fence($1, $2) GROUP BY k)",
    );
    accepted("SELECT id, row_number() OVER () FROM u WHERE leader_fence($1, $2)");
}

#[test]
fn insert_select_and_merge() {
    accepted("INSERT INTO log (job_id) SELECT id FROM jobs WHERE leader_fence($1, $2) FOR UPDATE");
    accepted(
        "INSERT INTO log (job_id) SELECT id FROM jobs WHERE leader_fence($1, $2)
         ON CONFLICT (job_id) DO UPDATE SET seen = now()",
    );
    let e = refused("INSERT INTO log (job_id) VALUES ($1)");
    assert!(e.contains("`INSERT INTO log` is not gated"), "{e}");
    assert!(e.contains("`INSERT … VALUES` always inserts"), "{e}");
    assert!(
        e.contains("INSERT … SELECT … WHERE … AND leader_fence($2, $3)"),
        "{e}"
    );
    accepted(
        "MERGE INTO jobs j USING (SELECT id FROM queue WHERE leader_fence($1, $2)) q ON j.id = q.id
         WHEN MATCHED THEN UPDATE SET runs = j.runs + 1
         WHEN NOT MATCHED THEN INSERT (id) VALUES (q.id)",
    );
    let e = refused(
        "MERGE INTO jobs j USING queue q ON j.id = q.id AND leader_fence($1, $2)
         WHEN NOT MATCHED THEN INSERT (id) VALUES (q.id)",
    );
    assert!(e.contains("`MERGE INTO jobs` is not gated"), "{e}");
    accepted(
        "MERGE INTO jobs j USING queue q ON j.id = q.id
         WHEN MATCHED AND leader_fence($1, $2) THEN UPDATE SET runs = j.runs + 1",
    );
}

#[test]
fn plain_select_claims_need_the_fence_too() {
    accepted("SELECT id FROM jobs WHERE leader_fence($1, $2)");
    let e = refused("SELECT id FROM jobs WHERE due");
    assert!(
        e.contains("the claim `SELECT … FROM jobs` is not gated"),
        "{e}"
    );
    assert!(e.contains("add `AND leader_fence($1, $2)`"), "{e}");
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
        "UPDATE t SET a = 1 WHERE leader_fence($1, $2) AND id IN (SELECT id FROM t FOR UPDATE) -- leader_fence",
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
    refused("SELECT id, nextval('s') FROM t WHERE leader_fence($1, $2)");
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
        ("BEGIN", "TRANSACTION"),
        ("COPY t FROM STDIN", "COPY"),
        ("EXPLAIN ANALYZE DELETE FROM t", "EXPLAIN"),
        ("TRUNCATE t", "TRUNCATE"),
    ] {
        let e = refused(sql);
        assert!(e.contains(&format!("cannot check a `{kind}")), "{sql}: {e}");
    }
    let e = refused("SELECT id INTO copy FROM t WHERE leader_fence($1, $2)");
    assert!(e.contains("`SELECT … INTO` creates a table"), "{e}");
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
