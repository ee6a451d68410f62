"""Mutation check: removes one protocol or runtime feature at a time, runs the test that covers
it, and reports CAUGHT (the test failed, as it must) or MISSED. Restores each file afterwards.

Run under a server, e.g.  cargo run -q -p leader-testkit --bin with-postgres -- python3 scripts/mutants.py [NAME...]
"""
import os
import subprocess
import sys

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
M = [
 ("fence ignores expiry", "migrations/20261201000000_leader_leases.up.sql", "           AND expires_at > statement_timestamp()\n", "", "-p leader-tests --test protocol the_fence_admits_only"),
 ("fence uses now()", "migrations/20261201000000_leader_leases.up.sql", "expires_at > statement_timestamp()", "expires_at > now()", "-p leader-tests --test protocol a_claim_in_a_transaction"),
 ("release ignores holder", "leader-core/src/lease.rs", "   AND holder_id IS NOT NULL\n   AND (SELECT applied FROM lock_bound)", "   AND (SELECT applied FROM lock_bound)", "-p leader-tests --test protocol the_fence_admits"),
 ("pause keeps holder", "migrations/20261201000000_leader_leases.up.sql", "       SET holder_id = NULL, acquired_at = NULL, expires_at = NULL,\n           paused_at", "       SET paused_at", "-p leader-tests --test protocol pause_stops"),
 ("token +1 only", "leader-core/src/lease.rs", "greatest(holder_token + 1, (extract(epoch FROM now()) * 1000)::bigint)", "holder_token + 1", "-p leader-tests --test protocol a_promoted_standby"),
 ("acquire ignores not_before", "leader-core/src/lease.rs", "       AND (not_before IS NULL OR not_before <= now())\n", "", "-p leader-tests --test protocol each_release_outcome"),
 ("renew ignores token", "leader-core/src/lease.rs", "       AND holder_token = :token\n       AND (SELECT applied FROM lock_bound) IS NOT NULL\n       AND holder_id IS NOT NULL\n       AND paused_at IS NULL", "       AND (SELECT applied FROM lock_bound) IS NOT NULL\n       AND holder_id IS NOT NULL\n       AND paused_at IS NULL", "-p leader-tests --test protocol renew_extends"),
 ("no server lock timeout", "leader-core/src/lease.rs", "set_config('lock_timeout', :lock_ms::text, true)", "set_config('application_name', :lock_ms::text, true)", "-p leader-tests --test protocol renew_and_release_stop"),
 ("heartbeat waits for in-flight renew", "leader-runtime/src/heartbeat.rs", "            _ = sleep_until(abandon_at) => {", "            _ = sleep_until(abandon_at + std::time::Duration::from_secs(86400)) => {", "-p leader-runtime --lib heartbeat"),
 ("panic outranks shutdown", "leader-runtime/src/tick.rs", "        (Some(_), _) => (Some(ReleaseOutcome::Interrupted), \"interrupted\"),\n        (None, TickEnd::Panicked(_))", "        (_, TickEnd::Panicked(_)) => (Some(ReleaseOutcome::Panicked), \"panicked\"),\n        (Some(_), _) => (Some(ReleaseOutcome::Interrupted), \"interrupted\"),\n        (None, TickEnd::Panicked(_))", "-p leader-tests --test runtime a_panic_after_shutdown"),
 ("shutdown does not release", "leader-runtime/src/tick.rs", "        (Some(_), _) => (Some(ReleaseOutcome::Interrupted), \"interrupted\"),", "        (Some(_), _) => (None, \"interrupted\"),", "-p leader-tests --test runtime a_clean_shutdown"),
 ("step guard stops at first panic", "leader-runtime/src/panic_guard.rs", "                self.first_panic.get_or_insert(panic);\n                None", "                resume_unwind(Box::new(Reraised(panic)))", "-p leader-tests --test runtime a_panicking_tick"),
 ("funnel email_outbox unfenced", "examples/src/store.rs", "                             AND leader_fence($2, $3)\n", "", "-p billing-demo --test app each_funnel"),
]
only = sys.argv[1:]
missed = []
for name, path, old, new, test in M:
    if only and not any(o in name for o in only): continue
    src = open(path).read()
    if old not in src:
        print(f"?? {name}: pattern not found"); continue
    mutated = src.replace(old, new, -1 if name == "no server lock timeout" else 1)
    if name.startswith("funnel"):
        mutated = mutated.replace("    /// Claim funnel of `email_outbox`: stamps a batch of unsent emails with the token.\n    #[fenced]\n", "    /// Claim funnel of `email_outbox`: stamps a batch of unsent emails with the token.\n")
    open(path, 'w').write(mutated)
    try:
        r = subprocess.run(f"cargo nextest run --no-fail-fast {test}", shell=True, capture_output=True, text=True)
        out = r.stdout + r.stderr
        summary = [l for l in out.splitlines() if 'Summary' in l or 'error[' in l or 'error:' in l][:2]
        caught = r.returncode != 0
        missed.extend([] if caught else [name])
        print(("CAUGHT " if r.returncode != 0 else "MISSED ") + name + " :: " + " | ".join(s.strip() for s in summary), flush=True)
    finally:
        open(path, 'w').write(src)

sys.exit(1 if missed else 0)
