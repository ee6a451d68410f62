//! Writes a [`Statement`] as SQL, with the [`Tag`]s of the constructs the text uses.
//!
//! Aliases are numbered as they are written (`t0`, `t1`, …), `WITH` queries are `c0`, `c1`, …,
//! and conditions refer to the first `FROM` item of their level (its "main alias"). The only bind
//! parameters are the fence's: `$1` (the role, text) and `$2` (the token, bigint).

use std::collections::BTreeSet;

use crate::ast::*;
use crate::tags::Tag;

/// A statement written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub sql: String,
    pub tags: BTreeSet<Tag>,
    /// Whether the text has `$1` and `$2` (it calls the fence somewhere), and for a shard's
    /// claim ([`render_sharded`]) `$3` and `$4`.
    pub binds_fence: bool,
    /// Whether it is a claim as the checker's contract defines one: it has an `UPDATE`,
    /// `DELETE`, `INSERT` or `MERGE`, a locking clause, or a call of `take_budget` (in either
    /// notation). A statement that is not only reads.
    pub claim: bool,
}

/// Writes `statement`.
pub fn render(statement: &Statement) -> Rendered {
    render_as(statement, false)
}

/// Writes `statement` as a shard's claim: every fence is the four-argument
/// `leader_fence($1, $3, $4, $2)` (`$3` the shard index, `$4` the count), and each fence
/// condition of a `WHERE` or `ON` stands beside its shard filter, `leader_shard_of(<the level's
/// main alias>.id, $4) = $3`.
pub fn render_sharded(statement: &Statement) -> Rendered {
    render_as(statement, true)
}

fn render_as(statement: &Statement, sharded: bool) -> Rendered {
    let mut w = Writer {
        sharded,
        ..Writer::default()
    };
    let sql = w.statement(statement);
    Rendered {
        sql,
        tags: w.tags,
        binds_fence: w.binds_fence,
        claim: w.claim,
    }
}

#[derive(Default)]
struct Writer {
    tags: BTreeSet<Tag>,
    binds_fence: bool,
    /// Whether fences are a shard's (see [`render_sharded`]).
    sharded: bool,
    claim: bool,
    next_alias: usize,
    /// How many `WITH` queries are in scope.
    ctes: usize,
    /// The `FROM` items of the levels being written, innermost last.
    scopes: Vec<Vec<Alias>>,
}

#[derive(Debug, Clone)]
struct Alias {
    name: String,
    kind: Kind,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    /// `q` or `r`: `take_budget` takes its rows.
    Table,
    View(View),
    Sub {
        flat: bool,
    },
    Cte,
}

/// A level's first `FROM` item (its main alias), which its conditions and select list refer to.
#[derive(Debug, Clone)]
struct Main {
    alias: String,
    /// How its columns are written: `t0.` before each, or nothing (bare).
    col: String,
}

impl Main {
    fn qualified(alias: &str) -> Main {
        Main {
            alias: alias.to_owned(),
            col: format!("{alias}."),
        }
    }
}

/// What a query's select list holds.
#[derive(Debug, Clone, Copy)]
enum Cols {
    All,
    Id,
    /// All, the id shifted by this much (an `INSERT`'s source).
    Insert(u32),
}

/// Where a condition stands, for the position tags of what is in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Where,
    On,
}

impl Writer {
    fn tag(&mut self, tag: Tag) {
        self.tags.insert(tag);
    }

    fn alias(&mut self) -> String {
        self.next_alias += 1;
        format!("t{}", self.next_alias - 1)
    }

    fn statement(&mut self, statement: &Statement) -> String {
        let mut sql = String::new();
        if !statement.ctes.is_empty() {
            let mut ctes = Vec::new();
            for (i, cte) in statement.ctes.iter().enumerate() {
                self.ctes = i;
                ctes.push(self.cte(i, cte));
            }
            sql = format!("WITH {} ", ctes.join(", "));
        }
        self.ctes = statement.ctes.len();
        let body = match &statement.body {
            Body::Select(query) => {
                self.tag(Tag::StmtSelect);
                self.query(query, Cols::All, None, false)
            }
            Body::Update(update) => self.update(update, false),
            Body::Delete(delete) => self.delete(delete, false),
            Body::Insert(insert) => self.insert(insert, false),
            Body::Merge(merge) => self.merge(merge),
        };
        sql + &body
    }

