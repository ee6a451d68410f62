//! Writes a [`Statement`] as SQL, with the [`Tag`]s of the constructs the text uses.
//!
//! Aliases are numbered as they are written (`t0`, `t1`, …), `WITH` queries are `c0`, `c1`, …,
//! and conditions refer to the first `FROM` item of their level (its "main alias"). The only bind
//! parameters are the fence's: `$1` (the role, text) and `$2` (the token, bigint).
//!
//! One `Writer` walks the statement; its methods are kept by what they write: `query.rs` a
//! query level, `from.rs` its `FROM` items, `condition.rs` its conditions and fences,
//! `modify.rs` the statements that change rows. This module holds the writer, the scope it keeps, and the
//! statement and its `WITH` queries.

mod condition;
mod from;
mod modify;
mod query;

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
mod tests;
