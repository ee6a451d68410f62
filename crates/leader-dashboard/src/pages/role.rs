//! `/roles/{role}`: one role's state and why, its timeline, its recent ticks, its shards' spread
//! over the replicas, its operator actions, and the buttons that act on it.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{DateTime, Utc};
use leader_core::Role;
use leader_core::history::TickRecord;
use maud::{Markup, html};

use super::{Nav, Req, View, command, errors, render};
use crate::format::{ago, at, span, until};
use crate::lease_view::{Button, LeaseView, Word, view, why_unseeded};
use crate::serve::App;
use crate::snapshot::{ReadError, Snapshot};
use crate::timeline::{Entry, timeline};

/// The role in a request's path, checked: a name the role rule allows and a role the database has
/// (or its CHECK registers). Anything else is a page saying so; no SQL ever sees the text.
pub(crate) enum Known<'a> {
    Seeded(Role),
    Unseeded(&'a str),
}

pub(crate) fn known<'s>(
    req: &Req<'_>,
    snap: &'s Snapshot,
    role: &str,
) -> Result<Known<'s>, Box<Response>> {
    if let Err(e) = leader_core::validate_role_name(role) {
        return Err(Box::new(errors::page(
            req,
            StatusCode::BAD_REQUEST,
            "Not a role name",
            &format!("{:?} is not a role name: {e}.", shorten(role)),
            "Role names are lowercase letters, digits and underscores, starting with a letter; \
             the overview links to every role.",
        )));
    }
    if let Some(found) = snap.roles().into_iter().find(|r| *r == role) {
        return Role::new(found).map(Known::Seeded).map_err(|e| {
            Box::new(errors::page(
                req,
                StatusCode::BAD_REQUEST,
                "Not a role name",
                &e.to_string(),
                "",
            ))
        });
    }
    if let Some(found) = snap.unseeded().into_iter().find(|r| *r == role) {
        return Ok(Known::Unseeded(found));
    }
    let roles: Vec<&str> = snap.roles().into_iter().collect();
    Err(Box::new(errors::page(
        req,
        StatusCode::NOT_FOUND,
        "Unknown role",
        &format!(
            "No role named `{role}` in leader_leases or its role CHECK. The roles are: {}.",
            if roles.is_empty() {
                "none".to_owned()
            } else {
                roles.join(", ")
            }
        ),
        &format!(
            "If the code leads `{role}`, register it: leaderctl roles add {role} --dir MIGRATIONS, \
             then leaderctl migrate."
        ),
    )))
}

/// At most 80 characters of what a request said, for a page to quote.
pub(crate) fn shorten(text: &str) -> String {
    let mut short: String = text.chars().take(80).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

pub(crate) async fn page(
    State(app): State<App>,
    headers: HeaderMap,
    Path(role): Path<String>,
) -> Response {
    let req = Req::new(&app, &headers);
    let snap = match Snapshot::read(&app.pool).await {
        Ok(snap) => snap,
        Err(err) => return errors::unreadable(&req, &err),
    };
    let role = match known(&req, &snap, &role) {
        Ok(Known::Seeded(role)) => role,
        Ok(Known::Unseeded(name)) => return unseeded(&req, &snap, name),
        Err(page) => return *page,
    };
    let timings = match leader_core::Timings::scaled_to_ttl(std::time::Duration::from_secs(60)) {
        Ok(t) => t,
        Err(e) => return errors::unreadable(&req, &ReadError::Database(e.to_string())),
    };
    let history = match tokio::time::timeout(
        crate::snapshot::READ_TIMEOUT,
        leader_core::history::read(&app.pool, Some(role), &timings),
    )
    .await
    {
        Ok(Ok(history)) => history,
        Ok(Err(e)) => return errors::unreadable(&req, &e.into()),
        Err(_) => {
            return errors::unreadable(&req, &ReadError::Timeout(crate::snapshot::READ_TIMEOUT));
        }
    };
    let leases: Vec<LeaseView<'_>> = snap
        .leases_of(role.as_str())
        .into_iter()
        .map(|l| view(l, &snap, app.options.overdue_after))
        .collect();
    let mut ticks: Vec<&TickRecord> = history.ticks.iter().collect();
    ticks.reverse(); // oldest first
    let live = html! {
        h1 { "Role " code { (role.as_str()) } }
        (state_table(&req, &snap, role.as_str(), &leases))
        (buttons(&req, role.as_str(), &leases))
        h2 { "Timeline" }
        (timelines(&snap, &ticks, &leases))
        h2 { "Recent ticks" }
        (tick_table(&snap, &history.ticks))
        @if leases.len() > 1 {
            h2 { "Shards over replicas" }
            (spread(&leases))
        }
        h2 { "Operator actions" }
        (actions(&snap, role.as_str()))
    };
    render(
        &req,
        View {
            status: StatusCode::OK,
            title: format!("Role {}", role.as_str()),
            nav: Nav::Other,
            fixed: html! {},
            live,
            db_now: Some(snap.db_now),
            refreshes: true,
        },
    )
}

fn unseeded(req: &Req<'_>, snap: &Snapshot, role: &str) -> Response {
    let why = why_unseeded(role);
    render(
        req,
        View {
            status: StatusCode::OK,
            title: format!("Role {role}"),
            nav: Nav::Other,
            fixed: html! {},
            live: html! {
                h1 { "Role " code { (role) } }
                p { span class={"state " (Word::NotRegistered.slug())} { (Word::NotRegistered.as_str()) } }
                div.card #why {
                    p.why { (why.sentence) }
                    @if let Some(fix) = &why.fix { p.fix { "Fix: " (command(&fix.command)) } }
                }
            },
            db_now: Some(snap.db_now),
            refreshes: true,
        },
    )
}

