//! The shard rule (rule 7): the rows a shard's claim changes, locks or inserts are its shard's,
//! by the shard of each table's **declared** shard key (`leader_shard_key`, read from the
//! prepared schema). So every shard claim on a table selects its rows by the same column, and
//! two shards' live leaders never claim one row.
//!
//! A column is *pure* at a query level when every row of the level (where the column's row is
//! there, not null-extended by an outer join) has it in the shard:
//!
//! * a top-level `AND` conjunct of the level's `WHERE` (or of an inner join's `ON`) is the
//!   filter `leader_shard_of(col, $count) = $index` (either side of `=`), on the index and count
//!   placeholders of a shard fence of the statement, `col` a plain column (a cast would pick
//!   another `leader_shard_of` and another shard);
//! * or such a conjunct is `col IN (S)`, `col = ANY (S)`, `col = ANY (ARRAY (S))` or
//!   `col = (S)`, where `S` returns one column, pure in `S`;
//! * or `col` is a column of a sub-select or `WITH` query of the level's `FROM` that is pure in
//!   it (a column of its select list that is a pure column there; a set operation's when every
//!   arm that gives rows has it pure; a data-modifying `WITH` query's `RETURNING`);
//! * or a top-level conjunct `col = other` (in `WHERE` or an inner join's `ON`) equates it with a
//!   pure column of the level.
//!
//! The acts the rule follows, each on a table with a declared key `k`:
//!
//! * an `UPDATE` or `DELETE` changes rows whose `k` is pure at its level;
//! * a locking `SELECT` locks rows of each table it locks (`FOR UPDATE OF` names them) whose `k`
//!   is pure at its level, after every condition of the level (the schema knows the relation as
//!   a table); a lock applied to a sub-select is pushed into it and followed there; one on a view
//!   lands in the view's own query, before any filter here, and is refused;
//! * an `INSERT … SELECT` inserts rows whose `k` is a pure column of its `SELECT`, or such a
//!   column plus or minus an integer constant (two shards' rows never share that value either,
//!   so their inserted rows are distinct), and `ON CONFLICT DO UPDATE` names `k` among its
//!   conflict columns (so the rows it updates share the inserted key); `INSERT … VALUES` is
//!   refused;
//! * a `MERGE` acts on target rows whose `k` its join condition equates with (or filters to) a
//!   pure column, and inserts rows whose `k` is one (or one plus or minus a constant); `WHEN NOT
//!   MATCHED BY SOURCE` is refused.
//!
//! Rows a claim only returns are reads, as a plain `SELECT` is: the rule does not follow them.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::Value;

use crate::FenceCall;
use crate::ShardParams;
use crate::levels::{ConjunctOf, Kind, Levels, Source, split_and, strings};
use crate::names::{item_columns, outputs, resolve};
use crate::rules::param_number;
use crate::schema::ShardKey;
use crate::tree::enums::{AEXPR_OP, AEXPR_OP_ANY, ANY_SUBLINK, ARRAY_SUBLINK, EXPR_SUBLINK};
use crate::tree::enums::{CMD_INSERT, CMD_NOTHING, ONCONFLICT_UPDATE};
use crate::tree::enums::{MERGE_WHEN_NOT_MATCHED_BY_SOURCE, SETOP_INTERSECT, SETOP_UNION};
use crate::tree::{Fields, child, children, function_name, int, node, text};

/// Whether `name` is the shard helper: `leader_shard_of`, bare or schema-qualified.
pub fn is_shard_of(name: &[String]) -> bool {
    matches!(name, [bare] | [_, bare] if bare == "leader_shard_of")
}

/// A column of a level's item: the level, the item's index there, and the column's name (a
/// table's own name, through an alias that renames it).
type Col = (usize, usize, String);

/// What a shard's claim does that the rule cannot follow to the shard.
pub struct Uncovered {
    pub level: usize,
    /// What the level does with the rows: "updates", "locks", …
    pub does: &'static str,
    /// The relation whose rows it acts on, as written.
    pub table: String,
    pub why: Why,
}

