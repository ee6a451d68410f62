#!/usr/bin/env python3
"""Mutation check: removes one protocol or runtime feature at a time, runs the test that covers
it, and reports CAUGHT (the test failed, as it must) or MISSED.

Run under a server, e.g.
    cargo run -q -p leader-testkit --bin with-postgres -- python3 scripts/mutants.py [NAME...]

Every selected mutation must apply: before any test runs, each one's search text is looked up,
and a text that is gone (the code it mutates was reworded) or no longer unique fails the run,
naming the mutation. A mutant that does not build, or whose filter selects no test, fails the
run too: only a failing test counts as caught. Telling these apart takes cargo-nextest's exit
codes, so a run without cargo-nextest stops before it starts, saying how to install it.

    scripts/mutants.py --check     only checks that every mutation applies (no server)
    scripts/mutants.py --ci        the fast subset CI runs (CI_SUBSET)

The tree itself is never written: the mutants go into a scratch copy of the workspace (every
file git lists, tracked or untracked and not ignored; every file but target/ outside a git
checkout) under TARGET/mutants/workspace, built in TARGET/mutants/target, where TARGET is the
workspace's target directory. Both are kept between runs, so a run rebuilds only what changed:
each run first brings the copy up to date, rewriting only the files that differ (a mutant a
killed run left behind among them). One run at a time uses them; a second one stops at once.
"""
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ACQUIRE = "leader-core/src/lease/acquire.sql"
RENEW = "leader-core/src/lease/renew.rs"
RELEASE = "leader-core/src/lease/release.rs"
OPERATOR = "leader-core/src/operator.rs"
CLEAR_COOLDOWN = "migrations/20261202000000_leader_clear_cooldown.up.sql"
PAUSE_FLOOR = "migrations/20261204000000_leader_pause_floor.up.sql"
PAUSE_NOTICE = "migrations/20261209100000_leader_pause_notice.up.sql"
SHARDS = "migrations/20261206000000_leader_shards.up.sql"
ANCHORS = "migrations/20261209000000_leader_anchors.up.sql"
HISTORY = "leader-core/src/lease/history.rs"
TICK_HISTORY = "migrations/20261211000000_leader_tick_history.up.sql"


def edit(path, old, new, count=1):
    """Replace `count` occurrences of `old` in `path` (it must occur exactly that often)."""
    return (path, old, new, count)


