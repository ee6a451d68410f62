//! What the application's schema says, for the rules: read from the prepared schema
//! (`leader_schema::PreparedSchema`, which `leaderctl schema prepare` reads from PostgreSQL's
//! catalog after the migrations ran), never from DDL text.
//!
//! A name the SQL qualifies (`billing.invoices`) is looked up in that schema only; an
//! unqualified one in every schema that has it (the session's `search_path` decides which one
//! PostgreSQL takes, and it is not known here), so an answer holds for each of them.

use std::collections::{HashMap, HashSet};

use leader_schema::PreparedSchema;
use leader_schema::model::{Event, Relation, RelationKind, TypeKind};

/// The application's schema, as the rules ask it: which columns a relation has and of what
/// type, whether it is a table, what a function call may call ([`Schema::routine`](crate)),
/// which statement-level triggers and rules a change fires, and which column a sharded table is
/// keyed by.
///
/// ```
/// use leader_fence_check::{Hints, Schema, check, check_with};
/// use leader_schema::model::{Column, QualifiedName, Relation, RelationKind};
/// use leader_schema::PreparedSchema;
///
/// let mut prepared = PreparedSchema::new("migrations", "sha256:00");
/// for table in ["jobs", "batch"] {
///     prepared.relations.push(Relation::new(
///         QualifiedName::new("public", table),
///         RelationKind::Table,
///         vec![Column::new("id", "bigint"), Column::new("owner", "text")],
///     ));
/// }
/// let schema = Schema::new(prepared, "the test's schema");
///
/// let claim = "UPDATE jobs j SET owner = 'me'
///                FROM (SELECT id FROM batch WHERE leader_fence($1, $2)) b
///               WHERE j.id = b.id";
/// assert!(check_with(claim, &Hints::default().with_schema(&schema)).errors.is_empty());
/// // Without the schema, `j.id` may be a call `id(j)`, evaluated before the fence.
/// assert!(!check(claim).errors.is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct Schema {
    prepared: PreparedSchema,
    /// Where it was read from, for messages: "`leader-schema.json`".
    read_from: String,
    /// How to declare a relation the schema does not have, for messages.
    declare: Option<String>,
    relations: HashMap<String, Vec<usize>>,
    pub(crate) functions: HashMap<String, Vec<usize>>,
    pub(crate) types: HashMap<String, TypeKind>,
    pub(crate) casts: HashSet<(String, String)>,
    /// The views PostgreSQL reads as their one table's rows, by their index in the relations.
    flat_views: HashMap<usize, FlatView>,
}

/// A view PostgreSQL rewrites into its one table (an `UPDATE` or `DELETE` of it changes that
/// table's rows, and the planner pulls a query of it up into the query that reads it, so a lock
/// on it lands on the table's rows after that query's conditions).
#[derive(Debug, Clone)]
struct FlatView {
    /// The table: its schema, where the definition writes one, and name.
    base: (Option<String>, String),
    /// For each column of the view, the table's column it is, where it is one plainly.
    columns: Vec<Option<String>>,
    /// Whether every column is made of columns, constants, casts and `coalesce` alone: no
    /// function call, whose volatility would keep the planner from pulling the view up.
    plain_list: bool,
}

/// What the schema says of `t.f`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Column {
    /// `f` is a column of every relation `t` may be.
    Known,
    /// It is not known to be a column: why, for the message.
    Unknown(String),
    /// The schema has no relation of that name.
    NoRelation(String),
}

/// What the schema says of a table's shard key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShardKey {
    /// The column every relation the name may be is keyed by.
    Declared(String),
    /// Why none is known: the table has none, or the name is not one table's.
    Undeclared(String),
}

