//! Start-up errors name every mistake at once, each with its fix.

mod common;

use std::time::Duration;

use common::{ALPHA, database};
use leader_runtime::schema::{SchemaError, SchemaProblem, SchemaReport};
use leader_runtime::{JobError, Role, RunError, Runtime, TickContext};
use tokio_util::sync::CancellationToken;

async fn idle(_: TickContext) -> Result<(), JobError> {
    Ok(())
}

#[tokio::test]
async fn start_up_reports_every_role_the_database_does_not_match_at_once() {
    let db = database().await;
    let (delta, epsilon) = (Role::from_static("delta"), Role::from_static("epsilon"));
    let every = Duration::from_secs(1);
    let error = Runtime::builder(db.pool().clone())
        .role(delta, every, idle)
        .role(epsilon, every, idle)
        .sharded_role(ALPHA, every, 4, idle)
        .build()
        .unwrap()
        .run_until_cancelled(CancellationToken::new())
        .await
        .unwrap_err();
    let RunError::Schema(SchemaError::NotReady(SchemaReport { problems, .. })) = &error else {
        panic!("expected the schema check's refusal, got {error:?}");
    };
    let named: Vec<(Role, Option<u32>)> = problems
        .iter()
        .map(|problem| match problem {
            SchemaProblem::RoleNotInCheck { role, .. } => (*role, None),
            SchemaProblem::ShardCount { role, code, .. } => (*role, Some(*code)),
            other => panic!("unexpected problem {other:?} in {error:?}"),
        })
        .collect();
    assert_eq!(
        named,
        [(delta, None), (epsilon, None), (ALPHA, Some(4))],
        "{error:?}"
    );
    // What `main` prints: every problem's fix, not the fields.
    let printed = format!("{error:?}");
    assert!(printed.contains("with 'delta' added"), "{printed}");
    assert!(printed.contains("with 'epsilon' added"), "{printed}");
    assert!(
        printed.contains("SELECT leader_reshard('alpha', 4)"),
        "{printed}"
    );
}
