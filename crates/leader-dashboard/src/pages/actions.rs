//! `/roles/{role}/{pause,unpause,clear-cooldown}`: the confirmation page (GET) and the action
//! (POST). A POST acts only with writes on, a signed-in session, this session's CSRF token, a
//! request from this server's own pages, a role the database has and a reason; the database's
//! `leader_operator_*` function then acts and records who and why in one transaction.

use std::collections::HashMap;

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use leader_core::Role;
use maud::html;

use super::login::{bad_form, see_other, writes_off};
use super::role::{Known, known};
use super::{Nav, Req, View, errors, render};
use crate::auth::{Session, same_origin, same_secret};
use crate::lease_view::{Button, Word, view};
use crate::serve::App;
use crate::snapshot::{READ_TIMEOUT, Snapshot};

/// The longest reason accepted, in characters.
pub(crate) const MAX_REASON: usize = 500;

/// What an action is about to do, checked against the database's rows.
struct Target {
    role: Role,
    button: Button,
    /// `None`: every shard (and always for clear-cooldown, which is role-wide).
    shard: Option<i32>,
}

fn effect(button: Button) -> &'static str {
    match button {
        Button::Pause => {
            "The holder's fence is false from the commit: its claims claim nothing, no replica \
             is granted the role until it is unpaused, and the holder stops its tick at its next \
             RENEW. The next grant after an unpause waits until the paused lease would have \
             expired."
        }
        Button::Unpause => {
            "Replicas may claim it again at their next ACQUIRE, subject to its interval and any \
             cooldown (a pause of a held lease leaves one until that lease would have expired)."
        }
        Button::ClearCooldown => {
            "Its next ACQUIRE is no longer refused for a cooldown: a failed tick's, a panicked \
             tick's, or the floor a pause left. Do it once the cause is fixed, and, after a \
             pause, once the paused holder is known to be gone."
        }
    }
}

/// The checks every confirm page and action share, in order; the first that fails is the page.
async fn check<'a>(
    req: &Req<'a>,
    role: &str,
    action: &str,
    shard: Option<&str>,
) -> Result<(Session, Target, Snapshot), Box<Response>> {
    let Some(button) = Button::from_slug(action) else {
        return Err(Box::new(errors::page(
            req,
            StatusCode::NOT_FOUND,
            "No such action",
            &format!("There is no action `{}`.", super::role::shorten(action)),
            "The actions are pause, unpause and clear-cooldown.",
        )));
    };
    if !req.writes_on() {
        return Err(Box::new(writes_off(req)));
    }
    let Some(session) = req.operator().cloned() else {
        return Err(Box::new(errors::page(
            req,
            StatusCode::UNAUTHORIZED,
            "Sign in first",
            "Acting on a role needs an operator signed in with the dashboard's token. Nothing was \
             written.",
            "Sign in at /login, then try again.",
        )));
    };
    let snap = Snapshot::read(&req.app.pool)
        .await
        .map_err(|e| Box::new(errors::unreadable(req, &e)))?;
    let role = match known(req, &snap, role)? {
        Known::Seeded(role) => role,
        Known::Unseeded(name) => {
            return Err(Box::new(errors::page(
                req,
                StatusCode::CONFLICT,
                "Nothing to act on",
                &format!("`{name}` has no lease row, so there is nothing to pause or clear."),
                &format!("leaderctl roles add {name} --dir MIGRATIONS seeds it."),
            )));
        }
    };
    let leases = snap.leases_of(role.as_str());
    let shard = match shard.filter(|s| !s.is_empty() && *s != "all") {
        None => None,
        Some(_) if button == Button::ClearCooldown => None,
        Some(text) => match text.parse::<i32>() {
            Ok(i)
                if leases
                    .iter()
                    .any(|l| l.shard_index == i && l.shard_count > 1) =>
            {
                Some(i)
            }
            _ => {
                return Err(Box::new(errors::page(
                    req,
                    StatusCode::BAD_REQUEST,
                    "No such shard",
                    &format!(
                        "`{}` has no shard {:?}. Nothing was written.",
                        role.as_str(),
                        super::role::shorten(text)
                    ),
                    "The role's page lists its shards.",
                )));
            }
        },
    };
    let words: Vec<Word> = leases
        .iter()
        .filter(|l| shard.is_none_or(|s| l.shard_index == s))
        .map(|l| view(l, &snap, req.app.options.overdue_after).word)
        .collect();
    let refusal = match button {
        Button::Pause if words.iter().all(|w| *w == Word::Paused) => Some((
            "Already paused",
            "It is paused already; the first pause's author and reason stand.",
        )),
        Button::Unpause if !words.contains(&Word::Paused) => Some((
            "Not paused",
            "It is not paused, so there is nothing to unpause.",
        )),
        Button::ClearCooldown if !words.contains(&Word::CoolingDown) => Some((
            "No cooldown",
            "It is not cooling down, so there is nothing to clear.",
        )),
        _ => None,
    };
    if let Some((title, what)) = refusal {
        return Err(Box::new(errors::page(
            req,
            StatusCode::CONFLICT,
            title,
            &format!("`{}`: {what} Nothing was written.", role.as_str()),
            "The role's page shows its state now.",
        )));
    }
    Ok((
        session,
        Target {
            role,
            button,
            shard,
        },
        snap,
    ))
}

