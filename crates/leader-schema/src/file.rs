//! The file's text: JSON, written by hand so that the layout never depends on serde_json's
//! features (key order, spacing): top-level keys in a fixed order, one relation, function, type
//! or cast a line, lists sorted ([`PreparedSchema::normalize`]). A change of one column or one
//! function's volatility is a one-line diff.

use serde_json::{Map, Value};

use crate::model::*;
use crate::{FORMAT, PREPARE_COMMAND, PreparedSchema};

impl PreparedSchema {
    /// The file's text (normalized: equal catalogs give equal texts).
    pub fn to_file_text(&self) -> String {
        let mut schema = self.clone();
        schema.normalize();
        let mut out = String::from("{\n");
        let mut field = |key: &str, value: String| {
            out.push_str(&format!("{}: {value},\n", json(key)));
        };
        field("leader_schema", FORMAT.to_string());
        field("prepared_by", json(PREPARE_COMMAND));
        field("migrations", json(&schema.migrations));
        field("fingerprint", json(&schema.fingerprint));
        field("search_path", strings(&schema.search_path));
        field(
            "role_check",
            schema
                .role_check
                .as_ref()
                .map_or_else(|| "null".to_owned(), |roles| strings(roles)),
        );
        field(
            "role_shards",
            lines(
                schema
                    .role_shards
                    .iter()
                    .map(|r| format!("[{},{}]", json(&r.role), r.shard_count)),
            ),
        );
        field(
            "shard_keys",
            lines(
                schema
                    .shard_keys
                    .iter()
                    .map(|k| format!("[{},{}]", name(&k.table), json(&k.column))),
            ),
        );
        field("relations", lines(schema.relations.iter().map(relation)));
        field("functions", lines(schema.functions.iter().map(function)));
        field(
            "types",
            lines(
                schema
                    .types
                    .iter()
                    .map(|t| format!("[{},{}]", json(&t.name), json(t.kind.word()))),
            ),
        );
        out.push_str(&format!(
            "{}: {}\n}}\n",
            json("casts"),
            lines(schema.casts.iter().map(|c| format!(
                "[{},{}]",
                json(&c.source),
                json(&c.target)
            )))
        ));
        out
    }

    /// Reads a file's text back.
    ///
    /// # Errors
    ///
    /// What is malformed, or that the file is of another format version, with the command
    /// that rewrites it.
    pub fn from_file_text(text: &str) -> Result<PreparedSchema, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("it is not valid JSON: {e}"))?;
        let top = value.as_object().ok_or("it is not a JSON object")?;
        match top.get("leader_schema").and_then(Value::as_u64) {
            Some(FORMAT) => {}
            Some(other) => {
                return Err(format!(
                    "it is of format {other}, and this build reads format {FORMAT}: run \
                     `{PREPARE_COMMAND}` with the leaderctl of the leader-runtime version the \
                     crate builds with"
                ));
            }
            None => return Err("it has no `leader_schema` format number".to_owned()),
        }
        let role_check = match top.get("role_check") {
            None | Some(Value::Null) => None,
            Some(roles) => Some(string_list(Some(roles), "role_check")?),
        };
        let mut schema = PreparedSchema {
            migrations: text_of(top, "migrations")?,
            fingerprint: text_of(top, "fingerprint")?,
            search_path: string_list(top.get("search_path"), "search_path")?,
            role_check,
            ..PreparedSchema::default()
        };
        for item in items(top, "role_shards")? {
            let [role, count] = pair(item, "role_shards")?;
            schema.role_shards.push(RoleShards {
                role: str_of(role, "role_shards")?,
                shard_count: count
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or("a shard count is not a number")?,
            });
        }
        for item in items(top, "shard_keys")? {
            let [table, column] = pair(item, "shard_keys")?;
            schema.shard_keys.push(ShardKey {
                table: qualified(table, "shard_keys")?,
                column: str_of(column, "shard_keys")?,
            });
        }
        for item in items(top, "relations")? {
            schema.relations.push(read_relation(item)?);
        }
        for item in items(top, "functions")? {
            schema.functions.push(read_function(item)?);
        }
        for item in items(top, "types")? {
            let [name, kind] = pair(item, "types")?;
            schema.types.push(TypeInfo {
                name: str_of(name, "types")?,
                kind: word(kind, &TypeKind::ALL, TypeKind::word, "a type's kind")?,
            });
        }
        for item in items(top, "casts")? {
            let [source, target] = pair(item, "casts")?;
            schema.casts.push(Cast {
                source: str_of(source, "casts")?,
                target: str_of(target, "casts")?,
            });
        }
        Ok(schema)
    }
}

