//! The statements that change rows: `UPDATE`, `DELETE`, `INSERT` and `MERGE`, with their
//! targets, joined items and `RETURNING`.

use super::*;

impl Writer {
    /// The target of an `UPDATE` or `DELETE`, aliased.
    pub(super) fn target(&mut self, target: Target) -> (String, Alias) {
        let name = self.alias();
        let (relation, kind) = match target {
            Target::Q => ("q", Kind::Table),
            Target::R => ("r", Kind::Table),
            Target::ViewFlat => {
                self.tag(Tag::TargetView);
                ("v_flat", Kind::View(View::Flat))
            }
        };
        (format!("{relation} {name}"), Alias { name, kind })
    }

    /// `UPDATE`; in a `WITH` query (`in_cte`) it returns every column.
    pub(super) fn update(&mut self, update: &Update, in_cte: bool) -> String {
        self.tag(Tag::StmtUpdate);
        self.claim = true;
        let (target, alias) = self.target(update.target);
        let t = alias.name.clone();
        let (from, mut scope, first) = self.joined(update.from.as_ref(), &t);
        let main = self.main(&t, update.bare && from.is_none(), scope.len() + 1);
        let c = main.col.clone();
        scope.insert(0, alias);
        self.scopes.push(scope);
        let set = match &update.set {
            SetValue::Literal => "status = 'u'".to_owned(),
            SetValue::Call(call) => {
                self.tag(Tag::SetComputed);
                format!("owner = {}", self.call(*call, Tag::FuncInSet))
            }
            SetValue::FenceCase => {
                self.tag(Tag::SetComputed);
                self.tag(Tag::FenceInSet);
                let fence = self.fence(Fence::Plain);
                format!("status = CASE WHEN {fence} THEN 'u' ELSE {c}status END")
            }
            SetValue::Sub(query) => {
                self.tag(Tag::SetComputed);
                self.tag(Tag::ScalarSubselect);
                format!("owner = ({})", self.query(query, Cols::Id, None, true))
            }
        };
        let filter = self.filter(&update.filter, &main, first, Vec::new());
        self.scopes.pop();
        let from = from.map_or(String::new(), |from| format!(" FROM {from}"));
        let returning = self.returning(update.returning, in_cte, &c);
        format!("UPDATE {target} SET {set}{from}{filter}{returning}")
    }

    /// `DELETE`; in a `WITH` query (`in_cte`) it returns every column.
    pub(super) fn delete(&mut self, delete: &Delete, in_cte: bool) -> String {
        self.tag(Tag::StmtDelete);
        self.claim = true;
        let (target, alias) = self.target(delete.target);
        let t = alias.name.clone();
        let (using, mut scope, first) = self.joined(delete.using.as_ref(), &t);
        let main = self.main(&t, delete.bare && using.is_none(), scope.len() + 1);
        scope.insert(0, alias);
        self.scopes.push(scope);
        let filter = self.filter(&delete.filter, &main, first, Vec::new());
        self.scopes.pop();
        let using = using.map_or(String::new(), |using| format!(" USING {using}"));
        let returning = self.returning(delete.returning, in_cte, &main.col);
        format!("DELETE FROM {target}{using}{filter}{returning}")
    }

    /// The `FROM`/`USING` item of an `UPDATE` or `DELETE` of `t`: its text, its aliases, and
    /// the join condition that leads its `WHERE`.
    pub(super) fn joined(
        &mut self,
        item: Option<&From>,
        t: &str,
    ) -> (Option<String>, Vec<Alias>, Vec<String>) {
        match item {
            Some(item) => {
                self.tag(Tag::UpdateFrom);
                let (sql, aliases) = self.from(item);
                let join = format!("{t}.id = {}.id", aliases[0].name);
                (Some(sql), aliases, vec![join])
            }
            None => (None, Vec::new(), Vec::new()),
        }
    }

