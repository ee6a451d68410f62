//! The columns of the application's tables, views and composite types, read from its DDL with
//! PostgreSQL's parser, so that `t.f` can be told a column from a call (attribute notation).
//!
//! The DDL is read in the order it runs: `CREATE TABLE` (with `LIKE`, `INHERITS`, `PARTITION
//! OF` and `OF type`), `CREATE TABLE … AS`, `CREATE [MATERIALIZED] VIEW`, `CREATE FOREIGN TABLE`,
//! `CREATE TYPE … AS (…)`, `ALTER TABLE … ADD / DROP / RENAME COLUMN`, `ALTER … RENAME TO`,
//! `ALTER … SET SCHEMA` and `DROP TABLE / VIEW / TYPE`. Everything else is skipped: it does not
//! change which columns a relation has.

use serde_json::Value;

use crate::levels::strings;
use crate::names::target_names;
use crate::tree::{self, Fields, child, children, int, node, text};

/// `ObjectType` values of PostgreSQL's parse tree.
const OBJECT_AGGREGATE: i64 = 2;
const OBJECT_ATTRIBUTE: i64 = 5;
const OBJECT_COLUMN: i64 = 7;
const OBJECT_FOREIGN_TABLE: i64 = 19;
const OBJECT_MATVIEW: i64 = 24;
const OBJECT_TABLE: i64 = 42;
const OBJECT_TYPE: i64 = 50;
const OBJECT_VIEW: i64 = 52;
/// `AlterTableType` values.
const AT_ADD_COLUMN: i64 = 1;
const AT_ADD_COLUMN_TO_VIEW: i64 = 2;
const AT_DROP_COLUMN: i64 = 14;

/// The columns of the relations (tables, views, composite types) a claim may name, as the DDL
/// given to [`Schema::read`] defines them.
///
/// [`check_with`](crate::check_with) reads `t.f` as the column `f` of `t` only where the schema
/// says `t`'s relation has a column `f`; anywhere else PostgreSQL may call a function `f(t)`,
/// and the reference is refused where it may be evaluated for a superseded leader.
///
/// ```
/// use leader_fence_check::{Hints, Schema, check, check_with};
///
/// let mut schema = Schema::new("the migrations in `migrations/`");
/// schema.read("migrations/0001_jobs.sql", "CREATE TABLE jobs (id bigint, owner text);");
/// schema.read("migrations/0002_batch.sql", "CREATE TABLE batch (id bigint);");
///
/// let claim = "UPDATE jobs j SET owner = 'me'
///                FROM (SELECT id FROM batch WHERE leader_fence($1, $2)) b
///               WHERE j.id = b.id";
/// assert!(check_with(claim, &Hints::default().with_schema(&schema)).errors.is_empty());
/// // Without the schema, `j.id` may be a call `id(j)`, evaluated before the fence.
/// assert!(!check(claim).errors.is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Schema {
    relations: Vec<Relation>,
    /// Every function and aggregate created, one per `CREATE`, never removed (a dropped one
    /// fails to run, and keeping it only makes a lookup more careful).
    functions: Vec<Function>,
    /// The first text that did not parse, after which any function may have been created.
    unreadable: Option<String>,
    /// Where the DDL was read from, for messages: "the migrations in `migrations/`".
    read_from: String,
    /// How to declare a relation the DDL does not define, for messages.
    declare: Option<String>,
}

/// One table, view or composite type.
#[derive(Debug, Clone)]
struct Relation {
    /// The schema named in the DDL; `None` where it named none.
    namespace: Option<String>,
    name: String,
    /// The columns in order; `None` where the DDL does not say them all.
    columns: Result<Vec<String>, String>,
    /// Where the relation was last defined or changed.
    defined_in: String,
    kind: RelationKind,
}

/// What a relation is, as far as locks go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RelationKind {
    /// A table: a locking query locks the rows it returns, after every condition.
    Table,
    /// A view, a foreign table, a composite type or a table with rules: a lock may land on
    /// rows as they are read, or somewhere else.
    Other,
}

