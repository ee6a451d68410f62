//! The error messages: each names the node, says what PostgreSQL would do for a superseded
//! leader and why the fence does not stop it, shows the accepted shape, and quotes the place
//! (its line within the SQL and the fragment there).

use std::ops::Range;

use serde_json::Value;

use crate::levels::{Levels, QUERY_KINDS};
use crate::names::PossibleCall;
use crate::props::Props;
use crate::rules::fence_params;
use crate::tree::enums::*;
use crate::tree::{Fields, Statement, child, children, function_name, int, location, node};
use crate::{SqlError, functions, position};

mod shards;

/// What an ungated node would do.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Update,
    Delete,
    Insert,
    Merge,
    Lock,
    /// The statement's own result: a superseded leader's claim returns rows.
    Result,
}

/// The message writer for one statement.
pub struct Messages<'s> {
    sql: &'s str,
    /// The statement's own text.
    text: Range<usize>,
    /// The fence to suggest: `AND leader_fence($i, $j)`.
    pub(crate) fix: String,
    /// Whether the statement calls `leader_fence` anywhere.
    fence_elsewhere: bool,
}

impl<'s> Messages<'s> {
    pub fn new(sql: &'s str, statement: &Statement, hints: &crate::Hints) -> Self {
        let mut fence_elsewhere = false;
        for_each_node(&statement.kind, &statement.fields, &mut |kind, fields| {
            fence_elsewhere |= kind == "FuncCall" && functions::is_fence(&function_name(fields));
        });
        Messages {
            sql,
            text: statement.text.clone(),
            fix: suggested_fix(&statement.kind, &statement.fields, hints.fence_binds),
            fence_elsewhere,
        }
    }

    pub(crate) fn place(&self, at: &Range<usize>) -> String {
        position::describe(self.sql, at)
    }

    /// A statement that is not a query the fence can gate: what it is, why it cannot be
    /// fenced, and the fenced form that does its work, where there is one (never "send it
    /// elsewhere", which would only move it out of the check).
    pub fn other_statement(&self, kind: &str) -> SqlError {
        let name = statement_name(kind);
        let (why, help) = match kind {
            "CopyStmt" => (
                "`COPY … FROM` inserts every row it is given and `COPY … TO` reads a whole table \
                 or query, with no WHERE of its own that the fence could gate",
                "insert with a fenced `INSERT INTO t (…) SELECT … FROM unnest($3::bigint[]) AS \
                 v(id) WHERE leader_fence($1, $2)`, binding the rows as arrays; read with a \
                 fenced `SELECT … WHERE … AND leader_fence($1, $2)`",
            ),
            "DeclareCursorStmt" | "FetchStmt" | "ClosePortalStmt" => (
                "a cursor reads (and locks, `FOR UPDATE`) its rows when `FETCH` asks for them, \
                 apart from any one statement the fence gates, and `FETCH` runs a query declared \
                 elsewhere",
                "claim a batch with a fenced locking `SELECT … WHERE … AND leader_fence($1, $2) \
                 ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED`, and take the next batch with \
                 another such claim",
            ),
            "TruncateStmt" => (
                "`TRUNCATE` empties whole tables, with no WHERE the fence could gate",
                "delete with a fenced `DELETE FROM t WHERE … AND leader_fence($1, $2)`",
            ),
            "CallStmt" | "DoStmt" => (
                "a procedure or `DO` block runs statements `#[fenced]` cannot see, which may \
                 change or lock rows",
                "write each of its statements in the function as a fenced claim, \
                 `… WHERE … AND leader_fence($1, $2)`; a fence checked inside a procedure \
                 cannot be checked here",
            ),
            "ExplainStmt" => (
                "`EXPLAIN ANALYZE` runs the statement it explains, and `#[fenced]` does not \
                 analyse statements through `EXPLAIN`",
                "send the fenced claim itself; to see its plan, `EXPLAIN` it in a test or \
                 `psql`, where it claims nothing",
            ),
            _ => (
                "it is not a query whose rows a WHERE gates, and it may change rows or the \
                 schema: a `#[fenced]` function's statements are claims (SELECT, UPDATE, \
                 DELETE, INSERT … SELECT, MERGE) or read only",
                "change the schema in a migration, and claim rows with a fenced \
                 `UPDATE`/`DELETE`/`INSERT … SELECT`/`MERGE … WHERE … AND \
                 leader_fence($1, $2)`",
            ),
        };
        SqlError {
            message: format!(
                "`#[fenced]` cannot check a `{name}` statement: it cannot be fenced\n\
                 note: {why}\n\
                 help: {help}"
            ),
            at: None,
        }
    }

