//! Reads PostgreSQL's catalog into a [`PreparedSchema`]: the relations, columns, functions,
//! statement-level triggers, rules, types and implicit casts of every schema but `pg_catalog` and
//! `information_schema`, the default search path, the role CHECK, the roles' shard counts and the
//! declared shard keys.
//!
//! Every name is as PostgreSQL reports it (a view's columns as the server named them, a
//! partition's columns after every rename), and every type is `format_type` without its
//! modifier (`bigint`, `character varying`, `timestamp with time zone`).

use std::collections::{BTreeSet, HashMap};

use leader_schema::PreparedSchema;
use leader_schema::model::*;
use sqlx::{PgConnection, Row};

/// The schemas left out: the server's own.
const OWN_SCHEMAS: &str = "n.nspname NOT IN ('pg_catalog', 'information_schema') \
                           AND n.nspname !~ '^pg_toast' AND n.nspname !~ '^pg_temp'";

/// The types whose implicit casts the file keeps besides those of columns and arguments: the
/// types of the literals a claim writes (`1`, `1.5`, `true`, `'x'::text`).
const LITERAL_TYPES: [&str; 5] = ["integer", "bigint", "numeric", "boolean", "text"];

/// Reads the catalog of the database `conn` is connected to. `conn` should be a new session, so
/// that its search path is the database's default (a migration's `SET search_path` does not
/// outlive its session).
///
/// # Errors
///
/// The driver's, if a query fails.
pub async fn read(conn: &mut PgConnection) -> Result<PreparedSchema, sqlx::Error> {
    let mut schema = PreparedSchema::default();
    schema.search_path = sqlx::query_scalar("SELECT current_schemas(true)::text[]")
        .fetch_one(&mut *conn)
        .await?;
    let mut relations = relations(conn).await?;
    columns(conn, &mut relations).await?;
    relation_details(conn, &mut relations).await?;
    schema.functions = functions(conn).await?;
    let mut type_names: BTreeSet<String> = LITERAL_TYPES.iter().map(|t| (*t).to_owned()).collect();
    for relation in relations.values() {
        type_names.extend(relation.columns.iter().map(|c| c.type_name.clone()));
    }
    for function in &schema.functions {
        type_names.extend(function.args.iter().cloned());
    }
    schema.relations = relations.into_values().collect();
    let type_names: Vec<String> = type_names.into_iter().collect();
    schema.types = types(conn, &type_names).await?;
    schema.casts = casts(conn, &type_names).await?;
    roles(conn, &mut schema).await?;
    schema.shard_keys = shard_keys(conn).await?;
    schema.normalize();
    Ok(schema)
}

/// Every relation, by its oid.
async fn relations(conn: &mut PgConnection) -> Result<HashMap<i64, Relation>, sqlx::Error> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'c') AND {OWN_SCHEMAS}"
    )))
    .fetch_all(&mut *conn)
    .await?;
    let mut relations = HashMap::new();
    for row in rows {
        let kind = match row.try_get::<String, _>(3)?.as_str() {
            "r" => RelationKind::Table,
            "p" => RelationKind::PartitionedTable,
            "v" => RelationKind::View,
            "m" => RelationKind::MaterializedView,
            "f" => RelationKind::ForeignTable,
            _ => RelationKind::CompositeType,
        };
        let name = QualifiedName::new(row.try_get::<String, _>(1)?, row.try_get::<String, _>(2)?);
        relations.insert(row.try_get(0)?, Relation::new(name, kind, Vec::new()));
    }
    Ok(relations)
}

async fn columns(
    conn: &mut PgConnection,
    relations: &mut HashMap<i64, Relation>,
) -> Result<(), sqlx::Error> {
    let rows = sqlx::query(
        "SELECT a.attrelid::int8, a.attname::text, format_type(a.atttypid, NULL), a.attnum::int4
           FROM pg_attribute a
          WHERE a.attnum <> 0 AND NOT a.attisdropped
          ORDER BY a.attrelid, a.attnum",
    )
    .fetch_all(&mut *conn)
    .await?;
    for row in rows {
        let Some(relation) = relations.get_mut(&row.try_get::<i64, _>(0)?) else {
            continue;
        };
        let name: String = row.try_get(1)?;
        if row.try_get::<i32, _>(3)? < 0 {
            relation.system_columns.push(name);
        } else {
            relation
                .columns
                .push(Column::new(name, row.try_get::<String, _>(2)?));
        }
    }
    Ok(())
}

