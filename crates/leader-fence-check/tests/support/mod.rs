//! A prepared schema written by hand, for the rules' tests: what `leaderctl schema prepare` reads
//! from PostgreSQL's catalog, for tables, views and functions given in short form. (The catalog
//! reader itself is tested against PostgreSQL: `crates/leaderctl/tests/prepare.rs`, and the
//! differential's migration histories.)

#![allow(dead_code)]

use leader_fence_check::Schema;
use leader_schema::PreparedSchema;
use leader_schema::model::*;

/// A schema under construction.
pub struct Prepared(PreparedSchema);

/// An empty schema.
pub fn prepared() -> Prepared {
    Prepared(PreparedSchema::new("migrations", "sha256:00"))
}

/// `app.jobs` or `jobs` (in `public`).
fn name(text: &str) -> QualifiedName {
    match text.split_once('.') {
        Some((schema, name)) => QualifiedName::new(schema, name),
        None => QualifiedName::new("public", text),
    }
}

/// `id bigint, owner text`.
fn columns(text: &str) -> Vec<Column> {
    text.split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| {
            let (name, type_name) = c.split_once(' ').unwrap_or((c, "bigint"));
            Column::new(name, type_name.trim())
        })
        .collect()
}

impl Prepared {
    pub fn table(mut self, relation: &str, cols: &str) -> Prepared {
        self.relation_only(Relation::new(
            name(relation),
            RelationKind::Table,
            columns(cols),
        ));
        self
    }

    fn relation_only(&mut self, mut r: Relation) -> &mut Relation {
        if matches!(r.kind, RelationKind::Table | RelationKind::PartitionedTable) {
            r.system_columns = ["ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"]
                .map(str::to_owned)
                .to_vec();
        }
        self.0.relations.push(r);
        self.0.relations.last_mut().expect("pushed")
    }

    pub fn view(mut self, relation: &str, cols: &str, reads: &[&str]) -> Prepared {
        let r = self.relation_only(Relation::new(
            name(relation),
            RelationKind::View,
            columns(cols),
        ));
        r.reads = reads.iter().map(|r| name(r)).collect();
        self
    }

    /// A view PostgreSQL says is automatically updatable, with its definition as
    /// `pg_get_viewdef` prints it.
    pub fn updatable_view(
        mut self,
        relation: &str,
        cols: &str,
        reads: &[&str],
        definition: &str,
    ) -> Prepared {
        let r = self.relation_only(Relation::new(
            name(relation),
            RelationKind::View,
            columns(cols),
        ));
        r.reads = reads.iter().map(|r| name(r)).collect();
        r.definition = Some(definition.to_owned());
        r.updatable = true;
        self
    }

    pub fn foreign_table(mut self, relation: &str, cols: &str) -> Prepared {
        self.relation_only(Relation::new(
            name(relation),
            RelationKind::ForeignTable,
            columns(cols),
        ));
        self
    }

    pub fn with_rule(mut self, relation: &str, event: Event) -> Prepared {
        let wanted = name(relation);
        let r = self
            .0
            .relations
            .iter_mut()
            .find(|r| r.name == wanted)
            .expect("the relation is there");
        r.rules.push(event);
        self
    }

    pub fn statement_trigger(
        mut self,
        relation: &str,
        trigger: &str,
        events: &[Event],
    ) -> Prepared {
        let wanted = name(relation);
        let r = self
            .0
            .relations
            .iter_mut()
            .find(|r| r.name == wanted)
            .expect("the relation is there");
        r.statement_triggers.push(Trigger {
            name: trigger.to_owned(),
            events: events.to_vec(),
        });
        self
    }

    pub fn function(mut self, function: &str, args: &str, volatility: Volatility) -> Prepared {
        let args = args
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect();
        self.0
            .functions
            .push(Function::new(name(function), args, "integer", volatility));
        self
    }

    pub fn aggregate(mut self, function: &str, args: &str) -> Prepared {
        self = self.function(function, args, Volatility::Immutable);
        let last = self.0.functions.pop().expect("pushed");
        self.0
            .functions
            .push(last.with_kind(FunctionKind::Aggregate));
        self
    }

    pub fn shard_key(mut self, table: &str, column: &str) -> Prepared {
        self.0.shard_keys.push(ShardKey {
            table: name(table),
            column: column.to_owned(),
        });
        self
    }

    /// The schema, with the types its columns and arguments name (a relation's name is its row
    /// type) and the implicit casts between integer types.
    pub fn schema(mut self) -> Schema {
        let relations: Vec<String> = self
            .0
            .relations
            .iter()
            .map(|r| r.name.name.clone())
            .collect();
        let mut types: Vec<String> = self
            .0
            .relations
            .iter()
            .flat_map(|r| r.columns.iter().map(|c| c.type_name.clone()))
            .chain(self.0.functions.iter().flat_map(|f| f.args.clone()))
            .chain(["integer", "bigint", "numeric", "text", "boolean"].map(str::to_owned))
            .collect();
        types.sort();
        types.dedup();
        self.0.types = types
            .into_iter()
            .map(|t| TypeInfo {
                kind: if relations.contains(&t) {
                    TypeKind::Composite
                } else {
                    TypeKind::Base
                },
                name: t,
            })
            .collect();
        self.0.casts = [
            ("smallint", "integer"),
            ("smallint", "bigint"),
            ("integer", "bigint"),
            ("integer", "numeric"),
            ("bigint", "numeric"),
        ]
        .map(|(source, target)| Cast {
            source: source.to_owned(),
            target: target.to_owned(),
        })
        .to_vec();
        Schema::new(self.0, "the test's schema")
            .with_declare_hint("declare it in `leader-tables.sql`")
    }
}