fn relation(r: &Relation) -> String {
    let mut out = format!(
        "{{\"relation\":{},\"kind\":{},\"columns\":[{}]",
        name(&r.name),
        json(r.kind.word()),
        r.columns
            .iter()
            .map(|c| format!("[{},{}]", json(&c.name), json(&c.type_name)))
            .collect::<Vec<_>>()
            .join(",")
    );
    if !r.system_columns.is_empty() {
        out += &format!(",\"system_columns\":{}", strings(&r.system_columns));
    }
    if !r.parents.is_empty() {
        out += &format!(",\"parents\":[{}]", names(&r.parents));
    }
    if !r.reads.is_empty() {
        out += &format!(",\"reads\":[{}]", names(&r.reads));
    }
    if !r.statement_triggers.is_empty() {
        let triggers: Vec<String> = r
            .statement_triggers
            .iter()
            .map(|t| {
                let events: Vec<&str> = t.events.iter().map(|e| e.word()).collect();
                format!("[{},{}]", json(&t.name), strs(&events))
            })
            .collect();
        out += &format!(",\"statement_triggers\":[{}]", triggers.join(","));
    }
    if !r.rules.is_empty() {
        let events: Vec<&str> = r.rules.iter().map(|e| e.word()).collect();
        out += &format!(",\"rules\":{}", strs(&events));
    }
    if let Some(definition) = &r.definition {
        out += &format!(",\"definition\":{}", json(definition));
    }
    if r.updatable {
        out += ",\"updatable\":true";
    }
    out + "}"
}

fn function(f: &Function) -> String {
    format!(
        "{{\"function\":{},\"kind\":{},\"args\":{},\"defaults\":{},\"variadic\":{},\
         \"returns\":{},\"returns_set\":{},\"volatility\":{}}}",
        name(&f.name),
        json(f.kind.word()),
        strings(&f.args),
        f.defaults,
        f.variadic,
        json(&f.returns),
        f.returns_set,
        json(f.volatility.word())
    )
}

fn read_relation(item: &Value) -> Result<Relation, String> {
    let object = item.as_object().ok_or("a relation is not an object")?;
    let name = qualified(
        object.get("relation").ok_or("a relation has no name")?,
        "relations",
    )?;
    let kind = word(
        object.get("kind").unwrap_or(&Value::Null),
        &RelationKind::ALL,
        RelationKind::word,
        "a relation's kind",
    )?;
    let mut relation = Relation::new(name, kind, Vec::new());
    for column in list(object.get("columns"), "columns")? {
        let [name, type_name] = pair(column, "columns")?;
        relation.columns.push(Column {
            name: str_of(name, "columns")?,
            type_name: str_of(type_name, "columns")?,
        });
    }
    relation.system_columns = string_list(object.get("system_columns"), "system_columns")?;
    for parent in list(object.get("parents"), "parents")? {
        relation.parents.push(qualified(parent, "parents")?);
    }
    for read in list(object.get("reads"), "reads")? {
        relation.reads.push(qualified(read, "reads")?);
    }
    for trigger in list(object.get("statement_triggers"), "statement_triggers")? {
        let [name, events] = pair(trigger, "statement_triggers")?;
        relation.statement_triggers.push(Trigger {
            name: str_of(name, "statement_triggers")?,
            events: events_of(events)?,
        });
    }
    if let Some(rules) = object.get("rules") {
        relation.rules = events_of(rules)?;
    }
    relation.definition = object
        .get("definition")
        .and_then(Value::as_str)
        .map(str::to_owned);
    relation.updatable = object.get("updatable").and_then(Value::as_bool) == Some(true);
    Ok(relation)
}

