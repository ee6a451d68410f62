//! `/`: every role and shard in one table, sortable and filterable, each not running with why.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{DateTime, TimeDelta, Utc};
use maud::{Markup, html};

use super::{Nav, Req, View, command, errors, render};
use crate::format::{ago, at, span, until};
use crate::lease_view::{Anchoring, LeaseView, Why, Word, view, why_unseeded};
use crate::serve::App;
use crate::snapshot::Snapshot;

/// The columns the table sorts by, as the `sort` parameter names them.
const SORTS: [(&str, &str); 8] = [
    ("role", "Role"),
    ("state", "State"),
    ("holder", "Holder"),
    ("held", "Held for"),
    ("expires", "Expires in"),
    ("due", "Next due"),
    ("last", "Last outcome"),
    ("anchor", "Anchored"),
];

/// One line of the table: a lease, or a role the CHECK registers without a row.
struct Line<'a> {
    role: &'a str,
    shard: Option<(i32, i32)>,
    word: Word,
    lease: Option<LeaseView<'a>>,
    why: Option<Why>,
    last: Option<(String, DateTime<Utc>)>,
}

impl Line<'_> {
    fn holder(&self) -> &str {
        self.lease
            .as_ref()
            .and_then(|l| l.lease.status.holder_id.as_deref())
            .unwrap_or("")
    }

    fn field<T>(&self, f: impl Fn(&LeaseView<'_>) -> Option<T>) -> Option<T> {
        self.lease.as_ref().and_then(f)
    }
}

pub(crate) async fn page(
    State(app): State<App>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let req = Req::new(&app, &headers);
    let snap = match Snapshot::read(&app.pool).await {
        Ok(snap) => snap,
        Err(err) => return errors::unreadable(&req, &err),
    };
    let filter_state = query.get("state").and_then(|s| Word::from_slug(s));
    let needle = query
        .get("q")
        .map(|q| q.trim().to_lowercase())
        .filter(|q| !q.is_empty() && q.len() <= 100);
    let sort = query
        .get("sort")
        .and_then(|s| SORTS.iter().find(|(key, _)| key == s))
        .map_or("role", |(key, _)| *key);
    let descending = query.get("desc").is_some_and(|d| d == "1");

    let mut lines = lines(&snap, &app);
    lines.retain(|line| {
        filter_state.is_none_or(|w| line.word == w)
            && needle.as_ref().is_none_or(|n| {
                line.role.contains(n.as_str()) || line.holder().to_lowercase().contains(n.as_str())
            })
    });
    sort_lines(&mut lines, sort, snap.db_now);
    if descending {
        lines.reverse();
    }
    let counts = Word::ALL.map(|w| (w, snap_count(&snap, &app, w)));
    let fixed = html! {
        h1 { "Roles" }
        form.filters method="get" action="/" {
            label { "State "
                select name="state" {
                    option value="" { "any" }
                    @for word in Word::ALL {
                        option value=(word.slug()) selected[filter_state == Some(word)] { (word.as_str()) }
                    }
                }
            }
            label { "Role or holder "
                input type="text" name="q" maxlength="100" value=(needle.clone().unwrap_or_default());
            }
            input type="hidden" name="sort" value=(sort);
            button.button type="submit" { "Filter" }
            @if filter_state.is_some() || needle.is_some() { a href="/" { "clear" } }
        }
    };
    let live = html! {
        p.note {
            @for (word, n) in counts { @if n > 0 {
                span class={"state " (word.slug())} { (n) " " (word.as_str()) } " "
            } }
            "· " (snap.leases.len()) " lease(s) of " (snap.roles().len()) " role(s); history keeps the last "
            (snap.slots) " ticks of each."
        }
        table #overview {
            thead { tr {
                @for (key, label) in SORTS {
                    th { a href=(sort_link(key, sort, descending, filter_state, needle.as_deref())) {
                        (label) @if key == sort { @if descending { " ▲" } @else { " ▼" } }
                    } }
                    @if key == "role" { th { "Shard" } }
                    @if key == "holder" { th { "Token" } }
                }
                th { "Why not running, and the fix" }
            } }
            tbody {
                @for line in &lines { (row(line, &snap)) }
                @if lines.is_empty() {
                    tr { td colspan="11" { "No role matches." } }
                }
            }
        }
    };
    render(
        &req,
        View {
            status: StatusCode::OK,
            title: "Roles".to_owned(),
            nav: Nav::Overview,
            fixed,
            live,
            db_now: Some(snap.db_now),
            refreshes: true,
        },
    )
}

fn snap_count(snap: &Snapshot, app: &App, word: Word) -> usize {
    if word == Word::NotRegistered {
        return snap.unseeded().len();
    }
    snap.leases
        .iter()
        .filter(|l| view(l, snap, app.options.overdue_after).word == word)
        .count()
}