    fn cte(&mut self, i: usize, cte: &Cte) -> String {
        let materialized = match cte.materialized {
            Materialized::Default => "",
            Materialized::Materialized => "MATERIALIZED ",
            Materialized::NotMaterialized => "NOT MATERIALIZED ",
        };
        if !materialized.is_empty() {
            self.tag(Tag::CteMaterialized);
        }
        let query = match &cte.query {
            CteQuery::Select(query) => {
                self.tag(Tag::CteSelect);
                self.query(query, Cols::All, None, false)
            }
            CteQuery::Update(update) => {
                self.tag(Tag::CteModifying);
                self.update(update, true)
            }
            CteQuery::Delete(delete) => {
                self.tag(Tag::CteModifying);
                self.delete(delete, true)
            }
            CteQuery::Insert(insert) => {
                self.tag(Tag::CteModifying);
                self.insert(insert, true)
            }
        };
        format!("c{i} AS {materialized}({query})")
    }

    /// A query; `correlate` is an outer alias its levels also filter on (`main.id = outer.id`),
    /// `scalar` limits it to one row.
    fn query(
        &mut self,
        query: &Query,
        cols: Cols,
        correlate: Option<&str>,
        scalar: bool,
    ) -> String {
        match query {
            Query::Select(select) => self.select(select, cols, correlate, scalar),
            Query::SetOp {
                op,
                all,
                left,
                right,
            } => {
                let (word, tag) = match op {
                    SetOp::Union => ("UNION", Tag::SetopUnion),
                    SetOp::Intersect => ("INTERSECT", Tag::SetopIntersect),
                    SetOp::Except => ("EXCEPT", Tag::SetopExcept),
                };
                self.tag(tag);
                let left = self.select(left, cols, correlate, false);
                let right = self.select(right, cols, correlate, false);
                let all = if *all { " ALL" } else { "" };
                let limit = if scalar { " LIMIT 1" } else { "" };
                format!("({left}) {word}{all} ({right}){limit}")
            }
        }
    }

    fn select(
        &mut self,
        select: &Select,
        cols: Cols,
        correlate: Option<&str>,
        scalar: bool,
    ) -> String {
        let (from, aliases) = self.from(&select.from);
        let main = self.main(
            &aliases[0].name,
            select.bare && aliases.len() == 1,
            aliases.len(),
        );
        self.scopes.push(aliases.clone());
        let projection = self.projection(&select.shape, &main, cols);
        let last: Vec<String> = correlate
            .map(|outer| format!("{}id = {outer}.id", main.col))
            .into_iter()
            .collect();
        let filter = self.filter(&select.filter, &main, Vec::new(), last);
        let mut tail = String::new();
        if let Shape::Grouped {
            grouping, having, ..
        } = &select.shape
        {
            tail += &self.grouping(*grouping, &main);
            if let Some(having) = having {
                tail += &self.having(*having);
            }
        }
        match select.limit {
            Some(limit) => tail += &self.limit(limit),
            None if scalar => tail += " LIMIT 1",
            None => {}
        }
        if let Shape::Rows {
            lock: Some(lock), ..
        } = &select.shape
        {
            tail += &self.lock(lock, &aliases);
        }
        self.scopes.pop();
        format!("SELECT {projection} FROM {from}{filter}{tail}")
    }

    /// The main alias `alias` of a level with `items` `FROM` items, its columns `bare` or not.
    fn main(&mut self, alias: &str, bare: bool, items: usize) -> Main {
        if bare {
            self.tag(Tag::ColumnsBare);
            return Main {
                alias: alias.to_owned(),
                col: String::new(),
            };
        }
        if items == 1 {
            self.tag(Tag::ColumnsQualified);
        }
        Main::qualified(alias)
    }