# (name, edits, nextest arguments selecting the test that must fail)
M = [
    # leader_fence(role, token) as the shards migration re-creates it (the first migration's is
    # replaced, so mutating that one changes nothing the tests run).
    ("fence ignores expiry",
     [edit(SHARDS, "           AND shard_count = 1\n           AND holder_token = p_token\n"
                   "           AND expires_at > statement_timestamp()\n",
           "           AND shard_count = 1\n           AND holder_token = p_token\n")],
     "-p tests --test protocol the_fence_admits_only"),
    ("fence uses now()",
     [edit(SHARDS, "           AND shard_count = 1\n           AND holder_token = p_token\n"
                   "           AND expires_at > statement_timestamp()\n",
           "           AND shard_count = 1\n           AND holder_token = p_token\n"
           "           AND expires_at > now()\n")],
     "-p tests --test protocol a_claim_in_a_transaction"),
    ("release ignores holder",
     [edit(RELEASE, "   AND holder_id IS NOT NULL\n   AND (SELECT applied FROM lock_bound)",
           "   AND (SELECT applied FROM lock_bound)")],
     "-p tests --test protocol the_fence_admits"),
    # leader_pause and leader_pause_shard as the pause-notice migration re-creates them (the
    # earlier migrations' are replaced, so mutating those changes nothing the tests run).
    ("pause keeps holder",
     [edit(PAUSE_NOTICE, "       SET holder_id = NULL, acquired_at = NULL, expires_at = NULL,\n           not_before",
           "       SET not_before", count=2)],
     "-p tests --test protocol pause_stops"),
    ("pause sets no floor",
     [edit(PAUSE_NOTICE, "           not_before = greatest(not_before, expires_at),\n", "", count=2)],
     "-p tests --test protocol after_a_pause_and_unpause"),
    ("pause floor overwrites the cooldown",
     [edit(PAUSE_NOTICE, "not_before = greatest(not_before, expires_at),", "not_before = expires_at,",
           count=2)],
     "-p tests --test protocol after_a_pause_and_unpause"),
    ("a pause is not notified",
     [edit(PAUSE_NOTICE, "    PERFORM pg_notify('leader_paused', p_role);\n", "", count=2)],
     "-p tests --test wake with_a_direct_connection_a_pause"),
    ("a pause notice renews nothing",
     [edit("leader-runtime/src/heartbeat.rs", "            () = pauses.heard() => {",
           "            () = std::future::pending::<()>() => {")],
     "-p tests --test wake with_a_direct_connection_a_pause"),
    ("schema check ignores the pause notice migration",
     [edit("leader-core/src/schema.rs", "    if pause && pause_floor && !pause_notice {",
           "    if pause && pause_floor && !pause_notice && false {")],
     "-p tests --test migrations the_pause_notice_upgrade"),
    ("token +1 only",
     [edit(ACQUIRE, "greatest(holder_token + 1, (extract(epoch FROM now()) * 1000)::bigint)",
           "holder_token + 1"),
      edit(ACQUIRE, "greatest(holder_token + 1,\n                                (extract(epoch FROM now()) * 1000)::bigint)",
           "holder_token + 1")],
     "-p tests --test protocol a_promoted_standby"),
    ("acquire grants a completed instant again",
     [edit(ACQUIRE, ":instant > last_completed_instant", "true", count=3)],
     "-p tests --test schedules acquire_grants_an_instant_only_once"),
    ("each grants an instant past one not completed",
     [edit(ACQUIRE, "last_completed_instant >= :previous)", "true)", count=3)],
     "-p tests --test schedules with_each_acquire_refuses"),
    ("acquire grants an instant before it is due",
     [edit(ACQUIRE, "(NOT :calendar OR :instant <= now())", "(NOT :calendar OR true)", count=3)],
     "-p tests --test schedules acquire_grants_an_instant_only_once"),
    ("release stamps no instant",
     [edit(RELEASE, "THEN greatest(last_completed_instant, tick_instant) ELSE",
           "THEN last_completed_instant ELSE")],
     "-p tests --test schedules acquire_grants_an_instant_only_once"),
    ("release stamps the instant of a tick that did not complete",
     [edit(RELEASE, "last_completed_instant = CASE WHEN :outcome = 'completed'",
           "last_completed_instant = CASE WHEN true")],
     "-p tests --test schedules acquire_grants_an_instant_only_once"),
    ("the poller plans from no completed instant",
     [edit("leader-runtime/src/instants.rs",
           "self.last_completed = Some(refusal.last_completed_instant);",
           "self.last_completed = Some(None);")],
     "-p tests --test schedules three_replicas_complete_each_instant_once"),
    ("latest runs the oldest missed instant",
     [edit("crates/leader-schedule/src/cron.rs",
           "(Missed::Each, Some(last)) => self.next_after(last)?,",
           "(_, Some(last)) => self.next_after(last)?,")],
     "-p leader-schedule latest_runs_the_latest_missed_instant"),
    ("schema check ignores the schedules migration",
     [edit("leader-core/src/schema.rs", "    if table && !schedules {", "    if false && !schedules {")],
     "-p tests --test migrations the_schedules_upgrade"),
    ("acquire grants under another shard count",
     [edit(ACQUIRE, "shard_count = :shard_count\n", "true\n", count=3)],
     "-p tests --test shards after_a_shard_count_change"),
    ("acquire matches a wanted row to every shard of its role",
     [edit(ACQUIRE, "       AND shard_index = wanted_shard_index\n"
                    "       AND (role, shard_index) IN (SELECT role, shard_index FROM picked)\n",
           "       AND (role, shard_index) IN (SELECT role, shard_index FROM picked)\n")],
     "-p tests --test shards the_shards_of_a_calendar_role"),
    ("shards of a role share a token",
     [edit(ACQUIRE, "\n                          + mod(shard_index + shard_count - mod(greatest(holder_token + 1,\n"
                    "                                (extract(epoch FROM now()) * 1000)::bigint), shard_count),\n"
                    "                                shard_count)", "")],
     "-p tests --test shards a_shards_fence_claims_only"),
    ("sharded fence ignores the shard count",
     [edit(SHARDS, "           AND shard_count = p_shard_count\n", "")],
     "-p tests --test shards a_shards_fence_claims_only"),
    ("sharded fence ignores the shard index",
     [edit(SHARDS, "           AND shard_index = p_shard_index\n", "")],
     "-p fence-differential --test generated no_shard_claim"),
    ("two-argument fence admits a sharded role",
     [edit(SHARDS, "           AND shard_index = 0\n           AND shard_count = 1\n", "")],
     "-p tests --test shards a_shards_fence_claims_only"),
    ("reshard sets no floor under the next grant",
     [edit(SHARDS, "           old_completed, old_ended, old_floor\n", "           old_completed, old_ended, NULL\n")],
     "-p tests --test shards after_a_shard_count_change"),
    ("schema check ignores the shard count",
     [edit("leader-core/src/schema.rs",
           "if shard_count.is_some_and(|code| i64::from(code) != i64::from(count)) =>",
           "if shard_count.is_some_and(|code| i64::from(code) < i64::from(count) - 1024) =>")],
     "-p tests --test shard_runtime start_up_refuses"),
    ("leaderctl check ignores the shard count it is given",
     [edit("crates/leaderctl/src/check.rs", "Ok(count @ 1..=MAX_SHARDS) => Ok(ExpectedRole::sharded(role, count)),",
           "Ok(1..=MAX_SHARDS) => Ok(role.into()),")],
     "-p leaderctl --test cli check_compares_the_shard_count"),
    ("presence is not recorded",
     [edit(ACQUIRE, "      FROM wanted\n     WHERE wanted_shard_count > 1\n        ON CONFLICT",
           "      FROM wanted\n     WHERE false\n        ON CONFLICT")],
     "-p tests --test shards a_joining_replica_lowers"),
    ("acquire grants a sharded role's shards beyond the replica's share",
     [edit(ACQUIRE, "CASE WHEN ranked.sharded THEN ranked.nth <= share.room",
           "CASE WHEN ranked.sharded THEN true")],
     "-p tests --test shards a_replica_is_granted_at_most_its_share"),
    ("the share counts replicas running another shard count",
     [edit(ACQUIRE, "WHERE p.role = r.share_role AND p.shard_count = r.share_count",
           "WHERE p.role = r.share_role")],
     "-p tests --test shards after_a_shard_count_change"),
    ("the share does not count the replica's held shards",
     [edit(ACQUIRE, "           - (SELECT count(*)\n", "           - 0 * (SELECT count(*)\n")],
     "-p tests --test shards a_replica_is_granted_at_most_its_share"),
    ("acquire takes the lowest shards, not the ones it ran",
     [edit(ACQUIRE, "ORDER BY last_tick_holder IS DISTINCT FROM :holder,\n", "ORDER BY\n")],
     "-p tests --test shards a_replica_takes_back"),
    ("the global spread cuts a sharded role's share",
     [edit(ACQUIRE, "ELSE ranked.nth <= ceil((SELECT count(*) FROM due WHERE NOT sharded)::numeric",
           "ELSE ranked.nth <= ceil((SELECT count(*) FROM due)::numeric"),
      edit(ACQUIRE, "CASE WHEN ranked.sharded THEN ranked.nth <= share.room",
           "CASE WHEN ranked.sharded THEN ranked.nth <= least(share.room, ceil((SELECT count(*) FROM due)::numeric / ((SELECT live FROM others) + 1)))")],
     "-p tests --test shards a_replica_is_granted_at_most_its_share"),
    ("the poller asks for a sharded role's row, not its shard",
     [edit("leader-runtime/src/poll.rs", "            Some(shard) => wanted.in_shard(shard),\n",
           "            Some(_) => wanted,\n")],
     "-p tests --test shard_runtime three_replicas_spread"),
    ("the demo's shard check ignores the claim's shard",
     [edit("examples/billing-demo/src/checks.rs", "leader_shard_of(claimed.id, c.shard_count) <> c.shard_index",
           "leader_shard_of(claimed.id, c.shard_count) <> leader_shard_of(claimed.id, c.shard_count)")],
     "-p billing-demo --test app the_shard_checks"),
    ("the demo's token checks compare shards of a role with each other",
     [edit("examples/billing-demo/src/checks.rs", "SELECT token, max(token) OVER (PARTITION BY role, shard_index\n                                                 ORDER BY granted_at, id",
           "SELECT token, max(token) OVER (PARTITION BY role\n                                                 ORDER BY granted_at, id")],
     "-p billing-demo --test app the_shard_checks"),
    ("pausing a shard pauses every shard of its role",
     [edit("migrations/20261207000000_leader_presence.up.sql",
           "paused_by = p_who, pause_reason = p_why\n     WHERE role = p_role AND shard_index = p_shard_index;",
           "paused_by = p_who, pause_reason = p_why\n     WHERE role = p_role;")],
     "-p leaderctl --test cli a_sharded_role_shows"),
    ("status gauges report one shard of a sharded role",
     [edit("leader-runtime/src/metrics.rs", "           FROM leader_status\n          GROUP BY role",
           "           FROM leader_status\n          GROUP BY role, shard_index")],
     "-p tests --test runtime a_sharded_roles_status_gauges"),
    ("fence check does not ask a shard claim's changes for their key",
     [edit("crates/leader-fence-check/src/shards.rs",
           "            Ok((_, key)) if self.is_pure(level, &(level, 0, key.clone())) => return,\n",
           "            Ok(_) => return,\n")],
     "-p leader-fence-check --test shards a_claim_keyed_by_another_column"),
    ("fence check takes a filter on any placeholders",
     [edit("crates/leader-fence-check/src/shards.rs",
           "        if !self.shards.contains(&params) {\n",
           "        if false {\n")],
     "-p leader-fence-check --test shards a_filter_on_other_placeholders"),
    ("fence check takes an undeclared shard key for `id`",
     [edit("crates/leader-fence-check/src/shards.rs",
           "            ShardKey::Undeclared(why) => Err(Why::NoKey(why)),",
           "            ShardKey::Undeclared(_) => Ok((shown, \"id\".to_owned())),")],
     "-p leader-fence-check --test shards a_claim_on_a_table_without_a_declared_key"),
    ("fence check reads every WITH query as one nothing reads",
     [edit("crates/leader-fence-check/src/shards.rs",
           "                && !read.contains(&cte.level)\n", "")],
     "-p leader-fence-check --test shards rows_claimed_by_another_column_than_the_filtered_key_are_refused"),
    ("fence check takes any expression of the key for the key",
     [edit("crates/leader-fence-check/src/shards.rs",
           "        (Some(left), Some(right)) if integer(right) => left,",
           "        (Some(left), Some(_)) => left,")],
     "-p leader-fence-check --test shards rows_claimed_by_another_column_than_the_filtered_key_are_refused"),
    ("fence check takes IS DISTINCT FROM as the filter's =",
     [edit("crates/leader-fence-check/src/shards.rs", "    if int(expr, \"kind\") != AEXPR_OP {", "    if false {")],
     "-p leader-fence-check --test shards a_filter_on_other_placeholders"),
    ("fenced leaves a shard fence's index and count unchecked",
     [edit("leader-macros/src/fenced/binds.rs",
           "bound.extend([(shard.index, \"shard_index\"), (shard.count, \"shard_count\")]);",
           "let _ = shard;")],
     "-p leader-macros a_shard_fence_binds_its_index_and_count"),
    ("fenced takes either fence form from either fence type",
     [edit("leader-macros/src/fenced/binds.rs", "        match (sharded, call.shard.is_some()) {",
           "        match (sharded, sharded) {")],
     "-p leader-macros a_shard_fence_binds_its_index_and_count"),
    ("acquire ignores not_before",
     [edit(ACQUIRE, "       AND (not_before IS NULL OR not_before <= now())\n", "", count=3)],
     "-p tests --test protocol each_release_outcome"),
    # Both checks of the token: the rows `locked` picks, and the UPDATE's guard (with only one
    # removed, the other still refuses a superseded token, so the mutant would survive).
    ("renew ignores token",
     [edit(RENEW, "       AND holder_token = :token\n       AND (SELECT applied FROM lock_bound) IS NOT NULL\n"
                  "       -- A released or paused row has no expiry",
           "       AND (SELECT applied FROM lock_bound) IS NOT NULL\n"
           "       -- A released or paused row has no expiry"),
      edit(RENEW, "     WHERE holder_token = held_token\n       AND (SELECT applied",
           "     WHERE (SELECT applied")],
     "-p tests --test protocol renew_extends"),
    ("no server lock timeout",
     [edit(path, "set_config('lock_timeout', :lock_ms::text, true)",
           "set_config('application_name', :lock_ms::text, true)") for path in (ACQUIRE, RENEW, RELEASE)],
     "-p tests --test protocol renew_and_release_stop"),
    ("heartbeat waits for in-flight renew",
     [edit("leader-runtime/src/heartbeat.rs", "            _ = sleep_until(abandon_at) => {",
           "            _ = sleep_until(abandon_at + std::time::Duration::from_secs(86400)) => {")],
     "-p leader-runtime --lib heartbeat"),
    ("panic outranks shutdown",
     [edit("leader-runtime/src/tick.rs",
           "        (Some(_), _) => (ReleaseOutcome::Shutdown, true),\n        (None, TickEnd::Panicked(_))",
           "        (_, TickEnd::Panicked(_)) => (ReleaseOutcome::Panicked, true),\n"
           "        (Some(_), _) => (ReleaseOutcome::Shutdown, true),\n        (None, TickEnd::Panicked(_))")],
     "-p tests --test runtime a_panic_after_shutdown"),
    ("shutdown does not release",
     [edit("leader-runtime/src/tick.rs",
           "        (Some(_), _) => (ReleaseOutcome::Shutdown, true),",
           "        (Some(_), _) => (ReleaseOutcome::Shutdown, false),")],
     "-p tests --test runtime a_clean_shutdown"),
    ("runtime ignores a dead loop",
     [edit("leader-runtime/src/runtime.rs",
           "                        died = Some((RunError::LoopDied { what, reason }, death));",
           "                        let _ = (what, reason, death);")],
     "-p leader-runtime --lib a_role_loop_that_dies"),
    ("status publisher unsupervised",
     [edit("leader-runtime/src/runtime.rs",
           '        loops.spawn("the status publisher".to_owned(), async move {',
           "        tokio::spawn(async move {")],
     "-p leader-runtime --lib a_status_publisher_that_dies"),
    ("a loop's early return is not a death",
     [edit("leader-runtime/src/runtime.rs",
           "                        Some(Ok(_)) if stop.is_cancelled() => continue,",
           "                        Some(Ok(_)) => continue,")],
     "-p leader-runtime --lib a_loop_that_returns_before_the_shutdown"),
    ("build keeps only the first mistake",
     [edit("leader-runtime/src/builder.rs",
           "        if let Some(error) = BuildError::of(self.errors) {",
           "        if let Some(error) = self.errors.into_iter().next() {")],
     "-p leader-runtime --lib build_reports_every_mistake"),
    ("start-up error printed as its fields",
     [edit("leader-runtime/src/error.rs",
           "`{:#?}` prints the fields.\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n"
           "        if !f.alternate() {\n            return message_and_sources(self, f);\n        }\n"
           "        match self {\n            RunError::Schema",
           "`{:#?}` prints the fields.\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n"
           "        if f.alternate() {\n            return message_and_sources(self, f);\n        }\n"
           "        match self {\n            RunError::Schema")],
     "-p leader-readme-examples --test readme_main"),
    ("docs: a README link to a page that moved",
     [edit("README.md", "[metrics](docs/metrics.md) feed", "[metrics](docs/metrics-moved.md) feed")],
     "-p leader-readme-examples --test links every_relative_link"),
    ("schema check stops at the first role",
     [edit("leader-core/src/schema.rs", "    for &expected in roles {\n",
           "    for &expected in roles.iter().take(1) {\n")],
     "-p tests --test startup_errors"),
    ("shutdown release cools down",
     [edit(RELEASE, "           WHEN 'shutdown' THEN not_before\n", "")],
     "-p tests --test protocol a_shutdown_release_leaves"),
    ("an ended anchor's release cools down",
     [edit(RELEASE, "           WHEN 'anchor_lost' THEN not_before\n", "")],
     "-p tests --test protocol a_shutdown_release_leaves"),
    ("runtime releases an ended anchor's tick as lost",
     [edit("leader-runtime/src/tick.rs",
           "        (Some(CancelCause::AnchorLost), _) => (ReleaseOutcome::AnchorLost, true),\n", "")],
     "-p leader-runtime --lib a_tick_whose_anchor_ends"),
    ("runtime releases a shutdown as failed",
     [edit("leader-runtime/src/tick.rs",
           "        (Some(_), _) => (ReleaseOutcome::Shutdown, true),",
           "        (Some(_), _) => (ReleaseOutcome::Failed, true),")],
     "-p tests --test runtime a_clean_shutdown"),
    ("batched acquire ignores expiry",
     [edit(ACQUIRE, "       AND (expires_at IS NULL OR expires_at <= now())\n", "", count=2)],
     "-p tests --test batch one_statement_grants_due_roles_once"),
    # Anchors (issue 33): each guard of the takeover of a dead holder.
    ("acquire has no takeover branch",
     [edit(ACQUIRE, "       AND leader_anchor_ended(holder_anchor_pid, holder_anchor_start, acquired_at)\n",
           "       AND false\n")],
     "-p tests --test anchors a_lease_whose_holders_anchor_ended"),
    ("takeover without the anchor check",
     [edit(ANCHORS, "       AND NOT EXISTS (SELECT 1\n",
           "       AND (SELECT true) OR p_pid IS NOT NULL AND NOT EXISTS (SELECT 1\n")],
     "-p tests --test anchors no_lease_is_taken_over_while"),
    ("anchor without backend_start",
     [edit(ANCHORS, "                          AND (a.backend_start IS NULL OR a.backend_start = p_start))",
           "                          )")],
     "-p tests --test anchors a_live_pid_with_another_backend_start"),
    ("takeover from a view of the sessions older than the grant",
     [edit(ANCHORS, "       AND p_recorded_at < now()\n", "")],
     "-p tests --test anchors a_view_of_the_sessions_older"),
    ("acquire does not check the caller's anchor",
     [edit(ACQUIRE, "       AND (:anchor_pid IS NULL\n            OR EXISTS (SELECT 1 FROM pg_stat_activity a\n"
                    "                        WHERE a.pid = :anchor_pid AND a.backend_start = :anchor_start))\n    RETURNING role AS granted_role",
           "    RETURNING role AS granted_role")],
     "-p tests --test anchors a_caller_whose_own_anchor_ended"),
    ("acquire does not record the anchor",
     [edit(ACQUIRE, "           holder_anchor_pid = :anchor_pid,\n           holder_anchor_start = :anchor_start,\n",
           "           holder_anchor_pid = NULL,\n           holder_anchor_start = NULL,\n")],
     "-p tests --test anchors a_lease_whose_holders_anchor_ended"),
    # Placement at fleet scale (issue 44): ACQUIRE's work and locks grow with what it grants.
    ("acquire reads within_share once per answer row",
     [edit(ACQUIRE, "       coalesce(ws.sharded AND NOT ws.within, false) AS over_share,\n",
           "       coalesce((SELECT w.sharded AND NOT w.within FROM within_share w\n"
           "                  WHERE w.role = s.wanted_role AND w.shard_index = s.wanted_shard_index),\n"
           "                false) AS over_share,\n")],
     "-p tests --test placement acquire_work_per_lease"),
    ("acquire's takeover locks every live lease it is asked about",
     [edit(ACQUIRE, "                                      AND leader_anchor_ended(l.holder_anchor_pid,\n"
                    "                                                              l.holder_anchor_start,\n"
                    "                                                              l.acquired_at)\n",
           "")],
     "-p tests --test placement an_open_acquire_of_every_lease"),
    ("a dropped run future leaves its ticks' tasks running",
     [edit("leader-runtime/src/tick.rs", "    let _end_tasks = EndOnDrop(tasks.clone());\n",
           "    let _end_tasks = tasks.clone();\n")],
     "-p tests --test dropped_run a_dropped_run_future_ends"),
    ("a dead replica's presence still counts toward the spread",
     [edit(ACQUIRE, "                          AND NOT leader_anchor_ended(p.anchor_pid, p.anchor_start,\n"
                    "                                                      p.anchor_recorded_at)\n", "")],
     "-p tests --test anchors a_dead_replicas_shards_all_move"),
    ("release keeps the anchor",
     [edit(RELEASE, "       holder_anchor_pid = NULL,\n       holder_anchor_start = NULL,\n", "")],
     "-p tests --test anchors a_release_forgets_the_anchor"),
    ("a joining watcher leaves the gap's watcher where it was",
     [edit("leader-core/src/lease/anchor.rs",
           "             WHERE a.application_name = :watcher AND a.state = 'active'\n",
           "             WHERE false\n")],
     "-p tests --test takeover a_dead_replicas_role_moves"),
    ("a joining watcher turns only the watchers already waiting",
     [edit("leader-core/src/lease/anchor.rs",
           "             WHERE a.application_name = :watcher AND a.state = 'active'\n",
           "             WHERE a.application_name = :watcher AND a.wait_event_type = 'Lock'\n")],
     "-p tests --test anchors a_joining_replica_turns_a_watcher_on_its_way"),
    ("an early end wakes nobody",
     [edit(ACQUIRE, "       (SELECT count(*) FROM (SELECT pg_notify(:anchor_ended_channel,\n                                               hashtext(e.ended_holder)::text)",
           "       (SELECT count(*) FROM (SELECT (e.ended_holder)")],
     "-p tests --test anchors an_acquire_that_ends_a_lease_early_wakes"),
    ("a watcher tells of an end before the session has left pg_stat_activity",
     [edit("leader-core/src/lease/anchor.rs", "    if let Some(pid) = holder_pid {\n",
           "    if let Some(pid) = holder_pid.filter(|_| false) {\n")],
     "-p tests --test anchors a_watcher_tells_of_an_end_only_once_the_session_has_left"),
    ("a watcher's wait trusts the ring it read before",
     [edit("leader-core/src/lease/anchor.rs",
           " WHERE next.key::oid::integer = :key::integer\n",
           "")],
     "-p tests --test anchors a_wait_on_a_ring_read_before_a_replica_joined"),
    ("the watcher notifies nobody of an anchor's end",
     [edit("leader-core/src/lease/anchor.rs", 'const NOTIFY_ENDED: &str = "SELECT pg_notify(:channel, :key::text)";',
           'const NOTIFY_ENDED: &str = "SELECT :key::text";')],
     "-p tests --test anchors a_watcher_tells_of_an_end_only_once_the_session_has_left"),
    ("the first poll does not wait for the anchor",
     [edit("leader-runtime/src/poll.rs", "            () = anchor.tried() => {}\n", "            () = std::future::ready(()) => {}\n")],
     "-p tests --test takeover a_dead_replicas_role_moves"),
    ("ACQUIRE names no anchor",
     [edit("leader-runtime/src/statements.rs", "                anchor.as_ref(),\n", "                None,\n")],
     "-p tests --test takeover a_dead_replicas_role_moves"),
    ("a lost anchor connection does not cancel its ticks",
     [edit("leader-runtime/src/wake.rs", "        if let Some(anchoring) = &anchoring {\n            anchoring.cell.lose();\n        }\n", "")],
     "-p tests --test takeover a_holder_whose_anchor_the_server_ends"),
    ("a tick takes its anchor's end for a shutdown",
     [edit("leader-runtime/src/tick.rs", "                cancellation.cancel(CancelCause::AnchorLost);\n",
           "                cancellation.cancel(CancelCause::Shutdown);\n")],
     "-p leader-runtime --lib a_tick_whose_anchor_ends"),
    ("a shutdown ends the anchor before the ticks are released",
     [edit("leader-runtime/src/wake.rs", "                                anchoring.cell.park(listener);\n", "                                drop(listener);\n")],
     "-p tests --test takeover a_shutdown_keeps_the_anchor"),
    ("a second process anchors the same holder id",
     [edit("leader-core/src/lease/anchor.rs", "        if !row.try_get::<bool, _>(\"locked\").map_err(&field)? {",
           "        if row.try_get::<bool, _>(\"locked\").map_err(&field)? && false {")],
     "-p tests --test anchors a_second_process_with_the_same_holder_id"),
    ("batched acquire takes every due role",
     [edit(ACQUIRE, "((SELECT live FROM others) + 1)", "1")],
     "-p tests --test batch with_another_live_holder"),
    # The fence alone keeps a stale token's claims out of the ledger, so this grants a held role
    # again under the same token: only one holder per token keeps the two apart.
    ("scale: batched grant of a held role, token kept",
     [edit(ACQUIRE, "       AND (expires_at IS NULL OR expires_at <= now())\n", "", count=2),
      edit(ACQUIRE,
           "SET holder_token = greatest(holder_token + 1, (extract(epoch FROM now()) * 1000)::bigint)",
           "SET holder_token = holder_token")],
     "-p tests --test scale"),
    ("poller asks for roles in a tick",
     [edit("leader-runtime/src/poll.rs", "let asked: Vec<usize> = (0..roles.len()).filter(|&i| !roles[i].in_tick)",
           "let asked: Vec<usize> = (0..roles.len()).filter(|&i| i < usize::MAX)")],
     "-p leader-runtime --lib one_statement_polls_every_role"),
    ("heartbeats off the grid",
     [edit("leader-runtime/src/heartbeat.rs",
           "next_on_grid(grid, acquire_sent, timings.heartbeat())", "acquire_sent + timings.heartbeat()")],
     "-p leader-runtime --lib the_heartbeats_of_ticks_granted"),
    ("release ends only the first of several leases",
     [edit(RELEASE, "let ending = values_list(ends.iter().map(", "let ending = values_list(ends.iter().take(1).map(")],
     "-p tests --test batch one_statement_releases_every_lease"),
    ("a stopping runtime does not leave its sharded roles",
     [edit("leader-runtime/src/runtime.rs", "        this.leave().await;\n", "")],
     "-p leader-runtime --lib a_clean_shutdown_leaves_the_sharded_roles"),
    ("LEAVE deletes no presence",
     [edit("leader-core/src/lease/leave.rs", " WHERE holder_id = :holder\n", " WHERE holder_id = :holder AND false\n")],
     "-p tests --test shards a_replica_that_leaves"),
    ("a shard stays kept by a replica that left",
     [edit(ACQUIRE,
           "                                                        p.anchor_recorded_at))\n            THEN s.last_tick_holder END AS kept_by,",
           "                                                        p.anchor_recorded_at) OR true)\n            THEN s.last_tick_holder END AS kept_by,")],
     "-p tests --test shards a_shard_is_kept_by"),
    ("release takes a lease listed twice",
     [edit(RELEASE, "if ends[..i].iter().any(|earlier| lease(earlier) == lease(end))",
           "if ends[..i].iter().any(|earlier| lease(earlier) == lease(end) && false)")],
     "-p tests --test batch a_release_naming_one_lease_twice"),
    ("release never notifies",
     [edit(RELEASE, "WHERE :notify AND r.released_role IS NOT NULL) AS sent",
           "WHERE false AND r.released_role IS NOT NULL) AS sent")],
     "-p tests --test wake with_wake_a_follower"),
    ("poller asks for a shard at once after its tick",
     [edit("leader-runtime/src/poll.rs", "            (Schedule::Cron(_), _) | (_, None) => Duration::ZERO,\n",
           "            _ => Duration::ZERO,\n")],
     "-p leader-runtime --lib a_replicas_shards_granted_together"),
    ("poller follows the hints of shards other replicas ran",
     [edit("leader-runtime/src/poll.rs", "        if self.shard.is_none() {\n            return next_poll_wait",
           "        if true {\n            return next_poll_wait")],
     "-p leader-runtime --lib a_shard_another_replica_ran"),
    ("a replica running no shard ignores the hints of others' shards",
     [edit("leader-runtime/src/poll.rs", "                                    running.contains(&role),\n",
           "                                    true,\n")],
     "-p leader-runtime --lib a_shard_another_replica_ran"),
    ("poller ignores wakes",
     [edit("leader-runtime/src/poll.rs", "heard = wake.recv(), if wake_open =>", "heard = wake.recv(), if false =>")],
     "-p leader-runtime --lib a_release_heard_on_the_wake_channel"),
    ("wake logs every failed reconnect",
     [edit("leader-runtime/src/wake.rs", "            Down::Other(error) => {\n                if !down {\n",
           "            Down::Other(error) => {\n                if true {\n")],
     "-p tests --test wake without_its_wake_connection"),
    ("step guard stops at first panic",
     [edit("leader-runtime/src/panic_guard.rs",
           "                self.first_panic.get_or_insert(panic);\n                None",
           "                resume_unwind(Box::new(Reraised(panic)))")],
     "-p tests --test runtime a_panicking_tick"),
    ("fence rules: OR gates",
     [edit("crates/leader-fence-check/src/levels.rs",
           'Some(("BoolExpr", fields)) if int(fields, "boolop") == AND_EXPR => {',
           'Some(("BoolExpr", fields)) => {')],
     "-p leader-fence-check --test rules gated_sub_select_under_or"),
    ("fence rules: a gate through <> ALL",
     [edit("crates/leader-fence-check/src/props/gates.rs",
           "                EXISTS_SUBLINK | ANY_SUBLINK => {\n",
           "                ALL_SUBLINK | EXISTS_SUBLINK | ANY_SUBLINK => {\n")],
     "-p leader-fence-check --test rules gated_sub_select_under_or"),
    ("fence rules: count taken for NULL from no rows",
     [edit("crates/leader-fence-check/src/functions.rs",
           '    aggregate("count"),',
           '    null_aggregate("count"),')],
     "-p leader-fence-check --test rules a_scalar_aggregate_that_is_not_null_from_no_rows_does_not_gate"),
    ("fence rules: a NULL-on-empty aggregate gates under GROUP BY ()",
     [edit("crates/leader-fence-check/src/props.rs",
           '            || has(l.fields, "group_clause")\n',
           '            || false\n')],
     "-p leader-fence-check --test rules a_scalar_aggregate_that_is_not_null_from_no_rows_does_not_gate"),
    ("fence rules: CASE never gates",
     [edit("crates/leader-fence-check/src/props/gates.rs",
           '            "CaseExpr" => self.case_gates(fields),',
           '            "CaseExpr" => false,')],
     "-p leader-fence-check --test rules case_gates_when_no_arm_can_be_true"),
    ("fence rules: CASE gates when its ELSE can be true",
     [edit("crates/leader-fence-check/src/props/gates.rs",
           "        arms_gate && otherwise_gates\n",
           "        arms_gate\n")],
     "-p leader-fence-check --test rules case_gates_when_no_arm_can_be_true"),
    ("fence rules: OR gates when one arm does",
     [edit("crates/leader-fence-check/src/props/gates.rs",
           "OR_EXPR => !args.is_empty() && args.iter().all(|a| self.conjunct_gates(a)),",
           "OR_EXPR => args.iter().any(|a| self.conjunct_gates(a)),")],
     "-p leader-fence-check --test rules or_gates_when_every_arm_does"),
    ("fence rules: the NULL row of an aggregate is no gate for ANY and ALL",
     [edit("crates/leader-fence-check/src/props/gates.rs",
           '                    strict_operator(fields.get("oper_name")) && self.sub_select_one_null(fields)\n',
           "                    false\n")],
     "-p leader-fence-check --test rules any_all_and_not_in_over_the_null_row"),
    ("fence rules: ALL of no rows taken for a gate",
     [edit("crates/leader-fence-check/src/props/gates.rs",
           "            .is_some_and(|level| self.null_from_nothing(level))\n",
           "            .is_some_and(|level| self.null_from_nothing(level) || self.empty(level))\n")],
     "-p leader-fence-check --test rules any_all_and_not_in_over_the_null_row"),
    ("fence rules: HAVING never removes the group of no rows",
     [edit("crates/leader-fence-check/src/props.rs",
           "            .filter(|_| !self.having_removes_empty_group(level))\n",
           "")],
     "-p leader-fence-check --test rules having_that_removes_the_group_of_no_rows"),
    ("fence rules: count taken for NULL on the group of no rows",
     [edit("crates/leader-fence-check/src/props/empty_group.rs",
           "            Some(Known::Int(0))\n",
           "            Some(Known::Null)\n")],
     "-p leader-fence-check --test rules having_that_removes_the_group_of_no_rows"),
    ("fence rules: a gate in HAVING ignored",
     [edit("crates/leader-fence-check/src/props/empty_group.rs",
           "            .any(|c| self.conjunct_gates(c))\n",
           "            .any(|_| false)\n")],
     "-p leader-fence-check --test rules having_that_removes_the_group_of_no_rows"),
    ("schema prepare: a migration numbered as the framework's not told apart",
     [edit("crates/leaderctl/src/prepare.rs",
           "            .find(|framework| framework.version == ours.version)\n",
           "            .find(|_| false)\n")],
     "-p leaderctl --test prepare a_migration_that_fails_or_a_folder_sqlx_refuses"),
    ("fence rules: a pulled-up sub-select's column taken for a stored one",
     [edit("crates/leader-fence-check/src/props/kept_columns.rs",
           "                if !self.may_flatten(sub, Pos::Input) {\n",
           "                if true {\n")],
     "-p leader-fence-check --test schema a_condition_on_a_pulled_up_constant_column"),
    ("fence rules: constant folding ignored (CASE, coalesce keep any column)",
     [edit("crates/leader-fence-check/src/props/kept_columns.rs",
           '            "BoolExpr" => keeps(fields.get("args")),\n',
           '            "BoolExpr" | "CaseExpr" | "CoalesceExpr" => true,\n')],
     "-p leader-fence-check --test schema a_condition_on_a_pulled_up_constant_column"),
    ("fence rules: a NULL bind parameter's folding ignored",
     [edit("crates/leader-fence-check/src/props/kept_columns.rs",
           '        Some(("ParamRef", _)) => true,\n',
           '        Some(("ParamRef", _)) => false,\n')],
     "-p leader-fence-check --test schema a_condition_on_a_pulled_up_constant_column"),
    ("fence rules: a view's computed column taken for a stored one",
     [edit("crates/leader-fence-check/src/schema.rs",
           "                    let Some(view) = self.flat_views.get(&i) else {\n"
           "                        return false;\n",
           "                    let Some(view) = self.flat_views.get(&i) else {\n"
           "                        return true;\n")],
     "-p leader-fence-check --test schema a_condition_on_a_pulled_up_constant_column"),
    ("fence rules: init plans a rescan evaluates kept by the fence around them",
     [edit("crates/leader-fence-check/src/props.rs",
           "                    || (self.evaluated_on_rescan(level) && self.rescanned(parent.level))\n",
           "")],
     "-p leader-fence-check --test schema init_plans_a_rescan_evaluates"),
    ("fence rules: WITH queries unchecked",
     [edit("crates/leader-fence-check/src/rules.rs",
           "if !self.props.reached(level) || self.props.gated(level) {",
           "if !self.props.reached(level) || self.props.gated(level) || self.levels.levels[level].parent.is_some() {")],
     "-p leader-fence-check --test rules data_modifying_cte_gated_only_outside"),
    ("fence rules: a gate that reads no column is not evaluated once",
     [edit("crates/leader-fence-check/src/props/one_time.rs",
           "                    && (is_fence_call(conjunct)\n"
           "                        || (self.pseudo_constant(level, n, conjunct)\n"
           "                            && self.conjunct_gates(conjunct)))\n",
           "                    && is_fence_call(conjunct)\n")],
     "-p leader-fence-check --test rules a_gate_that_reads_no_column_of_its_query"),
    ("fence rules: a one-time gate trusts a reference it cannot place",
     [edit("crates/leader-fence-check/src/props/one_time.rs",
           "reads_level(self.levels, d, r).is_some_and(",
           "reads_level(self.levels, d, r).is_none_or(")],
     "-p leader-fence-check --test rules a_gate_that_reads_no_column_of_its_query"),
    ("fence rules: a one-time gate may call functions outside its sub-select",
     [edit("crates/leader-fence-check/src/props/one_time.rs",
           '        "FuncCall" => functions::is_fence(&function_name(fields)),\n',
           '        "FuncCall" => true,\n'),
      edit("crates/leader-fence-check/src/props/one_time.rs",
           "                .all(|call| functions::is_fence(&function_name(call.fields)))\n",
           "                .all(|_| true)\n")],
     "-p leader-fence-check --test rules a_gate_that_reads_no_column_of_its_query"),
    ("fence rules: a limit that counts a gated query not taken for 0",
     [edit("crates/leader-fence-check/src/props/zero_limit.rs",
           "        if !matches!(l.kind, Kind::Select | Kind::SetOp(_)) {\n",
           "        if true {\n")],
     "-p leader-fence-check --test schema a_limit_that_counts_a_gated_query_is_zero"),
    ("fence rules: a count of an ungated query taken for 0",
     [edit("crates/leader-fence-check/src/props.rs",
           "            || !self.gated(level)\n            || has(l.fields, \"group_clause\")\n",
           "            || has(l.fields, \"group_clause\")\n")],
     "-p leader-fence-check --test schema a_limit_that_counts_a_gated_query_is_zero"),
    ("fence rules: any aggregate's limit taken for 0",
     [edit("crates/leader-fence-check/src/props/zero_limit.rs",
           '[name] if name == "count")', "[_])")],
     "-p leader-fence-check --test schema a_limit_that_counts_a_gated_query_is_zero"),
    ("fence rules: a WITH query that only reads taken for never read",
     [edit("crates/leader-fence-check/src/props.rs",
           "                self.read_where_evaluated(level)\n",
           "                false\n")],
     "-p leader-fence-check --test rules locking_sub_select_needs_its_own_fence"),
    ("fence rules: a WITH query that changes rows taken for one that only reads",
     [edit("crates/leader-fence-check/src/props.rs",
           "            Kind::Select | Kind::SetOp(_) | Kind::Values\n        ) && !levels",
           "            Kind::Select | Kind::SetOp(_) | Kind::Values | Kind::Delete | Kind::Update\n"
           "                | Kind::Insert | Kind::Merge\n        ) && !levels")],
     "-p leader-fence-check --test rules data_modifying_cte"),
    ("fence rules: a WITH RECURSIVE query read before it is declared taken for unread",
     [edit("crates/leader-fence-check/src/props.rs",
           "                .any(|item| matches!(item.source, Source::Recursive(_)))\n",
           "                .any(|_| false)\n")],
     "-p leader-fence-check --test rules locking_sub_select_needs_its_own_fence"),
    ("fence rules: a rescanned LIMIT's own expression kept by the fence",
     [edit("crates/leader-fence-check/src/props.rs",
           "            || (pos == Pos::Head && self.rescanned(level))\n", "")],
     "-p leader-fence-check --test schema a_limit_is_evaluated_where_its_query_runs"),
    ("fence rules: a gate on rows protects a lock",
     [edit("crates/leader-fence-check/src/rules.rs",
           "!self.props.reached(level) || self.props.one_time(level)",
           "!self.props.reached(level) || self.props.gated(level)")],
     "-p leader-fence-check --test rules locks_land_where_postgresql_takes_them"),
    ("fence rules: locks not pushed into sub-selects",
     [edit("crates/leader-fence-check/src/rules.rs",
           "Source::Subquery(sub) => self.pushed_lock(sub, &item.name),",
           "Source::Subquery(_) => None,")],
     "-p leader-fence-check --test rules locks_land_where_postgresql_takes_them"),
    ("fence rules: LIMIT under the fence",
     [edit("crates/leader-fence-check/src/props.rs",
           "            Pos::Head | Pos::With => true,",
           "            Pos::With => true,\n            Pos::Head => !self.one_time(level),")],
     "-p leader-fence-check --test rules locking_sub_select_needs_its_own_fence"),
    ("fence rules: conditions on no column under the fence",
     [edit("crates/leader-fence-check/src/props.rs",
           "!self.one_time(level) || !self.conjunct_reads_level(level, n, false)",
           "!self.one_time(level) || n == usize::MAX")],
     "-p leader-fence-check --test rules locking_sub_select_needs_its_own_fence"),
    ("fence rules: flattened sub-selects keep the outer fence in front",
     [edit("crates/leader-fence-check/src/props.rs",
           "        !self.conjunct_reads_level(level, n, false) && self.flattened_into_evaluated(level)",
           "        !self.conjunct_reads_level(level, n, false) && self.flattened_into_evaluated(level) && n == usize::MAX")],
     "-p leader-fence-check --test rules conditions_of_a_flattened_sub_select"),
    ("fence rules: LIMIT counted as flattened",
     [edit("crates/leader-fence-check/src/props.rs",
           '["limit_count", "distinct_clause", "sort_clause"]',
           '["distinct_clause", "sort_clause"]')],
     "-p leader-fence-check --test rules conditions_of_a_flattened_sub_select"),
    ("fence rules: bare names read the sub-select's own FROM",
     [edit("crates/leader-fence-check/src/names.rs",
           "None if !outer_may_give(levels, level, single) => Some(level),",
           "None if true => Some(level),")],
     "-p leader-fence-check --test rules conditions_on_an_outer_column"),
    ("fence rules: grouping sets ignored",
     [edit("crates/leader-fence-check/src/props.rs",
           "GROUPING_SET_EMPTY | GROUPING_SET_ROLLUP | GROUPING_SET_CUBE => true,",
           "GROUPING_SET_EMPTY | GROUPING_SET_ROLLUP | GROUPING_SET_CUBE => false,")],
     "-p leader-fence-check --test rules grouping_sets_with_the_empty_set"),
    ("fence rules: outer aggregates ignored",
     [edit("crates/leader-fence-check/src/props.rs",
           "self.outer_aggregates[level].then_some(",
           "false.then_some(")],
     "-p leader-fence-check --test rules an_aggregate_of_the_outer_query"),
    ("fence rules: attribute notation is a column",
     [edit("crates/leader-fence-check/src/rules.rs",
           "let Some(mut call) = possible_call(self.levels, level, r) else {",
           "let Some(mut call) = possible_call(self.levels, level, r).filter(|_| false) else {")],
     "-p leader-fence-check --test rules attribute_notation_is_a_call"),
    ("fence rules: a table the schema knows has every column",
     [edit("crates/leader-fence-check/src/schema.rs",
           "            if !has {\n",
           "            if false {\n")],
     "-p leader-fence-check --test schema a_name_the_schema_does_not_give_is_still_a_possible_call"),
    ("fence rules: a VOLATILE function of the schema stands anywhere",
     [edit("crates/leader-fence-check/src/rules.rs",
           "if self.evaluated(level, call.pos, call.aggregate) {",
           "if false {")],
     "-p leader-fence-check --test schema a_volatile_function_of_the_migrations_stands_where_the_fence_has_held"),
    ("fence rules: a field of a bare name is taken for a table's column",
     [edit("crates/leader-fence-check/src/names.rs",
           "Some(x) if !level_may_give(levels, level, x) && !outer_may_give(levels, level, x) => {",
           "Some(x) if !outer_may_give(levels, level, x) => {")],
     "-p leader-fence-check --test schema a_field_of_a_bare_name_is_the_tables_column_where_no_column_has_that_name"),
    ("fence rules: any locking clause excuses the result",
     [edit("crates/leader-fence-check/src/rules.rs",
           "let result_is_locked = self.lock_refused_at_top;",
           "let result_is_locked = !top.locking.is_empty();")],
     "-p leader-fence-check --test schema a_lock_that_lands_nowhere_does_not_excuse_the_result"),
    ("fence rules: an aggregate of the schema is taken for a function",
     [edit("crates/leader-fence-check/src/routines.rs",
           ".find(|f| matches!(f.kind, FunctionKind::Aggregate | FunctionKind::Window))",
           ".find(|_| false)")],
     "-p leader-fence-check --test schema stable_functions_stand_anywhere_and_aggregates_and_unknown_ones_nowhere"),
    ("fence rules: a lock on a view is taken for a lock on a table",
     [edit("crates/leader-fence-check/src/rules.rs",
           "!(is_table && self.props.gated(level))",
           "!self.props.gated(level)")],
     "-p leader-fence-check --test schema a_gate_on_rows_is_in_time_for_a_lock_on_a_table_not_on_a_view"),
    ("fence rules: a shard's claim by another column than its key",
     [edit("crates/leader-fence-check/src/shards.rs",
           "        if outputs(self.levels, sub)?.len() != 1 || !self.output_pure(sub, 0) {",
           "        if outputs(self.levels, sub)?.len() != 1 {")],
     "-p leader-fence-check --test shards rows_claimed_by_another_column_than_the_filtered_key_are_refused"),
    ("fence rules: a shard's claim may join on any column of its filtered rows",
     [edit("crates/leader-fence-check/src/shards.rs",
           "            .filter(|(n, _)| self.output_pure(sub, *n))\n",
           "")],
     "-p leader-fence-check --test shards rows_claimed_by_another_column_than_the_filtered_key_are_refused"),
    # The sharded differential must find these by itself: rows both shards' live leaders act on.
    ("fence differential: a shard's claim is not asked which rows it covers",
     [edit("crates/leader-fence-check/src/shards.rs",
           "    if shards.is_empty() {\n        return Vec::new();\n    }\n    let rule",
           "    if !shards.is_empty() {\n        return Vec::new();\n    }\n    let rule")],
     "-p fence-differential --test generated no_shard_claim"),
    ("fence rules: a shard's lock on a view counts as filtered",
     [edit("crates/leader-fence-check/src/shards.rs",
           "                    _ if !is_table => Why::NotATable,\n",
           "")],
     "-p leader-fence-check --test shards rows_claimed_by_another_column_than_the_filtered_key_are_refused"),
    ("fence rules: a shard's insert need not carry its key",
     [edit("crates/leader-fence-check/src/shards.rs",
           "            Some(source) if self.output_keyed(source, position) => {}",
           "            Some(_) => {}")],
     "-p leader-fence-check --test shards rows_claimed_by_another_column_than_the_filtered_key_are_refused"),
    ("fence rules: a fenced MERGE join condition gates every clause",
     [edit("crates/leader-fence-check/src/props.rs",
           "|| (kind == MERGE_WHEN_MATCHED && (on_gates || source_empty))",
           "|| on_gates || (kind == MERGE_WHEN_MATCHED && source_empty)")],
     "-p leader-fence-check --test rules insert_select_and_merge"),
    # The prepared schema (issue 41): the file from PostgreSQL's catalog, its freshness, and the
    # rules that read it.
    ("prepared schema: a stale file is taken for a current one",
     [edit("crates/leader-schema/src/freshness.rs", "    if now != schema.fingerprint {", "    if false {")],
     "-p leader-schema a_missing_stale_or_current_file_is_told_apart"),
    ("prepared schema: --check passes a file that differs",
     [edit("crates/leaderctl/src/schema_file.rs", "            Ok(current) if current == text => {",
           "            Ok(_) => {")],
     "-p leaderctl --test prepare a_migration_history_is_read_as_postgresql_runs_it"),
    ("prepared schema: a folder without the framework's migrations gets none",
     [edit("crates/leaderctl/src/prepare.rs", "    if !holds_framework {", "    if false {")],
     "-p leaderctl --test prepare a_migration_history_is_read_as_postgresql_runs_it"),
    ("prepared schema: statement-level triggers not read",
     [edit("crates/leaderctl/src/catalog.rs",
           "          WHERE NOT tgisinternal AND tgenabled <> 'D' AND tgtype::int4 & 1 = 0\",",
           "          WHERE false\",")],
     "-p leaderctl --test prepare a_migration_history_is_read_as_postgresql_runs_it"),
    ("leader-migrations: migrations read by name, not by version",
     [edit("crates/leader-migrations/src/files.rs",
           "    names.sort_by_key(|name| (version(name).ok_or(()), name.clone()));\n", "")],
     "-p leader-migrations migrations_run_by_integer_version"),
    ("fence rules: an ambiguous call counts as its first overload",
     [edit("crates/leader-fence-check/src/routines.rs",
           "        match candidates\n            .iter()\n            .find(|f| f.volatility == Volatility::Volatile)",
           "        match candidates\n            .first()\n            .filter(|f| f.volatility == Volatility::Volatile)")],
     "-p leader-fence-check --test schema a_call_is_what_the_overloads_its_arguments_may_pick_are"),
    ("fence rules: statement-level triggers ignored",
     [edit("crates/leader-fence-check/src/rules.rs", "        if !fired.is_empty() {", "        if false {")],
     "-p leader-fence-check --test schema a_claim_that_fires_a_statement_level_trigger_is_refused"),
    ("fence rules: a view's table's triggers ignored",
     [edit("crates/leader-fence-check/src/schema.rs",
           "                    queue.extend(self.matching(Some(&read.schema), &read.name));\n", "")],
     "-p leader-fence-check --test schema a_claim_that_fires_a_statement_level_trigger_is_refused"),
    ("fence rules: attribute notation of a VOLATILE function taken for a column",
     [edit("crates/leader-fence-check/src/rules.rs",
           "                    Some(Routine::ReadOnly) => continue,",
           "                    Some(_) => continue,")],
     "-p leader-fence-check --test schema attribute_notation_calls_what_takes_the_tables_row"),
    ("fence rules: VOLATILE built-ins stand anywhere",
     [edit("crates/leader-fence-check/src/rules.rs",
           "            None if functions::known(name).is_some() => None,",
           "            None if functions::known(name).is_some() || functions::volatile_builtin(name).is_some() => None,")],
     "-p leader-fence-check --test schema pg_notify_stands_where_the_fence_has_held"),
    ("fence rules: NOT BETWEEN a NULL bound taken for a gate",
     [edit("crates/leader-fence-check/src/props/gates.rs",
           "AEXPR_BETWEEN | AEXPR_BETWEEN_SYMMETRIC => self.between_null_bound(fields),",
           "AEXPR_BETWEEN | AEXPR_BETWEEN_SYMMETRIC | 12 => self.between_null_bound(fields),")],
     "-p leader-fence-check --test schema a_claims_own_columns_are_named_as_postgresql_names_them"),
    ("fence rules: any recursive read taken for the query's read of itself",
     [edit("crates/leader-fence-check/src/props.rs",
           "                && self.levels.within(read.at, cte.level)\n", "")],
     "-p leader-fence-check --test schema only_a_recursive_querys_read_of_itself"),
    ("fence rules: a view whose columns call functions read as its table",
     [edit("crates/leader-fence-check/src/schema.rs",
           "        \"CoalesceExpr\" => fields.get(\"args\").is_some_and(plain_expression),\n        _ => false,",
           "        \"CoalesceExpr\" => fields.get(\"args\").is_some_and(plain_expression),\n        _ => true,")],
     "-p leader-fence-check --test schema a_lock_on_a_view_read_as_its_table"),
    ("fenced: a query a helper made sent unchecked",
     [edit("leader-macros/src/fenced/sends.rs",
           "                        && !arg.is_some_and(|arg| self.reads_as_sql(arg))\n",
           "                        && false\n")],
     "-p leader-macros --lib a_query_a_helper_returns_is_refused"),
    ("leader_role: the shard count not pinned",
     [edit("leader-macros/src/leader_role/validate.rs", "        && rows.shard_count != led_with\n",
           "        && false\n")],
     "-p ui-tests --test ui"),
    ("fence rules: scalar sub-select is no gate",
     [edit("crates/leader-fence-check/src/props/gates.rs",
           'AEXPR_OP if strict_operator(fields.get("name")) =>',
           "AEXPR_OP if false =>")],
     "-p leader-fence-check --test rules the_queue_pop"),
    # The generated differential test must find a seeded rule bug by itself, with its fixed
    # seed: statements whose only gate is under OR, or behind `<> ALL` (2 is ALL_SUBLINK).
    ("fence differential: OR counted as AND",
     [edit("crates/leader-fence-check/src/levels.rs",
           'Some(("BoolExpr", fields)) if int(fields, "boolop") == AND_EXPR => {',
           'Some(("BoolExpr", fields)) if matches!(int(fields, "boolop"), AND_EXPR | OR_EXPR) => {')],
     "-p fence-differential --test generated"),
    ("fence differential: <> ALL gates",
     [edit("crates/leader-fence-check/src/props/gates.rs",
           "                EXISTS_SUBLINK | ANY_SUBLINK => {\n",
           "                ALL_SUBLINK | EXISTS_SUBLINK | ANY_SUBLINK => {\n")],
     "-p fence-differential --test generated"),
    ("fenced: strings to an Executor unchecked",
     [edit("leader-macros/src/fenced/sends.rs",
           "(None, Some(Handling::Sends { sql })) => {",
           "(None, Some(Handling::Sends { sql })) if false => {")],
     "-p leader-macros --lib every_sqlx_send_form"),
    # The table of sqlx's sends is checked against the pinned sqlx's sources: a sending method
    # dropped from it (here `copy_in_raw`, which loaded rows when the macro did not know it) must
    # fail the API test, so a sqlx upgrade cannot open a hole silently.
    ("fenced: a sqlx send missing from the table",
     [edit("leader-macros/src/fenced/sqlx_api.rs",
           '    refused("sqlx-postgres", "PgConnection::copy_in_raw", 2, COPY_IN),\n', "")],
     "-p leader-macros --test sqlx_api every_sqlx_function_that_takes_sql_is_in_the_table"),
    # The same loss, found by the Rust side's generator: without `query_scalar` in the table
    # the macro refuses every body sending through it (never accepting one), and the generator's
    # false rejections rise above the figure last measured.
    ("fenced generator: a sqlx send missing from the table",
     [edit("leader-macros/src/fenced/sqlx_api.rs", '    query("query_scalar", 1),\n', "")],
     "-p leader-macros --lib every_generated_body_gets_the_verdict"),
    ("fence-differential: the forced plans not forced",
     [edit("tools/fence-differential/src/probe.rs",
           "        if let Some(settings) = plan.settings() {\n",
           "        if let Some(settings) = plan.settings().filter(|_| false) {\n")],
     "-p fence-differential --test forced_plans"),
    # And by the same bodies compiled with rustc (`ui-tests`).
    ("fenced generator, compiled: a sqlx send missing from the table",
     [edit("leader-macros/src/fenced/sqlx_api.rs", '    query("query_scalar", 1),\n', "")],
     "-p ui-tests --test generated_sends"),
    ("fenced: a const of the body is not read",
     [edit("leader-macros/src/fenced/sends.rs", "                Some(value) => sql_arg(&value),\n",
           "                Some(_) => sql_arg(arg),\n")],
     "-p leader-macros --lib a_const_of_the_body_is_read"),
    ("fenced: a send called by path unchecked",
     [edit("leader-macros/src/fenced/sends.rs",
           "} else if let Some(api) = sqlx_api::path_call(&name, call.args.len())\n",
           "} else if let Some(api) = None::<&sqlx_api::Api>\n")],
     "-p leader-macros --lib a_generic_executor_called_by_path"),
    ("fenced: every call by path to a std type's constructor taken for sqlx's",
     [edit("leader-macros/src/fenced/sends.rs",
           "                    .filter(|_| !surely_not_sqlx(&call.func))\n", "")],
     "-p leader-macros --lib constructors_of_std_types_are_not_query_builders"),
    ("fenced: any type's constructor taken for a std type's",
     [edit("leader-macros/src/fenced/send_syntax.rs",
           "            NOT_SQLX_TYPES.contains(&owner.as_str())\n",
           "            !owner.is_empty()\n")],
     "-p leader-macros --lib constructors_of_std_types_are_not_query_builders"),
    ("fenced: AssertSqlSafe outside a send unchecked",
     [edit("leader-macros/src/fenced/sends.rs",
           'if name == "AssertSqlSafe" {', 'if name == "AssertSqlSafe" && false {')],
     "-p leader-macros --lib sql_the_macro_cannot_read_is_refused"),
    ("fenced: claims sent some other way unchecked",
     [edit("leader-macros/src/fenced/validate.rs",
           "if checked.statements == 0 || checked.claims == 0 {",
           "if true {")],
     "-p leader-macros --lib claims_are_found_by_their_sql"),
    ("fenced: fence parameter's type unconfirmed",
     [edit("leader-macros/src/fenced/expand.rs",
           '        .insert(0, syn::parse2(assertion).expect("a statement"));',
           '        .truncate(usize::MAX);\n    let _ = assertion;')],
     "-p leader-macros --lib the_expansion_asks_the_compiler"),
    ("fenced: shadowed fence allowed",
     [edit("leader-macros/src/fenced/fence_use.rs",
           '            self.found(&binding.ident, "this binding shadows");',
           "            let _ = binding;")],
     "-p leader-macros --lib the_fence_parameter_keeps"),
    ("accepted claims run without the token check",
     [edit(SHARDS, "           AND shard_count = 1\n           AND holder_token = p_token\n",
           "           AND shard_count = 1\n")],
     "-p tests --test fenced_sql"),
    ("audit exempts every function",
     [edit("crates/leader-audit/src/lib.rs",
           '.is_some_and(|s| s.ident == "fenced" || s.ident == "unfenced")',
           ".is_some()")],
     "-p leader-audit --test audit unfenced_row_locks_are_found"),
    ("funnel email_outbox unfenced",
     [edit("examples/billing-demo/src/store.rs", "                             AND leader_fence($2, $3)\n", ""),
      edit("examples/billing-demo/src/store.rs",
           "    /// Claim funnel of `email_outbox`: stamps a batch of unsent emails with the token.\n    #[fenced]\n",
           "    /// Claim funnel of `email_outbox`: stamps a batch of unsent emails with the token.\n")],
     "-p billing-demo --test app each_funnel"),
    # The demo's email outbox is at least once: it sends, then stamps sent. Stamped first, the
    # demo's kill between the two (a send held before the provider accepted it) loses an email.
    ("the demo's email job stamps sent before it sends (at most once)",
     [edit("examples/billing-demo/src/jobs.rs",
           "            send_email(store.pool(), &email, fence).await?;\n"
           "            store.mark_sent(&email, fence).await.map(drop)\n",
           "            if store.mark_sent(&email, fence).await? {\n"
           "                send_email(store.pool(), &email, fence).await?;\n"
           "            }\n"
           "            Ok(())\n")],
     "-p billing-demo --test app three_replicas"),
    # A key with the claim's token differs after a takeover: the demo's kill after the provider
    # accepted an email makes the next leader's repeat carry another key.
    ("the demo's email key carries the claim's token",
     [edit("examples/billing-demo/src/outbound.rs", "email.idempotency_key().replace('\\'', \"''\"),",
           "format!(\"{}-{}\", email.idempotency_key(), fence.token()),")],
     "-p billing-demo --test app three_replicas"),
    ("the demo's key check ignores the keys of an email's repeats",
     [edit("examples/billing-demo/src/checks.rs", "HAVING count(DISTINCT idempotency_key) > 1",
           "HAVING count(DISTINCT idempotency_key) > count(*)")],
     "-p billing-demo --test app the_email_checks"),
    ("tick outside its span",
     [edit("leader-runtime/src/tick.rs", "        .instrument(span)\n", "")],
     "-p tests --test tick_span"),
    ("panicked losses not created at 0",
     [edit("leader-runtime/src/metrics.rs",
           '    metrics::counter!(LEASE_LOST_TOTAL, "role" => role.as_str(), "reason" => "panicked")\n'
           '        .absolute(0);\n', "")],
     "-p billing-demo --test metrics the_demos_metrics_endpoint"),
    ("interval gauge unset",
     [edit("leader-runtime/src/metrics.rs",
           '            metrics::gauge!(INTERVAL_SECONDS, "role" => role.as_str()).set(every.as_secs_f64())\n',
           "            let _ = every;\n")],
     "-p billing-demo --test metrics the_demos_metrics_endpoint"),
    ("metrics undescribed",
     [edit("leader-runtime/src/runtime.rs", "        crate::metrics::describe();\n", ""),
      edit("leader-runtime/src/prometheus.rs", "    crate::metrics::describe();\n", "")],
     "-p billing-demo --test metrics the_demos_metrics_endpoint"),
    ("pause age of an unpaused role is 0, not NULL",
     [edit("leader-runtime/src/metrics.rs",
           "                CASE WHEN bool_or(paused_at IS NOT NULL)\n"
           "                     THEN greatest(extract(epoch FROM now() - min(paused_at)), 0)::float8\n"
           "                END AS paused_for",
           "                greatest(extract(epoch FROM now() - min(paused_at)), 0)::float8 AS paused_for")],
     "-p tests --test runtime the_status_gauges"),
    ("alert on an undocumented metric",
     [edit("docs/alerts.yaml", "max by (role) (leader_paused_seconds) > 3600",
           "max by (role) (leader_paused_age_seconds) > 3600")],
     "-p billing-demo --test metrics every_metric_an_alert_uses"),
    ("alert not in the runbook",
     [edit("docs/runbook.md", "### LeaderClockDrift\n", "### Clock drift\n")],
     "-p billing-demo --test metrics every_alert_is_explained"),
    ("clear_cooldown leaves the cooldown",
     [edit(CLEAR_COOLDOWN, "SET not_before = NULL WHERE role = p_role;",
           "SET not_before = not_before WHERE role = p_role;")],
     "-p leaderctl --test cli clear_cooldown_lets"),
    ("upgrade does not re-run the grant",
     [edit(CLEAR_COOLDOWN, "        PERFORM leader_grant_app_role(grantee);\n", "        NULL;\n")],
     "-p tests --test migrations the_upgrade_grants"),
    # leader_grant_app_role as the latest framework migration re-creates it.
    ("grant omits leader_clear_cooldown",
     [edit("migrations/20261207000000_leader_presence.up.sql",
           "'leader_unpause_shard(text, integer), '\n                   'leader_clear_cooldown(text) TO %I'",
           "'leader_unpause_shard(text, integer) TO %I'")],
     "-p leaderctl --test cli an_app_role_granted"),
    ("pause of a paused role overwrites it",
     [edit(OPERATOR, "CASE WHEN w.all_paused IS NOT TRUE THEN leader_pause", "CASE WHEN true THEN leader_pause")],
     "-p leaderctl --test cli pause_records_who"),
    ("racing pauses look before the lock",
     [edit(OPERATOR, "FROM leader_leases WHERE role = :role FOR UPDATE\n)", "FROM leader_leases WHERE role = :role\n)")],
     "-p tests --test protocol racing_pauses"),
    ("already paused not refused",
     [edit(OPERATOR, "    let Some(since) = since else {\n        return Ok(PauseOutcome::Paused);",
           "    let Some(since) = since.filter(|_| false) else {\n        return Ok(PauseOutcome::Paused);")],
     "-p leaderctl --test cli pause_records_who"),
    ("status counts expiry backwards",
     [edit("leader-core/src/status.rs", "self.expires_at.map(|at| at - self.db_now)",
           "self.expires_at.map(|at| self.db_now - at)")],
     "-p leaderctl --test cli status_json"),
    ("watch ignores --json",
     [edit("crates/leaderctl/src/status.rs", "        if json {\n            print!", "        if false {\n            print!")],
     "-p leaderctl --test cli status_watch_json"),
    ("out-of-date file overwritten without --force",
     [edit("crates/leaderctl/src/migrations.rs", 'Copy::OutOfDate => (false, "OUT OF DATE',
           'Copy::OutOfDate => (true, "OUT OF DATE')],
     "-p leaderctl --test cli migrations_write_says"),
    ("roles add forgets earlier roles",
     [edit("crates/leaderctl/src/roles.rs",
           "                .kept\n                .iter()\n                .chain(&self.added)",
           "                .kept\n                .iter()\n                .take(0)\n                .chain(&self.added)")],
     "-p leaderctl --test cli roles_add_writes"),
    ("schema check ignores an out-of-date leader_pause",
     [edit("leader-core/src/schema.rs", "    if pause && !pause_floor {", "    if pause && !pause_floor && false {")],
     "-p tests --test migrations the_pause_floor_upgrade"),
    ("schema check ignores leader_clear_cooldown",
     [edit("leader-core/src/schema.rs", '        (clear_cooldown, "function leader_clear_cooldown(text)"),\n', "")],
     "-p leaderctl --test cli check_passes"),
    ("unreachable database exits 1",
     [edit("crates/leaderctl/src/failure.rs", "const UNREACHABLE: u8 = 2;", "const UNREACHABLE: u8 = 1;")],
     "-p leaderctl --test cli an_unreachable_database"),
    ("reference app's framework copy drifts",
     [edit("examples/billing-demo/migrations/20261202000000_leader_clear_cooldown.up.sql",
           "-- leader-leases framework schema, second migration",
           "-- leader-leases framework schema (edited), second migration")],
     "-p billing-demo --test app the_copied_framework_migrations"),
    # The job on the tick's own task, as it was: blocked in place, the heartbeat stops with it.
    ("tick polls its job in place of its heartbeat",
     [edit("leader-runtime/src/tick.rs",
           "let mut job = AbortOnDropHandle::new(tokio::spawn(job.in_current_span()));",
           "let mut job = AbortOnDropHandle::new(tokio::spawn(std::future::ready("
           "tokio::task::block_in_place(|| "
           "tokio::runtime::Handle::current().block_on(job.in_current_span())))));")],
     "-p tests --test blocking_job"),
    ("a tick's tasks are not ended when its job returns",
     [edit("leader-runtime/src/tick.rs",
           "                ended = Some(job_end(result));\n                tasks.end();\n",
           "                ended = Some(job_end(result));\n")],
     "-p leader-runtime --lib the_ticks_tasks_are_aborted"),
    ("release does not wait for the tick's tasks",
     [edit("leader-runtime/src/tick.rs", "() = tasks.ended(), if ended.is_some() => {",
           "() = std::future::ready(()), if ended.is_some() => {")],
     "-p leader-runtime --lib release_waits_for_the_ticks_blocking_work"),
    ("a pause found by RELEASE is not counted",
     [edit("leader-runtime/src/tick.rs",
           "                crate::metrics::lease_lost(role, found.as_str());\n", "")],
     "-p leader-runtime --lib a_pause_found_by_release"),
    ("RELEASE does not read the pause",
     [edit(RELEASE, "       l.paused_at IS NOT NULL AS paused,", "       false AS paused,")],
     "-p tests --test protocol release_after_a_pause"),
    ("testkit shut_down leaves the server up",
     [edit("crates/leader-throwaway-pg/src/cluster.rs", '.args(["-m", "fast", "-w", "-t", "60", "stop"]),',
           '.args(["-w", "-t", "60", "status"]),')],
     "-p leader-testkit --test single_user a_shut_down_cluster"),
    # Misconfiguration is loud (docs/production.md, "Behind a transaction-mode pooler").
    ("anchor lock taken on a session a pooler lent",
     [edit("leader-core/src/lease/anchor.rs", "   AND current_setting(:setting, true) = :nonce\n", "")],
     "-p tests --test misconfiguration an_anchor_is_never_taken"),
    ("direct connection's nonce not checked",
     [edit("leader-core/src/pooler.rs", "        if answered.as_deref() == Some(self.nonce.as_str()) {",
           "        if answered.is_some() || answered.is_none() {")],
     "-p tests --test misconfiguration a_direct_connection_at_a_pooler"),
    ("a pooler's refusal of the startup options taken for an unreachable server",
     [edit("leader-core/src/pooler.rs", '        if reason.contains("unsupported startup parameter") {',
           '        if reason.is_empty() {')],
     "-p leaderctl --test cli migrate_through_a_transaction_pooler"),
    ("a direct connection at a pooler is not refused at start-up",
     [edit("leader-runtime/src/runtime.rs", "                Err(error) if error.is_pooler() => return Err(error.into()),\n", "")],
     "-p tests --test misconfiguration a_direct_connection_at_a_pooler"),
    ("a pool whose named statements reach a transaction pooler is not refused",
     [edit("leader-core/src/pooler.rs", "    if named? {\n", "    if named? && false {\n")],
     "-p tests --test misconfiguration a_pool_whose_named_statements"),
    ("one worker thread unwarned",
     [edit("leader-runtime/src/workers.rs", ".filter(|&n| n < 2)", ".filter(|&n| n < 1)")],
     "-p tests --test misconfiguration a_runtime_with_one_worker"),
    ("a starved heartbeat names nothing",
     [edit("leader-runtime/src/heartbeat.rs", "            if wake_at < abandon_at {", "            if false {")],
     "-p tests --test misconfiguration a_runtime_with_one_worker"),
    ("a late timeout blames the database",
     [edit("leader-core/src/send.rs", "    if late >= (timeout / 2).max(Duration::from_millis(50)) {",
           "    if late >= Duration::MAX {")],
     "-p leader-core --lib a_timer_that_fired_late"),
    ("the watcher's waits logged as slow statements",
     [edit("leader-runtime/src/anchor.rs", "            .log_slow_statements(log::LevelFilter::Off, Duration::MAX)\n", "")],
     "-p tests --test misconfiguration the_watchers_waits"),
    ("README claims persistent behind PgBouncer",
     [edit("README.md", "    .persistent(false)\n", "", count=3)],
     "-p leader-readme-examples --test readme_claims"),
    ("the audit macro passes what it finds",
     [edit("leader-macros/src/assert_claims_fenced.rs",
           '    let verdict = failure.map(|message| quote!(panic!("{}", #message);));',
           "    let verdict = failure.map(|_| quote!());")],
     "-p leader-macros --lib a_row_lock_outside_fenced"),
    ("test runs' pooler keeps idle server connections",
     [edit("tools/leader-testkit/src/pooler.rs", "server_idle_timeout: Some(Duration::from_secs(1)),",
           "server_idle_timeout: None,")],
     "-p leader-testkit --test pooler the_test_runs_pooler"),
    # The tick history (issue 42): the ring, and each way a lease ends told apart.
    ("history: the grant writes the tick one slot on",
     [edit(HISTORY, "    SELECT granted_role, granted_shard_index, granted_tick % leader_tick_history_slots(),",
           "    SELECT granted_role, granted_shard_index, (granted_tick + 1) % leader_tick_history_slots(),")],
     "-p tests --test history the_ring_keeps_exactly"),
    ("history: a reused slot keeps the end of the tick it held",
     [edit(HISTORY, ",\n                      ended_at = NULL, ended_by = NULL, outcome = NULL\n", "\n")],
     "-p tests --test history the_ring_keeps_exactly"),
    ("history: an expiry recorded as a takeover",
     [edit(HISTORY, "           ended_by = 'expiry'\n      FROM granted g", "           ended_by = 'takeover'\n      FROM granted g")],
     "-p tests --test history a_takeover_from_a_dead_anchor_and_an_expiry"),
    ("history: a dead holder's takeover recorded as an expiry",
     [edit(HISTORY, "           ended_by = 'takeover'\n      FROM ended_early e", "           ended_by = 'expiry'\n      FROM ended_early e")],
     "-p tests --test history a_takeover_from_a_dead_anchor_and_an_expiry"),
    ("history: an expired lease's expiry not recorded by the grant",
     [edit(HISTORY, "       AND h.tick_number = g.granted_tick - 1\n", "       AND false\n")],
     "-p tests --test history a_takeover_from_a_dead_anchor_and_an_expiry"),
    ("history: a late release recorded as a release",
     [edit(HISTORY, "                           WHEN k.locked_expires_at <= now() THEN 'expiry'\n", "")],
     "-p tests --test history release_records_the_outcome"),
    ("history: a second release overwrites the outcome",
     [edit(HISTORY, "       SET outcome = coalesce(h.outcome, e.ending_outcome),", "       SET outcome = e.ending_outcome,")],
     "-p tests --test history release_records_the_outcome"),
    ("history: a pause does not end the tick",
     [edit(TICK_HISTORY, "    WHEN (OLD.holder_id IS NOT NULL AND NEW.holder_id IS NULL AND NEW.paused_at IS NOT NULL)",
           "    WHEN (false)")],
     "-p tests --test history release_records_the_outcome"),
    ("history: a reseeded lease restarts its tick numbers",
     [edit(TICK_HISTORY, "    NEW.ticks_granted := greatest(NEW.ticks_granted,", "    NEW.ticks_granted := least(NEW.ticks_granted,")],
     "-p tests --test history a_reshard_and_a_reseed"),
    ("operator pause not recorded",
     [edit(TICK_HISTORY, "    VALUES ('pause', p_role, p_shard_index, p_who, p_why);\n", "")],
     "-p tests --test history the_operator_role_reads_everything"),
    ("operator pause without a reason",
     [edit(TICK_HISTORY, "    IF p_why IS NULL OR btrim(p_why) = '' THEN\n        RAISE EXCEPTION 'leader_operator_pause",
           "    IF false THEN\n        RAISE EXCEPTION 'leader_operator_pause")],
     "-p tests --test history the_operator_role_reads_everything"),
    # The dashboard (issue 42): who may write, and what it refuses.
    ("dashboard: a write without the CSRF token",
     [edit("crates/leader-dashboard/src/pages/actions.rs",
           "            || !same_secret(field(\"csrf\").as_bytes(), session.csrf.as_bytes()))\n",
           "            && !same_secret(field(\"csrf\").as_bytes(), session.csrf.as_bytes()))\n")],
     "-p leader-dashboard --test http each_page_reads_and_bad_input"),
    ("dashboard: writes while off",
     [edit("crates/leader-dashboard/src/pages/actions.rs",
           "    if !req.writes_on() {\n        return Err(Box::new(writes_off(req)));\n    }\n",
           "")],
     "-p leader-dashboard --test http writes_are_refused_when_off"),
    ("dashboard: the owner's login accepted",
     [edit("crates/leader-dashboard/src/login.rs", "        Some(\"it owns leader_leases\")", "        None")],
     "-p leader-dashboard --test http the_login_check_refuses"),
    ("dashboard: a wrong token signs in",
     [edit("crates/leader-dashboard/src/pages/login.rs",
           "    if !same_secret(field(\"token\").as_bytes(), token.secret()) {",
           "    if field(\"token\").is_empty() && !same_secret(field(\"token\").as_bytes(), token.secret()) {")],
     "-p leader-dashboard --test http each_page_reads_and_bad_input"),
]

