//! Claims over a migration history's schema, as its prepared schema gives it: statements that
//! name the history's tables, views, columns and functions where the schema decides the verdict
//! (a qualified name that is a column or a call in attribute notation, an overload picked by its
//! argument's type, a function made STABLE or VOLATILE by a later migration, a relation that is a
//! table or a view, a change that fires a statement-level trigger), each in a place PostgreSQL
//! evaluates before the fence or only on rows the fence lets through.
//!
//! Placeholders: `$1` the role, `$2` the token, nothing else.

use leader_schema::PreparedSchema;
use leader_schema::model::{FunctionKind, Relation, RelationKind};
use rand::Rng;
use rand::rngs::StdRng;

/// A generated claim.
#[derive(Debug, Clone)]
pub struct Claim {
    pub sql: String,
    /// Its shape, for the report.
    pub shape: &'static str,
}

/// What a history's schema offers claims.
pub struct Offer<'s> {
    tables: Vec<&'s Relation>,
    views: Vec<&'s Relation>,
    /// `(written name, argument type)`: unqualified and schema-qualified names of the history's
    /// functions of one argument.
    functions: Vec<(String, String)>,
}

/// The relations and functions of the history (the framework's left out).
pub fn offer(schema: &PreparedSchema) -> Offer<'_> {
    let own = |name: &str| {
        !(name.starts_with("leader_") || name.starts_with("_sqlx") || name == "ledger")
    };
    let with_id = |r: &&Relation| own(&r.name.name) && r.columns.iter().any(|c| c.name == "id");
    let tables = schema
        .relations
        .iter()
        .filter(with_id)
        .filter(|r| matches!(r.kind, RelationKind::Table | RelationKind::PartitionedTable))
        .collect();
    let views = schema
        .relations
        .iter()
        .filter(with_id)
        .filter(|r| r.kind == RelationKind::View)
        .collect();
    let mut functions = Vec::new();
    for f in &schema.functions {
        if !own(&f.name.name) || f.kind != FunctionKind::Function || f.args.len() != 1 {
            continue;
        }
        functions.push((f.name.to_string(), f.args[0].clone()));
        functions.push((f.name.name.clone(), f.args[0].clone()));
    }
    Offer {
        tables,
        views,
        functions,
    }
}

