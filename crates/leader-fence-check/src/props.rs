//! What PostgreSQL does with each level when the fence is false.
//!
//! * **One-time gate** ([`Props::one_time`]): `leader_fence($i, $j)`, or a gate that reads no
//!   column of the level (`EXISTS (SELECT 1 FROM lanes WHERE leader_fence($1, $2))`), is a
//!   top-level `AND` conjunct of the level's own `WHERE`. It reads no column, so PostgreSQL
//!   evaluates it once, as a One-Time Filter above everything the level reads: false, and the
//!   level reads no row at all (`one_time`).
//! * **Gated** ([`Props::gated`]): a conjunct of the level's `WHERE` is false or null, or an
//!   inner-joined `FROM` item is empty, for every row (the conditions that are: `gates`). The
//!   level then produces (and changes) no row, but it may still *read* rows while it finds that
//!   out.
//! * **Empty** ([`Props::empty`]): the level returns no row: gated, and no form that makes a
//!   row from no rows ([`Props::rows_from_nothing`], its `HAVING` aside: `empty_group`).
//! * **Zero limit** ([`Props::zero_limit`]): the level's `LIMIT` counts the rows of a gated
//!   query, 0: PostgreSQL evaluates its `LIMIT`, `OFFSET` and `WITH` queries, and nothing else.
//! * **Reached** ([`Props::reached`]): PostgreSQL may evaluate the level at all. Inside a
//!   one-time-gated level only `LIMIT`, `OFFSET`, `WITH` queries and conjuncts that read no
//!   column of the level (which PostgreSQL may evaluate up front beside the fence, in any order)
//!   are evaluated; inside a gated level, what it evaluates per output row is not. A conjunct
//!   that reads no column of a sub-select PostgreSQL may flatten into a reached level is
//!   evaluated there, up front ([`Props::hoisted`]), though the sub-select itself is not reached.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::Value;

mod empty_group;
mod gates;
mod kept_columns;
mod one_time;
mod zero_limit;

use crate::functions;
use crate::levels::{ConjunctOf, Kind, Levels, Pos, Source};
use crate::names::reads_level;
use crate::tree::enums::*;
use crate::tree::{Fields, child, children, function_name, has, int, node};

/// The levels each aggregate (by its level and index there) may belong to.
type AggregateOwners = HashMap<(usize, usize), Vec<usize>>;

/// The properties of a statement's levels, computed on demand.
pub struct Props<'l, 'a> {
    pub levels: &'l Levels<'a>,
    gated: RefCell<Vec<Option<bool>>>,
    reached: RefCell<Vec<Option<bool>>>,
    /// Levels an aggregate written in a nested sub-select may belong to.
    outer_aggregates: Vec<bool>,
    /// The levels each aggregate (by its level and index there) may belong to.
    aggregate_owners: AggregateOwners,
}

impl<'l, 'a> Props<'l, 'a> {
    pub fn new(levels: &'l Levels<'a>) -> Self {
        let n = levels.levels.len();
        let mut props = Props {
            levels,
            gated: RefCell::new(vec![None; n]),
            reached: RefCell::new(vec![None; n]),
            outer_aggregates: vec![false; n],
            aggregate_owners: HashMap::new(),
        };
        (props.outer_aggregates, props.aggregate_owners) = props.find_outer_aggregates();
        props
    }

    /// Whether the level produces (and changes) no row when the fence is false.
    pub fn gated(&self, level: usize) -> bool {
        if let Some(known) = self.gated.borrow()[level] {
            return known;
        }
        // A level that reaches itself (a recursive `WITH`) is not gated through itself.
        self.gated.borrow_mut()[level] = Some(false);
        let gated = self.compute_gated(level);
        self.gated.borrow_mut()[level] = Some(gated);
        gated
    }