impl Schema {
    /// The schema `prepared` holds; `read_from` says where it comes from, for messages.
    pub fn new(prepared: PreparedSchema, read_from: impl Into<String>) -> Schema {
        let mut relations: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, relation) in prepared.relations.iter().enumerate() {
            relations
                .entry(relation.name.name.clone())
                .or_default()
                .push(i);
        }
        let mut functions: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, function) in prepared.functions.iter().enumerate() {
            functions
                .entry(function.name.name.clone())
                .or_default()
                .push(i);
        }
        let types = prepared
            .types
            .iter()
            .map(|t| (t.name.clone(), t.kind))
            .collect();
        let casts = prepared
            .casts
            .iter()
            .map(|c| (c.source.clone(), c.target.clone()))
            .collect();
        let flat_views = prepared
            .relations
            .iter()
            .enumerate()
            .filter(|(_, r)| r.kind == RelationKind::View && r.updatable)
            .filter_map(|(i, r)| Some((i, flat_view(r.definition.as_deref()?)?)))
            .collect();
        Schema {
            prepared,
            read_from: read_from.into(),
            declare: None,
            relations,
            functions,
            types,
            casts,
            flat_views,
        }
    }

    /// Says how to declare a relation the schema does not have, in messages about one.
    #[must_use]
    pub fn with_declare_hint(mut self, how: impl Into<String>) -> Schema {
        self.declare = Some(how.into());
        self
    }

    /// How to declare a relation the schema does not have, if set.
    pub fn declare_hint(&self) -> Option<&str> {
        self.declare.as_deref()
    }

    /// The prepared schema this one answers from.
    pub fn prepared(&self) -> &PreparedSchema {
        &self.prepared
    }

    /// Whether the schema has no relation.
    pub fn is_empty(&self) -> bool {
        self.prepared.relations.is_empty()
    }

    /// Where the schema comes from, for messages.
    pub(crate) fn read_from(&self) -> &str {
        &self.read_from
    }

    /// The relations a reference may mean: in the schema written, or in any schema.
    pub(crate) fn matching<'s>(
        &'s self,
        namespace: Option<&'s str>,
        name: &str,
    ) -> impl Iterator<Item = &'s Relation> + 's {
        self.relations
            .get(name)
            .into_iter()
            .flatten()
            .map(|&i| &self.prepared.relations[i])
            .filter(move |r| namespace.is_none_or(|wanted| wanted == r.name.schema))
    }

    /// What the schema says of column `column` of relation `name` (in schema `namespace`, where
    /// one is written).
    pub(crate) fn column(&self, namespace: Option<&str>, name: &str, column: &str) -> Column {
        let found: Vec<&Relation> = self.matching(namespace, name).collect();
        let shown = shown(namespace, name);
        if found.is_empty() {
            return Column::NoRelation(format!(
                "`#[fenced]` found no table, view or type `{shown}` in {}",
                self.read_from
            ));
        }
        for relation in found {
            let has = relation.columns.iter().any(|c| c.name == column)
                || relation.system_columns.iter().any(|c| c == column);
            if !has {
                return Column::Unknown(format!(
                    "`{}`, as {} has it, has no column `{column}`",
                    relation.name, self.read_from
                ));
            }
        }
        Column::Known
    }

    /// The columns of relation `name`, in order, where every relation it may be has the same.
    pub(crate) fn columns(&self, namespace: Option<&str>, name: &str) -> Option<Vec<String>> {
        let mut found = self.matching(namespace, name);
        let first: Vec<String> = found
            .next()?
            .columns
            .iter()
            .map(|c| c.name.clone())
            .collect();
        found
            .all(|other| other.columns.iter().map(|c| &c.name).eq(first.iter()))
            .then_some(first)
    }

    /// The type of column `column` of relation `name`, where every relation it may be gives it
    /// the same one.
    pub(crate) fn column_type(
        &self,
        namespace: Option<&str>,
        name: &str,
        column: &str,
    ) -> Option<String> {
        let mut types = self.matching(namespace, name).map(|relation| {
            relation
                .columns
                .iter()
                .find(|c| c.name == column)
                .map(|c| c.type_name.clone())
        });
        let first = types.next()??;
        types.all(|t| t.as_ref() == Some(&first)).then_some(first)
    }

    /// Whether `name` (in schema `namespace`) is a table (partitioned or not) in every relation
    /// it may be, without rules: a locking query locks the rows it returns, after its conditions.
    ///
    /// A view PostgreSQL reads as its one table's rows (every column of it one of the table's)
    /// counts as that table.
    pub(crate) fn is_table(&self, namespace: Option<&str>, name: &str) -> bool {
        self.is_table_at(namespace, name, 0)
    }

    fn is_table_at(&self, namespace: Option<&str>, name: &str, depth: usize) -> bool {
        let mut found = self.matching_indexed(namespace, name).peekable();
        found.peek().is_some()
            && found.all(|(i, r)| match r.kind {
                RelationKind::Table | RelationKind::PartitionedTable => r.rules.is_empty(),
                _ => self.flat_views.get(&i).is_some_and(|view| {
                    depth < 8
                        && r.rules.is_empty()
                        && view.plain_list
                        && self.is_table_at(view.base.0.as_deref(), &view.base.1, depth + 1)
                }),
            })
    }

    /// Whether column `column` of relation `name` (in schema `namespace`) is, in every relation
    /// the name may be, a column of stored rows where a query reads it, also after PostgreSQL
    /// pulls a view up into that query: a table's column is; a view's is where its definition
    /// keeps a query of its own (`GROUP BY`, `DISTINCT`, `LIMIT`, …: the view stays a sub-query
    /// whose columns are read as columns) or where the column is plainly a column of the one
    /// table the view reads. A view's column computed from constants becomes that constant
    /// when the view is pulled up (`SELECT 1 AS id FROM q`), and a view whose definition these
    /// rules do not follow counts as one that may: a condition on such a column may read no
    /// column after all.
    pub(crate) fn column_is_stored(
        &self,
        namespace: Option<&str>,
        name: &str,
        column: &str,
    ) -> bool {
        self.column_is_stored_at(namespace, name, column, 0)
    }

    fn column_is_stored_at(
        &self,
        namespace: Option<&str>,
        name: &str,
        column: &str,
        depth: usize,
    ) -> bool {
        let mut found = self.matching_indexed(namespace, name).peekable();
        found.peek().is_some()
            && found.all(|(i, r)| match r.kind {
                RelationKind::View => {
                    if r.definition.as_deref().is_some_and(keeps_own_query) {
                        return true;
                    }
                    let Some(view) = self.flat_views.get(&i) else {
                        return false;
                    };
                    let position = r.columns.iter().position(|c| c.name == column);
                    match position
                        .and_then(|p| view.columns.get(p))
                        .cloned()
                        .flatten()
                    {
                        Some(base_column) => {
                            depth < 8
                                && self.column_is_stored_at(
                                    view.base.0.as_deref(),
                                    &view.base.1,
                                    &base_column,
                                    depth + 1,
                                )
                        }
                        None => false,
                    }
                }
                RelationKind::Table
                | RelationKind::PartitionedTable
                | RelationKind::MaterializedView
                | RelationKind::ForeignTable
                | RelationKind::CompositeType => true,
                // A kind this crate does not know yet may be read as anything.
                _ => false,
            })
    }

    /// Whether the schema has a function (of any kind, in any schema) called `name`.
    pub(crate) fn has_function(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }

    /// [`Schema::matching`], with each relation's index.
    fn matching_indexed<'s>(
        &'s self,
        namespace: Option<&'s str>,
        name: &str,
    ) -> impl Iterator<Item = (usize, &'s Relation)> + 's {
        self.relations
            .get(name)
            .into_iter()
            .flatten()
            .map(|&i| (i, &self.prepared.relations[i]))
            .filter(move |(_, r)| namespace.is_none_or(|wanted| wanted == r.name.schema))
    }

    /// The statement-level triggers and rules a statement of `events` on `name` fires, each
    /// described (`trigger `audit` on `public.jobs``): the relation's own, and for a view the
    /// relations it reads (a change through an updatable view is a change of its table).
    pub(crate) fn fired(
        &self,
        namespace: Option<&str>,
        name: &str,
        events: &[Event],
    ) -> Vec<String> {
        let mut found = Vec::new();
        let mut seen = HashSet::new();
        let mut queue: Vec<&Relation> = self.matching(namespace, name).collect();
        while let Some(relation) = queue.pop() {
            if !seen.insert(&relation.name) {
                continue;
            }
            for trigger in &relation.statement_triggers {
                if trigger.events.iter().any(|e| events.contains(e)) {
                    found.push(format!(
                        "the statement-level trigger `{}` on `{}`",
                        trigger.name, relation.name
                    ));
                }
            }
            if relation.rules.iter().any(|e| events.contains(e)) {
                found.push(format!("a rule on `{}`", relation.name));
            }
            if matches!(
                relation.kind,
                RelationKind::View | RelationKind::MaterializedView
            ) {
                for read in &relation.reads {
                    queue.extend(self.matching(Some(&read.schema), &read.name));
                }
            }
        }
        found
    }

    /// The declared shard key of relation `name`: its own declaration, or its parents' (a
    /// partition's or an inheriting table's rows are its parent's too).
    pub(crate) fn shard_key(&self, namespace: Option<&str>, name: &str) -> ShardKey {
        let shown = shown(namespace, name);
        let found: Vec<&Relation> = self.matching(namespace, name).collect();
        if found.is_empty() {
            return ShardKey::Undeclared(format!(
                "`#[fenced]` found no table `{shown}` in {}",
                self.read_from
            ));
        }
        let mut key: Option<String> = None;
        for (i, relation) in self.matching_indexed(namespace, name) {
            let declared = match self.flat_views.get(&i) {
                // A view PostgreSQL reads as its table's rows is keyed by the column that is the
                // table's key.
                Some(view) => match self.shard_key(view.base.0.as_deref(), &view.base.1) {
                    ShardKey::Declared(base_key) => view
                        .columns
                        .iter()
                        .position(|c| c.as_deref() == Some(base_key.as_str()))
                        .map(|n| relation.columns[n].name.clone()),
                    ShardKey::Undeclared(_) => None,
                },
                None => self.declared_key(relation, 0).map(str::to_owned),
            };
            match (declared, &key) {
                (None, _) => {
                    return ShardKey::Undeclared(format!(
                        "`{}` has no declared shard key in {}",
                        relation.name, self.read_from
                    ));
                }
                (Some(column), Some(before)) if column != *before => {
                    return ShardKey::Undeclared(format!(
                        "`{shown}` may be tables keyed by `{before}` and by `{column}`: qualify it \
                         with its schema"
                    ));
                }
                (Some(column), _) => key = Some(column),
            }
        }
        ShardKey::Declared(key.unwrap_or_default())
    }

    fn declared_key<'s>(&'s self, relation: &'s Relation, depth: usize) -> Option<&'s str> {
        if let Some(key) = self
            .prepared
            .shard_keys
            .iter()
            .find(|k| k.table == relation.name)
        {
            return Some(&key.column);
        }
        if depth > 16 {
            return None;
        }
        relation.parents.iter().find_map(|parent| {
            self.matching(Some(&parent.schema), &parent.name)
                .find_map(|p| self.declared_key(p, depth + 1))
        })
    }
}

