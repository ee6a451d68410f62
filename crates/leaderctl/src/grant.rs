//! `leaderctl migrations write DIR --grant LOGIN`: the migration granting an application's login
//! role what the protocol needs, `SELECT leader_grant_app_role('LOGIN');`, written unless one of
//! the folder's migrations already calls it for that login role ([`Folder::granted_by`]).

use std::path::Path;

use crate::failure::Failure;
use crate::roles::{literal, print_written, write_migration};
use leader_migrations::Folder;

/// PostgreSQL's longest name, in bytes (`NAMEDATALEN - 1`).
const MAX_NAME: usize = 63;

/// Refuses a login role name PostgreSQL cannot have.
pub fn validate(logins: &[String]) -> Result<(), Failure> {
    for login in logins {
        let why = if login.is_empty() {
            Some("is empty")
        } else if login.len() > MAX_NAME {
            Some("is longer than PostgreSQL's 63 bytes")
        } else if login.contains('\0') {
            Some("has a NUL byte")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(Failure::refused(format!(
                "--grant {login:?} {why}: pass the login role your application connects as, \
                 e.g. --grant my_app"
            )));
        }
    }
    Ok(())
}

/// `"name"`, quotes doubled: the login role as an identifier, for the REVOKE.
fn identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The file name's description for `logins`: lowercase letters, digits and underscores.
fn stem(version: u64, logins: &[&str]) -> String {
    let mut slug: String = logins
        .join("_")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    slug.truncate(40);
    format!("{version}_leader_grant_{slug}")
}

fn up(logins: &[&str]) -> String {
    let calls: String = logins
        .iter()
        .map(|l| format!("SELECT leader_grant_app_role({});\n", literal(l)))
        .collect();
    format!(
        "-- Grants the application's login role what the leader protocol needs (written by \
         leaderctl):\n\
         -- SELECT, UPDATE on leader_leases, SELECT on leader_status, EXECUTE on the fence and the\n\
         -- operator functions. The login role must exist when this runs (CREATE ROLE ... LOGIN).\n\
         {calls}"
    )
}

fn down(logins: &[&str]) -> String {
    let mut sql = String::from(
        "-- Takes back what leader_grant_app_role granted, as of the framework migrations this\n\
         -- leaderctl writes.\n",
    );
    for login in logins {
        let who = identifier(login);
        sql += &format!(
            "REVOKE SELECT, UPDATE ON leader_leases FROM {who};\n\
             REVOKE SELECT ON leader_status FROM {who};\n\
             REVOKE EXECUTE ON FUNCTION leader_fence(text, bigint), leader_pause(text, text, text),\n    \
             leader_unpause(text), leader_clear_cooldown(text) FROM {who};\n"
        );
    }
    sql
}

/// Writes the grant of every login in `logins` (validated) that `folder` does not grant yet, as
/// version `version`, printing a line per login; the file's name when one was written.
pub fn write(
    dir: &Path,
    folder: &Folder,
    logins: &[String],
    version: u64,
) -> Result<Option<String>, Failure> {
    let mut missing: Vec<&str> = Vec::new();
    for login in logins {
        if missing.contains(&login.as_str()) {
            continue;
        }
        match folder.granted_by(login) {
            Some(file) => println!(
                "{:<48} already granted ({file})",
                format!("grant to {login}")
            ),
            None => missing.push(login),
        }
    }
    if missing.is_empty() {
        return Ok(None);
    }
    let name = write_migration(
        dir,
        &stem(version, &missing),
        folder.reversible(),
        &up(&missing),
        &down(&missing),
    )?;
    let call = missing
        .iter()
        .map(|l| format!("SELECT leader_grant_app_role({})", literal(l)))
        .collect::<Vec<_>>()
        .join("; ");
    print_written(&name, &call);
    Ok(Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_for_sql_and_slugged_for_the_file() {
        assert!(up(&["it's"]).ends_with("SELECT leader_grant_app_role('it''s');\n"));
        assert!(down(&["a\"b"]).contains("FROM \"a\"\"b\";"));
        assert_eq!(stem(7, &["Billing-App"]), "7_leader_grant_billing_app");
    }

    #[test]
    fn a_name_postgresql_cannot_have_is_refused() {
        assert!(validate(&["my_app".into(), "Billing-App".into()]).is_ok());
        assert!(validate(&[String::new()]).is_err());
        assert!(validate(&["x".repeat(64)]).is_err());
    }
}
