//! The pages that say what went wrong and what to do: each with its HTTP status, never a panic.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use maud::html;

use super::{Nav, Req, View, render};
use crate::serve::App;
use crate::snapshot::ReadError;

/// A page saying `what` went wrong and `fix`, with `status`.
pub(crate) fn page(
    req: &Req<'_>,
    status: StatusCode,
    title: &str,
    what: &str,
    fix: &str,
) -> Response {
    shown(req, status, title, what, fix, false)
}

fn shown(
    req: &Req<'_>,
    status: StatusCode,
    title: &str,
    what: &str,
    fix: &str,
    refreshes: bool,
) -> Response {
    render(
        req,
        View {
            status,
            title: title.to_owned(),
            nav: Nav::Other,
            fixed: html! {},
            live: html! {
                div.card.error {
                    h1 { (title) }
                    p.why { (what) }
                    @if !fix.is_empty() { p.fix { (fix) } }
                    p { a href="/" { "Back to the overview" } }
                }
            },
            db_now: None,
            refreshes,
        },
    )
}

/// The page for a read that failed: the database is unreachable or refused, so nothing is shown
/// (and nothing was written); the page keeps retrying.
pub(crate) fn unreadable(req: &Req<'_>, err: &ReadError) -> Response {
    tracing::warn!(error = %err, "dashboard read failed");
    // It refreshes: the page comes back by itself once the database does.
    shown(
        req,
        StatusCode::SERVICE_UNAVAILABLE,
        "The database does not answer",
        &format!("Reading the lease rows failed: {err}. Nothing was written."),
        "This page tries again at each refresh. Check that PostgreSQL (or the pooler) is up and \
         that the dashboard's login may read leader_status, leader_tick_history, leader_presence \
         and leader_operator_actions (SELECT leader_grant_operator_role('LOGIN') grants them).",
        true,
    )
}

/// No such page.
pub(crate) async fn not_found(State(app): State<App>, headers: HeaderMap, uri: Uri) -> Response {
    let req = Req::new(&app, &headers);
    page(
        &req,
        StatusCode::NOT_FOUND,
        "No such page",
        &format!("There is no page at {}.", uri.path()),
        "The pages are the overview (/), a role (/roles/NAME) and the replicas (/replicas).",
    )
}
