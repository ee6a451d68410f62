//! `leaderctl check`: the runtime's start-up schema check, run from the command line.
//!
//! Each `--role` is `NAME`, or `NAME:COUNT` for a role the code leads with `COUNT` shards (1:
//! unsharded): the runtime refuses to start when the role's rows have another count, and so does
//! `check`. A bare `NAME` accepts any count, since the command line does not know the code's.

use leader_core::schema::ExpectedRole;
use leader_core::{MAX_SHARDS, Role, SchemaError, check_schema_ready};
use sqlx::PgPool;

use crate::failure::Failure;

/// A `--role` value: `NAME` or `NAME:COUNT`.
fn expected(arg: &str) -> Result<ExpectedRole, Failure> {
    let (name, count) = match arg.split_once(':') {
        Some((name, count)) => (name, Some(count)),
        None => (arg, None),
    };
    let role = Role::new(name).map_err(|e| Failure::refused(e.to_string()))?;
    let Some(count) = count else {
        return Ok(role.into());
    };
    match count.parse::<u32>() {
        Ok(count @ 1..=MAX_SHARDS) => Ok(ExpectedRole::sharded(role, count)),
        _ => Err(Failure::refused(format!(
            "--role {arg}: the shard count after `:` must be a number from 1 to {MAX_SHARDS} (the \
             count the code leads the role with; 1 is unsharded), e.g. --role {name}:8"
        ))),
    }
}

/// Checks the framework schema and that each of `roles` is registered and seeded, with the shard
/// count given; prints each problem with its fix.
pub async fn run(pool: &PgPool, roles: &[String]) -> Result<(), Failure> {
    let roles: Vec<ExpectedRole> = roles
        .iter()
        .map(|arg| expected(arg))
        .collect::<Result<_, _>>()?;
    match check_schema_ready(pool, &roles).await {
        Ok(()) => {
            println!("ok: the framework schema is in place");
            for expected in &roles {
                let role = expected.role();
                match expected.shard_count() {
                    Some(count) => {
                        println!("ok: role {role} is registered and seeded, with {count} shard(s)")
                    }
                    None => println!(
                        "ok: role {role} is registered and seeded (its shard count is not \
                         checked: --role {role}:COUNT checks it)"
                    ),
                }
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

#[cfg(test)]
mod tests {
    use super::expected;

    #[test]
    fn a_role_argument_is_a_name_with_an_optional_shard_count() {
        let bare = expected("webhooks").unwrap();
        assert_eq!(
            (bare.role().as_str(), bare.shard_count()),
            ("webhooks", None)
        );
        let four = expected("webhooks:4").unwrap();
        assert_eq!(
            (four.role().as_str(), four.shard_count()),
            ("webhooks", Some(4))
        );
        for bad in ["webhooks:0", "webhooks:1025", "webhooks:", "webhooks:four"] {
            let message = expected(bad).unwrap_err().message().to_owned();
            assert!(
                message.contains(&format!("--role {bad}: the shard count"))
                    && message.contains("--role webhooks:8"),
                "{message}"
            );
        }
        assert!(expected("Web:4").is_err(), "the name is checked too");
    }
}
