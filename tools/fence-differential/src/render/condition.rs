//! `WHERE` and `ON` conditions: the fence (and a shard's filter beside it), the gates that
//! guard it, and the calls of `take_budget`.

use super::*;

impl Writer {
    /// ` WHERE …` (or nothing): `first`, the conditions with the fence at its place, `last`.
    pub(super) fn filter(
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

    pub(super) fn cond(&mut self, cond: &Cond, main: &Main, place: Place) -> String {
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

    pub(super) fn gate(&mut self, gate: Gate, query: &Query, main: &Main) -> String {
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

    pub(super) fn fence(&mut self, fence: Fence) -> String {
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
    pub(super) fn call(&mut self, call: Call, position: Tag) -> String {
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
    pub(super) fn call_on_own_row(&mut self, call: Call, position: Tag) -> String {
        self.tag(position);
        let row = self.alias();
        let call = self.call_form(call, &row);
        format!("SELECT {call} FROM q {row} ORDER BY {row}.id LIMIT 1")
    }

    pub(super) fn call_form(&mut self, call: Call, row: &str) -> String {
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
}
