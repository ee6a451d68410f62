//! The pages: each handler reads a [`Snapshot`](crate::snapshot::Snapshot), renders its live part,
//! and answers the whole page, or only the live part when the page's script asks for it.

pub(crate) mod actions;
pub(crate) mod errors;
pub(crate) mod login;
pub(crate) mod overview;
pub(crate) mod replicas;
pub(crate) mod role;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use crate::auth::Session;
use crate::format::at;
use crate::serve::App;

/// The header the live script sends to get only a page's live part.
pub(crate) const FRAGMENT_HEADER: &str = "x-leader-fragment";

/// The page a request is for, as the header's navigation marks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Overview,
    Replicas,
    Other,
}

/// A request as the pages need it: the app, its headers, its session.
pub(crate) struct Req<'a> {
    pub app: &'a App,
    pub headers: &'a HeaderMap,
    pub session: Option<Session>,
}

impl<'a> Req<'a> {
    pub fn new(app: &'a App, headers: &'a HeaderMap) -> Req<'a> {
        Req {
            app,
            headers,
            session: app.sessions.of(headers),
        }
    }

    /// Whether the live script asked for the live part only.
    pub fn fragment(&self) -> bool {
        self.headers.contains_key(FRAGMENT_HEADER)
    }

    /// Whether writes are on at all.
    pub fn writes_on(&self) -> bool {
        self.app.options.writes.is_some()
    }

    /// The signed-in operator, when writes are on.
    pub fn operator(&self) -> Option<&Session> {
        self.session.as_ref().filter(|_| self.writes_on())
    }
}

/// What a page is made of.
pub(crate) struct View {
    pub status: StatusCode,
    pub title: String,
    pub nav: Nav,
    /// Above the live part, rendered once (a filter form that must keep its input).
    pub fixed: Markup,
    /// The part the live script re-renders (if `refreshes`).
    pub live: Markup,
    /// Whether the live script re-renders `live`: not on a page with a form, whose input it
    /// would wipe.
    pub refreshes: bool,
    /// The database clock the page was read at, for the footer.
    pub db_now: Option<chrono::DateTime<chrono::Utc>>,
}

/// The whole page, or its live part only.
pub(crate) fn render(req: &Req<'_>, view: View) -> Response {
    if req.fragment() {
        return (view.status, Html(view.live.into_string())).into_response();
    }
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (view.title) " · leader dashboard" }
                link rel="stylesheet" href="/assets/dashboard.css";
                script src="/assets/live.js" defer {}
            }
            body {
                (header(req, view.nav))
                div.page {
                    div #offline .banner.bad hidden {
                        "The dashboard server does not answer: this page stopped updating."
                    }
                    (view.fixed)
                    @if view.refreshes {
                        main #live { (view.live) }
                    } @else {
                        main { (view.live) }
                    }
                }
                footer {
                    @if let Some(now) = view.db_now {
                        "Database clock at this read: " (at(now, now)) ". "
                    }
                    @if view.refreshes {
                        "Live: updates every " (format!("{:?}", req.app.options.refresh)) " without reloading."
                    }
                }
            }
        }
    };
    (view.status, Html(page.into_string())).into_response()
}

fn header(req: &Req<'_>, here: Nav) -> Markup {
    let class = |nav: Nav| if nav == here { "here" } else { "" };
    html! {
        header {
            a.brand href="/" { "leader dashboard" }
            a href="/" class=(class(Nav::Overview)) { "Overview" }
            a href="/replicas" class=(class(Nav::Replicas)) { "Replicas" }
            span.who {
                @if let Some(session) = req.operator() {
                    "Signed in as " strong { (session.who) } " "
                    form method="post" action="/logout" {
                        input type="hidden" name="csrf" value=(session.csrf);
                        button type="submit" { "Sign out" }
                    }
                } @else if req.writes_on() {
                    a href="/login" { "Sign in to act" }
                } @else {
                    "Read-only (writes are off)"
                }
            }
        }
    }
}

/// A command, as the pages show it.
pub(crate) fn command(text: &str) -> Markup {
    html! { code { (text) } }
}
