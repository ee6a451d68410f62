//! A query level: its select list, grouping, `HAVING`, `LIMIT` and locking clause.

use super::*;

impl Writer {
    /// A query; `correlate` is an outer alias its levels also filter on (`main.id = outer.id`),
    /// `scalar` limits it to one row.
    pub(super) fn query(
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

    pub(super) fn select(
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
    pub(super) fn main(&mut self, alias: &str, bare: bool, items: usize) -> Main {
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

    pub(super) fn projection(&mut self, shape: &Shape, main: &Main, cols: Cols) -> String {
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

    pub(super) fn grouping(&mut self, grouping: Grouping, main: &Main) -> String {
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

    pub(super) fn having(&mut self, having: Having) -> String {
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

    pub(super) fn limit(&mut self, limit: Limit) -> String {
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

    pub(super) fn lock(&mut self, lock: &Lock, aliases: &[Alias]) -> String {
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
}