# Mutations CI runs on every change: one in the SQL of a statement, one in the runtime's timer
# logic, each with a single test, so the run stays short and the harness keeps being exercised;
# and two seeded fence-rule bugs the generated differential test must find on its own.
CI_SUBSET = ["renew ignores token", "heartbeat waits for in-flight renew",
             "fence differential: OR counted as AND", "fence differential: <> ALL gates",
             "fence differential: a shard's claim is not asked which rows it covers",
             "fenced generator: a sqlx send missing from the table"]

# cargo-nextest exit codes (nextest-metadata's NextestExitCode).
TEST_RUN_FAILED, BUILD_FAILED, NO_TESTS_RUN = 100, 101, 4

NO_NEXTEST = ("mutants: cargo-nextest is not installed, and only its exit codes tell a caught mutant "
              "from one that does not build; install it: cargo install --locked cargo-nextest")


def read(root, path):
    with open(os.path.join(root, path)) as f:
        return f.read()


def write(root, path, text):
    with open(os.path.join(root, path), "w") as f:
        f.write(text)


def mutated_sources(edits, root=ROOT):
    """The mutated text of each file under `root`, or the reason the mutation does not apply."""
    sources = {}
    for path, old, new, count in edits:
        text = sources.get(path) or read(root, path)
        found = text.count(old)
        if found != count:
            where = "is gone" if found == 0 else f"occurs {found} times, not {count}"
            return None, f"the search text {old.strip()[:60]!r} in {path} {where}"
        sources[path] = text.replace(old, new)
    return sources, None


