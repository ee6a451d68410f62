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