    pub fn select_into(&self) -> SqlError {
        SqlError {
            message: "`SELECT … INTO` creates a table, which a claim may not do\n\
                      note: the new table holds the rows whatever the fence says, and is not \
                      a claim's result\n\
                      help: select the rows without `INTO`, or fill an existing table with a \
                      fenced `INSERT INTO t SELECT … WHERE … AND leader_fence($1, $2)`"
                .into(),
            at: None,
        }
    }

    pub fn fence_arguments(&self, at: Range<usize>) -> SqlError {
        SqlError {
            message: format!(
                "`leader_fence` takes the fence's role and token as two bind parameters, never \
                 literals or expressions: write `leader_fence($1, $2)` and bind `fence.role()` \
                 and `fence.token()` (a shard's fence: `leader_fence($1, $2, $3, $4)` bound to \
                 `fence.role()`, `fence.shard_index()`, `fence.shard_count()`, `fence.token()`) \
                 ({})",
                self.place(&at)
            ),
            at: Some(at),
        }
    }

    /// `evaluated`: for a function that may stand where it is not evaluated, why it may be
    /// here (`Some(None)` when no reason is known); `None` for one refused anywhere.
    pub fn unknown_function(
        &self,
        name: &[String],
        at: Range<usize>,
        what: &str,
        evaluated: Option<Option<String>>,
    ) -> SqlError {
        let when = match evaluated {
            None => String::new(),
            Some(None) => "\nnote: PostgreSQL may evaluate it for a superseded leader".to_owned(),
            Some(Some(why)) => {
                format!("\nnote: PostgreSQL may evaluate it for a superseded leader: {why}")
            }
        };
        SqlError {
            message: format!(
                "`#[fenced]` cannot see what `{}(..)` does, and a function can change or lock \
                 rows\nnote: {what}{when}\nnote: at {}\nhelp: call a VOLATILE function \
                 of your migrations only where the fence has already held, on the rows of a \
                 query whose WHERE has `{}` as a top-level AND condition (its select list, SET, \
                 RETURNING, a condition that reads its columns, or one that calls the function \
                 itself, outside a sub-select), or compute the value before the claim and bind \
                 it; STABLE and IMMUTABLE functions, and the built-ins in \
                 `leader_fence_check::KNOWN_FUNCTIONS`, may stand anywhere",
                name.join("."),
                self.place(&at),
                self.fix.trim_start_matches("AND "),
            ),
            at: Some(at),
        }
    }

    pub fn possible_call(
        &self,
        shown: &str,
        call: &PossibleCall,
        at: Option<Range<usize>>,
        why: Option<String>,
    ) -> SqlError {
        let place = at
            .as_ref()
            .map_or(String::new(), |at| format!("\nnote: at {}", self.place(at)));
        let when = why.map_or_else(
            || "PostgreSQL may evaluate it for a superseded leader".to_owned(),
            |why| format!("PostgreSQL may evaluate it for a superseded leader: {why}"),
        );
        let function = call.function;
        let qualifier = match shown.rsplit_once('.') {
            Some((qualifier, _)) if !shown.starts_with("(…)") => qualifier,
            _ => "the row",
        };
        SqlError {
            message: format!(
                "`{shown}` may call a function `{function}({qualifier})`\n\
                 note: PostgreSQL reads it as a column where the row has one and as a call \
                 otherwise (attribute notation), and a function can change or lock rows; {why}\n\
                 note: {when}{place}\n\
                 help: put `{fix}` as a top-level AND condition in the WHERE of the query that \
                 reads those rows, which PostgreSQL evaluates once before it reads any row{declare}",
                why = call.why,
                fix = self.fix,
                declare = call
                    .declare
                    .map_or_else(String::new, |how| format!("\nhelp: {how}")),
            ),
            at,
        }
    }