fn lines<'a>(snap: &'a Snapshot, app: &App) -> Vec<Line<'a>> {
    let mut lines: Vec<Line<'a>> = snap
        .leases
        .iter()
        .map(|lease| {
            let v = view(lease, snap, app.options.overdue_after);
            let last = snap.last_ended(lease).and_then(|t| {
                let when = t.ended_at?;
                let what = match &t.outcome {
                    Some(outcome) => outcome.clone(),
                    None => t.ended_by.map_or("-", |e| e.as_str()).to_owned(),
                };
                Some((what, when))
            });
            Line {
                role: lease.status.role.as_str(),
                shard: (lease.shard_count > 1).then_some((lease.shard_index, lease.shard_count)),
                word: v.word,
                why: v.why.clone(),
                lease: Some(v),
                last,
            }
        })
        .collect();
    for role in snap.unseeded() {
        lines.push(Line {
            role,
            shard: None,
            word: Word::NotRegistered,
            lease: None,
            why: Some(why_unseeded(role)),
            last: None,
        });
    }
    lines
}

fn sort_lines(lines: &mut [Line<'_>], sort: &str, now: DateTime<Utc>) {
    let far = now + TimeDelta::days(36_500);
    lines.sort_by(|a, b| {
        let by_role = (a.role, a.shard).cmp(&(b.role, b.shard));
        let key = match sort {
            "state" => a.word.cmp(&b.word),
            "holder" => a.holder().cmp(b.holder()),
            "held" => b
                .field(|l| l.lease.status.acquired_at)
                .unwrap_or(far)
                .cmp(&a.field(|l| l.lease.status.acquired_at).unwrap_or(far))
                .reverse(),
            "expires" => a
                .field(|l| l.lease.status.expires_at)
                .unwrap_or(far)
                .cmp(&b.field(|l| l.lease.status.expires_at).unwrap_or(far)),
            "due" => a
                .field(|l| l.lease.status.next_due_at)
                .unwrap_or(far)
                .cmp(&b.field(|l| l.lease.status.next_due_at).unwrap_or(far)),
            "last" => b
                .last
                .as_ref()
                .map(|l| l.1)
                .cmp(&a.last.as_ref().map(|l| l.1)),
            "anchor" => a
                .field(|l| Some(l.anchoring.describe()))
                .cmp(&b.field(|l| Some(l.anchoring.describe()))),
            _ => std::cmp::Ordering::Equal,
        };
        key.then(by_role)
    });
}

fn sort_link(
    key: &str,
    current: &str,
    descending: bool,
    state: Option<Word>,
    needle: Option<&str>,
) -> String {
    let mut link = format!("/?sort={key}");
    if key == current && !descending {
        link.push_str("&desc=1");
    }
    if let Some(state) = state {
        link.push_str(&format!("&state={}", state.slug()));
    }
    if let Some(needle) = needle {
        let encoded: String = needle
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        link.push_str(&format!("&q={encoded}"));
    }
    link
}

fn row(line: &Line<'_>, snap: &Snapshot) -> Markup {
    let now = snap.db_now;
    let status = line.lease.as_ref().map(|l| &l.lease.status);
    html! {
        tr data-role=(line.role) data-shard=[line.shard.map(|s| s.0)] data-state=(line.word.slug()) {
            td { a href={"/roles/" (line.role)} { (line.role) } }
            td.num { @if let Some((i, n)) = line.shard { (i) "/" (n) } @else { "-" } }
            td { span class={"state " (line.word.slug())} { (line.word.as_str()) } }
            td.holder { (status.and_then(|s| s.holder_id.as_deref()).unwrap_or("-")) }
            td.num.mono { @if let Some(s) = status { (s.token) } @else { "-" } }
            td.num { (status.and_then(|s| s.acquired_at).filter(|_| status.is_some_and(|s| s.holder_id.is_some()))
                       .map_or("-".to_owned(), |t| span(now - t))) }
            td.num { (status.and_then(|s| s.expires_at).map_or("-".to_owned(), |t| until(t, now))) }
            td.num { (status.and_then(|s| s.next_due_at).map_or("-".to_owned(), |t| format!("{} ({})", at(t, now), until(t, now)))) }
            td { @if let Some((what, when)) = &line.last { (what) " " span.note { (ago(*when, now)) } } @else { "-" } }
            td { (line.lease.as_ref().map_or(Anchoring::Unheld, |l| l.anchoring).describe()) }
            td {
                @if let Some(why) = &line.why {
                    div.why { (why.sentence) }
                    @if let Some(fix) = &why.fix { div.fix { "Fix: " (command(&fix.command)) } }
                } @else if let Some(lease) = &line.lease {
                    @if let Some(t) = snap.latest(lease.lease) {
                        span.note { "tick #" (t.tick_number) " running" }
                    }
                }
            }
        }
    }
}
