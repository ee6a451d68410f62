//! The shard rule, case by case: the rows a shard's claim changes, locks or inserts are
//! selected by the shard of their table's declared key, on a shard fence's placeholders. The
//! accepted shapes of `ui-tests/pass` are also run against PostgreSQL, with a superseded shard
//! token and with another shard's live token, in `tests/tests/fenced_sql.rs`; generated ones by
//! `fence-differential --sharded`.

mod support;

use leader_fence_check::{Checked, Hints, ShardParams, check_with};

/// The tables the cases claim, each keyed by `id` but `deliveries` (by `webhook_id`) and
/// `notes` (no key); a lock on a relation the schema does not know as a table may land in a
/// view's own query, on every shard's rows.
fn check(sql: &str) -> Checked {
    let schema = support::prepared()
        .table(
            "t",
            "id bigint, owner bigint, done boolean, key_text text, name text",
        )
        .table(
            "webhooks",
            "id bigint, endpoint_id bigint, claimed_by bigint",
        )
        .table("endpoints", "id bigint, tenant_id bigint")
        .table("deliveries", "webhook_id bigint, attempt integer")
        .table("notes", "id bigint")
        .view(
            "pending_webhooks",
            "id bigint, endpoint_id bigint",
            &["webhooks"],
        )
        .shard_key("t", "id")
        .shard_key("webhooks", "id")
        .shard_key("endpoints", "id")
        .shard_key("deliveries", "webhook_id")
        .schema();
    check_with(sql, &Hints::default().with_schema(&schema))
}

fn accepted(sql: &str) -> Vec<Option<ShardParams>> {
    let checked = check(sql);
    assert!(
        checked.errors.is_empty(),
        "expected {sql:?} to be accepted, got {:#?}",
        checked.errors
    );
    checked.fences.iter().map(|f| f.shard).collect()
}

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

const SHARD_2_OF_3: Option<ShardParams> = Some(ShardParams { index: 2, count: 3 });

#[test]
fn a_shards_fence_beside_its_filter_is_accepted_in_either_order_and_either_side() {
    for sql in [
        "SELECT id FROM t WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2
          FOR UPDATE SKIP LOCKED",
        "SELECT id FROM t WHERE $2 = leader_shard_of(t.id, $3) AND done IS NULL
            AND leader_fence($1, $2, $3, $4) FOR UPDATE",
        "SELECT id FROM t WHERE leader_shard_of(id, $3::int) = $2::int
            AND leader_fence($1::text, $2::int, $3::int, $4::bigint) FOR UPDATE",
        "UPDATE t SET owner = $4 WHERE id IN (SELECT id FROM t
            WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2
            LIMIT 10 FOR UPDATE SKIP LOCKED) RETURNING id",
        "DELETE FROM t WHERE leader_shard_of(id, $3) = $2 AND leader_fence($1, $2, $3, $4)",
    ] {
        assert_eq!(accepted(sql), [SHARD_2_OF_3], "{sql}");
    }
}

#[test]
fn an_unsharded_fence_keeps_its_rules_and_reports_no_shard() {
    assert_eq!(
        accepted("SELECT id FROM t WHERE leader_fence($1, $2) FOR UPDATE"),
        [None]
    );
}

#[test]
fn a_shards_fence_without_its_filter_is_refused_naming_the_filter_to_add() {
    let message = refused("SELECT id FROM t WHERE leader_fence($1, $2, $3, $4) FOR UPDATE");
    assert!(
        message.contains("no filter on its shard key `id` keeps in the shard")
            && message.contains("`leader_shard_of(id, $3) = $2`"),
        "{message}"
    );
}

/// The cross-function hole: two claims of one table keyed by different columns each select one
/// shard's rows, and together two shards' leaders claim the same row. The declared key is the
/// one column every claim on the table selects by.
#[test]
fn a_claim_keyed_by_another_column_than_the_declared_key_is_refused() {
    for sql in [
        "UPDATE t SET owner = $4 WHERE leader_fence($1, $2, $3, $4)
            AND leader_shard_of(key_text, $3) = $2 RETURNING id",
        "DELETE FROM t WHERE leader_shard_of(hashtext(name)::bigint, $3) = $2
            AND leader_fence($1, $2, $3, $4)",
        // A cast picks another `leader_shard_of` (text's), and another shard.
        "DELETE FROM t WHERE leader_shard_of(id::text, $3) = $2 AND leader_fence($1, $2, $3, $4)",
    ] {
        let message = refused(sql);
        assert!(
            message.contains("no filter on its shard key `id`"),
            "{sql}\n{message}"
        );
    }
}

