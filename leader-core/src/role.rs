//! Role names: the key of a lease row.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Mutex, OnceLock};

/// The name of a leader role, such as `billing`: the primary key of its `leader_leases` row.
///
/// A valid name starts with a lowercase ASCII letter, continues with lowercase letters, digits and
/// underscores, and is at most [`Role::MAX_LEN`] bytes: the rule of the `leader-role-name` crate,
/// which the table's `leader_leases_role_format` CHECK states in SQL, so a `Role` value is always
/// storable.
///
/// `Role` is `Copy` (it holds a `&'static str`) so a [`Fence`](crate::Fence) can be `Copy` too.
///
/// ```
/// use leader_core::Role;
///
/// const BILLING: Role = Role::from_static("billing");
/// assert_eq!(BILLING.as_str(), "billing");
/// assert!(Role::new("Billing").is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Role(&'static str);

/// Why a string is not a valid [`Role`] name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoleNameError {
    /// The name is empty.
    #[error("role name is empty: use a name such as `billing` (lowercase letters, digits, `_`)")]
    Empty,
    /// The name is longer than [`Role::MAX_LEN`] bytes.
    #[error("role name `{name}` is {len} bytes long: shorten it to at most 63 bytes")]
    TooLong {
        /// The offending name.
        name: String,
        /// Its length in bytes.
        len: usize,
    },
    /// The name does not start with a lowercase ASCII letter.
    #[error("role name `{name}` must start with a lowercase letter (a-z)")]
    BadStart {
        /// The offending name.
        name: String,
    },
    /// The name holds a character other than `a-z`, `0-9` and `_`.
    #[error(
        "role name `{name}` has `{ch}` at byte {index}: use only lowercase letters, digits and `_`"
    )]
    BadChar {
        /// The offending name.
        name: String,
        /// The first character that is not allowed.
        ch: char,
        /// Its byte offset.
        index: usize,
    },
}

impl Role {
    /// The longest role name, in bytes (PostgreSQL's identifier limit, so a role can name things).
    pub const MAX_LEN: usize = leader_role_name::MAX_LEN;

    /// A role from a name known at compile time.
    ///
    /// # Panics
    ///
    /// Panics if `name` breaks the role rule. In a `const` item that panic is a compile error, which
    /// is how `#[leader_role]` and hand-written role constants are checked.
    pub const fn from_static(name: &'static str) -> Role {
        match leader_role_name::check(name) {
            Ok(()) => Role(name),
            Err(broken) => panic!("{}", broken.short()),
        }
    }

    /// A role from a name known only at run time, such as a configuration value.
    ///
    /// Names are interned: each distinct valid name is allocated once for the life of the process.
    ///
    /// # Errors
    ///
    /// [`RoleNameError`] naming the rule the name breaks.
    pub fn new(name: &str) -> Result<Role, RoleNameError> {
        validate(name)?;
        static INTERNED: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
        let mut interned = INTERNED
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(existing) = interned.get(name) {
            return Ok(Role(existing));
        }
        let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
        interned.insert(leaked);
        Ok(Role(leaked))
    }

    /// The name, as stored in `leader_leases.role`.
    pub const fn as_str(&self) -> &'static str {
        self.0
    }
}

/// Checks a role name, naming the first rule it breaks.
///
/// # Errors
///
/// [`RoleNameError`] for an empty, too long, badly started name, or one with a bad character.
pub fn validate(name: &str) -> Result<(), RoleNameError> {
    use leader_role_name::Broken;

    let owned = || name.to_owned();
    match leader_role_name::check(name) {
        Ok(()) => Ok(()),
        Err(Broken::Empty) => Err(RoleNameError::Empty),
        Err(Broken::TooLong) => Err(RoleNameError::TooLong {
            name: owned(),
            len: name.len(),
        }),
        Err(Broken::BadStart) => Err(RoleNameError::BadStart { name: owned() }),
        Err(Broken::BadChar { index }) => Err(RoleNameError::BadChar {
            name: owned(),
            ch: name[index..]
                .chars()
                .next()
                .unwrap_or(char::REPLACEMENT_CHARACTER),
            index,
        }),
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Debug for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Role({:?})", self.0)
    }
}

impl sqlx::Type<sqlx::Postgres> for Role {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        <&str as sqlx::Type<sqlx::Postgres>>::type_info()
    }
}

impl<'q> sqlx::Encode<'q, sqlx::Postgres> for Role {
    fn encode_by_ref(
        &self,
        buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <&str as sqlx::Encode<'q, sqlx::Postgres>>::encode_by_ref(&self.0, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_shapes() {
        for name in ["billing", "webhook_outbox", "a", "r2d2", &"a".repeat(63)] {
            assert_eq!(Role::new(name).unwrap().as_str(), name);
        }
    }

    #[test]
    fn names_the_rule_each_bad_name_breaks() {
        assert_eq!(Role::new(""), Err(RoleNameError::Empty));
        assert!(matches!(
            Role::new(&"a".repeat(64)),
            Err(RoleNameError::TooLong { len: 64, .. })
        ));
        assert!(matches!(
            Role::new("Billing"),
            Err(RoleNameError::BadStart { .. })
        ));
        assert!(matches!(
            Role::new("9lives"),
            Err(RoleNameError::BadStart { .. })
        ));
        assert!(matches!(
            Role::new("_x"),
            Err(RoleNameError::BadStart { .. })
        ));
        assert!(matches!(
            Role::new("bill-ing"),
            Err(RoleNameError::BadChar {
                ch: '-',
                index: 4,
                ..
            })
        ));
        assert!(matches!(
            Role::new("billé"),
            Err(RoleNameError::BadChar {
                ch: 'é',
                index: 4,
                ..
            })
        ));
    }

    #[test]
    fn the_framework_migration_states_the_rule_in_sql() {
        let migration = include_str!("../migrations/20261201000000_leader_leases.up.sql");
        assert!(
            migration.contains(leader_role_name::SQL_CHECK),
            "leader_leases_role_format must be CHECK ({})",
            leader_role_name::SQL_CHECK
        );
    }

    #[test]
    fn interning_returns_the_same_static_str() {
        let a = Role::new("interned_once").unwrap();
        let b = Role::new(&String::from("interned_once")).unwrap();
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
    }
}
