//! Construct tags: the names of the SQL constructs a generated statement uses, so a report can
//! say which constructs the checker refuses wrongly and which a reproducer needs.
//!
//! A tag names syntax, not meaning: `gate:in` says the statement has an `x IN (S)` somewhere,
//! whether or not `S` is fenced and whether or not the `IN` is a top-level conjunct. The renderer
//! sets them as it writes the SQL, so a tag is there exactly when its construct is in the text.

macro_rules! tags {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)+) => {
        /// One construct a statement can use.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Tag {
            $($(#[$doc])* $variant,)+
        }

        impl Tag {
            /// Every tag, in the order the report lists them.
            pub const ALL: &[Tag] = &[$(Tag::$variant,)+];

            /// Whether the tag says only what kind of claim the statement is, that it is
            /// fenced as the docs ask, or what it reads (a view, a sub-select, a constant
            /// `LIMIT`): many statements share these, so they tell no hole apart.
            pub const fn is_context(self) -> bool {
                matches!(
                    self,
                    Tag::StmtSelect
                        | Tag::StmtUpdate
                        | Tag::StmtDelete
                        | Tag::InsertSelect
                        | Tag::InsertValues
                        | Tag::Merge
                        | Tag::Returning
                        | Tag::UpdateFrom
                        | Tag::TargetView
                        | Tag::GateFence
                        | Tag::FenceQualified
                        | Tag::FenceCast
                        | Tag::FromSubselect
                        | Tag::FromView
                        | Tag::CteRead
                        | Tag::CteMaterialized
                        | Tag::LimitRows
                        | Tag::ColumnsBare
                        | Tag::ColumnsQualified
                )
            }

            /// The tag as the report writes it, e.g. `gate:in`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Tag::$variant => $name,)+
                }
            }
        }
    };
}

