//! `leaderctl migrations write DIR --grant LOGIN --operator LOGIN`: the migrations granting an
//! application's login role what the protocol needs (`SELECT leader_grant_app_role('LOGIN');`),
//! and an operator's login what the dashboard needs (`SELECT
//! leader_grant_operator_role('LOGIN');`), each written unless one of the folder's migrations
//! already calls it for that login role ([`Folder::granted_by`],
//! [`Folder::operator_granted_by`]).

use std::path::Path;

use crate::failure::Failure;
use crate::roles::{literal, print_written, write_migration};
use leader_migrations::Folder;

/// PostgreSQL's longest name, in bytes (`NAMEDATALEN - 1`).
const MAX_NAME: usize = 63;

/// Whose grant: the application's login, or an operator's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grantee {
    /// The login the application connects as: the lease statements' grants.
    App,
    /// A login `leaderctl dashboard` connects as: reads, and the audited operator functions.
    Operator,
}

impl Grantee {
    fn function(self) -> &'static str {
        match self {
            Grantee::App => "leader_grant_app_role",
            Grantee::Operator => "leader_grant_operator_role",
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Grantee::App => "--grant",
            Grantee::Operator => "--operator",
        }
    }

    fn granted_by(self, folder: &Folder, login: &str) -> Option<String> {
        match self {
            Grantee::App => folder.granted_by(login),
            Grantee::Operator => folder.operator_granted_by(login),
        }
        .map(str::to_owned)
    }
}

/// Refuses a login role name PostgreSQL cannot have.
pub fn validate(logins: &[String], grantee: Grantee) -> Result<(), Failure> {
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
            let example = match grantee {
                Grantee::App => "the login role your application connects as, e.g. --grant my_app",
                Grantee::Operator => {
                    "the login role the dashboard connects as, e.g. --operator ops"
                }
            };
            return Err(Failure::refused(format!(
                "{} {login:?} {why}: pass {example}",
                grantee.flag()
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
fn stem(version: u64, logins: &[&str], grantee: Grantee) -> String {
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
    match grantee {
        Grantee::App => format!("{version}_leader_grant_{slug}"),
        Grantee::Operator => format!("{version}_leader_grant_operator_{slug}"),
    }
}

fn up(logins: &[&str], grantee: Grantee) -> String {
    let calls: String = logins
        .iter()
        .map(|l| format!("SELECT {}({});\n", grantee.function(), literal(l)))
        .collect();
    let what = match grantee {
        Grantee::App => {
            "-- Grants the application's login role what the leader protocol needs (written by \
             leaderctl):\n\
             -- SELECT, UPDATE on leader_leases, SELECT on leader_status, EXECUTE on the fence and the\n\
             -- operator functions."
        }
        Grantee::Operator => {
            "-- Grants an operator's login what `leaderctl dashboard` needs (written by leaderctl):\n\
             -- SELECT on the lease rows, the view, the presence rows, the tick history and the\n\
             -- operator's actions, and EXECUTE on the leader_operator_* functions, which act and\n\
             -- record who and why. No write on any table."
        }
    };
    format!("{what} The login role must exist when this runs (CREATE ROLE ... LOGIN).\n{calls}")
}

fn down(logins: &[&str], grantee: Grantee) -> String {
    let mut sql = format!(
        "-- Takes back what {} granted, as of the framework migrations this\n\
         -- leaderctl writes.\n",
        grantee.function()
    );
    for login in logins {
        let who = identifier(login);
        sql += &match grantee {
            Grantee::App => format!(
                "REVOKE SELECT, UPDATE ON leader_leases FROM {who};\n\
                 REVOKE SELECT ON leader_status FROM {who};\n\
                 REVOKE EXECUTE ON FUNCTION leader_fence(text, bigint), leader_pause(text, text, text),\n    \
                 leader_unpause(text), leader_clear_cooldown(text) FROM {who};\n"
            ),
            Grantee::Operator => format!(
                "REVOKE SELECT ON leader_leases, leader_status, leader_presence, leader_tick_history,\n    \
                 leader_operator_actions FROM {who};\n\
                 REVOKE EXECUTE ON FUNCTION leader_operator_pause(text, integer, text, text),\n    \
                 leader_operator_unpause(text, integer, text, text),\n    \
                 leader_operator_clear_cooldown(text, text, text) FROM {who};\n"
            ),
        };
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
    grantee: Grantee,
) -> Result<Option<String>, Failure> {
    let mut missing: Vec<&str> = Vec::new();
    for login in logins {
        if missing.contains(&login.as_str()) {
            continue;
        }
        let what = match grantee {
            Grantee::App => format!("grant to {login}"),
            Grantee::Operator => format!("operator grant to {login}"),
        };
        match grantee.granted_by(folder, login) {
            Some(file) => println!("{what:<48} already granted ({file})"),
            None => missing.push(login),
        }
    }
    if missing.is_empty() {
        return Ok(None);
    }
    let name = write_migration(
        dir,
        &stem(version, &missing, grantee),
        folder.reversible(),
        &up(&missing, grantee),
        &down(&missing, grantee),
    )?;
    let call = missing
        .iter()
        .map(|l| format!("SELECT {}({})", grantee.function(), literal(l)))
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
        assert!(up(&["it's"], Grantee::App).ends_with("SELECT leader_grant_app_role('it''s');\n"));
        assert!(down(&["a\"b"], Grantee::App).contains("FROM \"a\"\"b\";"));
        assert_eq!(
            stem(7, &["Billing-App"], Grantee::App),
            "7_leader_grant_billing_app"
        );
        assert!(
            up(&["ops"], Grantee::Operator)
                .ends_with("SELECT leader_grant_operator_role('ops');\n")
        );
        assert_eq!(
            stem(7, &["ops"], Grantee::Operator),
            "7_leader_grant_operator_ops"
        );
    }

    #[test]
    fn a_name_postgresql_cannot_have_is_refused() {
        assert!(validate(&["my_app".into(), "Billing-App".into()], Grantee::App).is_ok());
        assert!(validate(&[String::new()], Grantee::App).is_err());
        let long = validate(&["x".repeat(64)], Grantee::Operator).unwrap_err();
        assert!(
            long.message().starts_with("--operator"),
            "{}",
            long.message()
        );
    }
}