pub(crate) async fn confirm(
    State(app): State<App>,
    headers: HeaderMap,
    Path((role, action)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let req = Req::new(&app, &headers);
    let (session, target, snap) =
        match check(&req, &role, &action, query.get("shard").map(String::as_str)).await {
            Ok(checked) => checked,
            Err(page) => return *page,
        };
    let role = target.role.as_str();
    let what = match target.shard {
        Some(i) => format!("shard {i} of `{role}`"),
        None => format!("`{role}`"),
    };
    render(
        &req,
        View {
            status: StatusCode::OK,
            title: format!("{} {role}", target.button.label()),
            nav: Nav::Other,
            fixed: html! {},
            live: html! {
                div.card {
                    h1 { (target.button.label()) " " (what) "?" }
                    p { (effect(target.button)) }
                    form.confirm #confirm method="post" action={"/roles/" (role) "/" (target.button.slug())} {
                        input type="hidden" name="csrf" value=(session.csrf);
                        input type="hidden" name="shard" value=(target.shard.map_or("all".to_owned(), |s| s.to_string()));
                        label for="reason" { "Why (recorded with your name, " (session.who) ")" }
                        textarea #reason name="reason" rows="3" required maxlength=(MAX_REASON) {}
                        p {
                            button.danger type="submit" { "Confirm: " (target.button.label().to_lowercase()) " " (role) }
                            " " a href={"/roles/" (role)} { "Cancel" }
                        }
                    }
                }
            },
            db_now: Some(snap.db_now),
            refreshes: false,
        },
    )
}

pub(crate) async fn act(
    State(app): State<App>,
    headers: HeaderMap,
    Path((role, action)): Path<(String, String)>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let req = Req::new(&app, &headers);
    let Form(form) = match form {
        Ok(form) => form,
        Err(rejection) => return bad_form(&req, &rejection),
    };
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or("");
    if let Some(session) = req.operator()
        && (!same_origin(&headers)
            || !same_secret(field("csrf").as_bytes(), session.csrf.as_bytes()))
    {
        return errors::page(
            &req,
            StatusCode::FORBIDDEN,
            "The form was refused",
            "Its CSRF token is missing or does not match your session, or it came from \
                 another site: it was not sent from this dashboard's own page. Nothing was \
                 written.",
            "Open the role's page again and act from there.",
        );
    }
    let (session, target, _) = match check(&req, &role, &action, Some(field("shard"))).await {
        Ok(checked) => checked,
        Err(page) => return *page,
    };
    let reason = field("reason").trim();
    if reason.is_empty()
        || reason.chars().count() > MAX_REASON
        || reason
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\r')
    {
        return errors::page(
            &req,
            StatusCode::BAD_REQUEST,
            "Say why",
            &format!(
                "Each action is recorded with why: give a reason of 1 to {MAX_REASON} characters. \
                 Nothing was written."
            ),
            "Go back and fill in the reason.",
        );
    }
    match tokio::time::timeout(READ_TIMEOUT, run(&app, &target, &session.who, reason)).await {
        Ok(Ok(())) => {
            tracing::info!(
                role = target.role.as_str(),
                action = target.button.slug(),
                who = session.who.as_str(),
                reason,
                "operator action from the dashboard"
            );
            see_other(&format!("/roles/{}", target.role.as_str()))
        }
        Ok(Err(e)) => errors::page(
            &req,
            StatusCode::SERVICE_UNAVAILABLE,
            "The database refused the action",
            &format!(
                "{} `{}` failed: {}. Nothing was written (the action and its record are one \
                 transaction).",
                target.button.label(),
                target.role.as_str(),
                e.to_string().replace('\n', " ")
            ),
            "Try again once the database answers; the role's page shows its state now.",
        ),
        Err(_) => errors::page(
            &req,
            StatusCode::SERVICE_UNAVAILABLE,
            "The database did not answer",
            &format!(
                "{} `{}` got no answer within {READ_TIMEOUT:?}: it may or may not have happened.",
                target.button.label(),
                target.role.as_str()
            ),
            "Open the role's page: it shows whether it happened, and the operator actions list it \
             if it did.",
        ),
    }
}

/// The action and its record, in one transaction (which keeps a transaction-mode pooler's
/// server connection for both of sqlx's round trips), with the values bound, never inlined.
async fn run(app: &App, target: &Target, who: &str, why: &str) -> Result<(), sqlx::Error> {
    let mut tx = app.pool.begin().await?;
    let query = match target.button {
        Button::Pause => sqlx::query("SELECT leader_operator_pause($1, $2, $3, $4)")
            .bind(target.role.as_str())
            .bind(target.shard)
            .bind(who)
            .bind(why),
        Button::Unpause => sqlx::query("SELECT leader_operator_unpause($1, $2, $3, $4)")
            .bind(target.role.as_str())
            .bind(target.shard)
            .bind(who)
            .bind(why),
        Button::ClearCooldown => sqlx::query("SELECT leader_operator_clear_cooldown($1, $2, $3)")
            .bind(target.role.as_str())
            .bind(who)
            .bind(why),
    };
    query.persistent(false).execute(&mut *tx).await?;
    tx.commit().await
}