#[test]
fn a_claim_on_a_table_without_a_declared_key_says_how_to_declare_it() {
    let message = refused(
        "UPDATE notes SET id = id WHERE leader_fence($1, $2, $3, $4)
            AND leader_shard_of(id, $3) = $2",
    );
    assert!(
        message.contains("`public.notes` has no declared shard key")
            && message.contains("`leaderctl schema shard-key notes KEY_COLUMN --dir migrations`"),
        "{message}"
    );
}

/// Everyday shard claims the rule follows to the declared key.
#[test]
fn everyday_shard_claims_are_accepted() {
    for sql in [
        // A join locked with `FOR UPDATE OF` the claimed table only.
        "SELECT w.id FROM webhooks w JOIN endpoints e ON e.id = w.endpoint_id
          WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(w.id, $3) = $2
          FOR UPDATE OF w SKIP LOCKED",
        // A fenced batch in a WITH query, joined back to the table on its key.
        "WITH batch AS (SELECT id FROM webhooks
                         WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2
                         ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)
         UPDATE webhooks w SET claimed_by = $4 FROM batch b WHERE w.id = b.id RETURNING w.id",
        // Child rows deleted `USING` the shard's parent rows, the children keyed by the parent.
        "DELETE FROM deliveries d USING webhooks w
          WHERE d.webhook_id = w.id AND leader_fence($1, $2, $3, $4)
            AND leader_shard_of(w.id, $3) = $2",
        // Keyed by a parent's id through a join.
        "UPDATE deliveries d SET attempt = attempt + 1 FROM webhooks w
          WHERE w.id = d.webhook_id AND leader_shard_of(w.id, $3) = $2
            AND leader_fence($1, $2, $3, $4)",
        // A fence that is not beside the filter: the rows are still filtered by their key.
        "UPDATE webhooks SET claimed_by = $4
          WHERE leader_shard_of(id, $3) = $2
            AND id IN (SELECT id FROM webhooks WHERE leader_fence($1, $2, $3, $4)
                          AND leader_shard_of(id, $3) = $2 FOR UPDATE SKIP LOCKED)",
        // Inserted rows keyed by the shard's own key.
        "INSERT INTO deliveries (webhook_id, attempt)
         SELECT id, 1 FROM webhooks WHERE leader_fence($1, $2, $3, $4)
            AND leader_shard_of(id, $3) = $2 GROUP BY id",
    ] {
        assert_eq!(
            accepted(sql),
            vec![SHARD_2_OF_3; accepted(sql).len()],
            "{sql}"
        );
    }
}

#[test]
fn a_filter_on_other_placeholders_or_literals_is_no_filter() {
    for sql in [
        // The count bound apart from the fence's.
        "SELECT id FROM t WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $5) = $2 FOR UPDATE",
        // The index bound apart from the fence's.
        "SELECT id FROM t WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $5 FOR UPDATE",
        // Index and count swapped.
        "SELECT id FROM t WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $2) = $3 FOR UPDATE",
        // Literals.
        "SELECT id FROM t WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, 8) = 0 FOR UPDATE",
        // Other comparisons.
        "SELECT id FROM t WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) <> $2 FOR UPDATE",
        "SELECT id FROM t WHERE leader_fence($1, $2, $3, $4)
            AND leader_shard_of(id, $3) IS DISTINCT FROM $2 FOR UPDATE",
        // A key that reads no column selects every row or none.
        "SELECT id FROM t WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(7, $3) = $2 FOR UPDATE",
    ] {
        let message = refused(sql);
        assert!(
            message.contains("leader_shard_of(id, $3) = $2"),
            "{sql}\n{message}"
        );
    }
}

#[test]
fn a_filter_under_or_or_not_or_in_another_level_is_no_filter() {
    for sql in [
        "SELECT id FROM t WHERE leader_fence($1, $2, $3, $4)
            AND (leader_shard_of(id, $3) = $2 OR urgent) FOR UPDATE",
        "SELECT id FROM t WHERE leader_fence($1, $2, $3, $4)
            AND NOT (leader_shard_of(id, $3) <> $2) FOR UPDATE",
        // The filter sits in the outer UPDATE; the fenced sub-select that locks is unfiltered.
        "UPDATE t SET owner = $4 WHERE leader_shard_of(id, $3) = $2 AND id IN (SELECT id FROM t
            WHERE leader_fence($1, $2, $3, $4) FOR UPDATE SKIP LOCKED)",
    ] {
        let message = refused(sql);
        assert!(
            message.contains("leader_shard_of(id, $3) = $2"),
            "{sql}\n{message}"
        );
    }
}

#[test]
fn a_shards_fence_with_three_arguments_or_a_literal_is_refused() {
    for sql in [
        "SELECT id FROM t WHERE leader_fence($1, $2, $3) FOR UPDATE",
        "SELECT id FROM t WHERE leader_fence($1, 0, $3, $4) AND leader_shard_of(id, $3) = 0 FOR UPDATE",
    ] {
        let message = refused(sql);
        assert!(
            message.contains("leader_fence($1, $2, $3, $4)"),
            "{sql}\n{message}"
        );
    }
}

