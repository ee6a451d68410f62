//! The gating analysis: which query nodes a false fence empties, and the errors for those that
//! change or lock rows without being gated. The rules are stated in the crate docs.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::Value;

use crate::tree::enums::*;
use crate::tree::{
    Fields, Statement, child, children, function_name, has, int, location, node, text,
};
use crate::{Checked, FenceCall, SqlError, functions, position};

/// The statements that can be claims, and the only query nodes that can change or lock rows.
const QUERY_KINDS: [&str; 5] = [
    "SelectStmt",
    "UpdateStmt",
    "DeleteStmt",
    "InsertStmt",
    "MergeStmt",
];

const AGGREGATES_WITHOUT_GROUPS: &str =
    "it aggregates without GROUP BY, so it returns a row even when its WHERE matches nothing";

/// Checks every statement.
pub fn check_statements(sql: &str, statements: &[Statement]) -> Checked {
    let mut checker = Checker {
        sql,
        gated: HashMap::new(),
        scopes: Vec::new(),
        with_depth: 0,
        fix: String::new(),
        fence_elsewhere: false,
        statement_text: 0..0,
        fences: Vec::new(),
        errors: Vec::new(),
    };
    for statement in statements {
        checker.statement(statement);
    }
    Checked {
        statements: statements.len(),
        fences: checker.fences,
        errors: checker.errors,
    }
}

/// The location of every row-locking query's first table.
pub fn row_locking_queries(sql: &str, statements: &[Statement]) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    for statement in statements {
        for_each_node(&statement.kind, &statement.fields, &mut |kind, fields| {
            if kind == "SelectStmt" && has(fields, "locking_clause") {
                let at = first_table(fields).unwrap_or(0);
                found.push(position::word(sql, at));
            }
        });
    }
    found
}

struct Checker<'a> {
    sql: &'a str,
    /// Whether each query node already analysed is gated, by the address of its fields.
    gated: HashMap<*const Fields, bool>,
    /// The `WITH` queries in scope, innermost last: name and whether it is gated.
    scopes: Vec<Vec<(String, bool)>>,
    /// How many `WITH` queries the node being analysed sits in.
    with_depth: usize,
    /// The fence to suggest for the current statement: `AND leader_fence($i, $j)`.
    fix: String,
    /// Whether the current statement calls `leader_fence` anywhere.
    fence_elsewhere: bool,
    /// The current statement's own text.
    statement_text: Range<usize>,
    fences: Vec<FenceCall>,
    errors: Vec<SqlError>,
}

/// What an ungated node would do.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Effect {
    Update,
    Delete,
    Insert,
    Merge,
    Lock,
    /// The statement's own result: a superseded leader's claim returns rows.
    Result,
}