fn state_table(req: &Req<'_>, snap: &Snapshot, role: &str, leases: &[LeaseView<'_>]) -> Markup {
    let now = snap.db_now;
    html! {
        table #state {
            thead { tr {
                th { "Shard" } th { "State" } th { "Holder" } th { "Token" } th { "Held for" }
                th { "Expires in" } th { "Next due" } th { "Anchored" } th { "Schedule" }
            } }
            tbody { @for v in leases {
                @let s = &v.lease.status;
                tr data-state=(v.word.slug()) {
                    td.num { @if v.lease.shard_count > 1 { (v.lease.shard_index) "/" (v.lease.shard_count) } @else { "-" } }
                    td { span class={"state " (v.word.slug())} { (v.word.as_str()) } }
                    td { (s.holder_id.as_deref().unwrap_or("-")) }
                    td.num.mono { (s.token) }
                    td.num { (s.acquired_at.filter(|_| s.holder_id.is_some()).map_or("-".to_owned(), |t| span(now - t))) }
                    td.num { (s.expires_at.map_or("-".to_owned(), |t| until(t, now))) }
                    td.num { (s.next_due_at.map_or("-".to_owned(), |t| format!("{} ({})", at(t, now), until(t, now)))) }
                    td { (v.anchoring.describe()) }
                    td { (s.schedule.as_deref().unwrap_or("-")) }
                }
            } }
        }
        @for v in leases { @if let Some(why) = &v.why {
            div.card.why-card data-shard=(v.lease.shard_index) {
                p.why #why {
                    @if v.lease.shard_count > 1 { "Shard " (v.lease.shard_index) ": " }
                    (why.sentence)
                }
                @if let Some(fix) = &why.fix {
                    p.fix {
                        "Fix: " (command(&fix.command))
                        @if let (Some(button), Some(_)) = (fix.button, req.operator()) {
                            " or " a.button href=(action_link(role, button, v)) { (button.label()) }
                        }
                    }
                }
            }
        } }
    }
}

fn action_link(role: &str, button: Button, v: &LeaseView<'_>) -> String {
    if v.lease.shard_count > 1 && button != Button::ClearCooldown {
        format!(
            "/roles/{role}/{}?shard={}",
            button.slug(),
            v.lease.shard_index
        )
    } else {
        format!("/roles/{role}/{}", button.slug())
    }
}

fn buttons(req: &Req<'_>, role: &str, leases: &[LeaseView<'_>]) -> Markup {
    let any = |w: Word| leases.iter().any(|v| v.word == w);
    let offered: Vec<Button> = [
        (Button::Pause, leases.iter().any(|v| v.word != Word::Paused)),
        (Button::Unpause, any(Word::Paused)),
        (Button::ClearCooldown, any(Word::CoolingDown)),
    ]
    .into_iter()
    .filter_map(|(b, on)| on.then_some(b))
    .collect();
    html! {
        p #actions {
            @if req.operator().is_some() {
                @for button in &offered {
                    a.button href={"/roles/" (role) "/" (button.slug())} { (button.label()) } " "
                }
            } @else if req.writes_on() {
                a href="/login" { "Sign in" } " to pause, unpause or clear a cooldown from here."
            } @else {
                span.note { "Writes are off: " (command(&format!("leaderctl pause {role} --by NAME --reason WHY"))) ", "
                    (command(&format!("leaderctl unpause {role}"))) ", "
                    (command(&format!("leaderctl clear-cooldown {role}"))) " act from a shell." }
            }
        }
    }
}

/// The most runs and gaps the timeline lists (the latest ones); the bars show every tick kept.
const MAX_TIMELINE: usize = 40;

/// A colour per holder, the same on every page load.
fn colour(holder: &str) -> &'static str {
    const PALETTE: [&str; 8] = [
        "#2553a6", "#1f7a3d", "#9a5b00", "#7b3fa0", "#b3261e", "#0f7c86", "#5d6677", "#a23d6b",
    ];
    let hash = holder.bytes().fold(2_166_136_261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16_777_619)
    });
    PALETTE[hash as usize % PALETTE.len()]
}