    pub(super) fn returning(&mut self, returning: bool, in_cte: bool, prefix: &str) -> String {
        if in_cte {
            format!(" RETURNING {prefix}id, {prefix}grp, {prefix}status, {prefix}owner")
        } else if returning {
            self.tag(Tag::Returning);
            format!(" RETURNING {prefix}id")
        } else {
            String::new()
        }
    }

    /// `INSERT INTO sink`; in a `WITH` query (`in_cte`) it returns every column.
    pub(super) fn insert(&mut self, insert: &Insert, in_cte: bool) -> String {
        self.claim = true;
        let source = match &insert.source {
            InsertSource::Query(query) => {
                self.tag(Tag::InsertSelect);
                let offset = match insert.conflict {
                    Conflict::None => 1000,
                    _ => 0,
                };
                self.query(query, Cols::Insert(offset), None, false)
            }
            InsertSource::Values => {
                self.tag(Tag::InsertValues);
                let id = match insert.conflict {
                    Conflict::DoUpdate => 1,
                    _ => 2000,
                };
                format!("VALUES ({id}, 0, 'v', NULL)")
            }
        };
        let conflict = match insert.conflict {
            Conflict::None => "",
            Conflict::DoNothing => {
                self.tag(Tag::OnConflictNothing);
                " ON CONFLICT (id) DO NOTHING"
            }
            Conflict::DoUpdate => {
                self.tag(Tag::OnConflictUpdate);
                " ON CONFLICT (id) DO UPDATE SET status = excluded.status"
            }
        };
        let returning = self.returning(insert.returning, in_cte, "");
        format!("INSERT INTO sink (id, grp, status, owner) {source}{conflict}{returning}")
    }

    pub(super) fn merge(&mut self, merge: &Merge) -> String {
        self.tag(Tag::Merge);
        self.claim = true;
        let (target, target_alias) = self.table(merge.target);
        let t = target_alias[0].name.clone();
        let (source, aliases) = self.from(&merge.source);
        let s = aliases[0].name.clone();
        let mut on = format!("{t}.id = {s}.id");
        let mut scope = target_alias;
        scope.extend(aliases.iter().cloned());
        self.scopes.push(scope);
        let source_main = Main::qualified(&s);
        if let Some(cond) = &merge.on {
            on += &format!(" AND {}", self.cond(cond, &source_main, Place::On));
        }
        self.scopes.pop();
        // A WHEN condition sees the source only: NOT MATCHED has no target row.
        self.scopes.push(aliases);
        let mut whens: Vec<&When> = merge.whens.iter().collect();
        // PostgreSQL refuses a WHEN after an unconditional one of the same kind.
        whens.sort_by_key(|when| match when {
            When::Matched(cond, _) | When::NotMatched(cond, _) => cond.is_none(),
        });
        let mut clauses = Vec::new();
        for when in whens {
            let (matched, cond) = match when {
                When::Matched(cond, _) => ("MATCHED", cond),
                When::NotMatched(cond, _) => ("NOT MATCHED", cond),
            };
            let cond = match cond {
                Some(cond) => {
                    self.tag(Tag::MergeWhenCondition);
                    format!(" AND {}", self.cond(cond, &source_main, Place::Where))
                }
                None => String::new(),
            };
            let action = match when {
                When::Matched(_, MatchedAction::Update) => "UPDATE SET status = 'm'".to_owned(),
                When::Matched(_, MatchedAction::Delete) => "DELETE".to_owned(),
                When::Matched(_, MatchedAction::Nothing)
                | When::NotMatched(_, NotMatchedAction::Nothing) => "DO NOTHING".to_owned(),
                When::NotMatched(_, NotMatchedAction::Insert) => {
                    self.tag(Tag::MergeInsert);
                    format!(
                        "INSERT (id, grp, status, owner) \
                         VALUES (coalesce({s}.id, 0) + 1000, 0, 'm', NULL)"
                    )
                }
            };
            clauses.push(format!("WHEN {matched}{cond} THEN {action}"));
        }
        self.scopes.pop();
        format!(
            "MERGE INTO {target} USING {source} ON {on} {}",
            clauses.join(" ")
        )
    }
}
