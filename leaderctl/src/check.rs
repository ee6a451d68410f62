//! `leaderctl check`: the runtime's start-up schema check, run from the command line.

use leader_core::{Role, SchemaError, check_schema_ready};
use sqlx::PgPool;

use crate::failure::Failure;

/// Checks the framework schema and that each of `roles` is registered and seeded; prints each
/// problem with its fix.
pub async fn run(pool: &PgPool, roles: &[String]) -> Result<(), Failure> {
    let roles: Vec<Role> = roles
        .iter()
        .map(|name| Role::new(name))
        .collect::<Result<_, _>>()
        .map_err(|e| Failure::refused(e.to_string()))?;
    match check_schema_ready(pool, &roles).await {
        Ok(()) => {
            println!("ok: the framework schema is in place");
            for role in &roles {
                println!("ok: role {role} is registered and seeded");
            }
            Ok(())
        }
        Err(SchemaError::NotReady(report)) => {
            for problem in &report.problems {
                println!("problem: {problem}");
            }
            Err(Failure::unreachable(format!(
                "the database is not ready for leader-runtime: {} problem(s), each printed above \
                 with its fix",
                report.problems.len()
            )))
        }
        Err(SchemaError::Statement(error)) => Err(Failure::from_core(error)),
        Err(other) => Err(Failure::unreachable(other.to_string())),
    }
}
