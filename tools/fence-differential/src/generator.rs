//! The proptest [`Strategy`] of generated claims: [`statements`].
//!
//! Depth is explicit: a query of depth `d` holds sub-queries of depth `d - 1`, and a query of
//! depth 0 holds none. The weights lean towards claims written as the crate docs ask: in about
//! 60 % of levels the fence is a top-level conjunct, in 25 % a gated sub-select is (`IN`,
//! `EXISTS`, …), so a good share of statements is one the checker should accept. The rest puts
//! the fence or its gate where it does not gate (under `OR`, `NOT`, `CASE`, behind `<> ALL` or
//! `NOT IN`, in `ON`, `SET` or `HAVING`), or leaves it out.
//!
//! Alternatives are listed simplest first, which is the direction proptest shrinks in; for a
//! `WHERE` the simplest is the fence as a conjunct, so a reproducer keeps a gate or an unfenced
//! level only where its hole needs one.

use proptest::option;
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};

use crate::ast::*;

/// The depth of the statement's own level: sub-selects nest two deep below it.
pub const DEPTH: u32 = 2;

/// Every generated claim.
pub fn statements() -> BoxedStrategy<Statement> {
    let ctes = prop_oneof![
        4 => Just(Vec::new()),
        1 => prop::collection::vec(cte(DEPTH - 1), 1..=2),
    ];
    (ctes, body(DEPTH))
        .prop_map(|(ctes, body)| Statement { ctes, body })
        .boxed()
}

fn body(d: u32) -> BoxedStrategy<Body> {
    prop_oneof![
        5 => query(d).prop_map(Body::Select),
        5 => update(d).prop_map(Body::Update),
        2 => delete(d).prop_map(Body::Delete),
        3 => insert(d).prop_map(Body::Insert),
        2 => merge(d).prop_map(Body::Merge),
    ]
    .boxed()
}

fn cte(d: u32) -> BoxedStrategy<Cte> {
    let materialized = prop_oneof![
        4 => Just(Materialized::Default),
        1 => Just(Materialized::Materialized),
        1 => Just(Materialized::NotMaterialized),
    ];
    let query = prop_oneof![
        4 => query(d).prop_map(CteQuery::Select),
        2 => update(d).prop_map(CteQuery::Update),
        1 => delete(d).prop_map(CteQuery::Delete),
        1 => insert(d).prop_map(CteQuery::Insert),
    ];
    (materialized, query)
        .prop_map(|(materialized, query)| Cte {
            materialized,
            query,
        })
        .boxed()
}

/// A query of depth `d`.
pub fn query(d: u32) -> BoxedStrategy<Query> {
    let level = select(d, true).prop_map(|s| Query::Select(Box::new(s)));
    if d == 0 {
        return level.boxed();
    }
    let op = prop_oneof![
        Just(SetOp::Union),
        Just(SetOp::Intersect),
        Just(SetOp::Except)
    ];
    let set_op = (
        op,
        any::<bool>(),
        select(d - 1, false),
        select(d - 1, false),
    )
        .prop_map(|(op, all, left, right)| Query::SetOp {
            op,
            all,
            left: Box::new(left),
            right: Box::new(right),
        });
    prop_oneof![8 => level, 1 => set_op].boxed()
}

/// A `SELECT` level of depth `d`; `lockable` says whether it may have a locking clause.
fn select(d: u32, lockable: bool) -> BoxedStrategy<Select> {
    (
        from(d),
        filter(d),
        shape(lockable),
        option::weighted(0.25, limit()),
        bare(),
    )
        .prop_map(|(from, filter, shape, limit, bare)| Select {
            from,
            filter,
            shape,
            limit,
            bare,
        })
        .boxed()
}

