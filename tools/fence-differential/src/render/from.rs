//! `FROM` items (tables, views, sub-selects, `WITH` queries, joins) and the aliases each brings
//! into scope.

use super::*;

impl Writer {
    /// A `FROM` item and the aliases it brings into scope, its main alias first.
    pub(super) fn from(&mut self, from: &From) -> (String, Vec<Alias>) {
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

    pub(super) fn table(&mut self, table: Table) -> (String, Vec<Alias>) {
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
}