/// Why a level's rows are not shown to be the shard's.
pub enum Why {
    /// The table has no declared shard key (or the name may be several tables): why.
    NoKey(String),
    /// No filter (or funnel, or join) keeps its declared key in the shard.
    NotByKey(String),
    /// A lock on a relation that is not a table: it lands in the relation's own query.
    NotATable,
    /// Rows whose key comes from no column at all: `INSERT … VALUES`, `WHEN NOT MATCHED BY
    /// SOURCE`, `ON CONFLICT DO UPDATE` on another column than the key.
    Unkeyed(&'static str),
}

/// Rule 7 for a statement whose fences are `fences`: every act the rule follows that it cannot
/// follow to the shard.
pub fn uncovered(levels: &Levels<'_>, fences: &[FenceCall]) -> Vec<Uncovered> {
    let shards: Vec<ShardParams> = fences.iter().filter_map(|f| f.shard).collect();
    if shards.is_empty() {
        return Vec::new();
    }
    let rule = Provenance {
        levels,
        shards,
        pure: RefCell::new(HashMap::new()),
    };
    let dead = unread_ctes(levels);
    let mut found = Vec::new();
    for (n, level) in levels.levels.iter().enumerate() {
        if dead.iter().any(|&cte| levels.within(n, cte)) {
            continue;
        }
        match level.kind {
            Kind::Update => rule.changes(n, "updates", &mut found),
            Kind::Delete => rule.changes(n, "deletes", &mut found),
            Kind::Insert => rule.inserts(n, &mut found),
            Kind::Merge => rule.merges(n, &mut found),
            Kind::Select if !level.locking.is_empty() => rule.locks(n, &mut found),
            _ => {}
        }
    }
    found
}

/// The `WITH` queries that only read and that no query of the statement reads: PostgreSQL never
/// runs them, so they lock nothing.
fn unread_ctes(levels: &Levels<'_>) -> Vec<usize> {
    let read: Vec<usize> = levels
        .levels
        .iter()
        .flat_map(|l| &l.items)
        .filter_map(|item| match item.source {
            Source::Cte(level) => Some(level),
            _ => None,
        })
        .collect();
    levels
        .levels
        .iter()
        .flat_map(|l| &l.ctes)
        .filter(|cte| {
            cte.level != usize::MAX
                && matches!(
                    levels.levels[cte.level].kind,
                    Kind::Select | Kind::SetOp(_) | Kind::Values
                )
                && !read.contains(&cte.level)
        })
        .map(|cte| cte.level)
        .collect()
}

struct Provenance<'l, 'a> {
    levels: &'l Levels<'a>,
    shards: Vec<ShardParams>,
    /// The pure columns of each level, once asked.
    pure: RefCell<HashMap<usize, Vec<Col>>>,
}

impl Provenance<'_, '_> {
    /// The table of item `item` of `level` and its declared key, or why there is none.
    fn key(&self, level: usize, item: usize) -> Result<(String, String), Why> {
        let Source::Table(table) = self.levels.levels[level].items[item].source else {
            return Err(Why::NotATable);
        };
        let table = &self.levels.tables[table];
        let shown = crate::schema::shown(table.namespace.as_deref(), &table.name);
        let Some(schema) = self.levels.schema else {
            return Err(Why::NoKey(
                "`#[fenced]` was given no schema to read shard keys from".to_owned(),
            ));
        };
        match schema.shard_key(table.namespace.as_deref(), &table.name) {
            ShardKey::Declared(key) => Ok((shown, key)),
            ShardKey::Undeclared(why) => Err(Why::NoKey(why)),
        }
    }

    fn table_shown(&self, level: usize, item: usize) -> String {
        match self.levels.levels[level].items[item].source {
            Source::Table(table) => {
                let table = &self.levels.tables[table];
                crate::schema::shown(table.namespace.as_deref(), &table.name)
            }
            _ => self.levels.levels[level].items[item].name.clone(),
        }
    }

    /// An `UPDATE` or `DELETE`: its target's key pure at its level.
    fn changes(&self, level: usize, does: &'static str, found: &mut Vec<Uncovered>) {
        let why = match self.key(level, 0) {
            Ok((_, key)) if self.is_pure(level, &(level, 0, key.clone())) => return,
            Ok((_, key)) => Why::NotByKey(key),
            Err(why) => why,
        };
        found.push(Uncovered {
            level,
            does,
            table: self.table_shown(level, 0),
            why,
        });
    }

    /// A locking `SELECT`: each table it locks, by its key, at the level the lock lands in.
    fn locks(&self, level: usize, found: &mut Vec<Uncovered>) {
        let l = &self.levels.levels[level];
        for clause in &l.locking {
            let named: Vec<String> = children(clause, "locked_rels")
                .filter(|(kind, _)| *kind == "RangeVar")
                .map(|(_, rel)| text(rel, "relname").to_owned())
                .collect();
            for (i, item) in l.items.iter().enumerate() {
                if named.is_empty() || item.visible && named.contains(&item.name) {
                    self.locked_item(level, i, found);
                }
            }
        }
    }