tags! {
    /// A `SELECT` claim.
    StmtSelect = "stmt:select",
    /// An `UPDATE` claim.
    StmtUpdate = "stmt:update",
    /// A `DELETE` claim.
    StmtDelete = "stmt:delete",
    /// `INSERT … SELECT`.
    InsertSelect = "insert-select",
    /// `INSERT … VALUES`.
    InsertValues = "insert-values",
    /// `MERGE` (PostgreSQL 15: `WHEN MATCHED`, `WHEN NOT MATCHED`).
    Merge = "merge",
    /// A `WHEN` of a `MERGE` with an `AND` condition.
    MergeWhenCondition = "merge:when-condition",
    /// `WHEN NOT MATCHED THEN INSERT`.
    MergeInsert = "merge:not-matched-insert",
    /// `ON CONFLICT (id) DO NOTHING`.
    OnConflictNothing = "on-conflict:do-nothing",
    /// `ON CONFLICT (id) DO UPDATE SET … = excluded.…`.
    OnConflictUpdate = "on-conflict:do-update",
    /// `RETURNING`.
    Returning = "returning",
    /// `UPDATE … FROM` or `DELETE … USING`.
    UpdateFrom = "update-from|delete-using",
    /// An `UPDATE` or `DELETE` of the auto-updatable view `v_flat`.
    TargetView = "target:view",
    /// A `SET` value that is not a literal.
    SetComputed = "set:computed",

    /// `leader_fence($1, $2)` as a top-level `AND` conjunct of a `WHERE`.
    GateFence = "gate:fence",
    /// The fence written `public.leader_fence(…)`.
    FenceQualified = "fence:qualified",
    /// The fence with cast arguments, `leader_fence($1::text, $2::bigint)`.
    FenceCast = "fence:cast",
    /// The fence inside a join's `ON`.
    FenceInOn = "fence:in-on",
    /// The fence in `HAVING`.
    FenceInHaving = "fence:in-having",
    /// The fence in a `SET` value (`CASE WHEN leader_fence(…) …`).
    FenceInSet = "fence:in-set",
    /// The fence in a `LIMIT` sub-select.
    FenceInLimit = "fence:in-limit",
    /// `x IN (S)`.
    GateIn = "gate:in",
    /// `x.grp IN (SELECT g.grp FROM (S) g)`: by another column than the shard filter's.
    GateInByGroup = "gate:in-by-group",
    /// `x = ANY (ARRAY (S))`.
    GateAnyArray = "gate:any-array",
    /// `x = ANY (S)`.
    GateAny = "gate:any",
    /// `EXISTS (S)`, uncorrelated.
    GateExists = "gate:exists",
    /// `EXISTS (S)` with `S` correlated to the level it filters.
    GateExistsCorrelated = "gate:exists-correlated",
    /// `x = (S)`: a scalar sub-select compared with a column.
    GateScalarEq = "gate:scalar-eq",
    /// `x <> ALL (S)`.
    GateAll = "gate:all",
    /// `x NOT IN (S)`.
    GateNotIn = "gate:not-in",
    /// `a OR b` in a condition.
    GateOr = "gate:or",
    /// `NOT a` in a condition.
    GateNot = "gate:not",
    /// `CASE WHEN a THEN b ELSE false END` in a condition.
    GateCase = "gate:case",
    /// `JOIN … ON`, inner.
    JoinInner = "gate:join-inner",
    /// `LEFT JOIN`.
    JoinLeft = "gate:join-left",
    /// `RIGHT JOIN`.
    JoinRight = "gate:join-right",
    /// `FULL JOIN`.
    JoinFull = "gate:join-full",
    /// `CROSS JOIN LATERAL (S)`.
    Lateral = "lateral",

    /// `FOR UPDATE`.
    LockUpdate = "lock:for-update",
    /// `FOR NO KEY UPDATE`.
    LockNoKey = "lock:no-key",
    /// `FOR SHARE`.
    LockShare = "lock:share",
    /// `FOR KEY SHARE`.
    LockKeyShare = "lock:key-share",
    /// `FOR … OF alias`.
    LockOf = "lock:of",
    /// `SKIP LOCKED`.
    LockSkipLocked = "lock:skip-locked",
    /// `NOWAIT`.
    LockNowait = "lock:nowait",
    /// A locking clause that applies to a sub-select in `FROM`.
    LockPushed = "lock:pushed-into-subselect",
    /// … to a sub-select the planner can pull up into the locking level.
    LockSubselectFlat = "lock:subselect-flat",
    /// … to a sub-select it cannot (it has a `LIMIT`, aggregates, a set operation).
    LockSubselectLimit = "lock:subselect-limit",
    /// A locking clause that applies to the view `v_flat`, which the planner pulls up.
    LockViewFlat = "lock:view-flat",
    /// … to the view `v_lim`, which has a `LIMIT`.
    LockViewLimit = "lock:view-limit",
    /// A locking clause on a level that reads a `WITH` query (PostgreSQL ignores it there).
    LockCte = "lock:cte",

    /// A `WITH` query that is a `SELECT`.
    CteSelect = "cte:select",
    /// A data-modifying `WITH` query.
    CteModifying = "cte:modifying",
    /// `AS MATERIALIZED` or `AS NOT MATERIALIZED`.
    CteMaterialized = "cte:materialized-or-not",
    /// A `FROM` item that reads a `WITH` query.
    CteRead = "cte:read",

    /// `UNION` (with or without `ALL`).
    SetopUnion = "setop:union",
    /// `INTERSECT`.
    SetopIntersect = "setop:intersect",
    /// `EXCEPT`.
    SetopExcept = "setop:except",

    /// Aggregates without `GROUP BY`.
    AggPlain = "agg:plain",
    /// `GROUP BY key`.
    AggGroupBy = "agg:group-by",
    /// Grouping sets that include the empty set: `GROUP BY ()`, `ROLLUP`, `CUBE`,
    /// `GROUPING SETS (…, ())`.
    AggEmptySet = "agg:empty-set",
    /// Grouping whose select list calls no aggregate (the grouping keys or constants only).
    AggKeysOnly = "agg:keys-only",
    /// `HAVING`.
    AggHaving = "agg:having",
    /// A bare aggregate that returns NULL from no rows (`min`, `max`, `sum`) as the `id`.
    AggNullOnEmpty = "agg:null-on-empty",
    /// A bare `count`, which returns 0 from no rows, as the `id`.
    AggCount = "agg:count",
    /// An aggregate in a sub-select whose arguments refer only to the outer query, e.g.
    /// `(SELECT max(t.id))`: it belongs to the outer level.
    AggOuterInSubselect = "agg:outer-in-subselect",

    /// A level's columns written bare (`id`), where it reads one item.
    ColumnsBare = "columns:bare",
    /// A level's columns written with its alias (`t0.id`) where they could be bare: each may be
    /// a call in attribute notation for all the checker can tell.
    ColumnsQualified = "columns:qualified",
    /// A scalar sub-select (in a comparison or a `SET`).
    ScalarSubselect = "scalar-subselect",
    /// A sub-select in `FROM`.
    FromSubselect = "from:subselect",
    /// A view in `FROM`.
    FromView = "from:view",
    /// `LIMIT n`.
    LimitRows = "limit:rows",
    /// `LIMIT (S)`.
    LimitSubselect = "limit:subselect",

    /// A side-effecting function called as `take_budget(t)`.
    FuncExplicit = "func:explicit",
    /// … called in attribute notation, `t.take_budget` or `(t).take_budget`.
    FuncAttr = "func:attr",
    /// … in a `WHERE`.
    FuncInWhere = "func:in-where",
    /// … in a select list.
    FuncInTarget = "func:in-target",
    /// … in a `LIMIT` sub-select.
    FuncInLimit = "func:in-limit",
    /// … in a join's `ON`.
    FuncInOn = "func:in-on",
    /// … in a `SET` value.
    FuncInSet = "func:in-set",
}

#[cfg(test)]
mod tests {
    use super::Tag;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = Tag::ALL.iter().map(|t| t.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Tag::ALL.len());
    }
}
