//! The rules, stated in the crate docs, applied to one statement's levels: each node that
//! changes or locks rows is checked against what PostgreSQL evaluates before it
//! ([`crate::props`]), and each call against the functions a claim may call.

use std::ops::Range;

use serde_json::Value;

use leader_schema::model::Event;

use crate::levels::{Kind, Levels, Pos, Source};
use crate::messages::{Effect, Messages};
use crate::names::{possible_call, shown};
use crate::props::Props;
use crate::routines::{ArgType, Args, Routine};
use crate::tree::enums::{CMD_DELETE, CMD_INSERT, CMD_UPDATE, ONCONFLICT_UPDATE};
use crate::tree::{Fields, Statement, child, children, function_name, has, int, location, node};
use crate::{FenceCall, ShardParams, SqlError, arg_types, functions, position, shards};

/// Statements that neither read nor change rows of the application's tables: a `#[fenced]`
/// function may send them beside its claims.
const HARMLESS_STATEMENTS: [&str; 7] = [
    "TransactionStmt",
    "VariableSetStmt",
    "VariableShowStmt",
    "ListenStmt",
    "UnlistenStmt",
    "NotifyStmt",
    "DiscardStmt",
];

/// What checking one statement found.
pub struct Outcome {
    /// Whether it changes or locks rows, or may (through a function), so that it is a claim.
    pub claim: bool,
    pub fences: Vec<FenceCall>,
    pub errors: Vec<SqlError>,
}

/// Checks one statement.
pub fn check(sql: &str, statement: &Statement, hints: &crate::Hints) -> Outcome {
    let (kind, fields) = (statement.kind.as_str(), &statement.fields);
    let messages = Messages::new(sql, statement, hints);
    if !crate::levels::QUERY_KINDS.contains(&kind) {
        let harmless = HARMLESS_STATEMENTS.contains(&kind);
        let errors = if harmless {
            Vec::new()
        } else {
            vec![messages.other_statement(kind)]
        };
        return Outcome {
            claim: !harmless,
            fences: Vec::new(),
            errors,
        };
    }
    let levels = Levels::build(kind, fields, hints.schema);
    let props = Props::new(&levels);
    let mut rules = Rules {
        sql,
        levels: &levels,
        props: &props,
        messages,
        claim: false,
        fences: Vec::new(),
        errors: Vec::new(),
        lock_refused_at_top: false,
    };
    rules.run();
    Outcome {
        claim: rules.claim,
        fences: rules.fences,
        errors: rules.errors,
    }
}

struct Rules<'s, 'l, 'a> {
    sql: &'s str,
    levels: &'l Levels<'a>,
    props: &'l Props<'l, 'a>,
    messages: Messages<'s>,
    claim: bool,
    fences: Vec<FenceCall>,
    errors: Vec<SqlError>,
    /// Whether rule 2 refused the statement's own locking clause.
    lock_refused_at_top: bool,
}