    fn projection(&mut self, shape: &Shape, main: &Main, cols: Cols) -> String {
        let c = &main.col;
        let (id, rest) = match shape {
            Shape::Rows { call, .. } => {
                let id = match call {
                    Some(call) => {
                        let call = self.call(*call, Tag::FuncInTarget);
                        format!("{c}id * {call}")
                    }
                    None => format!("{c}id"),
                };
                let rest = format!("{c}grp AS grp, {c}status AS status, {c}owner AS owner");
                (id, rest)
            }
            Shape::Grouped {
                projection,
                grouping,
                having,
            } => {
                let keyed = !matches!(grouping, Grouping::None | Grouping::Empty);
                let constants = "0 AS grp, 'g'::text AS status, NULL::bigint AS owner";
                match projection {
                    Projection::Aggregates => (
                        format!("coalesce(max({c}id), 1)"),
                        format!(
                            "max({c}grp) AS grp, max({c}status) AS status, \
                             max({c}owner) AS owner"
                        ),
                    ),
                    Projection::Keys if keyed => {
                        self.tag(Tag::AggKeysOnly);
                        (
                            format!("coalesce({c}grp, 1)::bigint"),
                            format!("{c}grp AS grp, 'g'::text AS status, NULL::bigint AS owner"),
                        )
                    }
                    Projection::Keys => {
                        if !matches!(grouping, Grouping::None) || having.is_some() {
                            self.tag(Tag::AggKeysOnly);
                        }
                        ("1::bigint".to_owned(), constants.to_owned())
                    }
                    Projection::Bare(aggregate) => {
                        let name = match aggregate {
                            Aggregate::Min => "min",
                            Aggregate::Max => "max",
                            Aggregate::Sum => "sum",
                            Aggregate::Count => "count",
                        };
                        self.tag(match aggregate {
                            Aggregate::Count => Tag::AggCount,
                            _ => Tag::AggNullOnEmpty,
                        });
                        (
                            format!("{name}({c}id)"),
                            format!(
                                "max({c}grp) AS grp, max({c}status) AS status, \
                                 max({c}owner) AS owner"
                            ),
                        )
                    }
                    Projection::OuterAggregate => {
                        self.tag(Tag::AggOuterInSubselect);
                        (
                            format!("(SELECT coalesce(max({c}id), 1))"),
                            constants.to_owned(),
                        )
                    }
                }
            }
        };
        if let Shape::Grouped {
            projection: Projection::Aggregates,
            grouping: Grouping::None,
            ..
        } = shape
        {
            self.tag(Tag::AggPlain);
        }
        match cols {
            Cols::Id => format!("{id} AS id"),
            Cols::All => format!("{id} AS id, {rest}"),
            Cols::Insert(offset) => format!("{id} + {offset} AS id, {rest}"),
        }
    }

    fn grouping(&mut self, grouping: Grouping, main: &Main) -> String {
        let c = &main.col;
        match grouping {
            Grouping::None => return String::new(),
            Grouping::Key => self.tag(Tag::AggGroupBy),
            _ => self.tag(Tag::AggEmptySet),
        }
        match grouping {
            Grouping::None => String::new(),
            Grouping::Key => format!(" GROUP BY {c}grp"),
            Grouping::Empty => " GROUP BY ()".to_owned(),
            Grouping::Rollup => format!(" GROUP BY ROLLUP ({c}grp)"),
            Grouping::Cube => format!(" GROUP BY CUBE ({c}grp)"),
            Grouping::Sets => format!(" GROUP BY GROUPING SETS (({c}grp), ())"),
        }
    }

    fn having(&mut self, having: Having) -> String {
        self.tag(Tag::AggHaving);
        match having {
            Having::Holds => " HAVING count(*) >= 0".to_owned(),
            Having::Filters => " HAVING count(*) > 1".to_owned(),
            Having::Fence(fence) => {
                self.tag(Tag::FenceInHaving);
                format!(" HAVING {}", self.fence(fence))
            }
        }
    }

    fn limit(&mut self, limit: Limit) -> String {
        let count = match limit {
            Limit::Rows(n) => {
                self.tag(Tag::LimitRows);
                n.to_string()
            }
            Limit::Count => {
                self.tag(Tag::LimitSubselect);
                "(SELECT count(*) FROM r)".to_owned()
            }
            Limit::Call(call) => {
                self.tag(Tag::LimitSubselect);
                format!("({})", self.call_on_own_row(call, Tag::FuncInLimit))
            }
            Limit::Fenced => {
                self.tag(Tag::LimitSubselect);
                self.tag(Tag::FenceInLimit);
                let fence = self.fence(Fence::Plain);
                format!("(SELECT count(*) FROM r WHERE {fence})")
            }
        };
        format!(" ORDER BY 1 LIMIT {count}")
    }

