//! Generated migration histories: what an application team's migrations do to a schema over
//! time, written as sqlx migration files, so that the prepared schema (PostgreSQL's catalog after
//! they ran) is one no reader of DDL text would get right.
//!
//! A history creates tables (some in another schema, some with `IF NOT EXISTS` over a table that
//! exists, which the server skips), partitioned tables and partitions, tables that inherit, views
//! (whose columns PostgreSQL names: `coalesce`, a cast's column), functions and overloads
//! (`VOLATILE` ones write a row of `ledger`, so a call shows as an effect), and then changes them:
//! renames of columns (through a partitioned or inherited parent too), of tables and of
//! functions (one renamed over another's name after the other is dropped), drops, `ALTER FUNCTION
//! … STABLE / VOLATILE`, statement- and row-level triggers that write `ledger`, a `SET
//! search_path` that later files' unqualified names follow, and DDL run by `DO` blocks with
//! `EXECUTE`. Files are numbered by hand (`9_`, `10_`, …: sqlx runs them by integer version, not
//! by name), and some come with a `.down.sql` that would undo everything (sqlx never runs it
//! forward).
//!
//! The model kept here only keeps the generated statements mostly valid; what the checker is
//! given is what PostgreSQL reports ([`leaderctl::prepare`]), and a history PostgreSQL refuses is
//! skipped.

use rand::Rng;
use rand::rngs::StdRng;

/// One generated history: its migration files, in the order written.
#[derive(Debug, Clone)]
pub struct History {
    /// `(file name, SQL)`.
    pub files: Vec<(String, String)>,
    /// What the history did, by kind, for the report.
    pub ops: Vec<&'static str>,
}

/// The column types a history uses, and a literal of each.
const TYPES: [(&str, &str); 4] = [
    ("integer", "3"),
    ("bigint", "4"),
    ("text", "'t'"),
    ("boolean", "true"),
];

#[derive(Debug, Clone)]
struct Table {
    schema: &'static str,
    name: String,
    /// `id bigint` first, always.
    columns: Vec<(String, &'static str)>,
    /// Tables whose columns follow this one's renames (partitions, inheriting tables).
    children: Vec<String>,
    /// Partitioned: no rows of its own, and no `ALTER … ADD COLUMN … ` of its partitions alone.
    partitioned: bool,
    /// A partition or an inheriting table: its columns are its parent's.
    child: bool,
}

#[derive(Debug, Clone)]
struct Func {
    schema: &'static str,
    name: String,
    /// A type of [`TYPES`], or a table's name (its row type).
    arg: String,
    volatile: bool,
}

/// What the history made so far (as far as the generator needs to write valid SQL).
struct Model {
    tables: Vec<Table>,
    funcs: Vec<Func>,
    views: usize,
    /// The schema unqualified names are created in (after a `SET search_path`).
    default_schema: &'static str,
    next: usize,
    ops: Vec<&'static str>,
}

/// The first file of every history: the ledger that `VOLATILE` functions and triggers write,
/// the trigger function, and the other schema.
const BASE: &str = "CREATE TABLE ledger (n bigint NOT NULL DEFAULT 1);
CREATE FUNCTION ledger_note() RETURNS trigger LANGUAGE plpgsql
    AS $$ BEGIN INSERT INTO ledger DEFAULT VALUES; RETURN NULL; END $$;
CREATE SCHEMA app;
";

/// A history of 3 to 6 files.
pub fn history(rng: &mut StdRng) -> History {
    let mut m = Model {
        tables: Vec::new(),
        funcs: Vec::new(),
        views: 0,
        default_schema: "public",
        next: 0,
        ops: Vec::new(),
    };
    // Numbered by hand (`9_…` runs before `10_…`, though it sorts after it) or by date; either
    // way in the order written, after the framework's own versions.
    let by_hand = rng.random_bool(0.5);
    let mut files = vec![(name_of(by_hand, 0), BASE.to_owned())];
    let count = rng.random_range(2..=5);
    for n in 1..=count {
        let mut sql = String::new();
        // Every history has tables and functions to claim and call.
        if n == 1 {
            for _ in 0..2 {
                sql += &m.create_table(rng);
            }
            sql += &m.create_function(rng);
        }
        for _ in 0..rng.random_range(2..=5) {
            sql += &m.step(rng);
        }
        let name = name_of(by_hand, n);
        if rng.random_bool(0.2) {
            // A reversible pair: the down file would undo everything, and sqlx never runs it
            // forward.
            files.push((
                name.replace(".sql", ".down.sql"),
                "DROP TABLE ledger CASCADE;\n".to_owned(),
            ));
            files.push((name.replace(".sql", ".up.sql"), sql));
        } else {
            files.push((name, sql));
        }
    }
    History { files, ops: m.ops }
}

/// The name of file `n`: hand-numbered (`1_`, then `9_`, `10_`, …) or by date (after the
/// framework's versions, which a prepare applies first).
fn name_of(by_hand: bool, n: usize) -> String {
    match (by_hand, n) {
        (true, 0) => "1_base.sql".to_owned(),
        (true, n) => format!("{}_step_{n}.sql", 8 + n),
        (false, n) => format!("2027010{n}000000_step_{n}.sql"),
    }
}

impl Model {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    fn step(&mut self, rng: &mut StdRng) -> String {
        let choice = rng.random_range(0..18);
        match choice {
            0 | 1 => self.create_table(rng),
            2 => self.create_partitioned(rng),
            3 => self.create_inheriting(rng),
            4 => self.create_view(rng),
            5 | 6 => self.create_function(rng),
            7 => self.rename_column(rng),
            8 => self.add_or_drop_column(rng),
            9 => self.rename_table(rng),
            10 => self.alter_function(rng),
            11 => self.rename_function(rng),
            12 => self.trigger(rng),
            13 => self.if_not_exists(rng),
            14 => self.do_block(rng),
            15 => self.search_path(rng),
            16 => self.drop_something(rng),
            _ => self.trigger(rng),
        }
    }

