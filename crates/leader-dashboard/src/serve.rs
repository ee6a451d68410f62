//! The HTTP server: routes, the security headers every response carries, the event stream of the
//! live pages, and the assets.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::HeaderValue;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::Stream;
use sqlx::PgPool;

use crate::auth::Sessions;
use crate::options::Options;
use crate::pages;

/// The largest request body accepted: a form with a reason and two tokens fits many times over.
pub(crate) const MAX_BODY: usize = 8 * 1024;

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct App {
    pub pool: PgPool,
    pub options: Arc<Options>,
    pub sessions: Arc<Sessions>,
}

const LIVE_JS: &str = include_str!("../assets/live.js");
const CSS: &str = include_str!("../assets/dashboard.css");

/// The dashboard's routes over `pool`, for an application that serves it itself (under its own
/// listener, at the root path). `pool` must connect as the operator's login
/// ([`check_operator_login`](crate::check_operator_login) says whether it does).
pub fn router(pool: PgPool, options: Options) -> Router {
    let app = App {
        pool,
        options: Arc::new(options),
        sessions: Arc::default(),
    };
    Router::new()
        .route("/", get(pages::overview::page))
        .route("/replicas", get(pages::replicas::page))
        .route("/roles/{role}", get(pages::role::page))
        .route(
            "/roles/{role}/{action}",
            get(pages::actions::confirm).post(pages::actions::act),
        )
        .route(
            "/login",
            get(pages::login::form).post(pages::login::sign_in),
        )
        .route("/logout", post(pages::login::sign_out))
        .route("/events", get(events))
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/assets/live.js",
            get(|| async { asset("text/javascript", LIVE_JS) }),
        )
        .route(
            "/assets/dashboard.css",
            get(|| async { asset("text/css", CSS) }),
        )
        .fallback(pages::errors::not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn(security_headers))
        .with_state(app)
}

/// Serves [`router`] on `listener` until `shutdown` completes.
///
/// # Errors
///
/// The listener's I/O error.
pub async fn serve(
    listener: tokio::net::TcpListener,
    pool: PgPool,
    options: Options,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(pool, options))
        .with_graceful_shutdown(shutdown)
        .await
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, content_type),
            (CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    )
        .into_response()
}

/// Scripts and styles only from this server, no framing, no referrer to other sites, and pages
/// never cached
/// (they show live state).
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
             img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Not `no-referrer`: under it a browser sends `Origin: null` with its own form posts, which
    // the writes refuse.
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers
        .entry(CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// The live pages' clock: a `refresh` event every [`Options::refresh`], after which each page
/// fetches its live part again. The stream carries no data of its own, so it needs no session and
/// shows nothing to whoever opens it.
async fn events(State(app): State<App>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let every = app.options.refresh;
    let stream = futures_util::stream::unfold(0u64, move |n| async move {
        if n > 0 {
            tokio::time::sleep(every).await;
        }
        Some((
            Ok(Event::default().event("refresh").data(n.to_string())),
            n + 1,
        ))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