    fn lock(&mut self, lock: &Lock, aliases: &[Alias]) -> String {
        let (strength, tag) = match lock.strength {
            Strength::Update => ("UPDATE", Tag::LockUpdate),
            Strength::NoKeyUpdate => ("NO KEY UPDATE", Tag::LockNoKey),
            Strength::Share => ("SHARE", Tag::LockShare),
            Strength::KeyShare => ("KEY SHARE", Tag::LockKeyShare),
        };
        self.tag(tag);
        self.claim = true;
        let (of, applied) = match lock.of {
            None => (String::new(), aliases.to_vec()),
            Some(k) => {
                self.tag(Tag::LockOf);
                let alias = aliases[usize::from(k) % aliases.len()].clone();
                (format!(" OF {}", alias.name), vec![alias])
            }
        };
        for alias in applied {
            match alias.kind {
                Kind::Table => {}
                Kind::Sub { flat } => {
                    self.tag(Tag::LockPushed);
                    self.tag(if flat {
                        Tag::LockSubselectFlat
                    } else {
                        Tag::LockSubselectLimit
                    });
                }
                Kind::View(View::Flat) => self.tag(Tag::LockViewFlat),
                Kind::View(View::Limited) => self.tag(Tag::LockViewLimit),
                Kind::Cte => self.tag(Tag::LockCte),
            }
        }
        let wait = match lock.wait {
            Wait::Block => "",
            Wait::SkipLocked => {
                self.tag(Tag::LockSkipLocked);
                " SKIP LOCKED"
            }
            Wait::Nowait => {
                self.tag(Tag::LockNowait);
                " NOWAIT"
            }
        };
        format!(" FOR {strength}{of}{wait}")
    }

    /// A `FROM` item and the aliases it brings into scope, its main alias first.
    fn from(&mut self, from: &From) -> (String, Vec<Alias>) {
        match from {
            From::Table(table) => self.table(*table),
            From::View(view) => {
                self.tag(Tag::FromView);
                let name = self.alias();
                let relation = match view {
                    View::Flat => "v_flat",
                    View::Limited => "v_lim",
                };
                let sql = format!("{relation} {name}");
                let kind = Kind::View(*view);
                (sql, vec![Alias { name, kind }])
            }
            From::Sub(query) => {
                self.tag(Tag::FromSubselect);
                let sql = self.query(query, Cols::All, None, false);
                let name = self.alias();
                let kind = Kind::Sub { flat: flat(query) };
                (format!("({sql}) {name}"), vec![Alias { name, kind }])
            }
            From::Cte(i) if self.ctes > 0 => {
                self.tag(Tag::CteRead);
                let name = self.alias();
                let sql = format!("c{} {name}", usize::from(*i) % self.ctes);
                (
                    sql,
                    vec![Alias {
                        name,
                        kind: Kind::Cte,
                    }],
                )
            }
            From::Cte(_) => self.table(Table::Q),
            From::Join {
                kind,
                left,
                right,
                on,
            } => {
                let (word, tag) = match kind {
                    Join::Inner => ("JOIN", Tag::JoinInner),
                    Join::Left => ("LEFT JOIN", Tag::JoinLeft),
                    Join::Right => ("RIGHT JOIN", Tag::JoinRight),
                    Join::Full => ("FULL JOIN", Tag::JoinFull),
                };
                self.tag(tag);
                let (left, mut aliases) = self.from(left);
                let (right, right_aliases) = self.from(right);
                aliases.extend(right_aliases.iter().cloned());
                let (l, r) = (&aliases[0].name, &right_aliases[0].name);
                let mut on_sql = format!("{l}.id = {r}.id");
                if let Some(on) = on {
                    let main = Main::qualified(l);
                    self.scopes.push(aliases.clone());
                    on_sql += &format!(" AND {}", self.cond(on, &main, Place::On));
                    self.scopes.pop();
                }
                (format!("{left} {word} {right} ON {on_sql}"), aliases)
            }
            From::Lateral { left, right } => {
                self.tag(Tag::Lateral);
                let (left, mut aliases) = self.from(left);
                let outer = aliases[0].name.clone();
                self.scopes.push(aliases.clone());
                let right = self.query(right, Cols::All, Some(&outer), false);
                self.scopes.pop();
                let name = self.alias();
                let sql = format!("{left} CROSS JOIN LATERAL ({right}) {name}");
                aliases.push(Alias {
                    name,
                    kind: Kind::Sub { flat: false },
                });
                (sql, aliases)
            }
        }
    }