/// Parents, the relations a view reads, statement-level triggers and rules.
async fn relation_details(
    conn: &mut PgConnection,
    relations: &mut HashMap<i64, Relation>,
) -> Result<(), sqlx::Error> {
    let parents = sqlx::query(
        "SELECT i.inhrelid::int8, n.nspname::text, c.relname::text
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhparent
           JOIN pg_namespace n ON n.oid = c.relnamespace",
    )
    .fetch_all(&mut *conn)
    .await?;
    for row in parents {
        if let Some(relation) = relations.get_mut(&row.try_get::<i64, _>(0)?) {
            relation.parents.push(QualifiedName::new(
                row.try_get::<String, _>(1)?,
                row.try_get::<String, _>(2)?,
            ));
        }
    }
    let reads = sqlx::query(
        "SELECT DISTINCT r.ev_class::int8, n.nspname::text, c.relname::text
           FROM pg_rewrite r
           JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
                           AND d.refclassid = 'pg_class'::regclass
           JOIN pg_class c ON c.oid = d.refobjid
           JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE r.rulename = '_RETURN' AND d.refobjid <> r.ev_class",
    )
    .fetch_all(&mut *conn)
    .await?;
    for row in reads {
        if let Some(relation) = relations.get_mut(&row.try_get::<i64, _>(0)?) {
            relation.reads.push(QualifiedName::new(
                row.try_get::<String, _>(1)?,
                row.try_get::<String, _>(2)?,
            ));
        }
    }
    // tgtype: bit 0 ROW, 2 INSERT, 3 DELETE, 4 UPDATE, 5 TRUNCATE (PostgreSQL's trigger.h).
    let triggers = sqlx::query(
        "SELECT tgrelid::int8, tgname::text, tgtype::int4 FROM pg_trigger
          WHERE NOT tgisinternal AND tgenabled <> 'D' AND tgtype::int4 & 1 = 0",
    )
    .fetch_all(&mut *conn)
    .await?;
    for row in triggers {
        if let Some(relation) = relations.get_mut(&row.try_get::<i64, _>(0)?) {
            let bits: i32 = row.try_get(2)?;
            let events = [
                (4, Event::Insert),
                (8, Event::Delete),
                (16, Event::Update),
                (32, Event::Truncate),
            ]
            .into_iter()
            .filter(|(bit, _)| bits & bit != 0)
            .map(|(_, event)| event)
            .collect();
            relation.statement_triggers.push(Trigger {
                name: row.try_get(1)?,
                events,
            });
        }
    }
    // A view PostgreSQL rewrites into its one table: automatically updatable for UPDATE (4) and
    // DELETE (16) (`pg_relation_is_updatable`'s bits), no INSTEAD OF trigger (tgtype bit 6), no
    // security barrier (which keeps the planner from reading it as its table's rows).
    let views = sqlx::query(
        "SELECT c.oid::int8, pg_get_viewdef(c.oid),
                pg_relation_is_updatable(c.oid, false) & 20 = 20
                AND NOT EXISTS (SELECT 1 FROM pg_trigger t
                                 WHERE t.tgrelid = c.oid AND t.tgtype::int4 & 64 <> 0)
                AND NOT EXISTS (SELECT 1 FROM pg_options_to_table(c.reloptions) o
                                 WHERE o.option_name = 'security_barrier'
                                   AND o.option_value::boolean)
           FROM pg_class c WHERE c.relkind = 'v'",
    )
    .fetch_all(&mut *conn)
    .await?;
    for row in views {
        if let Some(relation) = relations.get_mut(&row.try_get::<i64, _>(0)?) {
            relation.definition = row.try_get(1)?;
            relation.updatable = row.try_get(2)?;
        }
    }
    let rules = sqlx::query(
        "SELECT ev_class::int8, ev_type::text FROM pg_rewrite WHERE rulename <> '_RETURN'",
    )
    .fetch_all(&mut *conn)
    .await?;
    for row in rules {
        if let Some(relation) = relations.get_mut(&row.try_get::<i64, _>(0)?) {
            let event = match row.try_get::<String, _>(1)?.as_str() {
                "2" => Event::Update,
                "3" => Event::Insert,
                "4" => Event::Delete,
                _ => continue,
            };
            relation.rules.push(event);
        }
    }
    Ok(())
}