/// Rule 7 as row provenance: the rows a shard's claim acts on are filtered by the shard of their
/// own key. Each of these passed the filter-beside-the-fence rule, and the first two claimed the
/// same webhooks for the live leaders of shards 0 and 1 on PostgreSQL.
#[test]
fn rows_claimed_by_another_column_than_the_filtered_key_are_refused() {
    for sql in [
        // The sub-select returns another column than its key.
        "UPDATE webhooks SET claimed_by = $4
          WHERE endpoint_id IN (SELECT endpoint_id FROM webhooks
                                 WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2
                                   FOR UPDATE SKIP LOCKED)",
        // A join to the filtered sub-select on another column.
        "UPDATE webhooks w SET claimed_by = $4
           FROM (SELECT endpoint_id FROM webhooks
                  WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2) s
          WHERE w.endpoint_id = s.endpoint_id",
        // The key column compared with the sub-select's other column.
        "UPDATE webhooks SET claimed_by = $4
          WHERE id IN (SELECT endpoint_id FROM webhooks
                        WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2)",
        // The key's values compared with another column.
        "UPDATE webhooks SET claimed_by = $4
          WHERE endpoint_id IN (SELECT id FROM webhooks
                                 WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2)",
        // Through a WITH query that returns another column than its filtered key.
        "WITH mine AS (SELECT endpoint_id AS id FROM webhooks
                        WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2)
         UPDATE webhooks SET claimed_by = $4 WHERE id IN (SELECT id FROM mine)",
        // A lock on a view lands in its own query, on every shard's rows.
        "SELECT id FROM pending_webhooks
          WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2 FOR UPDATE",
        // So does one on a relation the schema does not know as a table.
        "SELECT id FROM elsewhere
          WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2 FOR UPDATE",
        // Funnelled by the key, but the lock lands in the view's own query first.
        "SELECT id FROM pending_webhooks
          WHERE id IN (SELECT id FROM webhooks
                        WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2)
            FOR UPDATE",
        // The lock is pushed into the sub-select, which locks rows before the outer filter.
        "SELECT s.id FROM (SELECT id FROM webhooks ORDER BY id LIMIT 5) s
          WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(s.id, $3) = $2 FOR UPDATE",
        // One row inserted from rows of several shards: both shards' leaders insert it.
        "INSERT INTO deliveries (webhook_id)
         SELECT endpoint_id FROM webhooks
          WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2
          GROUP BY endpoint_id",
        // A row made from another column than the key: two shards make the same one.
        "INSERT INTO deliveries (webhook_id)
         SELECT endpoint_id FROM webhooks
          WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2",
        // A lock on a joined table, whose rows other shards share.
        "SELECT w.id FROM webhooks w JOIN endpoints e ON e.id = w.endpoint_id
          WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(w.id, $3) = $2 FOR UPDATE",
        // A WITH query the claim reads locks rows before any filter.
        "WITH c AS (SELECT id FROM webhooks FOR UPDATE)
         UPDATE webhooks w SET claimed_by = $4 FROM c
          WHERE w.id = c.id AND leader_fence($1, $2, $3, $4) AND leader_shard_of(c.id, $3) = $2",
        // An inserted key made of the shard's key and another column: not the shard's key.
        "INSERT INTO deliveries (webhook_id)
         SELECT id + endpoint_id FROM webhooks
          WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2",
        // The filter reads another table's column than the one updated.
        "UPDATE webhooks SET claimed_by = $4 FROM endpoints e
          WHERE e.id = webhooks.endpoint_id AND leader_fence($1, $2, $3, $4)
            AND leader_shard_of(e.id, $3) = $2",
    ] {
        let message = refused(sql);
        assert!(
            message.contains("keeps in the shard") || message.contains("does not know as a table"),
            "{sql}\n{message}"
        );
    }
}

#[test]
fn rows_claimed_by_their_own_filtered_key_are_accepted() {
    for sql in [
        "UPDATE webhooks SET claimed_by = $4
          WHERE id = (SELECT id FROM webhooks
                         WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2
                         LIMIT 1 FOR UPDATE SKIP LOCKED)",
        "DELETE FROM webhooks
          WHERE id = ANY (SELECT id FROM webhooks
                           WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2)",
        "UPDATE webhooks SET claimed_by = $4 FROM endpoints e
          WHERE e.id = webhooks.endpoint_id AND leader_fence($1, $2, $3, $4)
            AND leader_shard_of(webhooks.id, $3) = $2",
        "INSERT INTO deliveries (webhook_id)
         SELECT id FROM webhooks WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2",
    ] {
        assert_eq!(accepted(sql), [SHARD_2_OF_3], "{sql}");
    }
}
