WITH lock_bound AS (SELECT set_config('lock_timeout', :lock_ms::text, true) AS applied),
wanted (wanted_role, wanted_shard_index, wanted_shard_count, wanted_interval_ms, wanted_schedule,
        wanted_calendar, wanted_instant, wanted_following, wanted_each, wanted_previous)
    AS (VALUES :wanted),
due AS MATERIALIZED (
    SELECT role, shard_index, last_tick_holder, wanted_shard_count > 1 AS sharded
      FROM leader_leases JOIN wanted ON role = wanted_role AND shard_index = wanted_shard_index
     WHERE shard_count = :shard_count
       AND paused_at IS NULL
       AND (expires_at IS NULL OR expires_at <= now())
       AND (not_before IS NULL OR not_before <= now())
       AND (last_tick_ended_at IS NULL
            OR last_tick_ended_at + :interval_ms * interval '1 millisecond' <= now())
       AND (NOT :calendar OR :instant <= now())
       AND (NOT :calendar OR last_completed_instant IS NULL OR :instant > last_completed_instant)
       AND (NOT :each OR last_completed_instant IS NULL OR last_completed_instant >= :previous)
),
others AS (
    SELECT count(DISTINCT holder_id) AS live
      FROM leader_leases
     WHERE expires_at > now() AND holder_id <> :holder
),
presence AS (
    INSERT INTO leader_presence (role, holder_id, shard_count, seen_until, anchor_pid,
                                 anchor_start, anchor_recorded_at)
    SELECT DISTINCT wanted_role, :holder, wanted_shard_count,
           now() + :ttl_ms * interval '1 millisecond', :anchor_pid, :anchor_start,
           CASE WHEN :anchor_pid IS NOT NULL THEN now() END
      FROM wanted
     WHERE wanted_shard_count > 1
        ON CONFLICT (role, holder_id)
        DO UPDATE SET shard_count = excluded.shard_count, seen_until = excluded.seen_until,
                      anchor_pid = excluded.anchor_pid, anchor_start = excluded.anchor_start,
                      anchor_recorded_at = excluded.anchor_recorded_at
    RETURNING role
),
gone AS (
    DELETE FROM leader_presence
     WHERE ctid IN (SELECT p.ctid
                      FROM leader_presence p
                     WHERE p.role IN (SELECT wanted_role FROM wanted WHERE wanted_shard_count > 1)
                       AND p.holder_id <> :holder
                       AND p.seen_until < now() - interval '1 hour'
                       FOR UPDATE SKIP LOCKED)
    RETURNING role
),
share AS MATERIALIZED (
    SELECT r.share_role,
           ceil(r.share_count::numeric / (1 + (
               SELECT count(DISTINCT live.holder)
                 FROM (SELECT p.holder_id AS holder
                         FROM leader_presence p
                        WHERE p.role = r.share_role AND p.shard_count = r.share_count
                          AND p.seen_until > now()
                          AND NOT leader_anchor_ended(p.anchor_pid, p.anchor_start,
                                                      p.anchor_recorded_at)
                       UNION ALL
                       SELECT l.holder_id
                         FROM leader_leases l
                        WHERE l.role = r.share_role AND l.expires_at > now()) AS live
                WHERE live.holder <> :holder)))::bigint
           - (SELECT count(*)
                FROM leader_leases l
               WHERE l.role = r.share_role AND l.expires_at > now() AND l.holder_id = :holder)
           AS room
      FROM (SELECT DISTINCT wanted_role AS share_role, wanted_shard_count AS share_count
              FROM wanted
             WHERE wanted_shard_count > 1) AS r
),
within_share AS MATERIALIZED (
    SELECT ranked.role, ranked.shard_index, ranked.sharded,
           CASE WHEN ranked.sharded THEN ranked.nth <= share.room
                ELSE ranked.nth <= ceil((SELECT count(*) FROM due WHERE NOT sharded)::numeric
                                        / ((SELECT live FROM others) + 1))
           END AS within
      FROM (SELECT role, shard_index, sharded,
                   CASE WHEN sharded
                        THEN row_number() OVER (PARTITION BY role
                                                ORDER BY last_tick_holder IS DISTINCT FROM :holder,
                                                         -- Each replica's own order of the
                                                         -- others' shards, so that replicas
                                                         -- polling together lock different
                                                         -- rows rather than skip each other's.
                                                         hashtext(:holder || ':' || shard_index),
                                                         shard_index)
                        ELSE row_number() OVER (PARTITION BY sharded ORDER BY role)
                   END AS nth
              FROM due) AS ranked
      LEFT JOIN share ON share.share_role = ranked.role
),
picked AS MATERIALIZED (
    SELECT role, shard_index, expires_at AS picked_expires_at
      FROM leader_leases
     WHERE (role, shard_index) IN (SELECT role, shard_index FROM within_share WHERE within)
     ORDER BY role, shard_index
     LIMIT :max_grants
       FOR UPDATE SKIP LOCKED
),
ended_early AS (
    UPDATE leader_leases
       SET expires_at = now()
      FROM wanted
     WHERE role = wanted_role
       AND shard_index = wanted_shard_index
       AND (role, shard_index) IN (SELECT l.role, l.shard_index
                                     FROM leader_leases l
                                     JOIN wanted w ON l.role = w.wanted_role
                                                  AND l.shard_index = w.wanted_shard_index
                                    WHERE l.expires_at > now()
                                      -- Only rows whose anchor the guard says ended are locked:
                                      -- a live holder's row never is, so its RENEW never waits
                                      -- on this ACQUIRE. The UPDATE asks the guard again of the
                                      -- row as locked.
                                      AND leader_anchor_ended(l.holder_anchor_pid,
                                                              l.holder_anchor_start,
                                                              l.acquired_at)
                                      FOR UPDATE OF l SKIP LOCKED)
       AND (SELECT applied FROM lock_bound) IS NOT NULL
       AND shard_count = :shard_count
       AND paused_at IS NULL
       AND expires_at > now()
       AND leader_anchor_ended(holder_anchor_pid, holder_anchor_start, acquired_at)
       AND (not_before IS NULL OR not_before <= now())
       AND (last_tick_ended_at IS NULL
            OR last_tick_ended_at + :interval_ms * interval '1 millisecond' <= now())
       AND (NOT :calendar OR :instant <= now())
       AND (NOT :calendar OR last_completed_instant IS NULL OR :instant > last_completed_instant)
       AND (NOT :each OR last_completed_instant IS NULL OR last_completed_instant >= :previous)
       AND (:anchor_pid IS NULL
            OR EXISTS (SELECT 1 FROM pg_stat_activity a
                        WHERE a.pid = :anchor_pid AND a.backend_start = :anchor_start))
    RETURNING role AS ended_role, shard_index AS ended_shard_index, holder_id AS ended_holder,
              holder_token AS ended_token, ticks_granted AS ended_tick
),
granted AS (
    UPDATE leader_leases
       SET holder_token = greatest(holder_token + 1, (extract(epoch FROM now()) * 1000)::bigint)
                          + mod(shard_index + shard_count - mod(greatest(holder_token + 1,
                                (extract(epoch FROM now()) * 1000)::bigint), shard_count),
                                shard_count),
           holder_id = :holder,
           acquired_at = now(),
           expires_at = now() + :ttl_ms * interval '1 millisecond',
           schedule = wanted_schedule,
           tick_instant = wanted_instant,
           following_instant = wanted_following,
           holder_anchor_pid = :anchor_pid,
           holder_anchor_start = :anchor_start,
           ticks_granted = ticks_granted + 1
      FROM wanted
     WHERE role = wanted_role
       AND shard_index = wanted_shard_index
       AND (role, shard_index) IN (SELECT role, shard_index FROM picked)
       AND (SELECT applied FROM lock_bound) IS NOT NULL
       AND shard_count = :shard_count
       AND paused_at IS NULL
       AND (expires_at IS NULL OR expires_at <= now())
       AND (not_before IS NULL OR not_before <= now())
       AND (last_tick_ended_at IS NULL
            OR last_tick_ended_at + :interval_ms * interval '1 millisecond' <= now())
       AND (NOT :calendar OR :instant <= now())
       AND (NOT :calendar OR last_completed_instant IS NULL OR :instant > last_completed_instant)
       AND (NOT :each OR last_completed_instant IS NULL OR last_completed_instant >= :previous)
       AND (:anchor_pid IS NULL
            OR EXISTS (SELECT 1 FROM pg_stat_activity a
                        WHERE a.pid = :anchor_pid AND a.backend_start = :anchor_start))
    RETURNING role AS granted_role, shard_index AS granted_shard_index, holder_token, expires_at,
              last_tick_holder, tick_instant AS granted_instant, ticks_granted AS granted_tick,
              holder_id AS granted_holder, acquired_at AS granted_at,
              holder_anchor_pid IS NOT NULL AS granted_anchored
),
:tick_history,
seen AS (
    SELECT l.*, w.wanted_role, w.wanted_shard_index, w.wanted_shard_count, w.wanted_calendar,
           w.wanted_instant, w.wanted_each, w.wanted_previous,
           CASE WHEN w.wanted_calendar THEN w.wanted_instant
                ELSE l.last_tick_ended_at + w.wanted_interval_ms * interval '1 millisecond'
           END AS due_at
      FROM wanted w
      LEFT JOIN leader_leases l
        ON l.role = w.wanted_role AND l.shard_index = w.wanted_shard_index
)
SELECT s.wanted_role                 AS wanted_role,
       s.wanted_shard_index          AS wanted_shard_index,
       g.holder_token                AS granted_token,
       g.expires_at                  AS granted_until,
       g.last_tick_holder            AS last_tick_holder,
       g.granted_instant             AS granted_instant,
       now()                         AS db_now,
       s.role IS NOT NULL            AS role_exists,
       s.paused_at IS NOT NULL       AS paused,
       coalesce(s.shard_count <> s.wanted_shard_count, false) AS shard_count_changed,
       EXISTS (SELECT 1 FROM ended_early e
                WHERE e.ended_role = s.wanted_role AND e.ended_shard_index = s.wanted_shard_index)
                                     AS ended_early,
       -- A lease ended early tells every replica that listens, as the watcher of the ended
       -- anchor did, so that they poll at once: the caller may not be the one to take it (a
       -- sharded role's caller may hold its share already, and a concurrent ACQUIRE skipped the
       -- rows this one locked).
       (SELECT count(*) FROM (SELECT pg_notify(:anchor_ended_channel,
                                               hashtext(e.ended_holder)::text)
                                FROM ended_early e
                               WHERE e.ended_role = s.wanted_role
                                 AND e.ended_shard_index = s.wanted_shard_index) AS sent)
                                     AS ended_early_notified,
       coalesce(s.expires_at > now(), false) AS held,
       NOT (:anchor_pid IS NULL
            OR EXISTS (SELECT 1 FROM pg_stat_activity a
                        WHERE a.pid = :anchor_pid AND a.backend_start = :anchor_start))
                                     AS anchor_ended,
       coalesce(s.not_before > now(), false) AS cooling,
       coalesce(s.wanted_calendar
                AND (s.wanted_instant IS NULL OR s.wanted_instant <= s.last_completed_instant),
                false)               AS instant_completed,
       coalesce(s.wanted_each AND s.last_completed_instant < s.wanted_previous, false)
                                     AS instant_not_next,
       coalesce(s.due_at > now(), false)     AS not_due,
       coalesce(ws.sharded AND NOT ws.within, false) AS over_share,
       s.last_completed_instant      AS last_completed_instant,
       s.holder_id                   AS holder_id,
       CASE WHEN EXISTS (SELECT 1 FROM leader_presence p
                          WHERE p.role = s.wanted_role AND p.holder_id = s.last_tick_holder
                            AND p.seen_until > now()
                            AND NOT leader_anchor_ended(p.anchor_pid, p.anchor_start,
                                                        p.anchor_recorded_at))
            THEN s.last_tick_holder END AS kept_by,
       (extract(epoch FROM greatest(
            CASE WHEN s.expires_at > now() THEN s.expires_at END,
            CASE WHEN s.not_before > now() THEN s.not_before END,
            CASE WHEN s.due_at > now() THEN s.due_at END) - now()) * 1000)::bigint AS wait_ms
  FROM seen s
  LEFT JOIN granted g
    ON g.granted_role = s.wanted_role AND g.granted_shard_index = s.wanted_shard_index
  -- A join, not a subquery per answer row: a subquery scanned `within_share` once per wanted
  -- lease, work that grew with the square of the leases asked for (2,000 leases: 4 million rows
  -- read, an ACQUIRE of over a second, past its statement timeout, so that no replica learnt of
  -- its grants and placement stalled).
  LEFT JOIN within_share ws
    ON ws.role = s.wanted_role AND ws.shard_index = s.wanted_shard_index