impl Checker<'_> {
    fn statement(&mut self, statement: &Statement) {
        let (kind, fields) = (statement.kind.as_str(), &statement.fields);
        self.fix = suggested_fix(kind, fields);
        self.fence_elsewhere = false;
        self.statement_text = statement.text.clone();
        for_each_node(kind, fields, &mut |kind, fields| {
            if kind == "FuncCall" && functions::is_fence(&function_name(fields)) {
                self.fence_elsewhere = true;
            }
        });
        if !QUERY_KINDS.contains(&kind) {
            self.errors.push(SqlError {
                message: format!(
                    "a claim is a SELECT, UPDATE, DELETE, INSERT … SELECT or MERGE whose rows \
                     the fence gates; `#[fenced]` cannot check a `{}` statement: send it outside \
                     the `#[fenced]` function",
                    statement_name(kind)
                ),
                at: None,
            });
            return;
        }
        let gated = self.query(kind, fields);
        if !gated && kind == "SelectStmt" && !has(fields, "locking_clause") {
            let why = aggregates_without_groups(fields).then_some(AGGREGATES_WITHOUT_GROUPS);
            self.ungated(fields, Effect::Result, why);
        }
    }

    /// Analyses a query node (once): checks the nodes inside it, and reports it if it changes
    /// or locks rows without being gated. Returns whether it is gated.
    fn query(&mut self, kind: &str, fields: &Fields) -> bool {
        let key = fields as *const Fields;
        if let Some(&gated) = self.gated.get(&key) {
            return gated;
        }
        // A query that reaches itself (a recursive `WITH`) is not gated through itself.
        self.gated.insert(key, false);
        let scoped = self.enter_with(fields);
        let gated = match kind {
            "SelectStmt" => self.select(fields),
            "UpdateStmt" => {
                let gated = self.where_gates(fields.get("where_clause"))
                    | self.sources_gate(fields, "from_clause");
                self.require(gated, fields, Effect::Update, None);
                gated
            }
            "DeleteStmt" => {
                let gated = self.where_gates(fields.get("where_clause"))
                    | self.sources_gate(fields, "using_clause");
                self.require(gated, fields, Effect::Delete, None);
                gated
            }
            "InsertStmt" => {
                let gated = match child(fields, "select_stmt") {
                    Some(("SelectStmt", select)) => self.query("SelectStmt", select),
                    _ => false,
                };
                let why = (!gated && inserts_values(fields))
                    .then_some("`INSERT … VALUES` always inserts its rows");
                self.require(gated, fields, Effect::Insert, why);
                gated
            }
            "MergeStmt" => self.merge(fields),
            _ => false,
        };
        self.walk_fields(fields, &["with_clause", "larg", "rarg"]);
        if scoped {
            self.scopes.pop();
        }
        self.gated.insert(key, gated);
        gated
    }

    /// Puts a node's `WITH` queries in scope, analysing each in order. Returns whether it did.
    fn enter_with(&mut self, fields: &Fields) -> bool {
        let Some(with) = fields.get("with_clause").and_then(Value::as_object) else {
            return false;
        };
        let recursive = with.get("recursive").and_then(Value::as_bool) == Some(true);
        self.scopes.push(Vec::new());
        for (kind, cte) in children(with, "ctes") {
            if kind != "CommonTableExpr" {
                continue;
            }
            let name = text(cte, "ctename").to_owned();
            if recursive {
                self.scope_insert(&name, false);
            }
            self.with_depth += 1;
            let gated = match child(cte, "ctequery") {
                Some((kind, query)) if QUERY_KINDS.contains(&kind) => self.query(kind, query),
                _ => false,
            };
            self.with_depth -= 1;
            // A recursive query's gate would rest on itself: it stays ungated.
            if !recursive {
                self.scope_insert(&name, gated);
            }
        }
        true
    }

    fn scope_insert(&mut self, name: &str, gated: bool) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name.to_owned(), gated));
        }
    }

    fn select(&mut self, fields: &Fields) -> bool {
        let op = int(fields, "op");
        if op != SETOP_NONE {
            let mut side = |name: &str| match fields.get(name).and_then(Value::as_object) {
                Some(arm) => self.query("SelectStmt", arm),
                None => false,
            };
            let (left, right) = (side("larg"), side("rarg"));
            let gated = match op {
                SETOP_UNION => left && right,
                SETOP_INTERSECT => left || right,
                SETOP_EXCEPT => left,
                _ => false,
            };
            if has(fields, "locking_clause") {
                self.require(gated, fields, Effect::Lock, None);
            }
            return gated;
        }
        if has(fields, "into_clause") {
            self.errors.push(SqlError {
                message: "`SELECT … INTO` creates a table, which a claim may not do: select the \
                          rows without `INTO`"
                    .into(),
                at: None,
            });
        }
        let rows_gated =
            self.where_gates(fields.get("where_clause")) | self.sources_gate(fields, "from_clause");
        let aggregates = aggregates_without_groups(fields);
        let values = has(fields, "values_lists");
        let gated = rows_gated && !aggregates && !values;
        if has(fields, "locking_clause") {
            let why = (rows_gated && aggregates).then_some(AGGREGATES_WITHOUT_GROUPS);
            self.require(gated, fields, Effect::Lock, why);
        }
        gated
    }

    fn merge(&mut self, fields: &Fields) -> bool {
        let source = fields
            .get("source_relation")
            .is_some_and(|item| self.source_gates(item));
        let by_source = children(fields, "merge_when_clauses")
            .any(|(_, when)| int(when, "match_kind") == MERGE_WHEN_NOT_MATCHED_BY_SOURCE);
        let whens: Vec<&Fields> = children(fields, "merge_when_clauses")
            .map(|(_, when)| when)
            .collect();
        let mut every_when = !whens.is_empty();
        for when in whens {
            every_when &= self.where_gates(when.get("condition"));
        }
        let gated = (source && !by_source) || every_when;
        let why = (source && by_source).then_some(
            "`WHEN NOT MATCHED BY SOURCE` acts on target rows even when the source is empty",
        );
        self.require(gated, fields, Effect::Merge, why);
        gated
    }

    /// Whether a top-level conjunct of `condition` empties the rows when the fence is false.
    /// Evaluates every conjunct, so each sub-query in one is analysed.
    fn where_gates(&mut self, condition: Option<&Value>) -> bool {
        let mut conjuncts = Vec::new();
        if let Some(condition) = condition {
            split_and(condition, &mut conjuncts);
        }
        let mut gated = false;
        for (kind, fields) in conjuncts {
            gated |= self.conjunct_gates(kind, fields);
        }
        gated
    }

    fn conjunct_gates(&mut self, kind: &str, fields: &Fields) -> bool {
        match kind {
            "FuncCall" => functions::is_fence(&function_name(fields)),
            "SubLink" => match int(fields, "sub_link_type") {
                EXISTS_SUBLINK | ANY_SUBLINK => self.sub_select_gates(fields),
                _ => false,
            },
            "A_Expr" | "AExpr" if int(fields, "kind") == AEXPR_OP_ANY => {
                match child(fields, "rexpr") {
                    Some(("SubLink", link)) if int(link, "sub_link_type") == ARRAY_SUBLINK => {
                        self.sub_select_gates(link)
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }

    fn sub_select_gates(&mut self, link: &Fields) -> bool {
        match child(link, "subselect") {
            Some((kind, query)) if QUERY_KINDS.contains(&kind) => self.query(kind, query),
            _ => false,
        }
    }

    /// Whether any item of a `FROM` list is gated (the items are cross-joined).
    fn sources_gate(&mut self, fields: &Fields, list: &str) -> bool {
        let items: Vec<&Value> = fields
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        let mut gated = false;
        for item in items {
            gated |= self.source_gates(item);
        }
        gated
    }

    fn source_gates(&mut self, item: &Value) -> bool {
        let Some((kind, fields)) = node(item) else {
            return false;
        };
        match kind {
            "RangeVar" if text(fields, "schemaname").is_empty() => {
                self.with_query_gated(text(fields, "relname"))
            }
            "RangeSubselect" => match child(fields, "subquery") {
                Some((kind, query)) if QUERY_KINDS.contains(&kind) => self.query(kind, query),
                _ => false,
            },
            "JoinExpr" => {
                let left = fields
                    .get("larg")
                    .is_some_and(|side| self.source_gates(side));
                let right = fields
                    .get("rarg")
                    .is_some_and(|side| self.source_gates(side));
                let on = self.where_gates(fields.get("quals"));
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

    /// Whether `name` names a gated `WITH` query in scope (a table otherwise).
    fn with_query_gated(&self, name: &str) -> bool {
        self.scopes
            .iter()
            .rev()
            .flat_map(|scope| scope.iter().rev())
            .find(|(with_name, _)| with_name == name)
            .is_some_and(|&(_, gated)| gated)
    }

    /// Walks every field but `skip`, analysing each query node and function call found.
    fn walk_fields(&mut self, fields: &Fields, skip: &[&str]) {
        for (name, value) in fields {
            if !skip.contains(&name.as_str()) {
                self.walk(value);
            }
        }
    }

    fn walk(&mut self, value: &Value) {
        if let Some((kind, fields)) = node(value) {
            if QUERY_KINDS.contains(&kind) {
                self.query(kind, fields);
                return;
            }
            if kind == "FuncCall" {
                self.function(fields);
            }
            self.walk_fields(fields, &[]);
            return;
        }
        match value {
            Value::Array(items) => items.iter().for_each(|item| self.walk(item)),
            Value::Object(fields) => self.walk_fields(fields, &[]),
            _ => {}
        }
    }

    /// Checks a function call: the fence's arguments, or that the function is a known one.
    fn function(&mut self, call: &Fields) {
        let name = function_name(call);
        let start = location(call).unwrap_or(0);
        let at = position::call(self.sql, start);
        if functions::is_fence(&name) {
            let args = fence_params(call);
            match args.as_slice() {
                [Some(role), Some(token)] => self.fences.push(FenceCall {
                    role: *role,
                    token: *token,
                    at,
                }),
                _ => self.errors.push(SqlError {
                    message: format!(
                        "`leader_fence` takes the fence's role and token as two bind \
                         parameters, never literals or expressions: write \
                         `leader_fence($1, $2)` and bind `fence.role()` and `fence.token()` \
                         ({})",
                        position::describe(self.sql, &at)
                    ),
                    at: Some(at),
                }),
            }
            return;
        }
        if functions::known(&name).is_none() {
            let shown = name.join(".");
            self.errors.push(SqlError {
                message: format!(
                    "`#[fenced]` cannot see what `{shown}(..)` does, and a function can change or \
                     lock rows ({}): compute the value before the claim and bind it, or call \
                     only the built-in functions listed in `leader_fence_check::KNOWN_FUNCTIONS`",
                    position::describe(self.sql, &at)
                ),
                at: Some(at),
            });
        }
    }

    /// Reports an ungated node that changes or locks rows.
    fn require(&mut self, gated: bool, fields: &Fields, effect: Effect, why: Option<&str>) {
        if !gated {
            self.ungated(fields, effect, why);
        }
    }

    fn ungated(&mut self, fields: &Fields, effect: Effect, why: Option<&str>) {
        let table = match effect {
            Effect::Lock | Effect::Result => first_table(fields),
            _ => fields
                .get("relation")
                .and_then(Value::as_object)
                .and_then(location),
        };
        let at = table.map(|start| position::word(self.sql, start));
        let table_name = at.as_ref().map_or("…", |at| &self.sql[at.clone()]);
        let node = match effect {
            Effect::Update => format!("`UPDATE {table_name}`"),
            Effect::Delete => format!("`DELETE FROM {table_name}`"),
            Effect::Insert => format!("`INSERT INTO {table_name}`"),
            Effect::Merge => format!("`MERGE INTO {table_name}`"),
            Effect::Lock => format!(
                "the row-locking `SELECT … FROM {table_name} … {}`",
                lock_strength(fields)
            ),
            Effect::Result => format!("the claim `SELECT … FROM {table_name}`"),
        };
        let would = match effect {
            Effect::Update => "update rows",
            Effect::Delete => "delete rows",
            Effect::Insert => "insert rows",
            Effect::Merge => "change rows",
            Effect::Lock => "lock rows",
            Effect::Result => "get rows back",
        };
        let reason = why
            .map(str::to_owned)
            .or_else(|| self.why_ungated(fields, effect));
        let reason = reason.map_or(String::new(), |r| format!(" ({r})"));
        let fix = &self.fix;
        let fix = match effect {
            Effect::Insert => format!(
                "write it as `INSERT … SELECT … WHERE … {fix}`, with the placeholders bound to \
                 `fence.role()` and `fence.token()`"
            ),
            Effect::Merge => format!(
                "merge from a gated source, `USING (SELECT … WHERE … {fix})`, with the \
                 placeholders bound to `fence.role()` and `fence.token()`"
            ),
            _ => format!(
                "add `{fix}` to its own WHERE as a top-level AND condition, with the \
                 placeholders bound to `fence.role()` and `fence.token()`"
            ),
        };
        let place = at.as_ref().map_or(String::new(), |at| {
            format!(", at {}", position::describe(self.sql, at))
        });
        self.errors.push(SqlError {
            message: format!(
                "{node} is not gated by the fence, so a superseded leader would still \
                 {would}{reason}: {fix}{place}"
            ),
            at,
        });
    }

    /// Why a node is not gated, where something in the SQL suggests the author meant it to be.
    fn why_ungated(&self, fields: &Fields, effect: Effect) -> Option<String> {
        let own = [fields.get("where_clause"), fields.get("join_condition")];
        for condition in own.into_iter().flatten() {
            if let Some((what, under)) = misplaced_fence(condition, None) {
                return Some(match (what, under) {
                    (Fenced::Call, "OR") => {
                        "the fence is under OR, so rows can match without it".into()
                    }
                    (Fenced::Call, "NOT") => {
                        "the fence is under NOT, which turns it inside out".into()
                    }
                    (Fenced::Call, "CASE") => {
                        "the fence is inside CASE, so some rows can skip it".into()
                    }
                    (Fenced::Call, _) => {
                        "the fence is nested inside another expression, where it may \
                                        not filter rows"
                            .into()
                    }
                    (Fenced::SubQuery, "OR") => {
                        "the fenced sub-query is under OR, so rows can match \
                                                without it"
                            .into()
                    }
                    (Fenced::SubQuery, "NOT") => {
                        "the fenced sub-query is under NOT, which turns it \
                                                 inside out"
                            .into()
                    }
                    (Fenced::SubQuery, _) => {
                        "the fenced sub-query is used where an empty result does \
                                             not empty the rows: only `IN (…)`, `= ANY (…)` and \
                                             `EXISTS (…)` as top-level AND conditions do, over a \
                                             query that does not aggregate without GROUP BY"
                            .into()
                    }
                });
            }
        }
        if self.fence_elsewhere {
            return Some(match effect {
                Effect::Lock => "a fence elsewhere in the statement does not stop this query \
                                 from locking rows: a superseded leader must not even lock"
                    .into(),
                _ if self.with_depth > 0 => "PostgreSQL runs a data-modifying WITH query to \
                                             completion whatever the rest of the statement \
                                             does, so a fence elsewhere does not stop it"
                    .into(),
                _ => "a fence elsewhere (under OR, NOT or CASE, in a select list, SET or \
                      RETURNING, or in a query this one does not depend on) gates nothing here"
                    .into(),
            });
        }
        self.sql[self.statement_text.clone()]
            .to_ascii_lowercase()
            .contains("leader_fence")
            .then(|| {
                "`leader_fence` appears only in a comment or a string, which fences nothing".into()
            })
    }
}

/// The top-level AND conjuncts of a condition.
fn split_and<'v>(condition: &'v Value, out: &mut Vec<(&'v str, &'v Fields)>) {
    let Some((kind, fields)) = node(condition) else {
        return;
    };
    if kind == "BoolExpr" && int(fields, "boolop") == AND_EXPR {
        for arg in fields
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            split_and(arg, out);
        }
    } else {
        out.push((kind, fields));
    }
}

/// What carries the fence in a condition that does not gate.
#[derive(Clone, Copy)]
enum Fenced {
    Call,
    SubQuery,
}

/// A fence call, or a sub-query that calls the fence, below something other than AND in a
/// condition: which, and the first such construct above it (`OR`, `NOT`, `CASE`, `other`).
fn misplaced_fence(
    condition: &Value,
    under: Option<&'static str>,
) -> Option<(Fenced, &'static str)> {
    let (kind, fields) = node(condition)?;
    if kind == "FuncCall" && functions::is_fence(&function_name(fields)) {
        return under.map(|under| (Fenced::Call, under));
    }
    if kind == "SubLink" {
        let mut fenced = false;
        if let Some((kind, query)) = child(fields, "subselect") {
            for_each_node(kind, query, &mut |kind, fields| {
                fenced |= kind == "FuncCall" && functions::is_fence(&function_name(fields));
            });
        }
        if fenced {
            return Some((Fenced::SubQuery, under.unwrap_or("other")));
        }
    }
    let here = match (kind, int(fields, "boolop")) {
        ("BoolExpr", AND_EXPR) => None,
        ("BoolExpr", OR_EXPR) => Some("OR"),
        ("BoolExpr", NOT_EXPR) => Some("NOT"),
        ("CaseExpr", _) => Some("CASE"),
        _ => Some("other"),
    };
    let under = under.or(here);
    let mut found = None;
    for_each_child_node(fields, &mut |child| {
        if found.is_none() {
            found = misplaced_fence(child, under);
        }
    });
    found
}

/// Calls `f` on every node wrapper directly below `fields` (through lists and plain structs),
/// not entering sub-queries.
fn for_each_child_node(fields: &Fields, f: &mut dyn FnMut(&Value)) {
    fn visit(value: &Value, f: &mut dyn FnMut(&Value)) {
        if let Some((kind, _)) = node(value) {
            if !QUERY_KINDS.contains(&kind) {
                f(value);
            }
            return;
        }
        match value {
            Value::Array(items) => items.iter().for_each(|item| visit(item, f)),
            Value::Object(fields) => fields.values().for_each(|v| visit(v, f)),
            _ => {}
        }
    }
    fields.values().for_each(|value| visit(value, f));
}

/// Calls `f` on every node of a statement, sub-queries and set-operation arms included.
fn for_each_node(kind: &str, fields: &Fields, f: &mut dyn FnMut(&str, &Fields)) {
    f(kind, fields);
    for (name, value) in fields {
        if kind == "SelectStmt" && (name == "larg" || name == "rarg") {
            if let Some(arm) = value.as_object() {
                for_each_node("SelectStmt", arm, f);
            }
            continue;
        }
        for_each_value(value, f);
    }
}

fn for_each_value(value: &Value, f: &mut dyn FnMut(&str, &Fields)) {
    if let Some((kind, fields)) = node(value) {
        return for_each_node(kind, fields, f);
    }
    match value {
        Value::Array(items) => items.iter().for_each(|item| for_each_value(item, f)),
        Value::Object(fields) => fields.values().for_each(|v| for_each_value(v, f)),
        _ => {}
    }
}

/// Whether a SELECT aggregates without groups, so that it returns a row from no rows.
fn aggregates_without_groups(select: &Fields) -> bool {
    let groups: Vec<&str> = children(select, "group_clause")
        .map(|(kind, _)| kind)
        .collect();
    if !groups.is_empty() && !groups.contains(&"GroupingSet") {
        return false;
    }
    if has(select, "having_clause") {
        return true;
    }
    let mut aggregates = false;
    for (name, value) in select {
        if ["from_clause", "where_clause", "with_clause", "larg", "rarg"].contains(&name.as_str()) {
            continue;
        }
        for_each_outer_call(value, &mut |call| {
            let known = functions::known(&function_name(call));
            let windowed = has(call, "over");
            let marked = has(call, "agg_order")
                || has(call, "agg_filter")
                || call.get("agg_star").and_then(Value::as_bool) == Some(true)
                || call.get("agg_distinct").and_then(Value::as_bool) == Some(true)
                || call.get("agg_within_group").and_then(Value::as_bool) == Some(true);
            // An unknown function is refused on its own, whatever it is.
            let aggregate = marked || known.is_some_and(|f| f.aggregate);
            aggregates |= aggregate && !windowed && !functions::is_fence(&function_name(call));
        });
    }
    aggregates
}

/// Calls `f` on every function call in `value`, not entering sub-queries.
fn for_each_outer_call(value: &Value, f: &mut dyn FnMut(&Fields)) {
    if let Some((kind, fields)) = node(value) {
        if QUERY_KINDS.contains(&kind) {
            return;
        }
        if kind == "FuncCall" {
            f(fields);
        }
        return fields.values().for_each(|v| for_each_outer_call(v, f));
    }
    match value {
        Value::Array(items) => items.iter().for_each(|item| for_each_outer_call(item, f)),
        Value::Object(fields) => fields.values().for_each(|v| for_each_outer_call(v, f)),
        _ => {}
    }
}

/// The placeholder number of each argument of a call (`None` for one that is not `$n`).
fn fence_params(call: &Fields) -> Vec<Option<usize>> {
    call.get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(param_number)
        .collect()
}

/// `$n` (optionally cast) → `n`.
fn param_number(arg: &Value) -> Option<usize> {
    match node(arg)? {
        ("ParamRef", fields) => usize::try_from(int(fields, "number"))
            .ok()
            .filter(|&n| n > 0),
        ("TypeCast", fields) => param_number(fields.get("arg")?),
        _ => None,
    }
}

/// The first table a query reads, found through its FROM list and joins.
fn first_table(fields: &Fields) -> Option<usize> {
    fn in_item(item: &Value) -> Option<usize> {
        let (kind, fields) = node(item)?;
        match kind {
            "RangeVar" => location(fields),
            "JoinExpr" => fields
                .get("larg")
                .and_then(in_item)
                .or_else(|| fields.get("rarg").and_then(in_item)),
            "RangeSubselect" => first_table(child(fields, "subquery")?.1),
            _ => None,
        }
    }
    fields
        .get("from_clause")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(in_item)
        .or_else(|| {
            fields
                .get("larg")
                .and_then(Value::as_object)
                .and_then(first_table)
        })
}

/// `FOR UPDATE`, `FOR SHARE`, … of a locking query.
fn lock_strength(fields: &Fields) -> &'static str {
    let strength = children(fields, "locking_clause")
        .map(|(_, clause)| int(clause, "strength"))
        .max()
        .unwrap_or(LCS_FORUPDATE);
    match strength {
        LCS_FORKEYSHARE => "FOR KEY SHARE",
        LCS_FORSHARE => "FOR SHARE",
        LCS_FORNOKEYUPDATE => "FOR NO KEY UPDATE",
        _ => "FOR UPDATE",
    }
}

/// Whether an INSERT inserts a `VALUES` list or default values.
fn inserts_values(fields: &Fields) -> bool {
    match child(fields, "select_stmt") {
        Some(("SelectStmt", select)) => has(select, "values_lists"),
        _ => true,
    }
}

/// The fence to suggest: the placeholders of a (misplaced) fence call if the statement has
/// one, else the first two it does not use.
fn suggested_fix(kind: &str, fields: &Fields) -> String {
    let mut existing = None;
    let mut max = 0;
    for_each_node(kind, fields, &mut |kind, fields| match kind {
        "FuncCall" if existing.is_none() && functions::is_fence(&function_name(fields)) => {
            let args = fence_params(fields);
            if let [Some(role), Some(token)] = args.as_slice() {
                existing = Some((*role, *token));
            }
        }
        "ParamRef" => max = max.max(usize::try_from(int(fields, "number")).unwrap_or(0)),
        _ => {}
    });
    let (role, token) = existing.unwrap_or((max + 1, max + 2));
    format!("AND leader_fence(${role}, ${token})")
}

/// How a statement kind reads in SQL, for messages: `CreateStmt` → `CREATE`.
fn statement_name(kind: &str) -> String {
    let bare = kind.strip_suffix("Stmt").unwrap_or(kind);
    let mut words = String::new();
    for (i, c) in bare.char_indices() {
        if i > 0 && c.is_uppercase() {
            words.push(' ');
        }
        words.push(c.to_ascii_uppercase());
    }
    words
}