    fn locked_item(&self, level: usize, item: usize, found: &mut Vec<Uncovered>) {
        match self.levels.levels[level].items[item].source {
            Source::Table(table) => {
                let t = &self.levels.tables[table];
                let is_table = self
                    .levels
                    .schema
                    .is_some_and(|s| s.is_table(t.namespace.as_deref(), &t.name));
                let why = match self.key(level, item) {
                    _ if !is_table => Why::NotATable,
                    Ok((_, key)) if self.is_pure(level, &(level, item, key.clone())) => return,
                    Ok((_, key)) => Why::NotByKey(key),
                    Err(why) => why,
                };
                found.push(Uncovered {
                    level,
                    does: "locks",
                    table: self.table_shown(level, item),
                    why,
                });
            }
            // The lock is pushed into the sub-select, and lands on its rows as it reads them.
            Source::Subquery(sub) => {
                for inner in 0..self.levels.levels[sub].items.len() {
                    self.locked_item(sub, inner, found);
                }
            }
            Source::Cte(_) | Source::Recursive(_) | Source::Function => {}
        }
    }

    /// An `INSERT`: the key of the rows it inserts a pure column of its `SELECT`.
    fn inserts(&self, level: usize, found: &mut Vec<Uncovered>) {
        let fields = self.levels.levels[level].fields;
        let mut push = |why| {
            found.push(Uncovered {
                level,
                does: "inserts",
                table: self.table_shown(level, 0),
                why,
            });
        };
        let key = match self.key(level, 0) {
            Ok((_, key)) => key,
            Err(why) => return push(why),
        };
        let on_conflict = fields.get("on_conflict_clause").and_then(Value::as_object);
        if let Some(conflict) = on_conflict
            && int(conflict, "action") == ONCONFLICT_UPDATE
        {
            let columns: Vec<String> = conflict
                .get("infer")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|infer| children(infer, "index_elems"))
                .map(|(_, elem)| text(elem, "name").to_owned())
                .collect();
            if !columns.contains(&key) {
                return push(Why::Unkeyed(
                    "`ON CONFLICT … DO UPDATE` on another column than the key updates rows of \
                     any shard",
                ));
            }
        }
        let Some(position) = self.insert_position(level, &key) else {
            return push(Why::NotByKey(key));
        };
        let source = child(fields, "select_stmt").and_then(|(_, s)| self.levels.of(s));
        match source {
            Some(source) if self.levels.levels[source].kind == Kind::Values => {
                push(Why::Unkeyed("`INSERT … VALUES` inserts rows of no shard's"));
            }
            Some(source) if self.output_keyed(source, position) => {}
            _ => push(Why::NotByKey(key)),
        }
    }

    /// Where `key` is among the columns an `INSERT` fills: its column list, else the table's.
    fn insert_position(&self, level: usize, key: &str) -> Option<usize> {
        let fields = self.levels.levels[level].fields;
        let listed: Vec<String> = children(fields, "cols")
            .map(|(_, target)| text(target, "name").to_owned())
            .collect();
        if !listed.is_empty() {
            return listed.iter().position(|c| c == key);
        }
        let Source::Table(table) = self.levels.levels[level].items[0].source else {
            return None;
        };
        let table = &self.levels.tables[table];
        self.levels
            .schema?
            .columns(table.namespace.as_deref(), &table.name)?
            .iter()
            .position(|c| c == key)
    }

    /// A `MERGE`: the target rows it matches by a join condition that keeps the key in the
    /// shard, and the rows it inserts keyed by a pure column of its source.
    fn merges(&self, level: usize, found: &mut Vec<Uncovered>) {
        let fields = self.levels.levels[level].fields;
        let mut push = |why| {
            found.push(Uncovered {
                level,
                does: "merges",
                table: self.table_shown(level, 0),
                why,
            });
        };
        let key = match self.key(level, 0) {
            Ok((_, key)) => key,
            Err(why) => return push(why),
        };
        let mut conjuncts = Vec::new();
        if let Some(condition) = fields.get("join_condition") {
            split_and(condition, &mut conjuncts);
        }
        let pure = self.pure_with(level, &conjuncts);
        for (_, when) in children(fields, "merge_when_clauses") {
            let command = int(when, "command_type");
            if command == CMD_NOTHING {
                continue;
            }
            if int(when, "match_kind") == MERGE_WHEN_NOT_MATCHED_BY_SOURCE {
                return push(Why::Unkeyed(
                    "`WHEN NOT MATCHED BY SOURCE` acts on target rows no source row keys",
                ));
            }
            let keyed = if command == CMD_INSERT {
                let columns: Vec<String> = children(when, "target_list")
                    .map(|(_, target)| text(target, "name").to_owned())
                    .collect();
                let values: Vec<&Value> = when
                    .get("values")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .collect();
                columns
                    .iter()
                    .position(|c| *c == key)
                    .and_then(|p| values.get(p))
                    .and_then(|value| self.column(level, unshifted(value)))
                    .is_some_and(|col| pure.contains(&col))
            } else {
                pure.contains(&(level, 0, key.clone()))
            };
            if !keyed {
                return push(Why::NotByKey(key));
            }
        }
    }