    fn compute_gated(&self, level: usize) -> bool {
        let l = &self.levels.levels[level];
        let fields = l.fields;
        match l.kind {
            Kind::SetOp(op) => {
                let arm = |name: &str| {
                    fields
                        .get(name)
                        .and_then(Value::as_object)
                        .and_then(|arm| self.levels.of(arm))
                        .is_some_and(|arm| self.empty(arm))
                };
                match op {
                    SETOP_UNION => arm("larg") && arm("rarg"),
                    SETOP_INTERSECT => arm("larg") || arm("rarg"),
                    SETOP_EXCEPT => arm("larg"),
                    _ => false,
                }
            }
            Kind::Values => false,
            Kind::Select | Kind::Update | Kind::Delete => {
                let list = match l.kind {
                    Kind::Delete => "using_clause",
                    _ => "from_clause",
                };
                let where_gates = l
                    .conjuncts
                    .iter()
                    .any(|(of, c)| *of == ConjunctOf::Where && self.conjunct_gates(c));
                where_gates || self.list_empty(fields.get(list))
            }
            Kind::Insert => match child(fields, "select_stmt") {
                Some((_, source)) => self.levels.of(source).is_some_and(|s| self.empty(s)),
                None => false,
            },
            Kind::Merge => {
                let (source_empty, _) = self.merge_source(level);
                let gates = |condition: Option<&Value>| {
                    let mut conjuncts = Vec::new();
                    if let Some(condition) = condition {
                        crate::levels::split_and(condition, &mut conjuncts);
                    }
                    conjuncts.iter().any(|c| self.conjunct_gates(c))
                };
                // A join condition false for every pair leaves no target row matched.
                let on_gates = gates(fields.get("join_condition"));
                let whens: Vec<&Fields> = children(fields, "merge_when_clauses")
                    .map(|(_, w)| w)
                    .collect();
                // Every clause acts on no row: it does nothing, its own condition gates it, or
                // the rows it acts on are gone (a matched or source row, when the source is
                // empty; a matched row, when the join condition gates). A `WHEN NOT MATCHED BY
                // SOURCE` acts on target rows whatever the source holds.
                !whens.is_empty()
                    && whens.iter().all(|when| {
                        let kind = int(when, "match_kind");
                        int(when, "command_type") == CMD_NOTHING
                            || gates(when.get("condition"))
                            || (kind == MERGE_WHEN_MATCHED && (on_gates || source_empty))
                            || (kind == MERGE_WHEN_NOT_MATCHED_BY_TARGET && source_empty)
                    })
            }
        }
    }

    /// Whether a `MERGE`'s source is empty when the fence is false, and whether it has a
    /// `WHEN NOT MATCHED BY SOURCE` (which acts on target rows even then).
    pub fn merge_source(&self, level: usize) -> (bool, bool) {
        let fields = self.levels.levels[level].fields;
        let empty = fields
            .get("source_relation")
            .is_some_and(|item| self.item_empty(item));
        let by_source = children(fields, "merge_when_clauses")
            .any(|(_, when)| int(when, "match_kind") == MERGE_WHEN_NOT_MATCHED_BY_SOURCE);
        (empty, by_source)
    }

    /// Whether the level returns no row when the fence is false.
    pub fn empty(&self, level: usize) -> bool {
        match self.levels.levels[level].kind {
            Kind::Select => {
                (self.gated(level) && !self.rows_from_nothing(level))
                    || self.having_gates(level)
                    || self.zero_limit(level)
            }
            Kind::SetOp(_) => self.gated(level) || self.zero_limit(level),
            _ => self.gated(level),
        }
    }

    /// Whether a `SELECT` returns a row even when its `WHERE` matches none: it forms a group
    /// from no rows ([`Self::groups_from_nothing`]) and its `HAVING` keeps it.
    pub fn rows_from_nothing(&self, level: usize) -> bool {
        self.why_rows_from_nothing(level).is_some()
    }