fn read_function(item: &Value) -> Result<Function, String> {
    let object = item.as_object().ok_or("a function is not an object")?;
    let name = qualified(
        object.get("function").ok_or("a function has no name")?,
        "functions",
    )?;
    Ok(Function {
        name,
        kind: word(
            object.get("kind").unwrap_or(&Value::Null),
            &FunctionKind::ALL,
            FunctionKind::word,
            "a function's kind",
        )?,
        args: string_list(object.get("args"), "args")?,
        defaults: object
            .get("defaults")
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or("a function's defaults is not a number")?,
        variadic: object
            .get("variadic")
            .and_then(Value::as_bool)
            .ok_or("a function's variadic is not a boolean")?,
        returns: text_of(object, "returns")?,
        returns_set: object
            .get("returns_set")
            .and_then(Value::as_bool)
            .ok_or("a function's returns_set is not a boolean")?,
        volatility: word(
            object.get("volatility").unwrap_or(&Value::Null),
            &Volatility::ALL,
            Volatility::word,
            "a function's volatility",
        )?,
    })
}

fn json(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn strings(list: &[String]) -> String {
    format!(
        "[{}]",
        list.iter().map(|s| json(s)).collect::<Vec<_>>().join(",")
    )
}

fn strs(list: &[&str]) -> String {
    format!(
        "[{}]",
        list.iter().map(|s| json(s)).collect::<Vec<_>>().join(",")
    )
}

fn name(n: &QualifiedName) -> String {
    format!("[{},{}]", json(&n.schema), json(&n.name))
}

fn names(list: &[QualifiedName]) -> String {
    list.iter().map(name).collect::<Vec<_>>().join(",")
}

/// A list written one item a line.
fn lines(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        return "[]".to_owned();
    }
    format!("[\n{}\n]", items.join(",\n"))
}

fn items<'v>(top: &'v Map<String, Value>, key: &str) -> Result<&'v [Value], String> {
    list(top.get(key), key)
}

fn list<'v>(value: Option<&'v Value>, what: &str) -> Result<&'v [Value], String> {
    match value {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(format!("`{what}` is not a list")),
    }
}

fn pair<'v>(item: &'v Value, what: &str) -> Result<[&'v Value; 2], String> {
    match item.as_array().map(Vec::as_slice) {
        Some([a, b]) => Ok([a, b]),
        _ => Err(format!("an item of `{what}` is not a pair")),
    }
}

fn str_of(value: &Value, what: &str) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("an item of `{what}` is not a string"))
}

fn text_of(object: &Map<String, Value>, key: &str) -> Result<String, String> {
    object
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("`{key}` is missing or not a string"))
}

fn string_list(value: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    list(value, what)?
        .iter()
        .map(|item| str_of(item, what))
        .collect()
}

fn qualified(value: &Value, what: &str) -> Result<QualifiedName, String> {
    let [schema, name] = pair(value, what)?;
    Ok(QualifiedName {
        schema: str_of(schema, what)?,
        name: str_of(name, what)?,
    })
}

fn events_of(value: &Value) -> Result<Vec<Event>, String> {
    list(Some(value), "events")?
        .iter()
        .map(|event| word(event, &Event::ALL, Event::word, "an event"))
        .collect()
}