fn timelines(snap: &Snapshot, ticks: &[&TickRecord], leases: &[LeaseView<'_>]) -> Markup {
    let now = snap.db_now;
    let Some(start) = ticks.iter().map(|t| t.acquired_at).min() else {
        return html! { p.note { "No tick recorded yet." } };
    };
    let width = 1000.0_f64;
    let total = (now - start).num_milliseconds().max(1) as f64;
    let x = |t: DateTime<Utc>| {
        ((t - start).num_milliseconds() as f64 / total * width).clamp(0.0, width)
    };
    html! {
        @for v in leases {
            @let shard = v.lease.shard_index;
            @let mine: Vec<&TickRecord> = ticks.iter().copied().filter(|t| t.shard_index == shard).collect();
            @if leases.len() > 1 { h3 { "Shard " (shard) } }
            svg.timeline viewBox="0 0 1000 24" preserveAspectRatio="none" role="img" {
                title { "Ticks from " (at(start, now)) " to now" }
                @for t in &mine {
                    @let left = x(t.acquired_at);
                    @let right = x(t.ended_at.unwrap_or(now));
                    rect x=(format!("{left:.1}")) y="3" width=(format!("{:.1}", (right - left).max(1.5))) height="18"
                         fill=(colour(&t.holder_id)) {
                        title { "#" (t.tick_number) " " (t.holder_id) ": " (at(t.acquired_at, now))
                                " – " (t.ended_at.map_or("running".to_owned(), |e| at(e, now))) }
                    }
                }
            }
            @let entries = timeline(&mine);
            @let shown = entries.len().min(MAX_TIMELINE);
            @let skipped = entries.len() - shown;
            @if skipped > 0 {
                p.note { "The latest " (shown) " of " (entries.len()) " runs and gaps:" }
            }
            ol.runs {
                @for entry in entries.into_iter().skip(skipped) {
                    @match entry {
                        Entry::Run(run) => li {
                            strong { (run.holder_id) } " held ticks #" (run.first_tick)
                            @if run.last_tick != run.first_tick { "–#" (run.last_tick) }
                            " (" (run.ticks) ") from " (at(run.from, now)) " "
                            @if let Some(to) = run.to { "to " (at(to, now)) } @else { "and runs now" }
                        },
                        Entry::Gap(gap) => li class=(if gap.notable { "gap" } else { "gap none" }) {
                            "gap of " (span(gap.length)) ": " (gap.cause)
                        },
                    }
                }
            }
        }
    }
}

fn tick_table(snap: &Snapshot, ticks: &[TickRecord]) -> Markup {
    let now = snap.db_now;
    html! {
        table #ticks {
            thead { tr {
                th { "#" } th { "Shard" } th { "Holder" } th { "Token" } th { "Granted" }
                th { "Ended" } th { "Held" } th { "Ended by" } th { "Outcome" } th { "Anchored" }
            } }
            tbody {
                @for t in ticks.iter().take(50) {
                    tr data-ended-by=[t.ended_by.map(|e| e.as_str())] {
                        td.num { (t.tick_number) }
                        td.num { (t.shard_index) }
                        td { (t.holder_id) }
                        td.num.mono { (t.token) }
                        td.num { (at(t.acquired_at, now)) }
                        td.num { (t.ended_at.map_or("-".to_owned(), |e| ago(e, now))) }
                        td.num { (t.duration().map_or_else(|| format!("{} so far", span(now - t.acquired_at)), span)) }
                        td { (t.ended_by.map_or("-", |e| e.as_str())) }
                        td { (t.outcome.as_deref().unwrap_or("-")) }
                        td { @if t.anchored { "yes" } @else { "no" } }
                    }
                }
                @if ticks.is_empty() { tr { td colspan="10" { "No tick recorded yet." } } }
            }
        }
        @if ticks.len() > 50 { p.note { "The latest 50 of " (ticks.len()) " kept." } }
    }
}

fn spread(leases: &[LeaseView<'_>]) -> Markup {
    let mut by_holder: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for v in leases {
        let holder = match (&v.lease.status.holder_id, v.word) {
            (Some(h), Word::Leading) => h.as_str(),
            _ => "(nobody)",
        };
        by_holder
            .entry(holder)
            .or_default()
            .push(v.lease.shard_index);
    }
    html! {
        table #spread {
            thead { tr { th { "Replica" } th { "Shards it leads" } th { "How many" } } }
            tbody { @for (holder, shards) in &by_holder {
                tr { td { (holder) } td.mono { (shards.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")) } td.num { (shards.len()) } }
            } }
        }
    }
}

fn actions(snap: &Snapshot, role: &str) -> Markup {
    let now = snap.db_now;
    let mine: Vec<_> = snap
        .actions
        .iter()
        .filter(|a| a.role == role)
        .take(20)
        .collect();
    html! {
        @if mine.is_empty() {
            p.note { "None recorded from the dashboard." }
        } @else {
            table #role-actions {
                thead { tr { th { "When" } th { "Action" } th { "Shard" } th { "Who" } th { "Why" } th { "Login" } } }
                tbody { @for a in mine {
                    tr {
                        td.num { (at(a.at, now)) " " span.note { (ago(a.at, now)) } }
                        td { (a.action) }
                        td.num { (a.shard_index.map_or("all".to_owned(), |s| s.to_string())) }
                        td { (a.who) }
                        td { (a.why) }
                        td.mono { (a.login) }
                    }
                } }
            }
        }
    }
}