    fn is_pure(&self, level: usize, col: &Col) -> bool {
        if let Some(known) = self.pure.borrow().get(&level) {
            return known.contains(col);
        }
        let conjuncts: Vec<&Value> = self.levels.levels[level]
            .conjuncts
            .iter()
            .filter(|(of, _)| matches!(of, ConjunctOf::Where | ConjunctOf::On { inner: true }))
            .map(|(_, c)| *c)
            .collect();
        // A level that reaches itself (a recursive `WITH`) is not pure through itself.
        self.pure.borrow_mut().insert(level, Vec::new());
        let pure = self.pure_with(level, &conjuncts);
        let found = pure.contains(col);
        self.pure.borrow_mut().insert(level, pure);
        found
    }

    /// The pure columns of `level`'s items, given the top-level conjuncts that hold for its
    /// rows.
    fn pure_with(&self, level: usize, conjuncts: &[&Value]) -> Vec<Col> {
        let mut pure: Vec<Col> = Vec::new();
        for conjunct in conjuncts {
            if let Some(col) = self
                .filtered(level, conjunct)
                .or_else(|| self.funnelled(level, conjunct))
            {
                pure.push(col);
            }
        }
        for (i, item) in self.levels.levels[level].items.iter().enumerate() {
            for name in self.pure_outputs(item.source) {
                pure.push((level, i, name));
            }
        }
        // Close under the equalities of the conjuncts.
        let equal: Vec<(Col, Col)> = conjuncts
            .iter()
            .filter_map(|c| self.equality(level, c))
            .collect();
        loop {
            let before = pure.len();
            for (a, b) in &equal {
                if pure.contains(a) && !pure.contains(b) {
                    pure.push(b.clone());
                }
                if pure.contains(b) && !pure.contains(a) {
                    pure.push(a.clone());
                }
            }
            if pure.len() == before {
                return pure;
            }
        }
    }

    /// The names of the pure output columns of a sub-select or `WITH` query item.
    fn pure_outputs(&self, source: Source) -> Vec<String> {
        let (sub, renamed) = match source {
            Source::Subquery(sub) => (sub, self.levels.levels[sub].renamed.clone()),
            Source::Cte(sub) => {
                let columns = self
                    .levels
                    .levels
                    .iter()
                    .flat_map(|l| l.ctes.iter())
                    .find(|c| c.level == sub)
                    .map(|c| c.columns.clone())
                    .unwrap_or_default();
                (sub, columns)
            }
            _ => return Vec::new(),
        };
        let Some(mut names) = outputs(self.levels, sub) else {
            return Vec::new();
        };
        for (n, name) in renamed.into_iter().enumerate() {
            if let Some(column) = names.get_mut(n) {
                *column = name;
            }
        }
        names
            .into_iter()
            .enumerate()
            .filter(|(n, _)| self.output_pure(sub, *n))
            .map(|(_, name)| name)
            .collect()
    }

    /// Whether output column `n` of `level` is pure there.
    fn output_pure(&self, level: usize, n: usize) -> bool {
        self.output(level, n, false)
    }

    /// Whether output column `n` of `level` is pure there, or a pure column plus or minus an
    /// integer constant: rows of two shards never share such a value either, so the rows an
    /// `INSERT` makes of it are distinct from every other shard's.
    fn output_keyed(&self, level: usize, n: usize) -> bool {
        self.output(level, n, true)
    }