/// A function or aggregate the DDL creates.
#[derive(Debug, Clone)]
struct Function {
    namespace: Option<String>,
    name: String,
    /// `VOLATILE` (the default), or changed by an `ALTER FUNCTION` the schema does not follow.
    volatile: bool,
    aggregate: bool,
    defined_in: String,
}

/// What the schema says of a function the rules do not know as a built-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Routine {
    /// Every function of that name is `STABLE` or `IMMUTABLE`, and none is an aggregate:
    /// PostgreSQL refuses a data-changing or row-locking statement in such a function.
    ReadOnly,
    /// A function, not an aggregate, that may change or lock rows where it is evaluated.
    Volatile(String),
    /// Nothing is known of it, or it may be an aggregate (evaluated even on no rows): why.
    Unknown(String),
}

/// What the schema says of `t.f`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Column {
    /// `f` is a column of every relation `t` may be.
    Known,
    /// It is not known to be a column: why, for the message.
    Unknown(String),
    /// The schema defines no relation of that name.
    NoRelation(String),
}

impl Schema {
    /// An empty schema; `read_from` says where its DDL comes from, for messages.
    pub fn new(read_from: impl Into<String>) -> Schema {
        Schema {
            relations: Vec::new(),
            functions: Vec::new(),
            unreadable: None,
            read_from: read_from.into(),
            declare: None,
        }
    }

    /// Says how to declare a relation the DDL does not define, in messages about one.
    #[must_use]
    pub fn with_declare_hint(mut self, how: impl Into<String>) -> Schema {
        self.declare = Some(how.into());
        self
    }

    /// How to declare a relation the DDL does not define, if set.
    pub fn declare_hint(&self) -> Option<&str> {
        self.declare.as_deref()
    }

    /// Reads one file's DDL (`origin` names it in messages), after those read before it.
    ///
    /// A text PostgreSQL's parser refuses leaves every relation defined so far with unknown
    /// columns, since its statements may have changed any of them: it returns the parser's
    /// message, and a later file that defines a relation again makes it known again.
    ///
    /// # Errors
    ///
    /// The parser's message, for a text it cannot parse.
    pub fn read(&mut self, origin: &str, sql: &str) -> Result<(), String> {
        match tree::parse(sql) {
            Ok(statements) => {
                for statement in &statements {
                    self.apply(origin, &statement.kind, &statement.fields);
                }
                Ok(())
            }
            Err(message) => {
                let why = format!("`{origin}` does not parse ({message}), and may change it");
                self.unreadable
                    .get_or_insert_with(|| format!("`{origin}` does not parse ({message})"));
                for relation in &mut self.relations {
                    relation.columns = Err(why.clone());
                    origin.clone_into(&mut relation.defined_in);
                }
                Err(message)
            }
        }
    }

    /// Whether the schema knows no relation.
    pub fn is_empty(&self) -> bool {
        self.relations.is_empty()
    }

    /// What the schema says of column `column` of relation `name` (in schema `namespace`, where
    /// one is written).
    pub(crate) fn column(&self, namespace: Option<&str>, name: &str, column: &str) -> Column {
        let found: Vec<&Relation> = self.matching(namespace, name).collect();
        let shown = match namespace {
            Some(namespace) => format!("{namespace}.{name}"),
            None => name.to_owned(),
        };
        if found.is_empty() {
            return Column::NoRelation(format!(
                "`#[fenced]` found no table, view or type `{shown}` in {}",
                self.read_from
            ));
        }
        for relation in found {
            match &relation.columns {
                Ok(columns) if columns.iter().any(|c| c == column) => {}
                Ok(_) => {
                    return Column::Unknown(format!(
                        "`{shown}`, as `{}` leaves it, has no column `{column}`",
                        relation.defined_in
                    ));
                }
                Err(why) => {
                    return Column::Unknown(format!(
                        "the columns of `{shown}` are not known: {why}"
                    ));
                }
            }
        }
        Column::Known
    }