    fn pick_table(&self, rng: &mut StdRng, plain: bool) -> Option<usize> {
        let candidates: Vec<usize> = (0..self.tables.len())
            .filter(|&i| !plain || (!self.tables[i].child && !self.tables[i].partitioned))
            .collect();
        (!candidates.is_empty()).then(|| candidates[rng.random_range(0..candidates.len())])
    }

    fn qualified(schema: &str, name: &str) -> String {
        format!("{schema}.{name}")
    }

    fn create_table(&mut self, rng: &mut StdRng) -> String {
        self.ops.push("create table");
        let schema = if rng.random_bool(0.2) {
            "app"
        } else {
            self.default_schema
        };
        let name = self.fresh("t");
        let mut columns = vec![("id".to_owned(), "bigint")];
        for _ in 0..rng.random_range(1..=3) {
            let (ty, _) = TYPES[rng.random_range(0..TYPES.len())];
            columns.push((self.fresh("c"), ty));
        }
        let list: Vec<String> = columns.iter().map(|(c, t)| format!("{c} {t}")).collect();
        let written = if schema == self.default_schema && rng.random_bool(0.5) {
            name.clone()
        } else {
            Self::qualified(schema, &name)
        };
        self.tables.push(Table {
            schema,
            name,
            columns,
            children: Vec::new(),
            partitioned: false,
            child: false,
        });
        format!(
            "CREATE TABLE {written} ({}, PRIMARY KEY (id));\n",
            list.join(", ")
        )
    }

    fn create_partitioned(&mut self, rng: &mut StdRng) -> String {
        self.ops.push("partition");
        let parent = self.fresh("p");
        let part = self.fresh("p");
        let column = self.fresh("c");
        let schema = self.default_schema;
        let columns = vec![
            ("id".to_owned(), "bigint"),
            ("kind".to_owned(), "text"),
            (column.clone(), TYPES[rng.random_range(0..TYPES.len())].0),
        ];
        let sql = format!(
            "CREATE TABLE {schema}.{parent} (id bigint NOT NULL, kind text NOT NULL, {column} {}) \
             PARTITION BY LIST (kind);\n\
             CREATE TABLE {schema}.{part} PARTITION OF {schema}.{parent} FOR VALUES IN ('a');\n",
            columns[2].1
        );
        self.tables.push(Table {
            schema,
            name: parent,
            columns: columns.clone(),
            children: vec![part.clone()],
            partitioned: true,
            child: false,
        });
        self.tables.push(Table {
            schema,
            name: part,
            columns,
            children: Vec::new(),
            partitioned: false,
            child: true,
        });
        sql
    }

