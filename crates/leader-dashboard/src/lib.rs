//! The operator's web page for leader-runtime: every role's leader, its history and its health at
//! a glance, and for a role that is not running, the one-sentence reason read from the database
//! with the command or the button that fixes it. `leaderctl dashboard` serves it; an application
//! can serve [`router`] itself.
//!
//! | page | what it shows |
//! |---|---|
//! | `/` | every role and shard: its state in one word, holder, token, held for, lease expires in, next due, last outcome and when, anchored or not, and why it is not running; sortable, filterable |
//! | `/roles/{role}` | the role's timeline (who held it when, the gaps between holders and their causes), its recent ticks, its shards' spread over replicas, its operator actions, and the fix |
//! | `/replicas` | each holder id: what it leads, whether it is anchored, when it was last seen |
//!
//! Pages are rendered on the server ([maud](https://docs.rs/maud)); a small script of its own
//! (`/assets/live.js`, no build chain) re-renders the page's live part whenever the server's event
//! stream (`/events`, server-sent events) says so, every [`Options::refresh`]. Every time shown is
//! on the database clock.
//!
//! # Writes
//!
//! Pausing, unpausing and clearing a cooldown are off unless the server is given a
//! [`WriteToken`] (read from the environment, never from the command line). Then an operator signs
//! in with that token and their name, every form carries a CSRF token tied to the session, each
//! action is confirmed on a page of its own, and each is recorded with who did it and why in
//! `leader_operator_actions`, in the same transaction as the action (the database's
//! `leader_operator_*` functions do both).
//!
//! # The database login
//!
//! The dashboard connects as an operator's login granted with
//! `SELECT leader_grant_operator_role('ops')`: it may read the lease rows, the history, the
//! presence rows and the actions, and act only through the `leader_operator_*` functions.
//! [`check_operator_login`] refuses the schema's owner, a superuser, and any login that may
//! write the lease table directly (the application's), saying how to create the right one.
//!
//! # Bad input
//!
//! An unknown role, a malformed role name, an oversized or malformed form, a missing token and a
//! database that stops answering each get a page saying what was wrong and what to do, with the
//! HTTP status that fits; nothing is written and nothing panics. No text from a request is ever
//! put into SQL: pages read whole tables and pick rows in Rust, and actions bind their values.

#![warn(missing_docs)]

mod auth;
mod format;
mod lease_view;
mod login;
mod options;
mod pages;
mod serve;
mod snapshot;
mod timeline;

pub use login::{LoginError, check_operator_login};
pub use options::{Options, TokenError, WriteToken};
pub use serve::{router, serve};
