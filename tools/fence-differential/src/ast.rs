//! The grammar of generated claims, as a typed tree: the shapes that decide whether a stale
//! leader's statement can act (gates, locks, sub-selects, views, `WITH`, set operations,
//! grouping, joins, `MERGE`, `INSERT`, side-effecting calls), over the fixed schema of
//! [`crate::schema`], in which every table and view has the columns `id, grp, status, owner`.
//!
//! The tree holds no names: aliases are numbered as [`crate::render`] writes the SQL, a `WITH`
//! query is referred to by index, and a locking clause's `OF` by the index of a `FROM` item,
//! each taken modulo what is in scope. So every tree renders, and a shrunk tree still does.

/// A claim: `WITH` queries, then the statement proper.
#[derive(Debug, Clone)]
pub struct Statement {
    pub ctes: Vec<Cte>,
    pub body: Body,
}

#[derive(Debug, Clone)]
pub enum Body {
    Select(Query),
    Update(Update),
    Delete(Delete),
    Insert(Insert),
    Merge(Merge),
}

/// A `WITH` query, named `c0`, `c1`, … in order; each sees the ones before it.
#[derive(Debug, Clone)]
pub struct Cte {
    pub materialized: Materialized,
    pub query: CteQuery,
}

#[derive(Debug, Clone, Copy)]
pub enum Materialized {
    Default,
    Materialized,
    NotMaterialized,
}

/// A data-modifying `WITH` query returns every column of the rows it changed.
#[derive(Debug, Clone)]
pub enum CteQuery {
    Select(Query),
    Update(Update),
    Delete(Delete),
    Insert(Insert),
}

/// A query whose rows have the columns `id, grp, status, owner` (or only `id`, where the
/// context takes one column).
#[derive(Debug, Clone)]
pub enum Query {
    Select(Box<Select>),
    /// Each arm parenthesized; PostgreSQL refuses a locking clause in an arm, so arms have none.
    SetOp {
        op: SetOp,
        all: bool,
        left: Box<Select>,
        right: Box<Select>,
    },
}

#[derive(Debug, Clone, Copy)]
pub enum SetOp {
    Union,
    Intersect,
    Except,
}

/// One `SELECT` level.
#[derive(Debug, Clone)]
pub struct Select {
    pub from: From,
    pub filter: Where,
    pub shape: Shape,
    /// `ORDER BY 1 LIMIT …`.
    pub limit: Option<Limit>,
    /// Whether its columns are written bare (`id`, not `t0.id`) where it reads one `FROM` item:
    /// a qualified `t0.f` may be a call `f(t0)` in attribute notation, a bare `f` cannot.
    pub bare: bool,
}

/// What the level returns: its rows, or groups of them.
#[derive(Debug, Clone)]
pub enum Shape {
    /// One row per input row; `call` computes the `owner` column with a side-effecting call.
    Rows {
        call: Option<Call>,
        lock: Option<Lock>,
    },
    /// Aggregates or grouping (PostgreSQL refuses a locking clause here).
    Grouped {
        projection: Projection,
        grouping: Grouping,
        having: Option<Having>,
    },
}

#[derive(Debug, Clone, Copy)]
pub enum Projection {
    /// `coalesce(max(a.id), 1) AS id, max(a.grp) …`.
    Aggregates,
    /// The grouping key, or constants: no aggregate call.
    Keys,
    /// `(SELECT coalesce(max(a.id), 1)) AS id, …`: an aggregate of the outer level written in a
    /// sub-select.
    OuterAggregate,
    /// `max(a.id) AS id, …`: the aggregate bare, so that from no rows it is what the aggregate
    /// returns from no rows (NULL, or 0 for `count`).
    Bare(Aggregate),
}

/// An aggregate of [`Projection::Bare`].
#[derive(Debug, Clone, Copy)]
pub enum Aggregate {
    Min,
    Max,
    Sum,
    /// Returns 0 from no rows, not NULL.
    Count,
}