fn shape(lockable: bool) -> BoxedStrategy<Shape> {
    let lock = if lockable {
        option::weighted(0.45, lock()).boxed()
    } else {
        Just(None).boxed()
    };
    let rows =
        (option::weighted(0.06, call()), lock).prop_map(|(call, lock)| Shape::Rows { call, lock });
    let projection = prop_oneof![
        Just(Projection::Aggregates),
        Just(Projection::Keys),
        Just(Projection::OuterAggregate),
        prop_oneof![
            Just(Aggregate::Min),
            Just(Aggregate::Max),
            Just(Aggregate::Sum),
            Just(Aggregate::Count),
        ]
        .prop_map(Projection::Bare),
    ];
    let grouping = prop_oneof![
        Just(Grouping::None),
        Just(Grouping::Key),
        Just(Grouping::Empty),
        Just(Grouping::Rollup),
        Just(Grouping::Cube),
        Just(Grouping::Sets),
    ];
    let having = option::weighted(
        0.25,
        prop_oneof![
            Just(Having::Holds),
            Just(Having::Filters),
            fence().prop_map(Having::Fence),
        ],
    );
    let grouped =
        (projection, grouping, having).prop_map(|(projection, grouping, having)| Shape::Grouped {
            projection,
            grouping,
            having,
        });
    prop_oneof![7 => rows, 2 => grouped].boxed()
}

fn limit() -> BoxedStrategy<Limit> {
    prop_oneof![
        4 => (1..=5u8).prop_map(Limit::Rows),
        1 => Just(Limit::Count),
        2 => call().prop_map(Limit::Call),
        1 => Just(Limit::Fenced),
    ]
    .boxed()
}

fn lock() -> BoxedStrategy<Lock> {
    let strength = prop_oneof![
        Just(Strength::Update),
        Just(Strength::NoKeyUpdate),
        Just(Strength::Share),
        Just(Strength::KeyShare),
    ];
    let wait = prop_oneof![
        Just(Wait::Block),
        Just(Wait::SkipLocked),
        Just(Wait::Nowait)
    ];
    (strength, option::weighted(0.3, 0..4u8), wait)
        .prop_map(|(strength, of, wait)| Lock { strength, of, wait })
        .boxed()
}

/// Whether a level writes its columns bare: in 60 % of levels, as the docs' claims do.
fn bare() -> BoxedStrategy<bool> {
    prop::bool::weighted(0.6).boxed()
}

fn fence() -> BoxedStrategy<Fence> {
    prop_oneof![
        18 => Just(Fence::Plain),
        1 => Just(Fence::Qualified),
        1 => Just(Fence::Cast),
    ]
    .boxed()
}

fn call() -> BoxedStrategy<Call> {
    prop_oneof![
        Just(Call::Explicit),
        Just(Call::Attr),
        Just(Call::AttrParen)
    ]
    .boxed()
}

fn filter_cond() -> BoxedStrategy<Filter> {
    prop_oneof![
        Just(Filter::GrpBelow3),
        Just(Filter::StatusNew),
        Just(Filter::OwnerNull),
        Just(Filter::IdAbove2),
    ]
    .boxed()
}

/// A `WHERE` of a level of depth `d`: the fence a top-level conjunct in 60 % of them, a gate
/// (`IN`, `EXISTS`, … over a sub-select) leading the conjuncts instead in 25 % (where a
/// sub-select may nest), neither in the rest.
fn filter(d: u32) -> BoxedStrategy<Where> {
    let one = cond(d);
    let conds = prop_oneof![
        3 => Just(Vec::new()),
        3 => prop::collection::vec(one.clone(), 1),
        1 => prop::collection::vec(one.clone(), 2),
    ];
    let plain = conds.clone().prop_map(|conds| Where { fence: None, conds });
    let fenced = ((fence(), any::<u8>()), conds).prop_map(|(fence, conds)| Where {
        fence: Some(fence),
        conds,
    });
    if d == 0 {
        return prop_oneof![7 => fenced, 3 => plain].boxed();
    }
    let gated_first =
        (gated(d), prop::collection::vec(one, 0..=1)).prop_map(|(gate, rest)| Where {
            fence: None,
            conds: std::iter::once(gate).chain(rest).collect(),
        });
    prop_oneof![12 => fenced, 5 => gated_first, 3 => plain].boxed()
}

fn gate() -> BoxedStrategy<Gate> {
    prop_oneof![
        3 => Just(Gate::In),
        1 => Just(Gate::InByGroup),
        1 => Just(Gate::AnyArray),
        1 => Just(Gate::Any),
        1 => Just(Gate::Exists),
        1 => Just(Gate::ExistsCorrelated),
        2 => Just(Gate::ScalarEq),
        3 => Just(Gate::NotEqAll),
        2 => Just(Gate::NotIn),
    ]
    .boxed()
}