    /// What the schema says of the function `name` (in schema `namespace`, where one is
    /// written).
    pub(crate) fn routine(&self, namespace: Option<&str>, name: &str) -> Routine {
        let shown = match namespace {
            Some(namespace) => format!("{namespace}.{name}"),
            None => name.to_owned(),
        };
        if let Some(why) = &self.unreadable {
            return Routine::Unknown(format!(
                "the functions the migrations create are not known: {why}"
            ));
        }
        let found: Vec<&Function> = self
            .functions
            .iter()
            .filter(|f| {
                f.name == name
                    && match (namespace, &f.namespace) {
                        (Some(wanted), Some(namespace)) => wanted == namespace,
                        _ => true,
                    }
            })
            .collect();
        if found.is_empty() {
            return Routine::Unknown(format!(
                "`#[fenced]` found no `CREATE FUNCTION {shown}` in {}, so it may also be an \
                 aggregate, which PostgreSQL evaluates once even on no rows",
                self.read_from
            ));
        }
        if let Some(aggregate) = found.iter().find(|f| f.aggregate) {
            return Routine::Unknown(format!(
                "`{}` creates an aggregate `{shown}`, which PostgreSQL evaluates once even on \
                 no rows",
                aggregate.defined_in
            ));
        }
        match found.iter().find(|f| f.volatile) {
            Some(volatile) => Routine::Volatile(format!(
                "`{}` creates `{shown}` VOLATILE (the default), so it may change or lock rows",
                volatile.defined_in
            )),
            None => Routine::ReadOnly,
        }
    }

    /// The columns of relation `name`, where every relation it may be has the same known ones.
    pub(crate) fn columns(&self, namespace: Option<&str>, name: &str) -> Option<Vec<String>> {
        let mut found = self.matching(namespace, name);
        let first = found.next()?.columns.as_ref().ok()?;
        found
            .all(|other| other.columns.as_ref().ok() == Some(first))
            .then(|| first.clone())
    }