fn word<T: Copy>(
    value: &Value,
    all: &[T],
    word: impl Fn(T) -> &'static str,
    what: &str,
) -> Result<T, String> {
    let text = value.as_str().ok_or_else(|| format!("{what} is missing"))?;
    all.iter()
        .copied()
        .find(|candidate| word(*candidate) == text)
        .ok_or_else(|| format!("{what} `{text}` is unknown"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> PreparedSchema {
        let mut schema = PreparedSchema::new("db/migrations", "sha256:ab");
        schema.role_check = Some(vec!["billing".into(), "dunning".into()]);
        schema.role_shards = vec![RoleShards {
            role: "billing".into(),
            shard_count: 8,
        }];
        schema.shard_keys = vec![ShardKey {
            table: QualifiedName::new("public", "jobs"),
            column: "id".into(),
        }];
        let mut jobs = Relation::new(
            QualifiedName::new("public", "jobs"),
            RelationKind::PartitionedTable,
            vec![
                Column::new("id", "bigint"),
                Column::new("say \"hi\"", "text"),
            ],
        );
        jobs.system_columns = vec!["ctid".into(), "xmin".into()];
        jobs.parents = vec![QualifiedName::new("app", "base")];
        jobs.statement_triggers = vec![Trigger {
            name: "audit".into(),
            events: vec![Event::Update, Event::Delete],
        }];
        jobs.rules = vec![Event::Insert];
        let mut view = Relation::new(
            QualifiedName::new("public", "due"),
            RelationKind::View,
            vec![Column::new("coalesce", "bigint")],
        );
        view.reads = vec![QualifiedName::new("public", "jobs")];
        view.definition = Some(" SELECT jobs.id AS \"coalesce\"\n   FROM jobs;".into());
        view.updatable = true;
        schema.relations = vec![jobs, view];
        schema.functions = vec![
            Function::new(
                QualifiedName::new("public", "score"),
                vec!["integer".into()],
                "integer",
                Volatility::Immutable,
            ),
            Function::new(
                QualifiedName::new("public", "total"),
                vec!["integer".into()],
                "integer",
                Volatility::Volatile,
            )
            .with_kind(FunctionKind::Aggregate)
            .with_optional_args(1, true),
        ];
        schema.types = vec![TypeInfo {
            name: "bigint".into(),
            kind: TypeKind::Base,
        }];
        schema.casts = vec![Cast {
            source: "integer".into(),
            target: "bigint".into(),
        }];
        schema
    }

    #[test]
    fn what_is_written_reads_back_and_is_written_again_the_same() {
        let text = full().to_file_text();
        let read = PreparedSchema::from_file_text(&text).unwrap();
        let mut expected = full();
        expected.normalize();
        assert_eq!(read, expected);
        assert_eq!(read.to_file_text(), text);
    }

    #[test]
    fn each_relation_and_function_is_one_line_and_the_order_is_the_catalogs_sorted() {
        let text = full().to_file_text();
        let due = text.find(r#"{"relation":["public","due"]"#).unwrap();
        let jobs = text.find(r#"{"relation":["public","jobs"]"#).unwrap();
        assert!(due < jobs, "sorted by name:\n{text}");
        assert!(text.contains(
            r#"{"function":["public","score"],"kind":"function","args":["integer"],"defaults":0,"variadic":false,"returns":"integer","returns_set":false,"volatility":"immutable"},"#
        ));
        for line in text.lines() {
            if line.contains("\"relation\"") {
                assert!(line.starts_with('{') && line.trim_end_matches(',').ends_with('}'));
            }
        }
    }

    #[test]
    fn another_format_or_malformed_text_says_what_to_do() {
        let text = full().to_file_text().replace(
            &format!("\"leader_schema\": {FORMAT}"),
            "\"leader_schema\": 99",
        );
        let error = PreparedSchema::from_file_text(&text).unwrap_err();
        assert!(error.contains("run `leaderctl schema prepare`"), "{error}");
        let error = PreparedSchema::from_file_text("{\"leader_schema\": 1,").unwrap_err();
        assert!(error.contains("not valid JSON"), "{error}");
        let text = full().to_file_text().replace(
            "\"volatility\":\"immutable\"",
            "\"volatility\":\"sometimes\"",
        );
        let error = PreparedSchema::from_file_text(&text).unwrap_err();
        assert!(
            error.contains("volatility `sometimes` is unknown"),
            "{error}"
        );
    }
}
