//! The role-name rule, written once: `leader-core` checks `Role` values with it, and
//! `leader-macros` checks `#[leader_role("...")]` at compile time with it. The role CHECK's
//! name ([`ROLE_CONSTRAINT`]) and the reading of the roles it lists ([`roles_in_check`]) are
//! here too, for the runtime's start-up check (on the constraint PostgreSQL prints) and for
//! `#[leader_role]` and `leaderctl` (on the constraint a migration writes). The framework
//! migration's `leader_leases_role_format` CHECK states the same rule in SQL ([`SQL_CHECK`]); the
//! integration tests store names through it to prove the two agree.
//!
//! The bound on a role's shard count, [`MAX_SHARDS`], is here for the same reason: the one
//! place both `leader-core` (at run time) and `leader-macros` (at compile time) read it from.
//!
//! A valid name starts with a lowercase ASCII letter, continues with lowercase ASCII letters,
//! digits and underscores, and is at most [`MAX_LEN`] bytes.
//!
//! ```
//! use leader_role_name::{Broken, check};
//!
//! assert_eq!(check("webhook_outbox"), Ok(()));
//! assert_eq!(check("Billing"), Err(Broken::BadStart));
//! assert_eq!(check("bill-ing"), Err(Broken::BadChar { index: 4 }));
//! ```

#![no_std]
#![warn(missing_docs)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;

/// The name of the CHECK constraint on `leader_leases.role` that lists an application's roles.
pub const ROLE_CONSTRAINT: &str = "leader_leases_role_registered";

/// The roles a role CHECK lists: every single-quoted string literal in `definition` (`''` is a
/// quote inside one), in order. `definition` is the constraint's text from its `CHECK` on, as
/// PostgreSQL prints it (`CHECK ((role = ANY (ARRAY['billing'::text, 'dunning'::text])))`) or as
/// a migration writes it (`CHECK (role IN ('billing', 'dunning'))`).
///
/// ```
/// use leader_role_name::roles_in_check;
///
/// let printed = "CHECK ((role = ANY (ARRAY['billing'::text, 'dunning'::text])))";
/// assert_eq!(roles_in_check(printed), ["billing", "dunning"]);
/// assert_eq!(roles_in_check("CHECK (role IN ('solo'))"), ["solo"]);
/// assert_eq!(roles_in_check("CHECK (role IN ('o''neil'))"), ["o'neil"]);
/// ```
pub fn roles_in_check(definition: &str) -> Vec<String> {
    let mut roles = Vec::new();
    let mut chars = definition.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut literal = String::new();
        while let Some(c) = chars.next() {
            if c != '\'' {
                literal.push(c);
            } else if chars.peek() == Some(&'\'') {
                literal.push(chars.next().unwrap_or('\''));
            } else {
                break;
            }
        }
        roles.push(literal);
    }
    roles
}

/// The most shards a role may have: `leader-core`'s shards and `leaderctl` refuse more at run
/// time, `#[leader_role(shards = N)]` at compile time, and the database by the lease table's
/// `leader_leases_shard_in_count` CHECK and `leader_reshard`.
pub const MAX_SHARDS: u32 = 1024;

/// The longest role name, in bytes (PostgreSQL's identifier limit, so a role can name things).
pub const MAX_LEN: usize = 63;

/// The rule in words, for error messages.
pub const RULE: &str = "a role name starts with a lowercase ASCII letter, then lowercase letters, \
                        digits or `_`, at most 63 bytes (e.g. \"billing\", \"webhook_outbox\")";

/// The rule as the framework migration's CHECK on `leader_leases.role` states it.
pub const SQL_CHECK: &str = "role ~ '^[a-z][a-z0-9_]*$' AND octet_length(role) <= 63";

/// The first part of the rule a name breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Broken {
    /// The name is empty.
    Empty,
    /// The name is longer than [`MAX_LEN`] bytes.
    TooLong,
    /// The first character is not a lowercase ASCII letter.
    BadStart,
    /// The character at byte `index` is not a lowercase ASCII letter, digit or `_`. Every byte
    /// before it is ASCII, so `index` is a character boundary.
    BadChar {
        /// The byte offset of the first character that is not allowed.
        index: usize,
    },
}

impl Broken {
    /// A short description, for `const` contexts (a panic in a `const` item).
    pub const fn short(self) -> &'static str {
        match self {
            Broken::Empty => "role name is empty",
            Broken::TooLong => "role name is longer than 63 bytes",
            Broken::BadStart => "role name must start with a lowercase letter",
            Broken::BadChar { .. } => "role name may hold only lowercase letters, digits and `_`",
        }
    }
}

/// Checks `name` against the rule; usable in `const` items.
///
/// # Errors
///
/// The first part of the rule `name` breaks, in the order: empty, too long, bad start, bad
/// character.
pub const fn check(name: &str) -> Result<(), Broken> {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return Err(Broken::Empty);
    }
    if bytes.len() > MAX_LEN {
        return Err(Broken::TooLong);
    }
    if !bytes[0].is_ascii_lowercase() {
        return Err(Broken::BadStart);
    }
    let mut index = 1;
    while index < bytes.len() {
        let b = bytes[index];
        if !(b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
            return Err(Broken::BadChar { index });
        }
        index += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Broken, check};

    #[test]
    fn accepts_the_documented_shapes() {
        let longest = [b'a'; 63];
        let longest = core::str::from_utf8(&longest).unwrap();
        for name in ["billing", "webhook_outbox", "a", "r2d2", longest] {
            assert_eq!(check(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn names_the_first_rule_each_bad_name_breaks() {
        let too_long = [b'a'; 64];
        let too_long = core::str::from_utf8(&too_long).unwrap();
        for (name, broken) in [
            ("", Broken::Empty),
            (too_long, Broken::TooLong),
            ("Billing", Broken::BadStart),
            ("9lives", Broken::BadStart),
            ("_x", Broken::BadStart),
            ("état", Broken::BadStart),
            ("bill-ing", Broken::BadChar { index: 4 }),
            ("billé", Broken::BadChar { index: 4 }),
            ("a b", Broken::BadChar { index: 1 }),
        ] {
            assert_eq!(check(name), Err(broken), "{name:?}");
        }
    }
}
