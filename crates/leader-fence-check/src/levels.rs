//! A statement as PostgreSQL executes it: a tree of query levels, each with the names its FROM
//! makes visible, and every expression, function call and column reference filed under the
//! place in its level that decides *when* PostgreSQL evaluates it ([`Pos`]).
//!
//! A level is what PostgreSQL plans as one query: the statement, a `WITH` query, a sub-select in
//! `FROM` or in an expression, an arm of a set operation, an `INSERT`'s source. Nothing here
//! decides whether anything is gated; [`crate::props`] and [`crate::rules`] read this tree.

use std::collections::HashMap;

use serde_json::Value;

use crate::functions;
use crate::schema::Schema;
use crate::tree::enums::*;
use crate::tree::{Fields, child, children, has, int, location, node, text};

/// The query nodes: the only nodes that read, change or lock rows.
pub const QUERY_KINDS: [&str; 5] = [
    "SelectStmt",
    "UpdateStmt",
    "DeleteStmt",
    "InsertStmt",
    "MergeStmt",
];

/// What a level is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Select,
    /// `UNION`, `INTERSECT` or `EXCEPT` (the `SETOP_*` value) of two arms.
    SetOp(i64),
    Values,
    Update,
    Delete,
    Insert,
    Merge,
}

/// Where something stands in its level, which decides when PostgreSQL evaluates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pos {
    /// Evaluated while the level reads its input: `FROM` items, `VALUES` lists, set-operation
    /// arms, an `INSERT`'s source, `MERGE`'s source and join condition.
    Input,
    /// The `n`th top-level `AND` conjunct of the level's `WHERE` or of a join's `ON`: evaluated
    /// on input rows, or, when it reads no column of this level, possibly once up front beside
    /// the fence, in any order.
    Conjunct(usize),
    /// The `n`th top-level conjunct of `HAVING`: per group, or up front when it reads no
    /// column or aggregate of this level.
    Having(usize),
    /// Evaluated per output row, after every condition of the level: the select list, `GROUP
    /// BY`, `ORDER BY`, `DISTINCT`, `WINDOW`, `SET`, `RETURNING`, `ON CONFLICT`, `MERGE`'s
    /// actions.
    Output,
    /// A `WHEN` condition of `MERGE`: per row of its join.
    MergeCondition,
    /// `LIMIT` and `OFFSET`: evaluated once, before the level reads a row.
    Head,
    /// A `WITH` query of the level.
    With,
}

/// Where a `WHERE`-like conjunct comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConjunctOf {
    Where,
    /// A join's `ON`; `inner` for an inner join, whose `ON` holds for every row it makes.
    On {
        inner: bool,
    },
}

/// A name a level's `FROM` (or its target) makes visible.
#[derive(Debug, Clone)]
pub struct Item {
    /// The name references use: the alias, else the relation's name.
    pub name: String,
    pub source: Source,
    /// Whether references can use the name (an aliased join hides the names inside it).
    pub visible: bool,
}

/// What a visible name stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A table or a view, given by its index in [`Levels::tables`]: its columns are the
    /// schema's, if it has them.
    Table(usize),
    /// A sub-select, whose level is given.
    Subquery(usize),
    /// A `WITH` query, whose level is given.
    Cte(usize),
    /// A recursive `WITH` query read in its own definition: the index in
    /// [`Levels::recursive`] of the column names it declares (`WITH RECURSIVE c (a, b)`).
    Recursive(usize),
    /// A function in `FROM`, or anything else whose columns are unknown here.
    Function,
}

/// A `WITH` query declared by a level.
#[derive(Debug, Clone)]
pub struct Cte {
    pub name: String,
    pub level: usize,
    /// `WITH c (a, b) AS …`: the column names it gives.
    pub columns: Vec<String>,
}

/// A function call written in a level.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    pub fields: &'a Fields,
    pub pos: Pos,
    /// The aggregate (index into the level's `aggregates`) this call sits in.
    pub aggregate: Option<usize>,
}

/// A column reference (`a`, `t.a`, `s.t.a`, `t.*`) or a field selection (`(expr).f`) written
/// in a level.
#[derive(Debug, Clone)]
pub struct Ref {
    /// The dotted names; `*` for a star.
    pub names: Vec<String>,
    /// `(expr).f`: a field selected from an expression, which is `names`'s last.
    pub selection: bool,
    /// For `(x).f`, the first selection from a bare name `x`: that name.
    pub selected_from: Option<String>,
    pub pos: Pos,
    /// The aggregate (index into the level's `aggregates`) this reference sits in.
    pub aggregate: Option<usize>,
    pub at: Option<usize>,
}