/// A view's definition as PostgreSQL prints it, where it reads one table and nothing else that
/// keeps the planner from pulling it up (PostgreSQL says it is automatically updatable, which
/// the caller has checked): the table and what each column is.
fn flat_view(definition: &str) -> Option<FlatView> {
    use crate::levels::strings;
    use crate::tree::{child, children, has, text};
    let statements = crate::tree::parse(definition).ok()?;
    let [statement] = statements.as_slice() else {
        return None;
    };
    let select = &statement.fields;
    if statement.kind != "SelectStmt"
        || [
            "with_clause",
            "group_clause",
            "having_clause",
            "distinct_clause",
            "sort_clause",
        ]
        .iter()
        .any(|field| has(select, field))
        || ["limit_count", "limit_offset"]
            .iter()
            .any(|f| has(select, f))
    {
        return None;
    }
    let from: Vec<_> = children(select, "from_clause").collect();
    let [("RangeVar", table)] = from.as_slice() else {
        return None;
    };
    let schema = Some(text(table, "schemaname"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let columns = children(select, "target_list")
        .map(|(_, target)| match child(target, "val") {
            Some(("ColumnRef", column)) => {
                let names = strings(column.get("fields"));
                names.last().cloned()
            }
            _ => None,
        })
        .collect();
    let plain_list = children(select, "target_list")
        .all(|(_, target)| target.get("val").is_some_and(plain_expression));
    Some(FlatView {
        base: (schema, text(table, "relname").to_owned()),
        columns,
        plain_list,
    })
}

/// Whether a view's definition, as PostgreSQL prints it, is a query PostgreSQL never pulls up
/// into the query that reads the view: a set operation other than `UNION ALL`, or a `SELECT`
/// that groups, aggregates over `HAVING`, removes duplicates, limits, or declares `WITH`
/// queries. Its columns are then read as the columns of a sub-query's rows.
fn keeps_own_query(definition: &str) -> bool {
    use crate::tree::{enums::SETOP_NONE, has, int};
    let Ok(statements) = crate::tree::parse(definition) else {
        return false;
    };
    let [statement] = statements.as_slice() else {
        return false;
    };
    let select = &statement.fields;
    if statement.kind != "SelectStmt" {
        return false;
    }
    let op = int(select, "op");
    if op != SETOP_NONE && op != 0 {
        return select.get("all") != Some(&serde_json::Value::Bool(true));
    }
    [
        "group_clause",
        "having_clause",
        "distinct_clause",
        "limit_count",
        "limit_offset",
        "with_clause",
    ]
    .iter()
    .any(|field| has(select, field))
}

/// An expression of columns, constants, casts and `coalesce` alone.
fn plain_expression(value: &serde_json::Value) -> bool {
    use crate::tree::node;
    let Some((kind, fields)) = node(value) else {
        return match value {
            serde_json::Value::Array(items) => items.iter().all(plain_expression),
            _ => false,
        };
    };
    match kind {
        "ColumnRef" | "A_Const" | "AConst" => true,
        "TypeCast" => fields.get("arg").is_some_and(plain_expression),
        "CoalesceExpr" => fields.get("args").is_some_and(plain_expression),
        _ => false,
    }
}

/// `schema.name`, or `name`.
pub(crate) fn shown(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}.{name}"),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use leader_schema::model::{Column as Col, QualifiedName, ShardKey as Key, Trigger};

    use super::*;

    fn relation(schema: &str, name: &str, kind: RelationKind, columns: &[&str]) -> Relation {
        Relation::new(
            QualifiedName::new(schema, name),
            kind,
            columns.iter().map(|c| Col::new(*c, "bigint")).collect(),
        )
    }

    fn schema() -> Schema {
        let mut prepared = PreparedSchema::new("migrations", "sha256:00");
        let mut jobs = relation("public", "jobs", RelationKind::Table, &["id", "owner"]);
        jobs.system_columns = vec!["xmin".into()];
        jobs.statement_triggers = vec![Trigger {
            name: "audit".into(),
            events: vec![Event::Update],
        }];
        let mut part = relation("public", "jobs_1", RelationKind::Table, &["id", "owner"]);
        part.parents = vec![QualifiedName::new("public", "jobs")];
        let mut due = relation("public", "due", RelationKind::View, &["id"]);
        due.reads = vec![QualifiedName::new("public", "jobs")];
        prepared.relations = vec![
            jobs,
            part,
            due,
            relation("billing", "invoices", RelationKind::Table, &["id", "state"]),
            relation("public", "invoices", RelationKind::Table, &["id"]),
        ];
        prepared.shard_keys = vec![Key {
            table: QualifiedName::new("public", "jobs"),
            column: "id".into(),
        }];
        Schema::new(prepared, "the test's schema")
    }

    #[test]
    fn a_qualified_name_is_looked_up_in_its_schema_and_an_unqualified_one_in_every_schema() {
        let s = schema();
        assert_eq!(
            s.column(Some("billing"), "invoices", "state"),
            Column::Known
        );
        let Column::Unknown(why) = s.column(None, "invoices", "state") else {
            panic!("unqualified, `invoices` may be `public.invoices`");
        };
        assert!(why.contains("`public.invoices`"), "{why}");
        assert_eq!(s.column(None, "jobs", "xmin"), Column::Known);
        assert!(matches!(
            s.column(None, "nowhere", "id"),
            Column::NoRelation(_)
        ));
        assert_eq!(s.column_type(None, "jobs", "id").as_deref(), Some("bigint"));
    }

    #[test]
    fn triggers_fire_through_a_view_and_keys_are_inherited() {
        let s = schema();
        assert_eq!(s.fired(None, "jobs", &[Event::Update]).len(), 1);
        assert!(s.fired(None, "jobs", &[Event::Delete]).is_empty());
        assert_eq!(s.fired(None, "due", &[Event::Update]).len(), 1);
        assert_eq!(s.shard_key(None, "jobs_1"), ShardKey::Declared("id".into()));
        assert!(matches!(
            s.shard_key(None, "invoices"),
            ShardKey::Undeclared(_)
        ));
        assert!(s.is_table(None, "jobs") && !s.is_table(None, "due"));
    }
}