#[derive(Debug, Clone, Copy)]
pub enum Grouping {
    None,
    /// `GROUP BY a.grp`.
    Key,
    /// `GROUP BY ()`.
    Empty,
    /// `GROUP BY ROLLUP (a.grp)`.
    Rollup,
    /// `GROUP BY CUBE (a.grp)`.
    Cube,
    /// `GROUP BY GROUPING SETS ((a.grp), ())`.
    Sets,
}

#[derive(Debug, Clone, Copy)]
pub enum Having {
    /// `HAVING count(*) >= 0`: true for every group, the empty one too.
    Holds,
    /// `HAVING count(*) > 1`.
    Filters,
    /// `HAVING leader_fence($1, $2)`.
    Fence(Fence),
}

/// `ORDER BY 1 LIMIT …`.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    /// `LIMIT n`, `n` in 1..=5.
    Rows(u8),
    /// `LIMIT (SELECT count(*) FROM r)`.
    Count,
    /// `LIMIT (SELECT <call> FROM q f ORDER BY f.id LIMIT 1)`.
    Call(Call),
    /// `LIMIT (SELECT count(*) FROM r WHERE leader_fence($1, $2))`.
    Fenced,
}

/// A `WHERE`: the fence (if any) as a top-level conjunct at position `at` among `conds`
/// (modulo their number plus one), and the other conjuncts.
#[derive(Debug, Clone)]
pub struct Where {
    pub fence: Option<(Fence, u8)>,
    pub conds: Vec<Cond>,
}

/// How the fence is written; `$1` is the role and `$2` the token, always.
#[derive(Debug, Clone, Copy)]
pub enum Fence {
    Plain,
    /// `public.leader_fence($1, $2)`.
    Qualified,
    /// `leader_fence($1::text, $2::bigint)`.
    Cast,
}

/// A condition on the level's first `FROM` item (its "main alias").
#[derive(Debug, Clone)]
pub enum Cond {
    Filter(Filter),
    Fence(Fence),
    /// `main.id <op> (query)`, or `EXISTS (query)`.
    Gate(Gate, Box<Query>),
    /// `<call> = 1`.
    Call(Call),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
    /// `CASE WHEN a THEN b ELSE false END`.
    Case(Box<Cond>, Box<Cond>),
}

/// A plain filter; each matches most rows of the seeded tables.
#[derive(Debug, Clone, Copy)]
pub enum Filter {
    GrpBelow3,
    StatusNew,
    OwnerNull,
    IdAbove2,
}

/// How a sub-select filters the level.
#[derive(Debug, Clone, Copy)]
pub enum Gate {
    In,
    /// `grp IN (SELECT g.grp FROM (S) g)`: rows claimed by another column than the id the
    /// shard filter reads, so a shard's claim of this shape takes other shards' rows too.
    InByGroup,
    /// `= ANY (ARRAY (S))`.
    AnyArray,
    /// `= ANY (S)`.
    Any,
    Exists,
    /// `EXISTS (S)` with `S` also filtered by `s.id = main.id`.
    ExistsCorrelated,
    /// `= (S)`, `S` limited to one row.
    ScalarEq,
    /// `<> ALL (S)`.
    NotEqAll,
    NotIn,
}

/// A call of the VOLATILE `take_budget(row)`, which writes a row of `budget`. It takes a row of
/// `q` or `r`: the nearest alias of one in scope, or else a one-row sub-select of `q`.
#[derive(Debug, Clone, Copy)]
pub enum Call {
    /// `take_budget(t)`.
    Explicit,
    /// `t.take_budget`.
    Attr,
    /// `(t).take_budget`.
    AttrParen,
}

/// A `FROM` item.
#[derive(Debug, Clone)]
pub enum From {
    Table(Table),
    View(View),
    Sub(Box<Query>),
    /// The `WITH` query of this index (modulo those in scope); the table `q` when none is.
    Cte(u8),
    /// `left JOIN right ON left.id = right.id [AND on]`.
    Join {
        kind: Join,
        left: Box<From>,
        right: Box<From>,
        on: Option<Cond>,
    },
    /// `left CROSS JOIN LATERAL (query, also filtered by s.id = left.id) s`.
    Lateral {
        left: Box<From>,
        right: Box<Query>,
    },
}