    /// The relations a reference may mean: a qualified one, those of that schema or of none
    /// written; an unqualified one, every relation of that name (the `search_path` decides).
    fn matching<'s>(
        &'s self,
        namespace: Option<&'s str>,
        name: &'s str,
    ) -> impl Iterator<Item = &'s Relation> + 's {
        self.relations.iter().filter(move |r| {
            r.name == name
                && match (namespace, &r.namespace) {
                    (Some(wanted), Some(namespace)) => wanted == namespace,
                    _ => true,
                }
        })
    }

    fn position(&self, namespace: Option<&str>, name: &str) -> Option<usize> {
        self.relations
            .iter()
            .rposition(|r| r.name == name && r.namespace.as_deref() == namespace)
    }

    /// Whether `name` (in schema `namespace`) is a table in every relation it may be.
    pub(crate) fn is_table(&self, namespace: Option<&str>, name: &str) -> bool {
        let mut found = self.matching(namespace, name).peekable();
        found.peek().is_some() && found.all(|r| r.kind == RelationKind::Table)
    }

    fn define(
        &mut self,
        origin: &str,
        relation: (Option<String>, String),
        kind: RelationKind,
        columns: Result<Vec<String>, String>,
    ) {
        let (namespace, name) = relation;
        if let Some(at) = self.position(namespace.as_deref(), &name) {
            self.relations.remove(at);
        }
        self.relations.push(Relation {
            namespace,
            name,
            columns,
            defined_in: origin.to_owned(),
            kind,
        });
    }

    fn change(
        &mut self,
        origin: &str,
        relation: &(Option<String>, String),
        change: impl FnOnce(&mut Vec<String>),
    ) {
        if let Some(at) = self.position(relation.0.as_deref(), &relation.1) {
            let relation = &mut self.relations[at];
            if let Ok(columns) = &mut relation.columns {
                change(columns);
            }
            origin.clone_into(&mut relation.defined_in);
        }
    }

    fn apply(&mut self, origin: &str, kind: &str, fields: &Fields) {
        match kind {
            "CreateStmt" => {
                if let Some(relation) = range_var(fields.get("relation")) {
                    let columns = self.create_columns(fields);
                    self.define(origin, relation, RelationKind::Table, columns);
                }
            }
            "CreateForeignTableStmt" => {
                let base = match child(fields, "base_stmt") {
                    Some(("CreateStmt", base)) => Some(base),
                    _ => fields.get("base_stmt").and_then(Value::as_object),
                };
                if let Some(base) = base
                    && let Some(relation) = range_var(base.get("relation"))
                {
                    let columns = self.create_columns(base);
                    self.define(origin, relation, RelationKind::Other, columns);
                }
            }
            "RuleStmt" => {
                if let Some(relation) = range_var(fields.get("relation"))
                    && let Some(at) = self.position(relation.0.as_deref(), &relation.1)
                {
                    self.relations[at].kind = RelationKind::Other;
                    origin.clone_into(&mut self.relations[at].defined_in);
                }
            }
            "CompositeTypeStmt" => {
                if let Some(relation) = range_var(fields.get("typevar")) {
                    let columns = children(fields, "coldeflist")
                        .filter(|(kind, _)| *kind == "ColumnDef")
                        .map(|(_, def)| text(def, "colname").to_owned())
                        .collect();
                    self.define(origin, relation, RelationKind::Other, Ok(columns));
                }
            }
            "CreateTableAsStmt" => {
                let into = fields.get("into").and_then(Value::as_object);
                if let Some(relation) = into.and_then(|into| range_var(into.get("rel"))) {
                    let named = strings(into.and_then(|into| into.get("col_names")));
                    let columns = self.query_columns(child(fields, "query"), named);
                    let kind = if int(fields, "objtype") == OBJECT_MATVIEW {
                        RelationKind::Other
                    } else {
                        RelationKind::Table
                    };
                    self.define(origin, relation, kind, columns);
                }
            }
            "ViewStmt" => {
                if let Some(relation) = range_var(fields.get("view")) {
                    let named = strings(fields.get("aliases"));
                    let columns = self.query_columns(child(fields, "query"), named);
                    self.define(origin, relation, RelationKind::Other, columns);
                }
            }
            "AlterTableStmt" => {
                let Some(relation) = range_var(fields.get("relation")) else {
                    return;
                };
                for (_, cmd) in children(fields, "cmds").filter(|(k, _)| *k == "AlterTableCmd") {
                    match int(cmd, "subtype") {
                        AT_ADD_COLUMN | AT_ADD_COLUMN_TO_VIEW => {
                            if let Some(("ColumnDef", def)) = child(cmd, "def") {
                                let name = text(def, "colname").to_owned();
                                self.change(origin, &relation, |columns| {
                                    if !columns.contains(&name) {
                                        columns.push(name);
                                    }
                                });
                            }
                        }
                        AT_DROP_COLUMN => {
                            let name = text(cmd, "name");
                            self.change(origin, &relation, |columns| {
                                columns.retain(|c| c != name);
                            });
                        }
                        _ => {}
                    }
                }
            }
            "RenameStmt" => self.rename(origin, fields),
            "CreateFunctionStmt" if fields.get("is_procedure") != Some(&Value::Bool(true)) => {
                let names = strings(fields.get("funcname"));
                let volatile = children(fields, "options")
                    .filter(|(kind, _)| *kind == "DefElem")
                    .filter(|(_, option)| text(option, "defname") == "volatility")
                    .filter_map(|(_, option)| child(option, "arg"))
                    .all(|(_, arg)| text(arg, "sval") == "volatile");
                self.function(origin, &names, volatile, false);
            }
            "DefineStmt" if int(fields, "kind") == OBJECT_AGGREGATE => {
                let names = strings(fields.get("defnames"));
                self.function(origin, &names, true, true);
            }
            "AlterFunctionStmt" => {
                // Whatever it changes, the function is counted as VOLATILE from here.
                if let Some(func) = fields.get("func").and_then(Value::as_object) {
                    let names = strings(func.get("objname"));
                    self.function(origin, &names, true, false);
                }
            }
            "AlterObjectSchemaStmt" => {
                let moves_relation = matches!(
                    int(fields, "object_type"),
                    OBJECT_TABLE | OBJECT_VIEW | OBJECT_MATVIEW | OBJECT_FOREIGN_TABLE
                );
                if let (true, Some(relation)) = (moves_relation, range_var(fields.get("relation")))
                    && let Some(at) = self.position(relation.0.as_deref(), &relation.1)
                {
                    self.relations[at].namespace = Some(text(fields, "newschema").to_owned());
                    origin.clone_into(&mut self.relations[at].defined_in);
                }
            }
            "DropStmt" => {
                let drops = matches!(
                    int(fields, "remove_type"),
                    OBJECT_TABLE
                        | OBJECT_VIEW
                        | OBJECT_MATVIEW
                        | OBJECT_FOREIGN_TABLE
                        | OBJECT_TYPE
                );
                if !drops {
                    return;
                }
                for object in fields
                    .get("objects")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let names = match node(object) {
                        Some(("List", list)) => strings(list.get("items")),
                        Some(("TypeName", type_name)) => strings(type_name.get("names")),
                        _ => continue,
                    };
                    if let Some((name, namespace)) = names.split_last() {
                        let namespace = namespace.last().map(String::as_str);
                        if let Some(at) = self.position(namespace, name) {
                            self.relations.remove(at);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn function(&mut self, origin: &str, names: &[String], volatile: bool, aggregate: bool) {
        if let Some((name, namespace)) = names.split_last() {
            self.functions.push(Function {
                namespace: namespace.last().cloned(),
                name: name.clone(),
                volatile,
                aggregate,
                defined_in: origin.to_owned(),
            });
        }
    }

    fn rename(&mut self, origin: &str, fields: &Fields) {
        let newname = text(fields, "newname").to_owned();
        match int(fields, "rename_type") {
            OBJECT_COLUMN | OBJECT_ATTRIBUTE => {
                let relation = range_var(fields.get("relation"));
                let old = text(fields, "subname").to_owned();
                if let Some(relation) = relation {
                    self.change(origin, &relation, |columns| {
                        for column in columns.iter_mut().filter(|c| **c == old) {
                            column.clone_from(&newname);
                        }
                    });
                }
            }
            OBJECT_TABLE | OBJECT_VIEW | OBJECT_MATVIEW | OBJECT_FOREIGN_TABLE => {
                if let Some(relation) = range_var(fields.get("relation"))
                    && let Some(at) = self.position(relation.0.as_deref(), &relation.1)
                {
                    self.relations[at].name = newname;
                    origin.clone_into(&mut self.relations[at].defined_in);
                }
            }
            OBJECT_TYPE => {
                let names = match child(fields, "object") {
                    Some(("List", list)) => strings(list.get("items")),
                    _ => Vec::new(),
                };
                if let Some((name, namespace)) = names.split_last()
                    && let Some(at) = self.position(namespace.last().map(String::as_str), name)
                {
                    self.relations[at].name = newname;
                    origin.clone_into(&mut self.relations[at].defined_in);
                }
            }
            _ => {}
        }
    }

    /// The columns of a `CREATE TABLE`: inherited ones first (a partition's are its parent's),
    /// then those of `OF type`, its own and those of each `LIKE`.
    fn create_columns(&self, fields: &Fields) -> Result<Vec<String>, String> {
        let mut columns = Vec::new();
        let known = |relation: &Fields| {
            let (namespace, name) = range_var_of(relation);
            self.columns(namespace.as_deref(), &name).ok_or_else(|| {
                format!("it takes the columns of `{name}`, whose columns are not known")
            })
        };
        for (_, parent) in children(fields, "inh_relations").filter(|(k, _)| *k == "RangeVar") {
            for column in known(parent)? {
                if !columns.contains(&column) {
                    columns.push(column);
                }
            }
        }
        if let Some(type_name) = fields.get("of_typename").and_then(Value::as_object) {
            let names = strings(type_name.get("names"));
            let (name, namespace) = names.split_last().ok_or("a type without a name")?;
            columns.extend(
                self.columns(namespace.last().map(String::as_str), name)
                    .ok_or_else(|| format!("it is `OF {name}`, whose columns are not known"))?,
            );
        }
        for (kind, element) in children(fields, "table_elts") {
            match kind {
                "ColumnDef" => {
                    let name = text(element, "colname").to_owned();
                    if !columns.contains(&name) {
                        columns.push(name);
                    }
                }
                "TableLikeClause" => {
                    if let Some(relation) = element.get("relation").and_then(Value::as_object) {
                        columns.extend(known(relation)?);
                    }
                }
                _ => {}
            }
        }
        Ok(columns)
    }

    /// The columns of a view's or `CREATE TABLE … AS`'s query: the names given first, then the
    /// query's own; a star is expanded where it reads one relation whose columns are known.
    fn query_columns(
        &self,
        query: Option<(&str, &Fields)>,
        named: Vec<String>,
    ) -> Result<Vec<String>, String> {
        let unknown = || "its query's columns are not all named".to_owned();
        let Some(("SelectStmt", select)) = query else {
            return Err(unknown());
        };
        let mut own = match target_names(select.get("target_list")) {
            Some(names) => names,
            None => self.star_columns(select).ok_or_else(unknown)?,
        };
        for (n, name) in named.into_iter().enumerate() {
            match own.get_mut(n) {
                Some(column) => *column = name,
                None => own.push(name),
            }
        }
        Ok(own)
    }

    /// `SELECT * FROM t` (the star alone, one relation read): `t`'s columns, where known.
    fn star_columns(&self, select: &Fields) -> Option<Vec<String>> {
        let targets = select.get("target_list")?.as_array()?;
        let [target] = targets.as_slice() else {
            return None;
        };
        let (_, target) = node(target)?;
        let (_, column) = child(target, "val")?;
        let fields: Vec<_> = children(column, "fields").collect();
        if !matches!(fields.as_slice(), [("AStar", _)]) {
            return None;
        }
        let from = select.get("from_clause")?.as_array()?;
        let [only] = from.as_slice() else {
            return None;
        };
        let ("RangeVar", relation) = node(only)? else {
            return None;
        };
        let (namespace, name) = range_var_of(relation);
        self.columns(namespace.as_deref(), &name)
    }
}

/// `(schema, name)` of a `RangeVar` field.
fn range_var(value: Option<&Value>) -> Option<(Option<String>, String)> {
    let fields = value?.as_object()?;
    let (namespace, name) = range_var_of(fields);
    (!name.is_empty()).then_some((namespace, name))
}

fn range_var_of(fields: &Fields) -> (Option<String>, String) {
    let namespace = Some(text(fields, "schemaname"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    (namespace, text(fields, "relname").to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(files: &[&str]) -> Schema {
        let mut schema = Schema::new("the test's DDL");
        for (n, sql) in files.iter().enumerate() {
            schema.read(&format!("{n}.sql"), sql).unwrap();
        }
        schema
    }

    fn cols(schema: &Schema, name: &str) -> Option<Vec<String>> {
        schema.columns(None, name)
    }

    fn v(names: &[&str]) -> Option<Vec<String>> {
        Some(names.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn tables_and_their_changes_in_the_order_they_run() {
        let s = schema(&[
            "CREATE TABLE jobs (id bigint PRIMARY KEY, owner text, CONSTRAINT c CHECK (id > 0));",
            "ALTER TABLE jobs ADD COLUMN due timestamptz, DROP COLUMN owner;
             ALTER TABLE jobs RENAME COLUMN due TO due_at;",
            "ALTER TABLE jobs RENAME TO tasks; CREATE TABLE \"Quoted\" (\"Mixed\" int);",
        ]);
        assert_eq!(cols(&s, "jobs"), None);
        assert_eq!(cols(&s, "tasks"), v(&["id", "due_at"]));
        assert_eq!(cols(&s, "Quoted"), v(&["Mixed"]));
        assert_eq!(s.column(None, "tasks", "due_at"), Column::Known);
        let Column::Unknown(why) = s.column(None, "tasks", "owner") else {
            panic!("a dropped column is no column");
        };
        assert!(
            why.contains("`tasks`, as `2.sql` leaves it, has no column `owner`"),
            "{why}"
        );
    }

    #[test]
    fn views_like_inherits_partitions_and_types() {
        let s = schema(&["CREATE TABLE q (id bigint, grp int);
             CREATE VIEW v (ident) AS SELECT id, grp AS g, now() FROM q;
             CREATE VIEW w AS SELECT * FROM q;
             CREATE VIEW x AS SELECT q.*, 1 AS one FROM q;
             CREATE TABLE copy (LIKE q, extra text);
             CREATE TABLE child (note text) INHERITS (q);
             CREATE TABLE part PARTITION OF q FOR VALUES IN (1);
             CREATE TYPE pair AS (a int, b int);
             CREATE TABLE typed OF pair;
             CREATE MATERIALIZED VIEW m AS SELECT id FROM q;
             CREATE TABLE t2 AS SELECT grp FROM q;"]);
        assert_eq!(cols(&s, "v"), v(&["ident", "g", "now"]));
        assert_eq!(cols(&s, "w"), v(&["id", "grp"]));
        assert_eq!(cols(&s, "x"), None, "a qualified star is not expanded");
        assert_eq!(cols(&s, "copy"), v(&["id", "grp", "extra"]));
        assert_eq!(cols(&s, "child"), v(&["id", "grp", "note"]));
        assert_eq!(cols(&s, "part"), v(&["id", "grp"]));
        assert_eq!(cols(&s, "pair"), v(&["a", "b"]));
        assert_eq!(cols(&s, "typed"), v(&["a", "b"]));
        assert_eq!(cols(&s, "m"), v(&["id"]));
        assert_eq!(cols(&s, "t2"), v(&["grp"]));
    }

    #[test]
    fn tables_are_told_from_views_foreign_tables_and_types() {
        let s = schema(
            &["CREATE TABLE q (id int); CREATE VIEW v AS SELECT id FROM q;
             CREATE MATERIALIZED VIEW m AS SELECT id FROM q; CREATE TABLE t2 AS SELECT id FROM q;
             CREATE FOREIGN TABLE f (id int) SERVER remote; CREATE TYPE pair AS (a int);
             CREATE TABLE ruled (id int);
             CREATE RULE r AS ON UPDATE TO ruled DO INSTEAD NOTHING;
             CREATE TABLE app.jobs (id int); CREATE VIEW jobs AS SELECT 1 AS id;"],
        );
        assert!(s.is_table(None, "q"));
        assert!(s.is_table(None, "t2"));
        for other in ["v", "m", "f", "pair", "ruled", "nowhere"] {
            assert!(!s.is_table(None, other), "{other}");
        }
        assert!(
            !s.is_table(None, "jobs"),
            "unqualified, `jobs` may be the view"
        );
        assert!(
            !s.is_table(Some("app"), "jobs"),
            "the view's schema is not written"
        );
    }

    #[test]
    fn schemas_drops_and_names_in_several_schemas() {
        let s = schema(&[
            "CREATE TABLE app.jobs (id bigint, a int); CREATE TABLE public.jobs (id bigint, b int);
             CREATE TABLE gone (id int); DROP TABLE gone;
             CREATE TABLE moved (id int); ALTER TABLE moved SET SCHEMA archive;",
        ]);
        assert_eq!(s.column(Some("app"), "jobs", "a"), Column::Known);
        assert_eq!(s.column(None, "jobs", "id"), Column::Known);
        // Unqualified, `jobs` may be either table: `a` is a column of only one of them.
        assert!(matches!(s.column(None, "jobs", "a"), Column::Unknown(_)));
        assert!(matches!(
            s.column(None, "gone", "id"),
            Column::NoRelation(_)
        ));
        assert_eq!(s.column(Some("archive"), "moved", "id"), Column::Known);
    }

    #[test]
    fn functions_by_volatility_and_aggregates() {
        let s = schema(&[
            "CREATE FUNCTION grab(q) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
             CREATE FUNCTION label(int) RETURNS text STABLE LANGUAGE sql AS $$ SELECT 'x' $$;
             CREATE OR REPLACE FUNCTION app.pure(int) RETURNS int IMMUTABLE PARALLEL SAFE
                 LANGUAGE sql AS $$ SELECT $1 $$;
             CREATE FUNCTION shifty(int) RETURNS int STABLE LANGUAGE sql AS $$ SELECT 1 $$;
             ALTER FUNCTION shifty(int) VOLATILE;
             CREATE FUNCTION total_step(int, int) RETURNS int IMMUTABLE LANGUAGE sql
                 AS $$ SELECT $1 + $2 $$;
             CREATE AGGREGATE total(int) (sfunc = total_step, stype = int);
             CREATE PROCEDURE run_it() LANGUAGE sql AS $$ SELECT 1 $$;",
        ]);
        assert!(
            matches!(s.routine(None, "grab"), Routine::Volatile(why) if why.contains("VOLATILE"))
        );
        assert_eq!(s.routine(None, "label"), Routine::ReadOnly);
        assert_eq!(s.routine(Some("app"), "pure"), Routine::ReadOnly);
        assert!(matches!(s.routine(None, "shifty"), Routine::Volatile(_)));
        assert!(
            matches!(s.routine(None, "total"), Routine::Unknown(why) if why.contains("aggregate"))
        );
        assert!(matches!(s.routine(None, "run_it"), Routine::Unknown(_)));
        assert!(
            matches!(s.routine(None, "nowhere"), Routine::Unknown(why) if why.contains("no `CREATE FUNCTION nowhere`"))
        );
        let mut s = s;
        assert!(s.read("bad.sql", "CREATE FUNCTI").is_err());
        assert!(
            matches!(s.routine(None, "label"), Routine::Unknown(why) if why.contains("`bad.sql` does not parse"))
        );
    }

    #[test]
    fn unknown_columns_stay_unknown_and_say_why() {
        let mut s = schema(&["CREATE TABLE q (id int); CREATE VIEW f AS SELECT * FROM some_fn();"]);
        let Column::Unknown(why) = s.column(None, "f", "id") else {
            panic!("a view over a function's star has unknown columns");
        };
        assert!(why.contains("not all named"), "{why}");
        let Column::NoRelation(why) = s.column(None, "nowhere", "id") else {
            panic!("an undefined table");
        };
        assert!(
            why.contains("found no table, view or type `nowhere` in the test's DDL"),
            "{why}"
        );
        assert!(
            s.read("broken.sql", "ALTER TABLE q DROP COLUMN id; CREATE TABL")
                .is_err()
        );
        let Column::Unknown(why) = s.column(None, "q", "id") else {
            panic!("a file that does not parse may have changed every table");
        };
        assert!(why.contains("`broken.sql` does not parse"), "{why}");
        s.read("again.sql", "CREATE TABLE q (id int);").unwrap();
        assert_eq!(s.column(None, "q", "id"), Column::Known);
    }
}