    fn output(&self, level: usize, n: usize, shifted: bool) -> bool {
        let l = &self.levels.levels[level];
        let list = match l.kind {
            Kind::SetOp(op) => {
                let arm = |name: &str| {
                    l.fields
                        .get(name)
                        .and_then(Value::as_object)
                        .and_then(|arm| self.levels.of(arm))
                        .is_some_and(|arm| self.output(arm, n, shifted))
                };
                return match op {
                    SETOP_UNION => arm("larg") && arm("rarg"),
                    SETOP_INTERSECT => arm("larg") || arm("rarg"),
                    _ => arm("larg"),
                };
            }
            Kind::Select => l.fields.get("target_list"),
            Kind::Update | Kind::Delete | Kind::Insert => l
                .fields
                .get("returning_clause")
                .and_then(Value::as_object)
                .and_then(|r| r.get("exprs"))
                .or_else(|| l.fields.get("returning_list")),
            Kind::Values | Kind::Merge => return false,
        };
        let Some(target) = list.and_then(Value::as_array).and_then(|list| list.get(n)) else {
            return false;
        };
        let Some(value) = node(target).and_then(|(_, t)| t.get("val")) else {
            return false;
        };
        let value = if shifted { unshifted(value) } else { value };
        self.column(level, value)
            .is_some_and(|col| col.0 == level && self.is_pure(level, &col))
    }

    /// The shard filter `leader_shard_of(col, $count) = $index` on a shard fence's placeholders:
    /// its column.
    fn filtered(&self, level: usize, conjunct: &Value) -> Option<Col> {
        let (key, params) = filter(conjunct)?;
        if !self.shards.contains(&params) {
            return None;
        }
        self.column(level, key).filter(|col| col.0 == level)
    }

    /// `col IN (S)`, `col = ANY (S)`, `col = (S)`: `col`, where `S`'s one column is pure in it.
    fn funnelled(&self, level: usize, conjunct: &Value) -> Option<Col> {
        let (column, sub) = compared_with_sub_select(conjunct)?;
        let sub = self.levels.of(sub)?;
        if outputs(self.levels, sub)?.len() != 1 || !self.output_pure(sub, 0) {
            return None;
        }
        self.column(level, column).filter(|col| col.0 == level)
    }

    /// `a = b` of two columns of the level's own items.
    fn equality(&self, level: usize, conjunct: &Value) -> Option<(Col, Col)> {
        let ("A_Expr" | "AExpr", expr) = node(conjunct)? else {
            return None;
        };
        if int(expr, "kind") != AEXPR_OP || strings(expr.get("name")) != ["="] {
            return None;
        }
        let a = self.column(level, expr.get("lexpr")?)?;
        let b = self.column(level, expr.get("rexpr")?)?;
        (a.0 == level && b.0 == level).then_some((a, b))
    }

    /// The column a plain column reference written in `level` is: of an item of `level` or of
    /// an enclosing query's.
    fn column(&self, level: usize, value: &Value) -> Option<Col> {
        let ("ColumnRef", fields) = node(value)? else {
            return None;
        };
        let names = strings(fields.get("fields"));
        let (l, item, name) = match names.as_slice() {
            [qualifier, name] => {
                let (l, item) = resolve(self.levels, level, qualifier)?;
                (l, item, name.clone())
            }
            [name] => {
                let (l, item) = self.bare(level, name)?;
                (l, item, name.clone())
            }
            _ => return None,
        };
        Some((l, item, self.own_name(l, item, name)?))
    }

    /// The item a bare column name is of: the one item of the nearest query that gives it.
    fn bare(&self, level: usize, name: &str) -> Option<(usize, usize)> {
        for l in self.levels.chain(level) {
            let mut giving = Vec::new();
            for (i, item) in self.levels.levels[l].items.iter().enumerate() {
                if item.name == "excluded" && self.levels.levels[l].kind == Kind::Insert {
                    continue;
                }
                match item_columns(self.levels, &item.source) {
                    Some(columns) if columns.iter().any(|c| c == name) => giving.push(i),
                    Some(_) => {}
                    None => return None,
                }
            }
            match giving.as_slice() {
                [] => continue,
                [item] => return Some((l, *item)),
                _ => return None,
            }
        }
        None
    }

    /// A table's own name for a column its alias may rename (`AS t (a, b)`).
    fn own_name(&self, level: usize, item: usize, name: String) -> Option<String> {
        let Source::Table(table) = self.levels.levels[level].items[item].source else {
            return Some(name);
        };
        let table = &self.levels.tables[table];
        match table.renamed.iter().position(|c| *c == name) {
            Some(n) => self
                .levels
                .schema?
                .columns(table.namespace.as_deref(), &table.name)?
                .get(n)
                .cloned(),
            None if table.renamed.is_empty() => Some(name),
            None => {
                let columns = self
                    .levels
                    .schema?
                    .columns(table.namespace.as_deref(), &table.name)?;
                (columns.iter().skip(table.renamed.len()).any(|c| *c == name)).then_some(name)
            }
        }
    }
}