class Stopped(Exception):
    """A SIGTERM or SIGHUP: raised in the main thread as Ctrl-C raises KeyboardInterrupt, so
    that every `finally` (the scratch copy's restore, the test run's end) runs."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def raise_on_signals():
    def stop(signum, _frame):
        raise Stopped(signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    # Ctrl-C raises KeyboardInterrupt even when the run was started with SIGINT ignored (a
    # shell's background job without job control inherits it so), which Python would keep.
    signal.signal(signal.SIGINT, signal.default_int_handler)


def target_directory(root=ROOT):
    """The workspace's target directory, as cargo resolves it (CARGO_TARGET_DIR, config)."""
    out = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["target_directory"]


def workspace_files(root, leave_out):
    """The workspace's files, relative to `root`: what git lists (tracked, or untracked and not
    ignored), or outside a git checkout every file but target/ and .git/; none under
    `leave_out` (the target directory, wherever it is)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=root, capture_output=True)
    if listed.returncode == 0:
        names = listed.stdout.decode().split("\0")
    else:
        names = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in ("target", ".git")]
            names += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
    inside = os.path.relpath(os.path.realpath(leave_out), os.path.realpath(root))
    return sorted({name for name in names
                   if name and os.path.lexists(os.path.join(root, name))
                   and not (name == inside or name.startswith(inside + os.sep))})


def same_file(src, dst):
    if os.path.islink(src) or os.path.islink(dst):
        return os.path.islink(src) and os.path.islink(dst) and os.readlink(src) == os.readlink(dst)
    if not os.path.isfile(dst) or os.stat(src).st_mode != os.stat(dst).st_mode:
        return False
    with open(src, "rb") as a, open(dst, "rb") as b:
        return a.read() == b.read()


def sync(root, files, dest):
    """Makes `dest` hold `files` as they are under `root`, and nothing else. Only a file that
    differs is written, so its mtime moves and cargo rebuilds what reads it, while every other
    file keeps its mtime and so its build. Returns how many files were written."""
    wanted = set(files)
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            if os.path.relpath(path, dest) not in wanted:
                os.remove(path)
    written = 0
    for name in files:
        src, dst = os.path.join(root, name), os.path.join(dest, name)
        if same_file(src, dst):
            continue
        if os.path.isdir(dst) and not os.path.islink(dst):
            shutil.rmtree(dst)
        elif os.path.lexists(dst):
            os.remove(dst)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copyfile(src, dst)
            shutil.copymode(src, dst)
        written += 1
    return written


class Scratch:
    """The scratch copy of the workspace the mutants are written into (`workspace`), and the
    target directory it is built in (`target`), both under `base`; held by one run at a time."""

    def __init__(self, base):
        self.base = base
        self.workspace = os.path.join(base, "workspace")
        self.target = os.path.join(base, "target")
        self.lock = None

    def __enter__(self):
        os.makedirs(self.workspace, exist_ok=True)
        self.lock = open(os.path.join(self.base, "lock"), "w")
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.exit(f"mutants: another run is using {self.base}")
        return self

    def __exit__(self, *_):
        self.lock.close()

    def bring_up_to_date(self, root=ROOT):
        return sync(root, workspace_files(root, os.path.dirname(self.base)), self.workspace)


def nextest(test, scratch):
    """Runs `cargo nextest run` on the scratch copy; its exit code and output. Stopped (a signal,
    Ctrl-C), it stops the test run too before it passes the stop on."""
    child = subprocess.Popen(["cargo", "nextest", "run", "--no-fail-fast", *test.split()],
                             cwd=scratch.workspace, env=dict(os.environ, CARGO_TARGET_DIR=scratch.target),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = child.communicate()
    except BaseException:
        child.terminate()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
        raise
    return child.returncode, out


def run(mutation, scratch):
    name, edits, test = mutation
    sources, problem = mutated_sources(edits, scratch.workspace)
    if problem:
        return "STALE", problem
    originals = {path: read(scratch.workspace, path) for path in sources}
    try:
        for path, text in sources.items():
            write(scratch.workspace, path, text)
        code, out = nextest(test, scratch)
    finally:
        for path, text in originals.items():
            write(scratch.workspace, path, text)
    # Said in our own words: nextest's closing line ("N tests run: N passed, N failed") would read,
    # to anything scanning the log for test results, as a failing test run of the project.
    run_line = re.search(r"(\d+) tests? run: (\d+) passed.*?(\d+) failed", out)
    if run_line:
        total, _, failing = run_line.groups()
        summary = f"the mutant fails {failing} of the {total} selected tests"
    else:
        summary = " | ".join(l.strip() for l in out.splitlines() if "error[" in l or "error:" in l)[:200]
    verdict = {0: "MISSED", TEST_RUN_FAILED: "CAUGHT", BUILD_FAILED: "BROKEN (the mutant does not build)",
               NO_TESTS_RUN: "BROKEN (the filter selects no test)"}
    return verdict.get(code, f"BROKEN (cargo nextest exited {code})"), summary


def has_nextest():
    try:
        return subprocess.run(["cargo", "nextest", "--version"], capture_output=True).returncode == 0
    except OSError:
        return False


def run_all(selected):
    """Runs each selected mutation on the scratch copy; the names of those not caught."""
    with Scratch(os.path.join(target_directory(), "mutants")) as scratch:
        written = scratch.bring_up_to_date()
        print(f"mutants: the mutants go into {scratch.workspace} ({written} files brought up to "
              f"date), built in {scratch.target}", flush=True)
        failed = []
        for mutation in selected:
            verdict, summary = run(mutation, scratch)
            print(f"{verdict} {mutation[0]} :: {summary}", flush=True)
            if verdict != "CAUGHT":
                failed.append(mutation[0])
        return failed


def main(args):
    if "-h" in args or "--help" in args:
        print(__doc__.strip())
        return
    unknown = [a for a in args if a.startswith("-") and a not in ("--check", "--ci")]
    if unknown:
        sys.exit(f"mutants: unknown option {unknown[0]} (see --help)")
    check_only = "--check" in args
    names = [a for a in args if not a.startswith("-")]
    if "--ci" in args:
        names += CI_SUBSET
    selected = [m for m in M if not names or any(n in m[0] for n in names)]
    if names and not selected:
        sys.exit(f"no mutation matches {names}")

    stale = [(m[0], mutated_sources(m[1])[1]) for m in M]
    stale = [(name, problem) for name, problem in stale if problem]
    for name, problem in stale:
        print(f"STALE {name} :: {problem}; update the mutation to the current code")
    if stale:
        sys.exit(1)
    if check_only:
        print(f"all {len(M)} mutations apply")
        return
    if not has_nextest():
        sys.exit(NO_NEXTEST)

    raise_on_signals()
    try:
        failed = run_all(selected)
    except (Stopped, KeyboardInterrupt) as stop:
        signum = stop.signum if isinstance(stop, Stopped) else signal.SIGINT
        print(f"mutants: stopped by {signal.Signals(signum).name}; the tree was never written, and "
              "the scratch copy is restored", file=sys.stderr)
        sys.exit(128 + signum)
    print(f"{len(selected) - len(failed)} of {len(selected)} mutations caught")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