    fn create_inheriting(&mut self, rng: &mut StdRng) -> String {
        let Some(parent) = self.pick_table(rng, true) else {
            return self.create_table(rng);
        };
        self.ops.push("inherits");
        let name = self.fresh("i");
        let extra = self.fresh("c");
        let (schema, parent_name) = (self.tables[parent].schema, self.tables[parent].name.clone());
        let mut columns = self.tables[parent].columns.clone();
        columns.push((extra.clone(), "integer"));
        self.tables[parent].children.push(name.clone());
        self.tables.push(Table {
            schema,
            name: name.clone(),
            columns,
            children: Vec::new(),
            partitioned: false,
            child: true,
        });
        format!(
            "CREATE TABLE {schema}.{name} ({extra} integer) INHERITS ({schema}.{parent_name});\n"
        )
    }

    fn create_view(&mut self, rng: &mut StdRng) -> String {
        let Some(t) = self.pick_table(rng, false) else {
            return self.create_table(rng);
        };
        self.ops.push("view");
        self.views += 1;
        let table = &self.tables[t];
        let name = format!("v{}", self.views);
        // Not `id`: the view has it as its first column.
        let others: Vec<&String> = table.columns.iter().skip(1).map(|(c, _)| c).collect();
        if others.is_empty() {
            return String::new();
        }
        let other = others[rng.random_range(0..others.len())];
        let column = match rng.random_range(0..3) {
            0 => format!("{other}::text"),
            1 => format!("coalesce({other}::text, '')"),
            _ => format!("{other} AS renamed_{other}"),
        };
        let filter = if rng.random_bool(0.5) {
            " WHERE id > 0"
        } else {
            ""
        };
        let limit = if rng.random_bool(0.3) {
            " LIMIT 100"
        } else {
            ""
        };
        format!(
            "CREATE VIEW {}.{name} AS SELECT id, {column} FROM {}.{}{filter}{limit};\n",
            self.default_schema, table.schema, table.name
        )
    }

    fn create_function(&mut self, rng: &mut StdRng) -> String {
        self.ops.push("function");
        // An overload of an existing name now and then.
        let name = match self.funcs.len() {
            n if n > 0 && rng.random_bool(0.4) => self.funcs[rng.random_range(0..n)].name.clone(),
            _ => self.fresh("f"),
        };
        let arg = match rng.random_range(0..4) {
            0 => "integer".to_owned(),
            1 => "bigint".to_owned(),
            2 => "text".to_owned(),
            _ => match self.pick_table(rng, true) {
                // A function of a table's row, called in attribute notation too.
                Some(t) => self.tables[t].name.clone(),
                None => "integer".to_owned(),
            },
        };
        let schema = if rng.random_bool(0.15) {
            "app"
        } else {
            self.default_schema
        };
        if self
            .funcs
            .iter()
            .any(|f| f.name == name && f.arg == arg && f.schema == schema)
        {
            return String::new();
        }
        let volatile = rng.random_bool(0.5);
        // A VOLATILE function mostly writes `ledger` (and fails if a later migration makes it
        // STABLE: PostgreSQL refuses an INSERT in a non-volatile function).
        let body = if volatile && rng.random_bool(0.8) {
            "BEGIN INSERT INTO public.ledger DEFAULT VALUES; RETURN 1; END"
        } else {
            "BEGIN RETURN 1; END"
        };
        let volatility = if volatile { "VOLATILE" } else { "STABLE" };
        let arg_type = self.type_of(&arg);
        self.funcs.push(Func {
            schema,
            name: name.clone(),
            arg,
            volatile,
        });
        format!(
            "CREATE FUNCTION {schema}.{name}(x {arg_type}) RETURNS integer LANGUAGE plpgsql \
             {volatility} AS $$ {body} $$;\n"
        )
    }