/// `col + 7`, `col - 7`, `7 + col`: `col`; anything else as it is.
fn unshifted(value: &Value) -> &Value {
    let Some(("A_Expr" | "AExpr", expr)) = node(value) else {
        return value;
    };
    let operator = strings(expr.get("name"));
    if int(expr, "kind") != AEXPR_OP || !(operator == ["+"] || operator == ["-"]) {
        return value;
    }
    let integer = |side: &Value| {
        matches!(node(side), Some(("A_Const" | "AConst", constant))
            if constant.get("val").and_then(Value::as_object).is_some_and(|v| v.contains_key("Ival")))
    };
    match (expr.get("lexpr"), expr.get("rexpr")) {
        (Some(left), Some(right)) if integer(right) => left,
        (Some(left), Some(right)) if operator == ["+"] && integer(left) => right,
        _ => value,
    }
}

/// `leader_shard_of(col, $count) = $index` (either side of `=`, the placeholders optionally
/// cast, `col` a plain column reference): the column and the placeholders.
pub fn filter(conjunct: &Value) -> Option<(&Value, ShardParams)> {
    let ("A_Expr" | "AExpr", expr) = node(conjunct)? else {
        return None;
    };
    // `IS DISTINCT FROM` is an `=` of another kind.
    if int(expr, "kind") != AEXPR_OP {
        return None;
    }
    let operator = strings(expr.get("name"));
    if !matches!(operator.as_slice(), [op] | [_, op] if op == "=") {
        return None;
    }
    if let [schema, _] = operator.as_slice()
        && schema != "pg_catalog"
    {
        return None;
    }
    let (left, right) = (expr.get("lexpr")?, expr.get("rexpr")?);
    shard_of_call(left)
        .zip(param_number(right))
        .or_else(|| shard_of_call(right).zip(param_number(left)))
        .map(|((key, count), index)| (key, ShardParams { index, count }))
}

/// `leader_shard_of(col, $count)` with a plain column: the column and the count's placeholder.
fn shard_of_call(value: &Value) -> Option<(&Value, usize)> {
    let ("FuncCall", call) = node(value)? else {
        return None;
    };
    if !is_shard_of(&function_name(call)) {
        return None;
    }
    match call.get("args").and_then(Value::as_array)?.as_slice() {
        [key, count] if matches!(node(key), Some(("ColumnRef", _))) => {
            Some((key, param_number(count)?))
        }
        _ => None,
    }
}

/// `col IN (S)`, `col = ANY (S)`, `col = ANY (ARRAY (S))` or `col = (S)` / `(S) = col`: the
/// column and `S`.
fn compared_with_sub_select(conjunct: &Value) -> Option<(&Value, &Fields)> {
    let (kind, fields) = node(conjunct)?;
    let (column, link) = match kind {
        "SubLink" if int(fields, "sub_link_type") == ANY_SUBLINK => {
            let operator = strings(fields.get("oper_name"));
            if !(operator.is_empty() || operator == ["="]) {
                return None;
            }
            (fields.get("testexpr")?, fields)
        }
        "A_Expr" | "AExpr" if int(fields, "kind") == AEXPR_OP_ANY => {
            if strings(fields.get("name")) != ["="] {
                return None;
            }
            match child(fields, "rexpr")? {
                ("SubLink", link) if int(link, "sub_link_type") == ARRAY_SUBLINK => {
                    (fields.get("lexpr")?, link)
                }
                _ => return None,
            }
        }
        "A_Expr" | "AExpr" if int(fields, "kind") == AEXPR_OP => {
            if strings(fields.get("name")) != ["="] {
                return None;
            }
            let (left, right) = (fields.get("lexpr")?, fields.get("rexpr")?);
            match (node(left)?, node(right)?) {
                ((_, _), ("SubLink", link)) if int(link, "sub_link_type") == EXPR_SUBLINK => {
                    (left, link)
                }
                (("SubLink", link), _) if int(link, "sub_link_type") == EXPR_SUBLINK => {
                    (right, link)
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    matches!(node(column), Some(("ColumnRef", _))).then_some(())?;
    Some((column, child(link, "subselect")?.1))
}