    /// Why [`Self::rows_from_nothing`] holds, for messages.
    pub fn why_rows_from_nothing(&self, level: usize) -> Option<&'static str> {
        self.why_groups_from_nothing(level)
            .filter(|_| !self.having_removes_empty_group(level))
    }

    /// Whether a `SELECT` forms a group even when its `WHERE` matches no row, on which its
    /// `HAVING` is evaluated: it aggregates without `GROUP BY` (an aggregate, or `HAVING`), its
    /// grouping sets include the empty set, or an aggregate written in a sub-select may belong
    /// to it.
    pub fn groups_from_nothing(&self, level: usize) -> bool {
        self.why_groups_from_nothing(level).is_some()
    }

    fn why_groups_from_nothing(&self, level: usize) -> Option<&'static str> {
        let l = &self.levels.levels[level];
        if l.kind != Kind::Select {
            return None;
        }
        let groups: Vec<&Value> = l
            .fields
            .get("group_clause")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        if !groups.is_empty() {
            return groups.iter().all(|g| has_empty_set(g)).then_some(
                "its grouping sets include the empty set (`GROUP BY ()`, `ROLLUP`, `CUBE`), which \
                 makes a row from no rows",
            );
        }
        let own = l
            .aggregates
            .iter()
            .any(|a| matches!(a.pos, Pos::Output | Pos::Having(_)));
        if own || !l.having.is_empty() {
            return Some(
                "it aggregates without GROUP BY, so it returns a row even when its WHERE matches \
                 nothing",
            );
        }
        self.outer_aggregates[level].then_some(
            "an aggregate in one of its sub-selects may take only this query's columns, which \
             makes it an aggregate of this query, returning a row even when its WHERE matches \
             nothing: qualify the aggregate's columns with the sub-select's own table",
        )
    }

    /// Marks the levels an aggregate written in a sub-select may belong to: PostgreSQL gives an
    /// aggregate to the innermost level whose columns its arguments read.
    fn find_outer_aggregates(&self) -> (Vec<bool>, AggregateOwners) {
        let levels = self.levels;
        let mut marked = vec![false; levels.levels.len()];
        let mut owners = HashMap::new();
        for (w, level) in levels.levels.iter().enumerate() {
            for a in 0..level.aggregates.len() {
                let mut reads_here = false;
                let mut unknown = false;
                let mut outer: Option<usize> = None;
                for (at, r) in self.refs_in_aggregate(w, a) {
                    match reads_level(levels, at, r) {
                        Some(l) if l == w => reads_here = true,
                        Some(l) if levels.within(w, l) => {
                            // `l` encloses `w`: the innermost such level is the candidate.
                            if outer.is_none_or(|o| levels.within(l, o)) {
                                outer = Some(l);
                            }
                        }
                        Some(_) => {}
                        None => unknown = true,
                    }
                }
                if reads_here || (!unknown && outer.is_none()) {
                    owners.insert((w, a), vec![w]);
                    continue;
                }
                let mut candidates: Vec<usize> = unknown.then_some(w).into_iter().collect();
                candidates.extend(outer);
                // PostgreSQL allows an aggregate of a query only in its select list, HAVING,
                // ORDER BY and WINDOW: a level entered any other way cannot own it.
                let mut at = w;
                while let Some(parent) = levels.levels[at].parent {
                    let owner = unknown || Some(parent.level) == outer;
                    if owner
                        && matches!(parent.pos, Pos::Output | Pos::Having(_))
                        && levels.levels[parent.level].kind == Kind::Select
                    {
                        marked[parent.level] = true;
                        candidates.push(parent.level);
                    }
                    if !unknown && Some(parent.level) == outer {
                        break;
                    }
                    at = parent.level;
                }
                owners.insert((w, a), candidates);
            }
        }
        (marked, owners)
    }

    /// Whether PostgreSQL may evaluate the arguments of aggregate `a` of `level` for a
    /// superseded leader: it evaluates them on the input rows of the level that owns the
    /// aggregate that pass that level's conditions, and on none when they are empty.
    pub fn aggregate_arguments_live(&self, level: usize, a: usize) -> bool {
        self.aggregate_owners.get(&(level, a)).is_none_or(|owners| {
            owners
                .iter()
                .any(|&owner| self.reached(owner) && !self.gated(owner))
        })
    }

    /// The references inside aggregate `a` of level `w`, with the level each is written in.
    fn refs_in_aggregate(&self, w: usize, a: usize) -> Vec<(usize, &crate::levels::Ref)> {
        let levels = self.levels;
        let mut found: Vec<(usize, &crate::levels::Ref)> = levels.levels[w]
            .refs
            .iter()
            .filter(|r| r.aggregate == Some(a))
            .map(|r| (w, r))
            .collect();
        for (d, level) in levels.levels.iter().enumerate() {
            if d != w && self.under_aggregate(d, w, a) {
                found.extend(level.refs.iter().map(|r| (d, r)));
            }
        }
        found
    }

    /// Whether level `d` lies inside aggregate `a` of level `w`.
    fn under_aggregate(&self, d: usize, w: usize, a: usize) -> bool {
        let mut at = d;
        while let Some(parent) = self.levels.levels[at].parent {
            if parent.level == w {
                return parent.aggregate == Some(a);
            }
            at = parent.level;
        }
        false
    }

    /// Whether a `SELECT` returns exactly one row, NULL, when the fence is false: it is
    /// gated, aggregates without `GROUP BY` or `HAVING` (no aggregate of a sub-select belongs
    /// to it), and its select list is one call of an aggregate that returns NULL from no rows
    /// ([`functions::KnownFunction::null_on_no_rows`]; `FILTER`, `DISTINCT` and `ORDER BY` in
    /// it only take rows away). `count(..)`, `coalesce(min(..), 0)`, an expression around the
    /// aggregate, a window function and an unknown aggregate are not.
    pub fn null_from_nothing(&self, level: usize) -> bool {
        self.aggregate_of_no_rows(level).is_some_and(|call| {
            functions::known(&function_name(call)).is_some_and(|f| f.null_on_no_rows)
        })
    }

    /// The one aggregate call a gated `SELECT` selects, alone, aggregating without `GROUP BY`
    /// or `HAVING` (and no aggregate of a sub-select belonging to it), not as a window function
    /// nor `WITHIN GROUP`: the level then returns one row when the fence is false, that
    /// aggregate of no rows.
    pub(crate) fn aggregate_of_no_rows(&self, level: usize) -> Option<&'a Fields> {
        let l = &self.levels.levels[level];
        if l.kind != Kind::Select
            || !self.gated(level)
            || has(l.fields, "group_clause")
            || !l.having.is_empty()
            || self.outer_aggregates[level]
        {
            return None;
        }
        let targets: Vec<(&str, &'a Fields)> = children(l.fields, "target_list").collect();
        let [("ResTarget", target)] = targets.as_slice() else {
            return None;
        };
        match child(target, "val") {
            Some(("FuncCall", call))
                if !has(call, "over")
                    && call.get("agg_within_group").and_then(Value::as_bool) != Some(true) =>
            {
                Some(call)
            }
            _ => None,
        }
    }

    /// Whether a `FROM` list (its items cross-joined) is empty when the fence is false.
    fn list_empty(&self, list: Option<&Value>) -> bool {
        list.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|item| self.item_empty(item))
    }

    /// Whether a `FROM` item is empty when the fence is false.
    pub fn item_empty(&self, item: &Value) -> bool {
        let Some((kind, fields)) = node(item) else {
            return false;
        };
        match kind {
            "RangeVar" => match self.levels.range_vars.get(&(fields as *const Fields)) {
                Some(Source::Cte(level)) => self.empty(*level),
                // A recursive query's read of itself reads its working table, which holds only
                // what its earlier rounds made: none, when its first (non-recursive) arm is empty,
                // and then the union that is the query is empty too (by induction over rounds).
                Some(Source::Recursive(n)) => self.reads_itself(*n),
                _ => false,
            },
            "RangeSubselect" => child(fields, "subquery")
                .and_then(|(_, query)| self.levels.of(query))
                .is_some_and(|level| self.empty(level)),
            "JoinExpr" => {
                let side = |name: &str| fields.get(name).is_some_and(|s| self.item_empty(s));
                let (left, right) = (side("larg"), side("rarg"));
                let mut on = Vec::new();
                if let Some(quals) = fields.get("quals") {
                    crate::levels::split_and(quals, &mut on);
                }
                let on = on.iter().any(|c| self.conjunct_gates(c));
                match int(fields, "jointype") {
                    JOIN_INNER => left || right || on,
                    JOIN_LEFT => left,
                    JOIN_RIGHT => right,
                    JOIN_FULL => left && right,
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// Whether recursive read `n` is a read of the `WITH` query it stands in.
    fn reads_itself(&self, n: usize) -> bool {
        let read = &self.levels.recursive[n];
        self.levels.levels.iter().flat_map(|l| &l.ctes).any(|cte| {
            cte.name == read.name
                && cte.level != usize::MAX
                && self.levels.within(read.at, cte.level)
        })
    }

    /// Whether PostgreSQL may evaluate the level at all when the fence is false.
    pub fn reached(&self, level: usize) -> bool {
        if let Some(known) = self.reached.borrow()[level] {
            return known;
        }
        // A level that reaches itself (a query reading a WITH query that reads it) is taken to
        // be reached through itself.
        self.reached.borrow_mut()[level] = Some(true);
        let reached = match self.levels.levels[level].parent {
            None => true,
            Some(parent) if parent.pos == Pos::With && self.reads_only(level) => {
                self.read_where_evaluated(level)
            }
            Some(parent) => {
                self.evaluated(parent.level, parent.pos)
                    || (self.evaluated_on_rescan(level) && self.rescanned(parent.level))
            }
        };
        self.reached.borrow_mut()[level] = Some(reached);
        reached
    }

    /// Whether a `WITH` query only reads: a `SELECT`, a set operation or `VALUES`, which
    /// PostgreSQL runs only as far as a query reads it (a data-modifying one runs to completion
    /// whether or not anything reads it). In a `WITH RECURSIVE`, whose queries may read each
    /// other before this tree knows their levels, every query is taken to be read.
    fn reads_only(&self, level: usize) -> bool {
        let levels = &self.levels.levels;
        matches!(
            levels[level].kind,
            Kind::Select | Kind::SetOp(_) | Kind::Values
        ) && !levels.iter().any(|l| {
            l.items
                .iter()
                .any(|item| matches!(item.source, Source::Recursive(_)))
        })
    }

    /// Whether a query that reads the `WITH` query `level` in its `FROM` may be evaluated when
    /// the fence is false: PostgreSQL plans a `WITH` query no query reads not at all, and runs
    /// one that is read only when a scan of it is.
    fn read_where_evaluated(&self, level: usize) -> bool {
        self.levels.levels.iter().enumerate().any(|(at, l)| {
            l.items.iter().any(|item| item.source == Source::Cte(level))
                && self.evaluated(at, Pos::Input)
        })
    }

    /// Whether the level is an expression PostgreSQL evaluates when it rescans the plan of the
    /// level around it, whatever fences that plan: a scalar or `ARRAY` sub-select in a `WHERE`
    /// or `ON` condition (an init plan, which an index scan rescanned evaluates as a key of its
    /// index condition). PostgreSQL 15 ran a VOLATILE call of one for a superseded leader. (A
    /// `LIMIT` or `OFFSET`, which a rescanned `Limit` recomputes, is [`Self::evaluated`]'s.)
    fn evaluated_on_rescan(&self, level: usize) -> bool {
        let l = &self.levels.levels[level];
        matches!(l.parent.map(|p| p.pos), Some(Pos::Conjunct(_)))
            && matches!(l.sub_link, Some(EXPR_SUBLINK | ARRAY_SUBLINK))
    }

    /// Whether PostgreSQL may rescan the level's plan when the fence is false: a sub-select it
    /// evaluates (once per row of the query around it, where it reads that query's columns; or
    /// as the inner side of a join), and each sub-select in the `FROM` of one it rescans, whose
    /// plan is part of it, fences or not. Rescanning resets a plan and evaluates its
    /// [`Self::evaluated_on_rescan`] expressions; the statement's own plan is never rescanned.
    fn rescanned(&self, level: usize) -> bool {
        let Some(parent) = self.levels.levels[level].parent else {
            return false;
        };
        self.reached(level) || (parent.pos == Pos::Input && self.rescanned(parent.level))
    }

    /// Whether PostgreSQL may evaluate what stands at `pos` of `level` when the fence is false.
    /// A `LIMIT` or `OFFSET` is evaluated also wherever the level's plan may be rescanned: a
    /// rescanned Limit recomputes its count, whether or not it then runs.
    pub fn evaluated(&self, level: usize, pos: Pos) -> bool {
        (self.reached(level) && self.live(level, pos))
            || self.hoisted(level, pos)
            || (pos == Pos::Head && self.rescanned(level))
    }

    /// Whether PostgreSQL may evaluate a call of a `VOLATILE` function written at `pos` of
    /// `level`, outside its sub-selects, for a superseded leader. It is [`Self::evaluated`],
    /// except that a condition holding such a call is never one PostgreSQL evaluates once up
    /// front as a constant (a `VOLATILE` call keeps it from being one), whatever columns it
    /// reads: it stays a condition on the level's rows (or groups), below the level's one-time
    /// fence. A call of a function that is not `VOLATILE` changes and locks nothing wherever it
    /// is evaluated.
    pub fn volatile_call_evaluated(&self, level: usize, pos: Pos) -> bool {
        match pos {
            Pos::Conjunct(_) => {
                self.reached(level) && !self.zero_limit(level) && !self.one_time(level)
            }
            Pos::Having(_) => {
                self.reached(level)
                    && !self.zero_limit(level)
                    && (!self.gated(level) || self.groups_from_nothing(level))
            }
            _ => self.evaluated(level, pos),
        }
    }

    /// Whether `pos` of `level` is a conjunct that reads no column of the level, in a level
    /// PostgreSQL may flatten into an enclosing query it evaluates. Flattened, the conjunct
    /// becomes one more condition of that query that reads no column: PostgreSQL evaluates it
    /// once up front, beside that query's fence, in an order of its choosing, even where the
    /// level itself, unflattened, would never run.
    pub fn hoisted(&self, level: usize, pos: Pos) -> bool {
        let Pos::Conjunct(n) = pos else {
            return false;
        };
        !self.conjunct_reads_level(level, n, false) && self.flattened_into_evaluated(level)
    }

    fn flattened_into_evaluated(&self, level: usize) -> bool {
        let Some(parent) = self.levels.levels[level].parent else {
            return false;
        };
        self.may_flatten(level, parent.pos)
            && (self.reached(parent.level) || self.flattened_into_evaluated(parent.level))
    }

    /// Whether PostgreSQL may merge the level into its parent's query, where it stands at
    /// `pos`: a sub-select in `FROM` (or an arm of a `UNION ALL` there) unless it has
    /// something that keeps it a query of its own, and a sub-select in a condition (`EXISTS`
    /// and `IN`/`= ANY`, turned into a semi-join) on the same terms, except that `EXISTS`
    /// ignores `LIMIT`, `DISTINCT` and `ORDER BY`. Anything else may be flattened as far as
    /// these rules know.
    fn may_flatten(&self, level: usize, pos: Pos) -> bool {
        let l = &self.levels.levels[level];
        let fields = l.fields;
        let in_condition = match pos {
            Pos::Input => false,
            Pos::Conjunct(_) => true,
            _ => return false,
        };
        match l.kind {
            Kind::Select => {
                let own_query = ["group_clause", "having_clause", "locking_clause"]
                    .into_iter()
                    .chain(["with_clause", "limit_offset"])
                    .any(|name| has(fields, name));
                let own_in_from = ["limit_count", "distinct_clause", "sort_clause"]
                    .into_iter()
                    .any(|name| has(fields, name));
                !own_query && (in_condition || !own_in_from)
            }
            Kind::SetOp(op) => op == SETOP_UNION && fields.get("all") == Some(&Value::Bool(true)),
            _ => false,
        }
    }

    /// Whether PostgreSQL may evaluate what stands at `pos` of a reached level when the fence
    /// is false.
    pub fn live(&self, level: usize, pos: Pos) -> bool {
        if self.zero_limit(level) && !matches!(pos, Pos::Head | Pos::With) {
            return false;
        }
        match pos {
            Pos::Head | Pos::With => true,
            Pos::Input => !self.one_time(level),
            Pos::Conjunct(n) => {
                !self.one_time(level) || !self.conjunct_reads_level(level, n, false)
            }
            Pos::Having(n) => {
                !self.gated(level)
                    || self.groups_from_nothing(level)
                    || !self.conjunct_reads_level(level, n, true)
            }
            Pos::Output => {
                (!self.gated(level) || self.rows_from_nothing(level)) && !self.having_gates(level)
            }
            Pos::MergeCondition => {
                let (source_empty, by_source) = self.merge_source(level);
                !source_empty || by_source
            }
        }
    }

    /// Whether a conjunct (of `WHERE`/`ON`, or of `HAVING`) reads a column of its own level
    /// (or, in `HAVING`, an aggregate of it), so that PostgreSQL can only evaluate it on the
    /// level's rows, never up front.
    ///
    /// What counts is the conjunct as PostgreSQL plans it: a column it keeps once sub-selects
    /// are pulled up and constants folded ([`Props::keeps_column`]), or a call of a `VOLATILE`
    /// function outside its sub-selects, which keeps PostgreSQL from evaluating it as a
    /// constant.
    fn conjunct_reads_level(&self, level: usize, n: usize, having: bool) -> bool {
        let l = &self.levels.levels[level];
        let (pos, conjunct) = if having {
            (Pos::Having(n), l.having[n])
        } else {
            (Pos::Conjunct(n), l.conjuncts[n].1)
        };
        if having && l.aggregates.iter().any(|a| a.pos == pos) {
            return true;
        }
        self.keeps_column(level, level, conjunct) || self.volatile_call_at(level, pos)
    }

    /// Whether level `d` lies inside what stands at `pos` of `level`.
    fn hangs_at(&self, d: usize, level: usize, pos: Pos) -> bool {
        let mut at = d;
        while let Some(parent) = self.levels.levels[at].parent {
            if parent.level == level {
                return parent.pos == pos;
            }
            at = parent.level;
        }
        false
    }

    /// Whether a call written at `pos` of `level` (outside its sub-selects and aggregates) is
    /// certainly of a `VOLATILE` function: a built-in one, or one where every function of the
    /// schema the call may be is.
    fn volatile_call_at(&self, level: usize, pos: Pos) -> bool {
        self.levels.levels[level]
            .calls
            .iter()
            .filter(|call| call.pos == pos && call.aggregate.is_none())
            .any(|call| {
                let name = function_name(call.fields);
                let Some((last, namespace)) = name.split_last() else {
                    return false;
                };
                match self.levels.schema {
                    Some(schema) if schema.has_function(last) => schema.certainly_volatile(
                        namespace.last().map(String::as_str),
                        last,
                        &crate::arg_types::args(self.levels, level, call.fields),
                    ),
                    _ => functions::volatile_builtin(&name).is_some(),
                }
            })
    }
}

/// Whether a conjunct is a call of the fence (any schema).
pub fn is_fence_call(conjunct: &Value) -> bool {
    matches!(node(conjunct), Some(("FuncCall", call)) if functions::is_fence(&function_name(call)))
}

/// Whether an element of a `GROUP BY` list can be the empty grouping set.
fn has_empty_set(element: &Value) -> bool {
    match node(element) {
        Some(("GroupingSet", set)) => match int(set, "kind") {
            GROUPING_SET_EMPTY | GROUPING_SET_ROLLUP | GROUPING_SET_CUBE => true,
            GROUPING_SET_SETS => set
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(has_empty_set),
            _ => false,
        },
        _ => false,
    }
}