/// A top-level conjunct of a `WHERE` at depth `d`.
fn cond(d: u32) -> BoxedStrategy<Cond> {
    let mut options: Vec<(u32, BoxedStrategy<Cond>)> = vec![
        (5, filter_cond().prop_map(Cond::Filter).boxed()),
        (1, call().prop_map(Cond::Call).boxed()),
    ];
    if d > 0 {
        options.push((3, gated(d)));
    }
    let inner = inner_cond(d);
    options.push((
        2,
        (filter_cond(), inner.clone())
            .prop_map(|(a, b)| Cond::Or(Box::new(Cond::Filter(a)), Box::new(b)))
            .boxed(),
    ));
    options.push((
        1,
        inner.clone().prop_map(|a| Cond::Not(Box::new(a))).boxed(),
    ));
    options.push((
        1,
        (inner.clone(), inner)
            .prop_map(|(a, b)| Cond::Case(Box::new(a), Box::new(b)))
            .boxed(),
    ));
    Union::new_weighted(options).boxed()
}

/// A condition under `OR`, `NOT` or `CASE`: mostly one that would gate as a conjunct.
fn inner_cond(d: u32) -> BoxedStrategy<Cond> {
    let mut options: Vec<(u32, BoxedStrategy<Cond>)> = vec![
        (2, filter_cond().prop_map(Cond::Filter).boxed()),
        (3, fence().prop_map(Cond::Fence).boxed()),
    ];
    if d > 0 {
        options.push((3, gated(d)));
    }
    Union::new_weighted(options).boxed()
}

/// `main.id IN (S)` and its kin, `S` of depth `d - 1`; one in five is a claim idiom.
fn gated(d: u32) -> BoxedStrategy<Cond> {
    let any_gate =
        (gate(), query(d - 1)).prop_map(|(gate, query)| Cond::Gate(gate, Box::new(query)));
    prop_oneof![4 => any_gate, 1 => idiom()].boxed()
}

/// The claims the docs show, fenced as they ask: the queue pop,
/// `id = (SELECT … LIMIT 1 FOR UPDATE SKIP LOCKED)`, and the batch,
/// `id IN (SELECT … LIMIT n FOR UPDATE SKIP LOCKED)`.
fn idiom() -> BoxedStrategy<Cond> {
    let gate = prop_oneof![Just(Gate::ScalarEq), Just(Gate::In)];
    let strength = prop_oneof![Just(Strength::Update), Just(Strength::NoKeyUpdate)];
    (gate, table(), filter_cond(), strength, 1..=5u8)
        .prop_map(|(gate, table, filter, strength, rows)| {
            let rows = if matches!(gate, Gate::ScalarEq) {
                1
            } else {
                rows
            };
            let claim = Select {
                from: From::Table(table),
                filter: Where {
                    fence: Some((Fence::Plain, 1)),
                    conds: vec![Cond::Filter(filter)],
                },
                shape: Shape::Rows {
                    call: None,
                    lock: Some(Lock {
                        strength,
                        of: None,
                        wait: Wait::SkipLocked,
                    }),
                },
                limit: Some(Limit::Rows(rows)),
                bare: true,
            };
            Cond::Gate(gate, Box::new(Query::Select(Box::new(claim))))
        })
        .boxed()
}

/// A condition in a join's `ON` or a `MERGE`'s, besides `a.id = b.id`.
fn on_cond() -> BoxedStrategy<Cond> {
    prop_oneof![
        2 => filter_cond().prop_map(Cond::Filter),
        2 => fence().prop_map(Cond::Fence),
        1 => call().prop_map(Cond::Call),
    ]
    .boxed()
}

/// A `FROM` item of a level of depth `d`.
fn from(d: u32) -> BoxedStrategy<From> {
    let mut options: Vec<(u32, BoxedStrategy<From>)> = vec![
        (10, table().prop_map(From::Table).boxed()),
        (3, view().prop_map(From::View).boxed()),
        (1, (0..2u8).prop_map(From::Cte).boxed()),
    ];
    if d > 0 {
        options.push((3, sub(d)));
        let side = join_side(d);
        let kind = prop_oneof![
            Just(Join::Inner),
            Just(Join::Left),
            Just(Join::Right),
            Just(Join::Full),
        ];
        options.push((
            2,
            (kind, side.clone(), side, option::weighted(0.3, on_cond()))
                .prop_map(|(kind, left, right, on)| From::Join {
                    kind,
                    left: Box::new(left),
                    right: Box::new(right),
                    on,
                })
                .boxed(),
        ));
        options.push((
            1,
            (table(), query(d - 1))
                .prop_map(|(left, right)| From::Lateral {
                    left: Box::new(From::Table(left)),
                    right: Box::new(right),
                })
                .boxed(),
        ));
    }
    Union::new_weighted(options).boxed()
}

