//! `/replicas`: each holder id the database knows, what it leads now, whether its leases are
//! anchored (and the anchor session alive), and when it was last seen.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{DateTime, Utc};
use maud::html;

use super::{Nav, Req, View, errors, render};
use crate::format::{ago, at};
use crate::lease_view::{Anchoring, Word, view};
use crate::serve::App;
use crate::snapshot::Snapshot;

/// One replica, gathered from the leases it holds, its presence rows and the history.
#[derive(Debug, Default)]
struct Replica {
    /// `role` or `role 3/8`, for each lease it leads now.
    leads: Vec<String>,
    /// Leases it holds whose expiry passed.
    expired: Vec<String>,
    anchors: Vec<Anchoring>,
    last_granted: Option<DateTime<Utc>>,
    last_released: Option<DateTime<Utc>>,
}

impl Replica {
    /// The latest instant the database saw it act.
    fn last_seen(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if !self.leads.is_empty() {
            return Some(now);
        }
        [self.last_granted, self.last_released]
            .into_iter()
            .flatten()
            .max()
    }
}

pub(crate) async fn page(State(app): State<App>, headers: HeaderMap) -> Response {
    let req = Req::new(&app, &headers);
    let snap = match Snapshot::read(&app.pool).await {
        Ok(snap) => snap,
        Err(err) => return errors::unreadable(&req, &err),
    };
    let now = snap.db_now;
    let mut replicas: BTreeMap<String, Replica> = BTreeMap::new();
    for lease in &snap.leases {
        let v = view(lease, &snap, app.options.overdue_after);
        let Some(holder) = &lease.status.holder_id else {
            continue;
        };
        let name = if lease.shard_count > 1 {
            format!(
                "{} {}/{}",
                lease.status.role, lease.shard_index, lease.shard_count
            )
        } else {
            lease.status.role.clone()
        };
        let replica = replicas.entry(holder.clone()).or_default();
        if v.word == Word::Leading {
            replica.leads.push(name);
        } else {
            replica.expired.push(name);
        }
        replica.anchors.push(v.anchoring);
    }
    for presence in &snap.presence {
        let replica = replicas.entry(presence.holder_id.clone()).or_default();
        if let Some(pid) = presence.anchor_pid {
            let anchoring = Anchoring::Anchored {
                pid,
                alive: snap.session_lives(pid),
            };
            if !replica.anchors.contains(&anchoring) {
                replica.anchors.push(anchoring);
            }
        }
    }
    for (holder, seen) in &snap.seen {
        let replica = replicas.entry(holder.clone()).or_default();
        replica.last_granted = seen.last_granted;
        replica.last_released = seen.last_released;
    }
    let live = html! {
        h1 { "Replicas" }
        p.note { "Every holder id in the lease rows, the presence rows of sharded roles, and the tick history." }
        table #replicas {
            thead { tr {
                th { "Replica (holder id)" } th { "Leads now" } th { "Anchored" } th { "Last seen" }
                th { "Last granted" } th { "Last released" }
            } }
            tbody {
                @for (holder, r) in &replicas {
                    tr data-replica=(holder) {
                        td.mono { (holder) }
                        td {
                            @if r.leads.is_empty() && r.expired.is_empty() { span.note { "nothing" } }
                            (r.leads.join(", "))
                            @if !r.expired.is_empty() {
                                " " span class="state expired" { "expired: " (r.expired.join(", ")) }
                            }
                        }
                        td {
                            @if r.anchors.is_empty() { "-" }
                            (r.anchors.iter().map(|a| a.describe()).collect::<Vec<_>>().join(", "))
                        }
                        td.num { (r.last_seen(now).map_or("-".to_owned(), |t| if t == now { "now (leading)".to_owned() } else { ago(t, now) })) }
                        td.num { (r.last_granted.map_or("-".to_owned(), |t| format!("{} ({})", at(t, now), ago(t, now)))) }
                        td.num { (r.last_released.map_or("-".to_owned(), |t| format!("{} ({})", at(t, now), ago(t, now)))) }
                    }
                }
                @if replicas.is_empty() { tr { td colspan="6" { "No replica has been granted anything yet." } } }
            }
        }
    };
    render(
        &req,
        View {
            status: StatusCode::OK,
            title: "Replicas".to_owned(),
            nav: Nav::Replicas,
            fixed: html! {},
            live,
            db_now: Some(now),
            refreshes: true,
        },
    )
}