/// An aggregate call (not a window function) written in a level.
#[derive(Debug, Clone)]
pub struct Aggregate {
    pub pos: Pos,
}

/// One level.
#[derive(Debug)]
pub struct Level<'a> {
    pub kind: Kind,
    pub fields: &'a Fields,
    /// The enclosing level, the place there this level stands, and the aggregate of the
    /// enclosing level it sits in (a sub-select in an aggregate's arguments).
    pub parent: Option<Parent>,
    pub items: Vec<Item>,
    pub ctes: Vec<Cte>,
    /// `WHERE` and `ON` conjuncts, in order.
    pub conjuncts: Vec<(ConjunctOf, &'a Value)>,
    pub having: Vec<&'a Value>,
    pub calls: Vec<Call<'a>>,
    pub refs: Vec<Ref>,
    pub aggregates: Vec<Aggregate>,
    /// The `LockingClause`s of a `SELECT`.
    pub locking: Vec<&'a Fields>,
    /// A sub-select in `FROM` without `LATERAL`, which does not see the names of the `FROM`
    /// it stands in.
    pub unlateral: bool,
    /// `(…) AS s (a, b)`: the names a sub-select's first columns go by in the query around it.
    pub renamed: Vec<String>,
    /// The kind of sub-link (`EXISTS`, `ANY`, a scalar or `ARRAY` sub-select, …) this level is
    /// the sub-select of, if it is one.
    pub sub_link: Option<i64>,
}

/// How a level hangs off its parent.
#[derive(Debug, Clone, Copy)]
pub struct Parent {
    pub level: usize,
    pub pos: Pos,
    pub aggregate: Option<usize>,
}

/// Every level of one statement; level 0 is the statement.
#[derive(Debug)]
pub struct Levels<'a> {
    pub levels: Vec<Level<'a>>,
    /// The level of each sub-query node, by the address of its fields.
    pub by_node: HashMap<*const Fields, usize>,
    /// What each `RangeVar` in a `FROM` stands for, by the address of its fields.
    pub range_vars: HashMap<*const Fields, Source>,
    /// The tables and views the statement names, for [`Source::Table`].
    pub tables: Vec<Table>,
    /// The columns of the application's relations, where the caller knows them.
    pub schema: Option<&'a Schema>,
    /// Each read of a recursive `WITH` query before its level is built (in its own definition,
    /// or a sibling's before it).
    pub recursive: Vec<RecursiveRead>,
}

/// A read of a recursive `WITH` query before its level is built.
#[derive(Debug, Clone)]
pub struct RecursiveRead {
    pub name: String,
    /// The column names it declares (`WITH RECURSIVE c (a, b)`).
    pub columns: Vec<String>,
    /// The level the read is written in.
    pub at: usize,
}

/// A table or view named in a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The schema written before it, if any.
    pub namespace: Option<String>,
    pub name: String,
    /// `AS t (a, b)`: the names its first columns go by.
    pub renamed: Vec<String>,
}