    /// The error for a node that changes or locks rows, or a result, that the fence does not
    /// gate.
    pub fn ungated(
        &self,
        levels: &Levels,
        props: &Props,
        level: usize,
        effect: Effect,
        why: Option<String>,
    ) -> SqlError {
        let fields = levels.levels[level].fields;
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
        let reason = why.or_else(|| self.why_ungated(levels, props, level, effect));
        let reason = reason.map_or(String::new(), |r| format!("\nnote: {r}"));
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
            Effect::Lock => format!(
                "add `{fix}` to its own WHERE as a top-level AND condition, which PostgreSQL \
                 evaluates once before it reads any row, with the placeholders bound to \
                 `fence.role()` and `fence.token()`"
            ),
            _ => format!(
                "add `{fix}` to its own WHERE as a top-level AND condition, with the \
                 placeholders bound to `fence.role()` and `fence.token()`"
            ),
        };
        let place = at
            .as_ref()
            .map_or(String::new(), |at| format!("\nnote: at {}", self.place(at)));
        SqlError {
            message: format!(
                "{node} is not gated by the fence, so a superseded leader would still \
                 {would}{reason}{place}\nhelp: {fix}"
            ),
            at,
        }
    }

    /// Why a node is not gated, where something in the SQL suggests the author meant it to be.
    fn why_ungated(
        &self,
        levels: &Levels,
        props: &Props,
        level: usize,
        effect: Effect,
    ) -> Option<String> {
        let fields = levels.levels[level].fields;
        let own = [fields.get("where_clause"), fields.get("join_condition")];
        for condition in own.into_iter().flatten() {
            if let Some((what, under)) = misplaced_fence(condition, None) {
                return Some(misplaced(what, under).to_owned());
            }
        }
        if self.fence_elsewhere {
            let nested = levels.levels[level].parent.is_some();
            return Some(match effect {
                Effect::Lock => "a fence elsewhere in the statement does not stop this query \
                                 from locking rows: a superseded leader must not even lock"
                    .into(),
                _ if nested && !props.reached(level) => {
                    "a fence elsewhere gates nothing here".into()
                }
                _ if nested => "PostgreSQL runs a data-modifying WITH query to completion \
                                whatever the rest of the statement does, so a fence elsewhere \
                                does not stop it"
                    .into(),
                _ => "a fence elsewhere (under OR, NOT or CASE, in a select list, SET or \
                      RETURNING, or in a query this one does not depend on) gates nothing here"
                    .into(),
            });
        }
        self.sql[self.text.clone()]
            .to_ascii_lowercase()
            .contains("leader_fence")
            .then(|| {
                "`leader_fence` appears only in a comment or a string, which fences nothing".into()
            })
    }
}

/// What carries the fence in a condition that does not gate.
#[derive(Clone, Copy)]
enum Fenced {
    Call,
    SubQuery,
}

fn misplaced(what: Fenced, under: &str) -> &'static str {
    match (what, under) {
        (Fenced::Call, "OR") => "the fence is under OR, so rows can match without it",
        (Fenced::Call, "NOT") => "the fence is under NOT, which turns it inside out",
        (Fenced::Call, "CASE") => "the fence is inside CASE, so some rows can skip it",
        (Fenced::Call, _) => {
            "the fence is nested inside another expression, where it may not filter rows"
        }
        (Fenced::SubQuery, "OR") => {
            "the fenced sub-query is under OR, so rows can match without it"
        }
        (Fenced::SubQuery, "NOT") => "the fenced sub-query is under NOT, which turns it inside out",
        (Fenced::SubQuery, _) => {
            "the fenced sub-query is used where an empty result does not empty the rows: only \
             `IN (…)`, `= ANY (…)`, `EXISTS (…)` and a comparison with a scalar sub-select, as \
             top-level AND conditions, do, over a query that does not make a row from no rows \
             (a comparison also over one that makes only a NULL: `min`, `max`, `sum` of no rows; \
             `count(..)` makes 0 and `coalesce(..)` a value)"
        }
    }
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
pub fn for_each_node(kind: &str, fields: &Fields, f: &mut dyn FnMut(&str, &Fields)) {
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

/// The first table a query reads, found through its FROM list and joins.
pub fn first_table(fields: &Fields) -> Option<usize> {
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

/// The fence to suggest: the placeholders of a (misplaced) fence call if the statement has
/// one, else those the caller bound to the fence, else the first two it does not use.
fn suggested_fix(kind: &str, fields: &Fields, bound: Option<(usize, usize)>) -> String {
    let mut existing = None;
    let mut max = 0;
    for_each_node(kind, fields, &mut |kind, fields| match kind {
        "FuncCall" if existing.is_none() && functions::is_fence(&function_name(fields)) => {
            if let [Some(role), Some(token)] = fence_params(fields).as_slice() {
                existing = Some((*role, *token));
            }
        }
        "ParamRef" => max = max.max(usize::try_from(int(fields, "number")).unwrap_or(0)),
        _ => {}
    });
    let (role, token) = existing.or(bound).unwrap_or((max + 1, max + 2));
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
