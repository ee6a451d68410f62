//! The database login the dashboard runs as: an operator's, never the owner's or the
//! application's.

use sqlx::{PgPool, Row};

/// Why [`check_operator_login`] refused the login.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// The login could write the lease table directly, or owns it, or is a superuser.
    #[error(
        "the dashboard connects as an operator's login, not as `{login}` ({why}): create one with \
         CREATE ROLE ops LOGIN PASSWORD '...'; SELECT leader_grant_operator_role('ops'); (or \
         `leaderctl migrations write DIR --operator ops`) and connect as it"
    )]
    TooPowerful {
        /// The login.
        login: String,
        /// What it may do that it must not.
        why: &'static str,
    },
    /// The login lacks the operator's grants, or the schema lacks the dashboard's objects.
    #[error(
        "`{login}` cannot read {what}: apply the framework migrations (20261211000000_leader_tick_history \
         adds the history and the operator's functions) and grant the login with SELECT \
         leader_grant_operator_role('{login}')"
    )]
    NotGranted {
        /// The login.
        login: String,
        /// What it cannot read.
        what: String,
    },
    /// The check's query failed.
    #[error("cannot check the dashboard's login: {0}")]
    Database(#[from] sqlx::Error),
}

// Simple-protocol text with no value in it, so it works through a transaction-mode pooler.
const CHECK: &str = "
/* leader-dashboard */
SELECT current_user::text                                                        AS login,
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)              AS superuser,
       coalesce(pg_has_role(current_user,
                            (SELECT relowner FROM pg_class
                              WHERE oid = to_regclass('leader_leases')), 'MEMBER'), false)
                                                                                 AS owner,
       CASE WHEN to_regclass('leader_leases') IS NULL THEN false
            ELSE has_table_privilege('leader_leases', 'UPDATE')
                 OR has_table_privilege('leader_leases', 'INSERT')
                 OR has_table_privilege('leader_leases', 'DELETE')
       END                                                                       AS writes_leases,
       -- CASE, not OR: has_table_privilege fails on a relation that does not exist.
       array_remove(ARRAY[
           CASE WHEN to_regclass('leader_tick_history') IS NULL THEN 'leader_tick_history'
                WHEN NOT has_table_privilege('leader_tick_history', 'SELECT')
                THEN 'leader_tick_history' END,
           CASE WHEN to_regclass('leader_status') IS NULL THEN 'leader_status'
                WHEN NOT has_table_privilege('leader_status', 'SELECT') THEN 'leader_status' END,
           CASE WHEN to_regclass('leader_presence') IS NULL THEN 'leader_presence'
                WHEN NOT has_table_privilege('leader_presence', 'SELECT')
                THEN 'leader_presence' END,
           CASE WHEN to_regclass('leader_operator_actions') IS NULL
                THEN 'leader_operator_actions'
                WHEN NOT has_table_privilege('leader_operator_actions', 'SELECT')
                THEN 'leader_operator_actions' END], NULL)                       AS unreadable
";

/// Refuses to serve as a login that is a superuser, owns `leader_leases`, or may `UPDATE`,
/// `INSERT` or `DELETE` it (the application's login may), and as one that cannot read what the
/// pages show (`leader_grant_operator_role` grants exactly that).
///
/// # Errors
///
/// [`LoginError`] saying which, and how to create the operator's login.
pub async fn check_operator_login(pool: &PgPool) -> Result<(), LoginError> {
    let row = sqlx::raw_sql(CHECK).fetch_one(pool).await?;
    let login: String = row.try_get("login")?;
    let why = if row.try_get::<Option<bool>, _>("superuser")? == Some(true) {
        Some("a superuser")
    } else if row.try_get::<bool, _>("owner")? {
        Some("it owns leader_leases")
    } else if row.try_get::<bool, _>("writes_leases")? {
        Some("it may write leader_leases directly: the application's login")
    } else {
        None
    };
    if let Some(why) = why {
        return Err(LoginError::TooPowerful { login, why });
    }
    let unreadable: Vec<String> = row.try_get("unreadable")?;
    if !unreadable.is_empty() {
        return Err(LoginError::NotGranted {
            login,
            what: unreadable.join(", "),
        });
    }
    Ok(())
}