impl<'a> Levels<'a> {
    /// Builds the levels of a statement of one of the [`QUERY_KINDS`].
    pub fn build(kind: &str, fields: &'a Fields, schema: Option<&'a Schema>) -> Levels<'a> {
        let mut levels = Levels {
            levels: Vec::new(),
            by_node: HashMap::new(),
            range_vars: HashMap::new(),
            tables: Vec::new(),
            schema,
            recursive: Vec::new(),
        };
        levels.level(kind, fields, None);
        levels
    }

    /// The level of a sub-query node.
    pub fn of(&self, fields: &Fields) -> Option<usize> {
        self.by_node.get(&(fields as *const Fields)).copied()
    }

    /// The index in the level's `aggregates` of an aggregate call written in it: aggregates are
    /// filed in the order of their calls.
    pub fn aggregate_index(&self, level: usize, call: &Fields) -> Option<usize> {
        self.levels[level]
            .calls
            .iter()
            .filter(|c| is_aggregate(c.fields))
            .position(|c| std::ptr::eq(c.fields, call))
    }

    /// The level's ancestors, innermost first, the level itself included.
    pub fn chain(&self, level: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(Some(level), |&l| self.levels[l].parent.map(|p| p.level))
    }

    /// Whether `inner` is `outer` or lies within it.
    pub fn within(&self, inner: usize, outer: usize) -> bool {
        self.chain(inner).any(|l| l == outer)
    }

    fn level(&mut self, kind: &str, fields: &'a Fields, parent: Option<Parent>) -> usize {
        let op = int(fields, "op");
        let level_kind = match kind {
            "SelectStmt" if op != SETOP_NONE && op != 0 => Kind::SetOp(op),
            "SelectStmt" if has(fields, "values_lists") => Kind::Values,
            "SelectStmt" => Kind::Select,
            "UpdateStmt" => Kind::Update,
            "DeleteStmt" => Kind::Delete,
            "InsertStmt" => Kind::Insert,
            _ => Kind::Merge,
        };
        let id = self.levels.len();
        self.levels.push(Level {
            kind: level_kind,
            fields,
            parent,
            items: Vec::new(),
            ctes: Vec::new(),
            conjuncts: Vec::new(),
            having: Vec::new(),
            calls: Vec::new(),
            refs: Vec::new(),
            aggregates: Vec::new(),
            locking: Vec::new(),
            unlateral: false,
            renamed: Vec::new(),
            sub_link: None,
        });
        self.by_node.insert(fields as *const Fields, id);
        self.with_clause(id, fields);
        let mut at = Walk {
            level: id,
            pos: Pos::Output,
            aggregate: None,
        };
        match level_kind {
            Kind::SetOp(_) => {
                for arm in ["larg", "rarg"] {
                    if let Some(arm) = fields.get(arm).and_then(Value::as_object) {
                        self.child("SelectStmt", arm, id, Pos::Input, None);
                    }
                }
                self.output_and_head(id, fields, &["sort_clause"]);
                self.levels[id].locking =
                    children(fields, "locking_clause").map(|(_, c)| c).collect();
            }
            Kind::Values => {
                at.pos = Pos::Input;
                self.expr(at, fields.get("values_lists"));
                self.output_and_head(id, fields, &["sort_clause"]);
            }
            Kind::Select => {
                self.sources(id, fields.get("from_clause"));
                self.conjuncts(id, ConjunctOf::Where, fields.get("where_clause"));
                let mut having = Vec::new();
                if let Some(condition) = fields.get("having_clause") {
                    split_and(condition, &mut having);
                }
                for (n, conjunct) in having.iter().enumerate() {
                    self.levels[id].having.push(conjunct);
                    self.expr(
                        Walk {
                            pos: Pos::Having(n),
                            ..at
                        },
                        Some(conjunct),
                    );
                }
                self.output_and_head(
                    id,
                    fields,
                    &[
                        "target_list",
                        "group_clause",
                        "window_clause",
                        "sort_clause",
                        "distinct_clause",
                    ],
                );
                self.levels[id].locking =
                    children(fields, "locking_clause").map(|(_, c)| c).collect();
            }
            Kind::Update | Kind::Delete => {
                self.target(id, fields);
                let list = if level_kind == Kind::Update {
                    "from_clause"
                } else {
                    "using_clause"
                };
                self.sources(id, fields.get(list));
                self.conjuncts(id, ConjunctOf::Where, fields.get("where_clause"));
                self.expr(at, fields.get("target_list"));
                self.expr(at, fields.get("returning_clause"));
                self.expr(at, fields.get("returning_list"));
            }
            Kind::Insert => {
                // `excluded` is the row proposed for insertion: the target's columns.
                if let Some(target) = self.target(id, fields) {
                    self.levels[id].items.push(Item {
                        name: "excluded".into(),
                        source: target,
                        visible: true,
                    });
                }
                if let Some((kind, source)) = child(fields, "select_stmt")
                    && QUERY_KINDS.contains(&kind)
                {
                    self.child(kind, source, id, Pos::Input, None);
                }
                self.expr(at, fields.get("on_conflict_clause"));
                self.expr(at, fields.get("returning_clause"));
                self.expr(at, fields.get("returning_list"));
            }
            Kind::Merge => {
                self.target(id, fields);
                if let Some(source) = fields.get("source_relation") {
                    self.source(id, source, true);
                }
                self.expr(
                    Walk {
                        pos: Pos::Input,
                        ..at
                    },
                    fields.get("join_condition"),
                );
                for (_, when) in children(fields, "merge_when_clauses") {
                    self.expr(
                        Walk {
                            pos: Pos::MergeCondition,
                            ..at
                        },
                        when.get("condition"),
                    );
                    self.expr(at, when.get("target_list"));
                    self.expr(at, when.get("values"));
                }
                self.expr(at, fields.get("returning_clause"));
            }
        }
        id
    }

    fn child(
        &mut self,
        kind: &str,
        fields: &'a Fields,
        level: usize,
        pos: Pos,
        aggregate: Option<usize>,
    ) -> usize {
        self.level(
            kind,
            fields,
            Some(Parent {
                level,
                pos,
                aggregate,
            }),
        )
    }

    fn output_and_head(&mut self, id: usize, fields: &'a Fields, output: &[&str]) {
        for name in output {
            self.expr(
                Walk {
                    level: id,
                    pos: Pos::Output,
                    aggregate: None,
                },
                fields.get(*name),
            );
        }
        for name in ["limit_count", "limit_offset"] {
            self.expr(
                Walk {
                    level: id,
                    pos: Pos::Head,
                    aggregate: None,
                },
                fields.get(name),
            );
        }
    }

    /// Declares a level's `WITH` queries, each a level of its own.
    fn with_clause(&mut self, id: usize, fields: &'a Fields) {
        let Some(with) = fields.get("with_clause").and_then(Value::as_object) else {
            return;
        };
        let recursive = with.get("recursive").and_then(Value::as_bool) == Some(true);
        let ctes: Vec<&Fields> = children(with, "ctes")
            .filter(|(kind, _)| *kind == "CommonTableExpr")
            .map(|(_, cte)| cte)
            .collect();
        if recursive {
            // Every name is visible in every body, its own included, before any is built.
            for cte in &ctes {
                self.levels[id].ctes.push(Cte {
                    name: text(cte, "ctename").to_owned(),
                    level: usize::MAX,
                    columns: strings(cte.get("aliascolnames")),
                });
            }
        }
        for (n, cte) in ctes.into_iter().enumerate() {
            let Some((kind, query)) = child(cte, "ctequery") else {
                continue;
            };
            if !QUERY_KINDS.contains(&kind) {
                continue;
            }
            let level = self.child(kind, query, id, Pos::With, None);
            let declared = Cte {
                name: text(cte, "ctename").to_owned(),
                level,
                columns: strings(cte.get("aliascolnames")),
            };
            if recursive {
                self.levels[id].ctes[n] = declared;
            } else {
                self.levels[id].ctes.push(declared);
            }
        }
    }

    /// The `WITH` query `name` visible from `level`, if any.
    pub fn cte(&self, level: usize, name: &str) -> Option<&Cte> {
        self.chain(level)
            .find_map(|l| self.levels[l].ctes.iter().rev().find(|c| c.name == name))
    }

    /// The relation an `UPDATE`, `DELETE`, `INSERT` or `MERGE` changes.
    fn target(&mut self, id: usize, fields: &'a Fields) -> Option<Source> {
        let relation = fields.get("relation").and_then(Value::as_object)?;
        let source = self.table(relation);
        self.levels[id].items.push(Item {
            name: alias_or(relation, text(relation, "relname")),
            source,
            visible: true,
        });
        Some(source)
    }

    /// Records the table or view of a `RangeVar`.
    fn table(&mut self, relation: &Fields) -> Source {
        let namespace = Some(text(relation, "schemaname"))
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let renamed = relation
            .get("alias")
            .and_then(Value::as_object)
            .map(|alias| strings(alias.get("colnames")))
            .unwrap_or_default();
        self.tables.push(Table {
            namespace,
            name: text(relation, "relname").to_owned(),
            renamed,
        });
        Source::Table(self.tables.len() - 1)
    }

    fn sources(&mut self, id: usize, list: Option<&'a Value>) {
        for item in list.and_then(Value::as_array).into_iter().flatten() {
            self.source(id, item, true);
        }
    }

    fn source(&mut self, id: usize, item: &'a Value, visible: bool) {
        let walk = Walk {
            level: id,
            pos: Pos::Input,
            aggregate: None,
        };
        let Some((kind, fields)) = node(item) else {
            return self.expr(walk, Some(item));
        };
        match kind {
            "RangeVar" => self.range_var(id, fields, visible),
            "RangeSubselect" => {
                let name = alias_or(fields, "");
                let source = match child(fields, "subquery") {
                    Some((kind, query)) if QUERY_KINDS.contains(&kind) => {
                        let sub = self.child(kind, query, id, Pos::Input, None);
                        self.levels[sub].unlateral =
                            fields.get("lateral") != Some(&Value::Bool(true));
                        self.levels[sub].renamed = fields
                            .get("alias")
                            .and_then(Value::as_object)
                            .map(|alias| strings(alias.get("colnames")))
                            .unwrap_or_default();
                        Source::Subquery(sub)
                    }
                    _ => Source::Function,
                };
                self.levels[id].items.push(Item {
                    name,
                    source,
                    visible,
                });
            }
            "JoinExpr" => {
                let hides = fields.get("alias").is_some_and(|a| !a.is_null());
                for side in ["larg", "rarg"] {
                    if let Some(side) = fields.get(side) {
                        self.source(id, side, visible && !hides);
                    }
                }
                if hides {
                    self.levels[id].items.push(Item {
                        name: alias_or(fields, ""),
                        source: Source::Function,
                        visible,
                    });
                }
                let inner = int(fields, "jointype") == JOIN_INNER;
                self.conjuncts(id, ConjunctOf::On { inner }, fields.get("quals"));
            }
            "RangeTableSample" => {
                if let Some(("RangeVar", relation)) = child(fields, "relation") {
                    self.range_var(id, relation, visible);
                }
                self.expr(walk, fields.get("args"));
                self.expr(walk, fields.get("repeatable"));
            }
            _ => {
                // Functions in FROM (and XMLTABLE, JSON_TABLE): their calls are read as
                // expressions, and their columns are unknown here.
                let name = alias_or(fields, &function_alias(fields));
                self.levels[id].items.push(Item {
                    name,
                    source: Source::Function,
                    visible,
                });
                self.expr(walk, Some(item));
            }
        }
    }

    fn range_var(&mut self, id: usize, fields: &'a Fields, visible: bool) {
        let relname = text(fields, "relname");
        let source = if text(fields, "schemaname").is_empty() {
            match self.cte(id, relname) {
                Some(cte) if cte.level == usize::MAX => {
                    let read = RecursiveRead {
                        name: cte.name.clone(),
                        columns: cte.columns.clone(),
                        at: id,
                    };
                    self.recursive.push(read);
                    Source::Recursive(self.recursive.len() - 1)
                }
                Some(cte) => Source::Cte(cte.level),
                None => self.table(fields),
            }
        } else {
            self.table(fields)
        };
        self.range_vars.insert(fields as *const Fields, source);
        self.levels[id].items.push(Item {
            name: alias_or(fields, relname),
            source,
            visible,
        });
    }

    fn conjuncts(&mut self, id: usize, of: ConjunctOf, condition: Option<&'a Value>) {
        let mut conjuncts = Vec::new();
        if let Some(condition) = condition {
            split_and(condition, &mut conjuncts);
        }
        for conjunct in conjuncts {
            let n = self.levels[id].conjuncts.len();
            self.levels[id].conjuncts.push((of, conjunct));
            self.expr(
                Walk {
                    level: id,
                    pos: Pos::Conjunct(n),
                    aggregate: None,
                },
                Some(conjunct),
            );
        }
    }

    /// Files every call, reference, aggregate and sub-query in an expression under `at`.
    fn expr(&mut self, at: Walk, value: Option<&'a Value>) {
        let Some(value) = value else { return };
        if let Some((kind, fields)) = node(value) {
            return self.node(at, kind, fields);
        }
        match value {
            Value::Array(items) => items.iter().for_each(|item| self.expr(at, Some(item))),
            Value::Object(fields) => fields.values().for_each(|v| self.expr(at, Some(v))),
            _ => {}
        }
    }

    fn node(&mut self, at: Walk, kind: &str, fields: &'a Fields) {
        let level = &mut self.levels[at.level];
        match kind {
            _ if QUERY_KINDS.contains(&kind) => {
                self.child(kind, fields, at.level, at.pos, at.aggregate);
            }
            "SubLink" => {
                self.expr(at, fields.get("testexpr"));
                if let Some((kind, query)) = child(fields, "subselect")
                    && QUERY_KINDS.contains(&kind)
                {
                    let sub = self.child(kind, query, at.level, at.pos, at.aggregate);
                    self.levels[sub].sub_link = Some(int(fields, "sub_link_type"));
                }
            }
            "FuncCall" => {
                level.calls.push(Call {
                    fields,
                    pos: at.pos,
                    aggregate: at.aggregate,
                });
                if is_aggregate(fields) {
                    let n = level.aggregates.len();
                    level.aggregates.push(Aggregate { pos: at.pos });
                    let inside = Walk {
                        aggregate: Some(n),
                        ..at
                    };
                    for name in ["args", "agg_order", "agg_filter"] {
                        self.expr(inside, fields.get(name));
                    }
                } else {
                    self.expr(at, fields.get("args"));
                    self.expr(at, fields.get("agg_order"));
                    self.expr(at, fields.get("agg_filter"));
                    self.expr(at, fields.get("over"));
                }
            }
            "ColumnRef" => {
                let names = children(fields, "fields")
                    .map(|(kind, f)| match kind {
                        "String" => text(f, "sval").to_owned(),
                        _ => "*".to_owned(),
                    })
                    .collect();
                level.refs.push(Ref {
                    names,
                    selection: false,
                    selected_from: None,
                    pos: at.pos,
                    aggregate: at.aggregate,
                    at: location(fields),
                });
            }
            "A_Indirection" | "AIndirection" => {
                // `(x).f` with `x` a bare name: the name, which may be a table's (PostgreSQL
                // reads it as a column first, and as a whole row where no column has it).
                let bare = match fields.get("arg").and_then(node) {
                    Some(("ColumnRef", column)) => match strings(column.get("fields")).as_slice() {
                        [name] => Some(name.clone()),
                        _ => None,
                    },
                    _ => None,
                };
                for (n, (kind, step)) in children(fields, "indirection").enumerate() {
                    if kind == "String" {
                        let at_arg = fields
                            .get("arg")
                            .and_then(node)
                            .and_then(|(_, f)| location(f));
                        self.levels[at.level].refs.push(Ref {
                            names: vec![text(step, "sval").to_owned()],
                            selection: true,
                            selected_from: if n == 0 { bare.clone() } else { None },
                            pos: at.pos,
                            aggregate: at.aggregate,
                            at: at_arg,
                        });
                    }
                }
                self.expr(at, fields.get("arg"));
                self.expr(at, fields.get("indirection"));
            }
            _ => fields.values().for_each(|v| self.expr(at, Some(v))),
        }
    }
}