/// A side of a join, or a `MERGE` source: not itself a join.
fn join_side(d: u32) -> BoxedStrategy<From> {
    prop_oneof![
        4 => table().prop_map(From::Table),
        1 => view().prop_map(From::View),
        1 => (0..2u8).prop_map(From::Cte),
        4 => sub(d),
    ]
    .boxed()
}

fn sub(d: u32) -> BoxedStrategy<From> {
    query(d - 1)
        .prop_map(|query| From::Sub(Box::new(query)))
        .boxed()
}

fn table() -> BoxedStrategy<Table> {
    prop_oneof![Just(Table::Q), Just(Table::R)].boxed()
}

fn view() -> BoxedStrategy<View> {
    prop_oneof![Just(View::Flat), Just(View::Limited)].boxed()
}

fn target() -> BoxedStrategy<Target> {
    prop_oneof![
        3 => Just(Target::Q),
        2 => Just(Target::R),
        1 => Just(Target::ViewFlat),
    ]
    .boxed()
}

fn update(d: u32) -> BoxedStrategy<Update> {
    let set = prop_oneof![
        6 => Just(SetValue::Literal),
        1 => call().prop_map(SetValue::Call),
        1 => Just(SetValue::FenceCase),
        2 => query(d - 1).prop_map(|q| SetValue::Sub(Box::new(q))),
    ];
    (
        target(),
        set,
        option::weighted(0.25, join_side(d)),
        filter(d),
        any::<bool>(),
        bare(),
    )
        .prop_map(|(target, set, from, filter, returning, bare)| Update {
            target,
            set,
            from,
            filter,
            returning,
            bare,
        })
        .boxed()
}

fn delete(d: u32) -> BoxedStrategy<Delete> {
    (
        target(),
        option::weighted(0.25, join_side(d)),
        filter(d),
        any::<bool>(),
        bare(),
    )
        .prop_map(|(target, using, filter, returning, bare)| Delete {
            target,
            using,
            filter,
            returning,
            bare,
        })
        .boxed()
}

fn insert(d: u32) -> BoxedStrategy<Insert> {
    let source = prop_oneof![
        6 => query(d).prop_map(InsertSource::Query),
        1 => Just(InsertSource::Values),
    ];
    let conflict = prop_oneof![
        2 => Just(Conflict::None),
        1 => Just(Conflict::DoNothing),
        1 => Just(Conflict::DoUpdate),
    ];
    (source, conflict, any::<bool>())
        .prop_map(|(source, conflict, returning)| Insert {
            source,
            conflict,
            returning,
        })
        .boxed()
}

fn merge(d: u32) -> BoxedStrategy<Merge> {
    let condition = || option::weighted(0.3, inner_cond(d));
    let matched = prop_oneof![
        Just(MatchedAction::Update),
        Just(MatchedAction::Delete),
        Just(MatchedAction::Nothing),
    ];
    let not_matched = prop_oneof![
        3 => Just(NotMatchedAction::Insert),
        1 => Just(NotMatchedAction::Nothing),
    ];
    let when = prop_oneof![
        (condition(), matched).prop_map(|(c, a)| When::Matched(c, a)),
        (condition(), not_matched).prop_map(|(c, a)| When::NotMatched(c, a)),
    ];
    (
        table(),
        join_side(d),
        option::weighted(0.2, on_cond()),
        prop::collection::vec(when, 1..=2),
    )
        .prop_map(|(target, source, on, whens)| Merge {
            target,
            source,
            on,
            whens,
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    use super::*;
    use crate::render::render;

    /// Every generated statement is one statement PostgreSQL's parser reads.
    #[test]
    fn generated_statements_parse() {
        let mut runner = TestRunner::new_with_rng(
            Config::default(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
        );
        let strategy = statements();
        for _ in 0..300 {
            let sql = render(&strategy.new_tree(&mut runner).unwrap().current()).sql;
            let checked = leader_fence_check::check(&sql);
            assert_eq!(checked.statements, 1, "{sql}\n{:?}", checked.errors);
        }
    }
}