    fn table(&mut self, table: Table) -> (String, Vec<Alias>) {
        let name = self.alias();
        let relation = match table {
            Table::Q => "q",
            Table::R => "r",
        };
        let sql = format!("{relation} {name}");
        (
            sql,
            vec![Alias {
                name,
                kind: Kind::Table,
            }],
        )
    }

    /// ` WHERE …` (or nothing): `first`, the conditions with the fence at its place, `last`.
    fn filter(
        &mut self,
        filter: &Where,
        main: &Main,
        first: Vec<String>,
        last: Vec<String>,
    ) -> String {
        let mut conjuncts: Vec<String> = filter
            .conds
            .iter()
            .map(|cond| self.cond(cond, main, Place::Where))
            .collect();
        if let Some((fence, at)) = filter.fence {
            self.tag(Tag::GateFence);
            let mut fence = self.fence(fence);
            if self.sharded {
                fence = format!("{fence} AND leader_shard_of({}id, $4) = $3", main.col);
            }
            conjuncts.insert(usize::from(at) % (conjuncts.len() + 1), fence);
        }
        let all: Vec<String> = first.into_iter().chain(conjuncts).chain(last).collect();
        if all.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", all.join(" AND "))
        }
    }

    fn cond(&mut self, cond: &Cond, main: &Main, place: Place) -> String {
        let c = &main.col;
        match cond {
            Cond::Filter(filter) => match filter {
                Filter::GrpBelow3 => format!("{c}grp < 3"),
                Filter::StatusNew => format!("{c}status = 'new'"),
                Filter::OwnerNull => format!("{c}owner IS NULL"),
                Filter::IdAbove2 => format!("{c}id > 2"),
            },
            Cond::Fence(fence) => {
                if place == Place::On {
                    self.tag(Tag::FenceInOn);
                }
                let fence = self.fence(*fence);
                if self.sharded {
                    format!("({fence} AND leader_shard_of({c}id, $4) = $3)")
                } else {
                    fence
                }
            }
            Cond::Gate(gate, query) => self.gate(*gate, query, main),
            Cond::Call(call) => {
                let position = match place {
                    Place::Where => Tag::FuncInWhere,
                    Place::On => Tag::FuncInOn,
                };
                format!("{} = 1", self.call(*call, position))
            }
            Cond::Or(a, b) => {
                self.tag(Tag::GateOr);
                let (a, b) = (self.cond(a, main, place), self.cond(b, main, place));
                format!("({a} OR {b})")
            }
            Cond::Not(a) => {
                self.tag(Tag::GateNot);
                format!("NOT ({})", self.cond(a, main, place))
            }
            Cond::Case(a, b) => {
                self.tag(Tag::GateCase);
                let (a, b) = (self.cond(a, main, place), self.cond(b, main, place));
                format!("CASE WHEN {a} THEN {b} ELSE false END")
            }
        }
    }

    fn gate(&mut self, gate: Gate, query: &Query, main: &Main) -> String {
        let c = &main.col;
        let tag = match gate {
            Gate::In => Tag::GateIn,
            Gate::InByGroup => Tag::GateInByGroup,
            Gate::AnyArray => Tag::GateAnyArray,
            Gate::Any => Tag::GateAny,
            Gate::Exists => Tag::GateExists,
            Gate::ExistsCorrelated => Tag::GateExistsCorrelated,
            Gate::ScalarEq => Tag::GateScalarEq,
            Gate::NotEqAll => Tag::GateAll,
            Gate::NotIn => Tag::GateNotIn,
        };
        self.tag(tag);
        match gate {
            Gate::In => format!("{c}id IN ({})", self.query(query, Cols::Id, None, false)),
            Gate::InByGroup => format!(
                "{c}grp IN (SELECT g.grp FROM ({}) AS g)",
                self.query(query, Cols::All, None, false)
            ),
            Gate::AnyArray => format!(
                "{c}id = ANY (ARRAY ({}))",
                self.query(query, Cols::Id, None, false)
            ),
            Gate::Any => format!("{c}id = ANY ({})", self.query(query, Cols::Id, None, false)),
            Gate::Exists => format!("EXISTS ({})", self.query(query, Cols::All, None, false)),
            Gate::ExistsCorrelated => format!(
                "EXISTS ({})",
                self.query(query, Cols::All, Some(&main.alias), false)
            ),
            Gate::ScalarEq => {
                self.tag(Tag::ScalarSubselect);
                format!("{c}id = ({})", self.query(query, Cols::Id, None, true))
            }
            Gate::NotEqAll => format!(
                "{c}id <> ALL ({})",
                self.query(query, Cols::Id, None, false)
            ),
            Gate::NotIn => format!(
                "{c}id NOT IN ({})",
                self.query(query, Cols::Id, None, false)
            ),
        }
    }

    fn fence(&mut self, fence: Fence) -> String {
        self.binds_fence = true;
        if self.sharded {
            return match fence {
                Fence::Plain => "leader_fence($1, $3, $4, $2)".to_owned(),
                Fence::Qualified => {
                    self.tag(Tag::FenceQualified);
                    "public.leader_fence($1, $3, $4, $2)".to_owned()
                }
                Fence::Cast => {
                    self.tag(Tag::FenceCast);
                    "leader_fence($1::text, $3::int, $4::int, $2::bigint)".to_owned()
                }
            };
        }
        match fence {
            Fence::Plain => "leader_fence($1, $2)".to_owned(),
            Fence::Qualified => {
                self.tag(Tag::FenceQualified);
                "public.leader_fence($1, $2)".to_owned()
            }
            Fence::Cast => {
                self.tag(Tag::FenceCast);
                "leader_fence($1::text, $2::bigint)".to_owned()
            }
        }
    }

    /// A call of `take_budget` on the nearest `q` or `r` row in scope, or on a row of its own.
    fn call(&mut self, call: Call, position: Tag) -> String {
        let row = self
            .scopes
            .iter()
            .rev()
            .flatten()
            .find(|alias| matches!(alias.kind, Kind::Table))
            .map(|alias| alias.name.clone());
        match row {
            Some(row) => {
                self.tag(position);
                self.call_form(call, &row)
            }
            None => format!("({})", self.call_on_own_row(call, position)),
        }
    }

    /// `SELECT <call> FROM q f ORDER BY f.id LIMIT 1`.
    fn call_on_own_row(&mut self, call: Call, position: Tag) -> String {
        self.tag(position);
        let row = self.alias();
        let call = self.call_form(call, &row);
        format!("SELECT {call} FROM q {row} ORDER BY {row}.id LIMIT 1")
    }

    fn call_form(&mut self, call: Call, row: &str) -> String {
        self.claim = true;
        match call {
            Call::Explicit => {
                self.tag(Tag::FuncExplicit);
                format!("take_budget({row})")
            }
            Call::Attr => {
                self.tag(Tag::FuncAttr);
                format!("{row}.take_budget")
            }
            Call::AttrParen => {
                self.tag(Tag::FuncAttr);
                format!("({row}).take_budget")
            }
        }
    }

    /// The target of an `UPDATE` or `DELETE`, aliased.
    fn target(&mut self, target: Target) -> (String, Alias) {
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
    fn update(&mut self, update: &Update, in_cte: bool) -> String {
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
    fn delete(&mut self, delete: &Delete, in_cte: bool) -> String {
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
    fn joined(
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

    fn returning(&mut self, returning: bool, in_cte: bool, prefix: &str) -> String {
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
    fn insert(&mut self, insert: &Insert, in_cte: bool) -> String {
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

    fn merge(&mut self, merge: &Merge) -> String {
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

/// Whether the planner can pull a `FROM` sub-select up into its level (so a locking clause
/// applied to it locks at that level): a plain `SELECT` with no `LIMIT`, grouping or lock.
fn flat(query: &Query) -> bool {
    match query {
        Query::Select(select) => {
            select.limit.is_none() && matches!(select.shape, Shape::Rows { lock: None, .. })
        }
        Query::SetOp { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fenced() -> Where {
        Where {
            fence: Some((Fence::Plain, 9)),
            conds: vec![Cond::Filter(Filter::StatusNew)],
        }
    }

    fn level(from: From, filter: Where, shape: Shape, limit: Option<Limit>, bare: bool) -> Query {
        Query::Select(Box::new(Select {
            from,
            filter,
            shape,
            limit,
            bare,
        }))
    }

    /// The queue pop: a scalar sub-select that locks one row, fenced, gates the `UPDATE`.
    #[test]
    fn the_queue_pop_renders_as_written_by_hand() {
        let pop = level(
            From::Table(Table::Q),
            fenced(),
            Shape::Rows {
                call: None,
                lock: Some(Lock {
                    strength: Strength::Update,
                    of: None,
                    wait: Wait::SkipLocked,
                }),
            },
            Some(Limit::Rows(1)),
            true,
        );
        let statement = Statement {
            ctes: Vec::new(),
            body: Body::Update(Update {
                target: Target::Q,
                set: SetValue::Literal,
                from: None,
                filter: Where {
                    fence: None,
                    conds: vec![Cond::Gate(Gate::ScalarEq, Box::new(pop))],
                },
                returning: true,
                bare: true,
            }),
        };
        let rendered = render(&statement);
        assert_eq!(
            rendered.sql,
            "UPDATE q t0 SET status = 'u' WHERE id = (SELECT id AS id FROM q t1 \
             WHERE status = 'new' AND leader_fence($1, $2) ORDER BY 1 LIMIT 1 \
             FOR UPDATE SKIP LOCKED) RETURNING id"
        );
        assert!(rendered.binds_fence && rendered.claim);
        let tags: Vec<&str> = rendered.tags.iter().map(|t| t.name()).collect();
        assert_eq!(
            tags,
            [
                "stmt:update",
                "returning",
                "gate:fence",
                "gate:scalar-eq",
                "lock:for-update",
                "lock:skip-locked",
                "columns:bare",
                "scalar-subselect",
                "limit:rows"
            ]
        );
    }

    /// A lock applied through `OF` to a sub-select the planner cannot pull up is tagged as
    /// pushed into it, and a call with no table row in scope gets a row of its own.
    #[test]
    fn a_lock_of_a_limited_sub_select_is_pushed_into_it() {
        let inner = level(
            From::View(View::Flat),
            Where {
                fence: None,
                conds: Vec::new(),
            },
            Shape::Rows {
                call: Some(Call::Attr),
                lock: None,
            },
            Some(Limit::Rows(3)),
            false,
        );
        let outer = level(
            From::Sub(Box::new(inner)),
            fenced(),
            Shape::Rows {
                call: None,
                lock: Some(Lock {
                    strength: Strength::KeyShare,
                    of: Some(4),
                    wait: Wait::Block,
                }),
            },
            None,
            false,
        );
        let rendered = render(&Statement {
            ctes: Vec::new(),
            body: Body::Select(outer),
        });
        assert_eq!(
            rendered.sql,
            "SELECT t2.id AS id, t2.grp AS grp, t2.status AS status, t2.owner AS owner FROM \
             (SELECT t0.id * (SELECT t1.take_budget FROM q t1 ORDER BY t1.id LIMIT 1) AS id, \
             t0.grp AS grp, t0.status AS status, t0.owner AS owner FROM v_flat t0 ORDER BY 1 \
             LIMIT 3) t2 WHERE t2.status = 'new' AND leader_fence($1, $2) FOR KEY SHARE OF t2"
        );
        for tag in [
            Tag::LockPushed,
            Tag::LockSubselectLimit,
            Tag::FuncAttr,
            Tag::FuncInTarget,
        ] {
            assert!(rendered.tags.contains(&tag), "{tag:?}");
        }
    }
}