impl Offer<'_> {
    /// Whether there is anything to claim.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// `n` claims.
    pub fn claims(&self, rng: &mut StdRng, n: usize) -> Vec<Claim> {
        (0..n).map(|_| self.claim(rng)).collect()
    }

    fn claim(&self, rng: &mut StdRng) -> Claim {
        let t = self.tables[rng.random_range(0..self.tables.len())];
        let table = t.name.to_string();
        let set = t
            .columns
            .iter()
            .find(|c| c.name != "id" && c.name != "kind")
            .map_or("id", |c| c.name.as_str());
        let fence = "leader_fence($1, $2)";
        let gate = format!("x.id IN (SELECT id FROM {table} WHERE {fence})");
        let (shape, sql) = match rng.random_range(0..10) {
            // Evaluated before the one-time fence: a call with constant arguments.
            0 => (
                "call before the fence",
                format!(
                    "UPDATE {table} x SET {set} = {set} WHERE {} IS NOT NULL AND {fence}",
                    self.constant_call(rng)
                ),
            ),
            // Evaluated on the rows of a level the fence gates once: never for a superseded
            // leader.
            1 => (
                "call on fenced rows",
                format!(
                    "UPDATE {table} x SET {set} = {set} WHERE {} IS NOT NULL AND {fence} \
                     RETURNING {}",
                    self.row_expression(rng, t),
                    self.row_expression(rng, t)
                ),
            ),
            // Evaluated on rows before a gate on rows removes them.
            2 => (
                "call before a gate on rows",
                format!(
                    "UPDATE {table} x SET {set} = {set} WHERE {} IS NOT NULL AND {gate}",
                    self.row_expression(rng, t)
                ),
            ),
            // A LIMIT is computed before the fence of its level.
            3 => (
                "call in a limit",
                format!(
                    "SELECT x.id FROM {table} x WHERE {fence} ORDER BY 1 \
                     LIMIT (SELECT {} FROM {table} y LIMIT 1) FOR UPDATE",
                    self.row_expression_of(rng, t, "y")
                ),
            ),
            // A lock after a gate on rows: in time on a table, not on a view it cannot flatten.
            4 => match self.views.is_empty() {
                true => (
                    "lock after a gate on rows",
                    format!("SELECT x.id FROM {table} x WHERE {gate} FOR UPDATE"),
                ),
                false => {
                    let v = self.views[rng.random_range(0..self.views.len())];
                    (
                        "lock of a view after a gate on rows",
                        format!(
                            "SELECT x.id FROM {} x WHERE x.id IN (SELECT id FROM {table} \
                             WHERE {fence}) FOR UPDATE",
                            v.name
                        ),
                    )
                }
            },
            // A fenced change, whose statement-level triggers fire whatever it changes.
            5 => (
                "fenced change",
                match rng.random_range(0..3) {
                    0 => format!("UPDATE {table} x SET {set} = {set} WHERE {fence}"),
                    1 => format!("DELETE FROM {table} x WHERE {fence}"),
                    _ => format!(
                        "INSERT INTO {table} (id) SELECT id + 1000 FROM {table} x WHERE {fence} \
                         ON CONFLICT DO NOTHING"
                    ),
                },
            ),
            // Not fenced at all.
            6 => (
                "unfenced change",
                format!(
                    "UPDATE {table} x SET {set} = {set} WHERE {} IS NOT NULL",
                    self.row_expression(rng, t)
                ),
            ),
            // A view's columns, as PostgreSQL names them, read before a gate on rows.
            7 if !self.views.is_empty() => {
                let v = self.views[rng.random_range(0..self.views.len())];
                let column = &v.columns[rng.random_range(0..v.columns.len())].name;
                (
                    "view column before a gate on rows",
                    format!(
                        "UPDATE {table} x SET {set} = {set} FROM {} v \
                         WHERE v.id = x.id AND v.{column} IS NOT NULL AND {gate}",
                        v.name
                    ),
                )
            }
            // A qualified name that is a column or a call, read before a gate on rows.
            _ => (
                "qualified name before a gate on rows",
                format!(
                    "UPDATE {table} x SET {set} = {set} WHERE x.{} IS NOT NULL AND {gate}",
                    self.name_of(rng, t)
                ),
            ),
        };
        Claim { sql, shape }
    }

    /// A call of one of the history's functions with a constant argument (a literal of some
    /// type, or a cast).
    fn constant_call(&self, rng: &mut StdRng) -> String {
        if self.functions.is_empty() {
            return "1".to_owned();
        }
        let (name, arg_type) = &self.functions[rng.random_range(0..self.functions.len())];
        // Mostly a constant of the declared type; now and then any, for the overloads.
        let fitting = match arg_type.as_str() {
            "integer" => Some(["3", "3::integer"][rng.random_range(0..2)]),
            "bigint" => Some(["4::bigint", "4"][rng.random_range(0..2)]),
            "text" => Some(["'t'", "'t'::text"][rng.random_range(0..2)]),
            _ => None,
        };
        let arg = match fitting {
            Some(arg) if rng.random_bool(0.75) => arg,
            _ => {
                ["3", "4::bigint", "'t'", "'t'::text", "3::integer", "true"][rng.random_range(0..6)]
            }
        };
        format!("{name}({arg})")
    }

    fn row_expression(&self, rng: &mut StdRng, t: &Relation) -> String {
        self.row_expression_of(rng, t, "x")
    }

    /// A call on a row of `t` (alias `alias`): of a function of its row type (written as a
    /// call, or in attribute notation), or of a function given one of its columns.
    fn row_expression_of(&self, rng: &mut StdRng, t: &Relation, alias: &str) -> String {
        if self.functions.is_empty() {
            return format!("{alias}.id");
        }
        let takes = |arg: &str| arg == t.name.name || arg == t.name.to_string();
        // Mostly a function that takes the row, or one of the row's columns' type.
        let fitting: Vec<&(String, String)> = self
            .functions
            .iter()
            .filter(|(_, arg)| takes(arg) || t.columns.iter().any(|c| c.type_name == *arg))
            .collect();
        let (name, arg) = match fitting.is_empty() || rng.random_bool(0.2) {
            true => &self.functions[rng.random_range(0..self.functions.len())],
            false => fitting[rng.random_range(0..fitting.len())],
        };
        let bare = name.rsplit('.').next().unwrap_or(name);
        if takes(arg) {
            return match rng.random_range(0..3) {
                0 => format!("{alias}.{bare}"),
                1 => format!("({alias}).{bare}"),
                _ => format!("{name}({alias})"),
            };
        }
        let columns: Vec<&str> = t
            .columns
            .iter()
            .filter(|c| c.type_name == *arg || rng.random_bool(0.1))
            .map(|c| c.name.as_str())
            .collect();
        let column = match columns.as_slice() {
            [] => "id",
            columns => columns[rng.random_range(0..columns.len())],
        };
        format!("{name}({alias}.{column})")
    }

    /// A name after `x.`: one of `t`'s columns, or a function's name.
    fn name_of(&self, rng: &mut StdRng, t: &Relation) -> String {
        let of_row: Vec<&String> = self
            .functions
            .iter()
            .filter(|(_, arg)| *arg == t.name.name || *arg == t.name.to_string())
            .map(|(name, _)| name)
            .collect();
        if of_row.is_empty() || rng.random_bool(0.5) {
            return t.columns[rng.random_range(0..t.columns.len())].name.clone();
        }
        let name = of_row[rng.random_range(0..of_row.len())];
        name.rsplit('.').next().unwrap_or(name).to_owned()
    }
}