#[derive(Debug, Clone, Copy)]
pub enum Table {
    Q,
    R,
}

#[derive(Debug, Clone, Copy)]
pub enum View {
    /// `v_flat`: a filter over `q`, pulled up by the planner.
    Flat,
    /// `v_lim`: `q` with `ORDER BY id LIMIT 100`, which the planner cannot pull up.
    Limited,
}

#[derive(Debug, Clone, Copy)]
pub enum Join {
    Inner,
    Left,
    Right,
    Full,
}

/// `FOR <strength> [OF alias] [SKIP LOCKED | NOWAIT]`; `of` indexes the level's `FROM` items.
#[derive(Debug, Clone, Copy)]
pub struct Lock {
    pub strength: Strength,
    pub of: Option<u8>,
    pub wait: Wait,
}

#[derive(Debug, Clone, Copy)]
pub enum Strength {
    Update,
    NoKeyUpdate,
    Share,
    KeyShare,
}

#[derive(Debug, Clone, Copy)]
pub enum Wait {
    Block,
    SkipLocked,
    Nowait,
}

/// `UPDATE target t SET … [FROM item] WHERE [t.id = item.id AND] … [RETURNING t.id]`.
#[derive(Debug, Clone)]
pub struct Update {
    pub target: Target,
    pub set: SetValue,
    pub from: Option<From>,
    pub filter: Where,
    pub returning: bool,
    /// Whether its columns are written bare (`id`, not `t0.id`) where it has no `FROM`:
    /// a qualified `t0.f` may be a call `f(t0)` in attribute notation, a bare `f` cannot.
    pub bare: bool,
}

#[derive(Debug, Clone, Copy)]
pub enum Target {
    Q,
    R,
    /// The auto-updatable view `v_flat`.
    ViewFlat,
}

#[derive(Debug, Clone)]
pub enum SetValue {
    /// `status = 'u'`.
    Literal,
    /// `owner = <call>`.
    Call(Call),
    /// `status = CASE WHEN leader_fence($1, $2) THEN 'u' ELSE t.status END`.
    FenceCase,
    /// `owner = (S)`, `S` limited to one row.
    Sub(Box<Query>),
}

/// `DELETE FROM target t [USING item] WHERE [t.id = item.id AND] … [RETURNING t.id]`.
#[derive(Debug, Clone)]
pub struct Delete {
    pub target: Target,
    pub using: Option<From>,
    pub filter: Where,
    pub returning: bool,
    /// Whether its columns are written bare (`id`, not `t0.id`) where it has no `USING`:
    /// a qualified `t0.f` may be a call `f(t0)` in attribute notation, a bare `f` cannot.
    pub bare: bool,
}

/// `INSERT INTO sink (id, grp, status, owner) …`.
#[derive(Debug, Clone)]
pub struct Insert {
    pub source: InsertSource,
    pub conflict: Conflict,
    pub returning: bool,
}

#[derive(Debug, Clone)]
pub enum InsertSource {
    /// Without `ON CONFLICT` the ids are shifted by 1000, clear of `sink`'s seeded rows.
    Query(Query),
    /// One row: id 1 (a seeded row) under `DO UPDATE`, else 2000.
    Values,
}

#[derive(Debug, Clone, Copy)]
pub enum Conflict {
    None,
    DoNothing,
    DoUpdate,
}

/// `MERGE INTO target t USING source s ON t.id = s.id [AND on] WHEN …`.
#[derive(Debug, Clone)]
pub struct Merge {
    pub target: Table,
    pub source: From,
    pub on: Option<Cond>,
    pub whens: Vec<When>,
}

/// A `WHEN` clause; its condition is on the source's row.
#[derive(Debug, Clone)]
pub enum When {
    Matched(Option<Cond>, MatchedAction),
    NotMatched(Option<Cond>, NotMatchedAction),
}

#[derive(Debug, Clone, Copy)]
pub enum MatchedAction {
    Update,
    Delete,
    Nothing,
}

#[derive(Debug, Clone, Copy)]
pub enum NotMatchedAction {
    Insert,
    Nothing,
}