/// Where the walk of an expression is.
#[derive(Debug, Clone, Copy)]
struct Walk {
    level: usize,
    pos: Pos,
    aggregate: Option<usize>,
}

/// Whether a call is an aggregate (and not a window function): a known aggregate, or a call
/// written with aggregate syntax (`*`, `DISTINCT`, `ORDER BY`, `FILTER`, `WITHIN GROUP`).
pub fn is_aggregate(call: &Fields) -> bool {
    if has(call, "over") {
        return false;
    }
    let marked = has(call, "agg_order")
        || has(call, "agg_filter")
        || call.get("agg_star").and_then(Value::as_bool) == Some(true)
        || call.get("agg_distinct").and_then(Value::as_bool) == Some(true)
        || call.get("agg_within_group").and_then(Value::as_bool) == Some(true);
    marked || functions::known(&crate::tree::function_name(call)).is_some_and(|f| f.aggregate)
}

/// The top-level `AND` conjuncts of a condition.
pub fn split_and<'v>(condition: &'v Value, out: &mut Vec<&'v Value>) {
    match node(condition) {
        Some(("BoolExpr", fields)) if int(fields, "boolop") == AND_EXPR => {
            for arg in fields
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                split_and(arg, out);
            }
        }
        Some(_) => out.push(condition),
        None => {}
    }
}

/// The alias of a node, else `or`.
fn alias_or(fields: &Fields, or: &str) -> String {
    fields
        .get("alias")
        .and_then(Value::as_object)
        .map(|alias| text(alias, "aliasname"))
        .filter(|name| !name.is_empty())
        .unwrap_or(or)
        .to_owned()
}

/// The name a function in `FROM` goes by without an alias: the function's.
fn function_alias(fields: &Fields) -> String {
    let mut name = String::new();
    crate::tree::for_each_call(fields, &mut |call| {
        if name.is_empty() {
            name = crate::tree::function_name(call)
                .last()
                .cloned()
                .unwrap_or_default();
        }
    });
    name
}

/// The strings of a list of `String` nodes.
pub fn strings(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(node)
        .filter(|(kind, _)| *kind == "String")
        .map(|(_, s)| text(s, "sval").to_owned())
        .collect()
}