    /// The qualified row type of a table by its name.
    fn table_type(&self, name: &str) -> String {
        self.tables.iter().find(|t| t.name == name).map_or_else(
            || "integer".to_owned(),
            |t| format!("{}.{}", t.schema, t.name),
        )
    }

    fn rename_column(&mut self, rng: &mut StdRng) -> String {
        let Some(t) = self
            .pick_table(rng, false)
            .filter(|&t| !self.tables[t].child)
        else {
            return String::new();
        };
        let columns = self.tables[t].columns.len();
        if columns < 2 || self.tables[t].partitioned && columns < 4 {
            return String::new();
        }
        // Not `id` (claims key on it), nor a partition key.
        let c = rng.random_range(if self.tables[t].partitioned { 2 } else { 1 }..columns);
        self.ops.push("rename column");
        let old = self.tables[t].columns[c].0.clone();
        let new = self.fresh("c");
        let children = self.tables[t].children.clone();
        let parent = self.tables[t].name.clone();
        for table in self.tables.iter_mut() {
            if table.name == parent || children.contains(&table.name) {
                for column in table.columns.iter_mut().filter(|(n, _)| *n == old) {
                    column.0.clone_from(&new);
                }
            }
        }
        let table = &self.tables[t];
        format!(
            "ALTER TABLE {}.{} RENAME COLUMN {old} TO {new};\n",
            table.schema, table.name
        )
    }

    fn add_or_drop_column(&mut self, rng: &mut StdRng) -> String {
        let Some(t) = self.pick_table(rng, true) else {
            return String::new();
        };
        if !self.tables[t].children.is_empty() {
            return String::new();
        }
        let table = self.tables[t].clone();
        if rng.random_bool(0.6) || table.columns.len() < 3 {
            self.ops.push("add column");
            let column = self.fresh("c");
            let (ty, _) = TYPES[rng.random_range(0..TYPES.len())];
            self.tables[t].columns.push((column.clone(), ty));
            format!(
                "ALTER TABLE {}.{} ADD COLUMN {column} {ty};\n",
                table.schema, table.name
            )
        } else {
            self.ops.push("drop column");
            let c = rng.random_range(1..table.columns.len());
            let column = self.tables[t].columns.remove(c).0;
            // Views and functions that depend on it go with it.
            format!(
                "ALTER TABLE {}.{} DROP COLUMN {column} CASCADE;\n",
                table.schema, table.name
            )
        }
    }

    fn rename_table(&mut self, rng: &mut StdRng) -> String {
        let Some(t) = self.pick_table(rng, true) else {
            return String::new();
        };
        if self.funcs.iter().any(|f| f.arg == self.tables[t].name) {
            return String::new();
        }
        self.ops.push("rename table");
        let new = self.fresh("t");
        let old = std::mem::replace(&mut self.tables[t].name, new.clone());
        format!(
            "ALTER TABLE {}.{old} RENAME TO {new};\n",
            self.tables[t].schema
        )
    }

    fn alter_function(&mut self, rng: &mut StdRng) -> String {
        if self.funcs.is_empty() {
            return self.create_function(rng);
        }
        self.ops.push("alter function");
        let f = rng.random_range(0..self.funcs.len());
        self.funcs[f].volatile = !self.funcs[f].volatile;
        let func = self.funcs[f].clone();
        let volatility = if func.volatile { "VOLATILE" } else { "STABLE" };
        format!(
            "ALTER FUNCTION {}.{}({}) {volatility};\n",
            func.schema,
            func.name,
            self.type_of(&func.arg)
        )
    }

    fn type_of(&self, arg: &str) -> String {
        if TYPES.iter().any(|(t, _)| *t == arg) {
            arg.to_owned()
        } else {
            self.table_type(arg)
        }
    }