impl Rules<'_, '_, '_> {
    fn run(&mut self) {
        for level in 0..self.levels.levels.len() {
            self.calls(level);
            self.possible_calls(level);
            self.changes(level);
            self.locks(level);
        }
        for uncovered in shards::uncovered(self.levels, &self.fences) {
            let shard = self.fences.iter().find_map(|f| f.shard.map(|s| (f, s)));
            if let Some((fence, shard)) = shard {
                let error = self
                    .messages
                    .shard_rows(self.levels, &uncovered, fence, shard);
                self.errors.push(error);
            }
        }
        let top = &self.levels.levels[0];
        if has(top.fields, "into_clause") {
            self.claim = true;
            self.errors.push(self.messages.select_into());
        }
        // A locking query's result is the rows it locks: the lock's error, if there is one,
        // says it already. A lock that lands nowhere (on a `WITH` query's rows) locks nothing,
        // and the result is asked of as any claim's.
        let result_is_locked = self.lock_refused_at_top;
        if self.claim
            && !result_is_locked
            && matches!(top.kind, Kind::Select | Kind::SetOp(_) | Kind::Values)
            && !self.props.empty(0)
        {
            let why = self.props.why_rows_from_nothing(0);
            let error = self.messages.ungated(
                self.levels,
                self.props,
                0,
                Effect::Result,
                why.map(str::to_owned),
            );
            self.errors.push(error);
        }
    }

    /// Rule 4 and 5: every function call is the fence, with two bind parameters, or a known
    /// built-in.
    fn calls(&mut self, level: usize) {
        for call in &self.levels.levels[level].calls {
            let name = function_name(call.fields);
            let at = position::call(self.sql, location(call.fields).unwrap_or(0));
            if functions::is_fence(&name) {
                match fence_params(call.fields).as_slice() {
                    [Some(role), Some(token)] => self.fences.push(FenceCall {
                        role: *role,
                        token: *token,
                        shard: None,
                        at,
                    }),
                    [Some(role), Some(index), Some(count), Some(token)] => {
                        self.fences.push(FenceCall {
                            role: *role,
                            token: *token,
                            shard: Some(ShardParams {
                                index: *index,
                                count: *count,
                            }),
                            at,
                        })
                    }
                    _ => self.errors.push(self.messages.fence_arguments(at)),
                }
            } else if shards::is_shard_of(&name) {
                // The framework's shard helper: IMMUTABLE SQL that reads no table.
            } else {
                let routine = match self.routine(level, &name, call.fields) {
                    Some(routine) => routine,
                    None => continue,
                };
                match routine {
                    Routine::ReadOnly => {}
                    // It may change rows for the live leader, so the statement is a claim, and
                    // it is refused where PostgreSQL may evaluate it for a superseded leader.
                    Routine::Volatile(what) => {
                        self.claim = true;
                        if self.evaluated(level, call.pos, call.aggregate) {
                            let why = self.why_call_evaluated(level, call.pos);
                            self.errors.push(self.messages.unknown_function(
                                &name,
                                at,
                                &what,
                                Some(why),
                            ));
                        }
                    }
                    Routine::Unknown(what) => {
                        self.claim = true;
                        self.errors
                            .push(self.messages.unknown_function(&name, at, &what, None));
                    }
                }
            }
        }
    }

    /// What a call of `name` (not the fence, not the shard helper) may call: `None` for one
    /// that neither changes nor locks rows (a known built-in no function of the schema may
    /// stand for, or functions the schema has `STABLE` or `IMMUTABLE`).
    fn routine(&self, level: usize, name: &[String], call: &Fields) -> Option<Routine> {
        let (last, namespace) = name.split_last()?;
        let namespace = namespace.last().map(String::as_str);
        let args = arg_types::args(self.levels, level, call);
        let schema = self.levels.schema;
        let own = schema.and_then(|schema| schema.routine(namespace, last, &args));
        match own {
            Some(Routine::ReadOnly) => None,
            Some(routine) => Some(routine),
            None if functions::known(name).is_some() => None,
            None => Some(match functions::volatile_builtin(name) {
                Some(what) => {
                    Routine::Volatile(format!("`{last}` is a VOLATILE built-in: it {what}"))
                }
                None => Routine::Unknown(match schema {
                    Some(schema) => format!(
                        "`#[fenced]` found no function `{}` that takes these arguments in {}, \
                         and it is no built-in it knows, so it may also be an aggregate, which \
                         PostgreSQL evaluates once even on no rows",
                        name.join("."),
                        schema.read_from()
                    ),
                    None => "`#[fenced]` was given no schema to tell what it is".to_owned(),
                }),
            }),
        }
    }

    /// Whether PostgreSQL may evaluate an expression at `pos` of `level` (inside aggregate
    /// `aggregate` of it, if any) for a superseded leader ([`Props::evaluated`]).
    ///
    /// The call is `VOLATILE` (it is refused or accepted on that alone otherwise), so a
    /// condition holding it outside an aggregate is never evaluated up front as a constant
    /// ([`Props::volatile_call_evaluated`]).
    fn evaluated(&self, level: usize, pos: Pos, aggregate: Option<usize>) -> bool {
        match aggregate {
            Some(a) => {
                self.props.hoisted(level, pos)
                    || (self.props.reached(level) && self.props.aggregate_arguments_live(level, a))
            }
            None => self.props.volatile_call_evaluated(level, pos),
        }
    }

    /// A reference PostgreSQL may read as a call is refused wherever PostgreSQL may evaluate it
    /// for a superseded leader.
    ///
    /// Wherever it stands, such a reference makes the statement a claim: for the live leader it
    /// may call a function that changes rows, so the statement must return nothing to a
    /// superseded one.
    fn possible_calls(&mut self, level: usize) {
        for r in &self.levels.levels[level].refs {
            let Some(mut call) = possible_call(self.levels, level, r) else {
                continue;
            };
            if let Some(schema) = self.levels.schema {
                let args = Args {
                    types: vec![self.row_of(level, r)],
                    loose: false,
                };
                match schema.routine(None, call.function, &args) {
                    Some(Routine::ReadOnly) => continue,
                    None if functions::known(&[call.function.to_owned()]).is_some() => continue,
                    Some(Routine::Volatile(what) | Routine::Unknown(what)) => {
                        call.why = format!("{}; {what}", call.why);
                    }
                    None => {}
                }
            }
            self.claim = true;
            if !self.evaluated(level, r.pos, r.aggregate) {
                continue;
            }
            let at = r.at.map(|start| self.reference_range(start, r));
            let why = self.why_call_evaluated(level, r.pos);
            self.errors
                .push(self.messages.possible_call(&shown(r), &call, at, why));
        }
    }

    /// The row a reference `t.f` passes to `f` in attribute notation: `t`'s table's, where `t`
    /// is a table of the query.
    fn row_of(&self, level: usize, r: &crate::levels::Ref) -> ArgType {
        let qualifier = match (r.selection, r.names.as_slice()) {
            (false, [qualifier, _]) => qualifier,
            (true, _) => match &r.selected_from {
                Some(qualifier) => qualifier,
                None => return ArgType::Unknown,
            },
            _ => return ArgType::Unknown,
        };
        match crate::names::resolve(self.levels, level, qualifier) {
            Some((l, item)) => match self.levels.levels[l].items[item].source {
                Source::Table(table) => {
                    let table = &self.levels.tables[table];
                    ArgType::Row(table.namespace.clone(), table.name.clone())
                }
                _ => ArgType::Unknown,
            },
            None => ArgType::Unknown,
        }
    }

    /// The byte range of a reference in the SQL.
    fn reference_range(&self, start: usize, r: &crate::levels::Ref) -> Range<usize> {
        if r.selection {
            return position::call(self.sql, start);
        }
        let mut end = start;
        for _ in 0..r.names.len() {
            end = position::word(self.sql, end).end;
            if self.sql[end..].starts_with('.') {
                end += 1;
            }
        }
        start..end.max(start + 1).min(self.sql.len())
    }

    /// Rule 1 for nodes that change rows.
    fn changes(&mut self, level: usize) {
        let l = &self.levels.levels[level];
        let effect = match l.kind {
            Kind::Update => Effect::Update,
            Kind::Delete => Effect::Delete,
            Kind::Insert => Effect::Insert,
            Kind::Merge => Effect::Merge,
            _ => return,
        };
        self.claim = true;
        self.fired(level, effect);
        if !self.props.reached(level) || self.props.gated(level) {
            return;
        }
        let why = match effect {
            Effect::Insert => self.insert_why(l.fields),
            Effect::Merge => {
                let (source_empty, by_source) = self.props.merge_source(level);
                (source_empty && by_source).then(|| {
                    "`WHEN NOT MATCHED BY SOURCE` acts on target rows even when the source is empty"
                        .to_owned()
                })
            }
            _ => None,
        };
        let error = self
            .messages
            .ungated(self.levels, self.props, level, effect, why);
        self.errors.push(error);
    }

    /// Statement-level triggers and rules: PostgreSQL fires a statement-level trigger once per
    /// statement, even one that changes no row, so a superseded leader's claim would run it
    /// however the claim is fenced.
    fn fired(&mut self, level: usize, effect: Effect) {
        let (Some(schema), Some(target)) =
            (self.levels.schema, self.levels.levels[level].items.first())
        else {
            return;
        };
        let Source::Table(table) = target.source else {
            return;
        };
        let fields = self.levels.levels[level].fields;
        let mut events = match effect {
            Effect::Update => vec![Event::Update],
            Effect::Delete => vec![Event::Delete],
            Effect::Insert => vec![Event::Insert],
            _ => Vec::new(),
        };
        let on_conflict = fields
            .get("on_conflict_clause")
            .and_then(serde_json::Value::as_object);
        if on_conflict.is_some_and(|c| int(c, "action") == ONCONFLICT_UPDATE) {
            events.push(Event::Update);
        }
        for (_, when) in children(fields, "merge_when_clauses") {
            match int(when, "command_type") {
                CMD_UPDATE => events.push(Event::Update),
                CMD_INSERT => events.push(Event::Insert),
                CMD_DELETE => events.push(Event::Delete),
                _ => {}
            }
        }
        let table = &self.levels.tables[table];
        let fired = schema.fired(table.namespace.as_deref(), &table.name, &events);
        if !fired.is_empty() {
            let error = self.messages.fires(self.levels, level, &fired);
            self.errors.push(error);
        }
    }

    fn insert_why(&self, fields: &Fields) -> Option<String> {
        match child(fields, "select_stmt") {
            Some((_, select)) if !has(select, "values_lists") => {
                let source = self.levels.of(select)?;
                self.props
                    .why_rows_from_nothing(source)
                    .map(|why| format!("its SELECT returns a row from no rows: {why}"))
            }
            _ => Some("`INSERT … VALUES` always inserts its rows".to_owned()),
        }
    }

    /// Rule 1 for row locks: each lock is taken at the level PostgreSQL takes it (the
    /// locking query's own, or, for a sub-select in its FROM, that sub-select's, recursively),
    /// and is protected only if that level reads no row when the fence is false.
    fn locks(&mut self, level: usize) {
        let l = &self.levels.levels[level];
        if l.locking.is_empty() {
            return;
        }
        self.claim = true;
        let mut unsafe_at: Option<(usize, Option<String>)> = None;
        for clause in &l.locking {
            let named: Vec<String> = children(clause, "locked_rels")
                .filter(|(kind, _)| *kind == "RangeVar")
                .map(|(_, rel)| crate::tree::text(rel, "relname").to_owned())
                .collect();
            for item in &l.items {
                if !(named.is_empty() || item.visible && named.contains(&item.name)) {
                    continue;
                }
                let found = match item.source {
                    Source::Table(table) => self.lock_lands(level, table).then_some((level, None)),
                    Source::Subquery(sub) => self.pushed_lock(sub, &item.name),
                    _ => None,
                };
                if unsafe_at.is_none() {
                    unsafe_at = found;
                }
            }
        }
        if matches!(l.kind, Kind::SetOp(_)) && !self.reads_nothing(level) {
            unsafe_at.get_or_insert((level, None));
        }
        if let Some((at, via)) = unsafe_at {
            let why = self.lock_why(at, via);
            let error = self
                .messages
                .ungated(self.levels, self.props, level, Effect::Lock, why);
            self.lock_refused_at_top |= level == 0;
            self.errors.push(error);
        }
    }

    /// Where a lock pushed into sub-select `sub` lands unprotected, if it does.
    fn pushed_lock(&self, sub: usize, name: &str) -> Option<(usize, Option<String>)> {
        if self.reads_nothing(sub) {
            return None;
        }
        let s = &self.levels.levels[sub];
        for item in &s.items {
            let found = match item.source {
                Source::Table(table) => self
                    .lock_lands(sub, table)
                    .then(|| (sub, Some(name.to_owned()))),
                Source::Subquery(deeper) => self.pushed_lock(deeper, name),
                _ => None,
            };
            if found.is_some() {
                return found;
            }
        }
        matches!(s.kind, Kind::SetOp(_) | Kind::Values).then(|| (sub, Some(name.to_owned())))
    }

    /// Whether a lock on a table of `level` may land on a row for a superseded leader. On a
    /// table the schema knows as one, PostgreSQL locks the rows the level returns, after all
    /// of its conditions, so a gate on rows is in time; on anything else (a view it may not
    /// flatten, a foreign table) the lock may land on rows as they are read.
    fn lock_lands(&self, level: usize, table: usize) -> bool {
        if self.reads_nothing(level) {
            return false;
        }
        let table = &self.levels.tables[table];
        let is_table = self
            .levels
            .schema
            .is_some_and(|schema| schema.is_table(table.namespace.as_deref(), &table.name));
        !(is_table && self.props.gated(level))
    }

    /// Whether a level reads no row when the fence is false.
    fn reads_nothing(&self, level: usize) -> bool {
        !self.props.reached(level) || self.props.one_time(level) || self.props.zero_limit(level)
    }

    fn lock_why(&self, at: usize, via: Option<String>) -> Option<String> {
        if let Some(sub) = via {
            return Some(format!(
                "its locking clause applies to the sub-select `{sub}` in its FROM, which \
                 PostgreSQL runs as a query of its own unless it can flatten it, locking each \
                 row as it reads it, before any condition of this query removes it"
            ));
        }
        if let Some(why) = self.why_evaluated(at, Pos::Input) {
            return Some(why);
        }
        self.props.gated(at).then(|| {
            "it is gated only by a condition PostgreSQL evaluates on the rows it reads (`IN`, \
             `EXISTS`, `= ANY`, a scalar sub-select or a join), and a table it locks may be a \
             view PostgreSQL cannot flatten, whose rows are locked as they are read, before that \
             condition removes them"
                .to_owned()
        })
    }

    /// Why PostgreSQL may evaluate what stands at `pos` of `level` for a superseded leader,
    /// where an enclosing fence would suggest otherwise.
    fn why_evaluated(&self, level: usize, pos: Pos) -> Option<String> {
        self.why_evaluated_from(level, pos, false)
    }

    /// [`Self::why_evaluated`] for a `VOLATILE` call written at `pos` of `level`, whose own
    /// condition PostgreSQL never evaluates up front ([`Props::volatile_call_evaluated`]).
    fn why_call_evaluated(&self, level: usize, pos: Pos) -> Option<String> {
        self.why_evaluated_from(level, pos, true)
    }

    fn why_evaluated_from(&self, level: usize, pos: Pos, volatile_call: bool) -> Option<String> {
        let (mut at, mut pos) = (level, pos);
        let mut own_condition = volatile_call && matches!(pos, Pos::Conjunct(_) | Pos::Having(_));
        loop {
            if !own_condition && self.props.hoisted(at, pos) && !self.props.one_time(at) {
                return Some(
                    "it is in a condition that reads no column of a sub-select PostgreSQL may \
                     flatten into the query around it, where the condition is evaluated once up \
                     front, beside that query's fence, in an order PostgreSQL chooses"
                        .to_owned(),
                );
            }
            if self.props.one_time(at) {
                return Some(
                    match pos {
                        Pos::Head => {
                            "it is in a LIMIT or OFFSET, which PostgreSQL evaluates before the \
                             fence of the query it limits"
                        }
                        Pos::With => {
                            "it is in a WITH query, which PostgreSQL evaluates wherever it is \
                             read, whatever fences the rest of the statement"
                        }
                        Pos::Conjunct(_) | Pos::Having(_) => {
                            "it is in a condition that reads no column of the query it filters, \
                             which PostgreSQL may evaluate once up front, before that query's \
                             fence"
                        }
                        Pos::Output => {
                            "it is in the select list of a query that returns a row from no rows"
                        }
                        Pos::Input | Pos::MergeCondition => return None,
                    }
                    .to_owned(),
                );
            }
            let parent = self.levels.levels[at].parent?;
            (at, pos) = (parent.level, parent.pos);
            own_condition = false;
        }
    }
}

/// The placeholder number of each argument of a call (`None` for one that is not `$n`).
pub fn fence_params(call: &Fields) -> Vec<Option<usize>> {
    call.get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(param_number)
        .collect()
}

/// `$n` (optionally cast) → `n`.
pub(crate) fn param_number(arg: &Value) -> Option<usize> {
    match node(arg)? {
        ("ParamRef", fields) => usize::try_from(int(fields, "number"))
            .ok()
            .filter(|&n| n > 0),
        ("TypeCast", fields) => param_number(fields.get("arg")?),
        _ => None,
    }
}