async fn functions(conn: &mut PgConnection) -> Result<Vec<Function>, sqlx::Error> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT n.nspname::text, p.proname::text, p.prokind::text, p.provolatile::text,
                p.proretset, format_type(p.prorettype, NULL),
                ARRAY(SELECT format_type(a.t, NULL)
                        FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, i)
                       ORDER BY a.i),
                p.pronargdefaults::int4, p.provariadic <> 0
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE {OWN_SCHEMAS}"
    )))
    .fetch_all(&mut *conn)
    .await?;
    let mut functions = Vec::new();
    for row in rows {
        let kind = match row.try_get::<String, _>(2)?.as_str() {
            "a" => FunctionKind::Aggregate,
            "w" => FunctionKind::Window,
            "p" => FunctionKind::Procedure,
            _ => FunctionKind::Function,
        };
        let volatility = match row.try_get::<String, _>(3)?.as_str() {
            "i" => Volatility::Immutable,
            "s" => Volatility::Stable,
            _ => Volatility::Volatile,
        };
        let name = QualifiedName::new(row.try_get::<String, _>(0)?, row.try_get::<String, _>(1)?);
        let mut function = Function::new(
            name,
            row.try_get(6)?,
            row.try_get::<String, _>(5)?,
            volatility,
        )
        .with_kind(kind)
        .with_optional_args(
            usize::try_from(row.try_get::<i32, _>(7)?).unwrap_or(0),
            row.try_get(8)?,
        );
        function.returns_set = row.try_get(4)?;
        functions.push(function);
    }
    Ok(functions)
}

async fn types(conn: &mut PgConnection, names: &[String]) -> Result<Vec<TypeInfo>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT DISTINCT format_type(t.oid, NULL), t.typtype::text, t.typcategory::text
           FROM pg_type t WHERE format_type(t.oid, NULL) = ANY($1)",
    )
    .bind(names)
    .fetch_all(&mut *conn)
    .await?;
    let mut types = Vec::new();
    for row in rows {
        let category: String = row.try_get(2)?;
        let kind = match row.try_get::<String, _>(1)?.as_str() {
            _ if category == "A" => TypeKind::Array,
            "c" => TypeKind::Composite,
            "d" => TypeKind::Domain,
            "e" => TypeKind::Enum,
            "p" => TypeKind::Pseudo,
            "r" | "m" => TypeKind::Range,
            _ => TypeKind::Base,
        };
        types.push(TypeInfo {
            name: row.try_get(0)?,
            kind,
        });
    }
    Ok(types)
}

async fn casts(conn: &mut PgConnection, names: &[String]) -> Result<Vec<Cast>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT DISTINCT format_type(castsource, NULL), format_type(casttarget, NULL)
           FROM pg_cast
          WHERE castcontext = 'i' AND castsource <> casttarget
            AND format_type(castsource, NULL) = ANY($1) AND format_type(casttarget, NULL) = ANY($1)",
    )
    .bind(names)
    .fetch_all(&mut *conn)
    .await?;
    rows.into_iter()
        .map(|row| {
            Ok(Cast {
                source: row.try_get(0)?,
                target: row.try_get(1)?,
            })
        })
        .collect()
}

/// The role CHECK and the roles' shard counts, where the framework's table is there.
async fn roles(conn: &mut PgConnection, schema: &mut PreparedSchema) -> Result<(), sqlx::Error> {
    let leases: Option<String> = sqlx::query_scalar("SELECT to_regclass('leader_leases')::text")
        .fetch_one(&mut *conn)
        .await?;
    let Some(leases) = leases else {
        return Ok(());
    };
    let definition: Option<String> = sqlx::query_scalar(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint
          WHERE conrelid = to_regclass('leader_leases') AND conname = $1",
    )
    .bind(leader_role_name::ROLE_CONSTRAINT)
    .fetch_optional(&mut *conn)
    .await?;
    schema.role_check = definition.map(|d| leader_role_name::roles_in_check(&d));
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT role, max(shard_count)::int8 FROM {leases} GROUP BY role"
    )))
    .fetch_all(&mut *conn)
    .await?;
    for row in rows {
        schema.role_shards.push(RoleShards {
            role: row.try_get(0)?,
            shard_count: u32::try_from(row.try_get::<i64, _>(1)?).unwrap_or(0),
        });
    }
    Ok(())
}

async fn shard_keys(conn: &mut PgConnection) -> Result<Vec<ShardKey>, sqlx::Error> {
    let keys: Option<String> = sqlx::query_scalar("SELECT to_regclass('leader_shard_keys')::text")
        .fetch_one(&mut *conn)
        .await?;
    let Some(keys) = keys else {
        return Ok(Vec::new());
    };
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT n.nspname::text, c.relname::text, a.attname::text
           FROM {keys} k JOIN pg_class c ON c.oid = k.relation
           JOIN pg_namespace n ON n.oid = c.relnamespace
           JOIN pg_attribute a ON a.attrelid = k.relation AND a.attnum = k.key_attnum
                               AND NOT a.attisdropped"
    )))
    .fetch_all(&mut *conn)
    .await?;
    rows.into_iter()
        .map(|row| {
            Ok(ShardKey {
                table: QualifiedName::new(
                    row.try_get::<String, _>(0)?,
                    row.try_get::<String, _>(1)?,
                ),
                column: row.try_get(2)?,
            })
        })
        .collect()
}