    /// Renames a function to a fresh name, or over the name of one it then replaces (dropped
    /// first).
    fn rename_function(&mut self, rng: &mut StdRng) -> String {
        if self.funcs.len() < 2 {
            return self.create_function(rng);
        }
        self.ops.push("rename function");
        let f = rng.random_range(0..self.funcs.len());
        let func = self.funcs[f].clone();
        let target = self
            .funcs
            .iter()
            .position(|g| g.name != func.name && g.arg == func.arg && g.schema == func.schema);
        let arg = self.type_of(&func.arg);
        let mut sql = String::new();
        let new = match target {
            Some(g) if rng.random_bool(0.6) => {
                let old = self.funcs.remove(g);
                sql += &format!("DROP FUNCTION {}.{}({arg});\n", old.schema, old.name);
                old.name
            }
            _ => self.fresh("f"),
        };
        if let Some(func) = self
            .funcs
            .iter_mut()
            .find(|g| g.name == func.name && g.arg == func.arg && g.schema == func.schema)
        {
            func.name.clone_from(&new);
        }
        sql + &format!(
            "ALTER FUNCTION {}.{}({arg}) RENAME TO {new};\n",
            func.schema, func.name
        )
    }

    fn trigger(&mut self, rng: &mut StdRng) -> String {
        let Some(t) = self.pick_table(rng, true) else {
            return String::new();
        };
        let each = if rng.random_bool(0.5) {
            self.ops.push("statement trigger");
            "STATEMENT"
        } else {
            self.ops.push("row trigger");
            "ROW"
        };
        let event = ["UPDATE", "DELETE", "INSERT", "UPDATE OR DELETE"][rng.random_range(0..4)];
        let name = self.fresh("trg");
        let table = &self.tables[t];
        format!(
            "CREATE TRIGGER {name} AFTER {event} ON {}.{} FOR EACH {each} \
             EXECUTE FUNCTION public.ledger_note();\n",
            table.schema, table.name
        )
    }

    /// `CREATE TABLE IF NOT EXISTS` of an existing table, with other columns: the server skips
    /// it.
    fn if_not_exists(&mut self, rng: &mut StdRng) -> String {
        let Some(t) = self.pick_table(rng, true) else {
            return self.create_table(rng);
        };
        self.ops.push("if not exists");
        let table = &self.tables[t];
        format!(
            "CREATE TABLE IF NOT EXISTS {}.{} (id bigint, take_budget integer, extra integer);\n",
            table.schema, table.name
        )
    }

    /// DDL the migration runs with `EXECUTE` in a `DO` block: a column added, or a function
    /// created.
    fn do_block(&mut self, rng: &mut StdRng) -> String {
        self.ops.push("do block");
        let inner = if rng.random_bool(0.5) {
            self.add_or_drop_column(rng)
        } else {
            self.create_function(rng)
        };
        if inner.is_empty() {
            return inner;
        }
        // The statement as a dollar-quoted string: the function bodies use `$$`, so `$ddl$`.
        format!(
            "DO $do$ BEGIN EXECUTE $ddl${}$ddl$; END $do$;\n",
            inner.trim_end().trim_end_matches(';')
        )
    }

    /// `SET search_path`: sqlx runs every migration on one session, so the later files'
    /// unqualified names are created in `app` too (the catalog's default path stays `public`).
    fn search_path(&mut self, rng: &mut StdRng) -> String {
        if self.default_schema == "app" || rng.random_bool(0.5) {
            return String::new();
        }
        self.ops.push("search path");
        self.default_schema = "app";
        "SET search_path = app, public;\n".to_owned()
    }

    fn drop_something(&mut self, rng: &mut StdRng) -> String {
        if rng.random_bool(0.5) && !self.funcs.is_empty() {
            self.ops.push("drop function");
            let f = self.funcs.remove(rng.random_range(0..self.funcs.len()));
            return format!(
                "DROP FUNCTION {}.{}({});\n",
                f.schema,
                f.name,
                self.type_of(&f.arg)
            );
        }
        let Some(t) = self.pick_table(rng, true) else {
            return String::new();
        };
        if self.tables.len() < 3 || !self.tables[t].children.is_empty() {
            return String::new();
        }
        self.ops.push("drop table");
        let table = self.tables.remove(t);
        self.funcs.retain(|f| f.arg != table.name);
        format!("DROP TABLE {}.{} CASCADE;\n", table.schema, table.name)
    }
}
