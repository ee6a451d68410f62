//! `/login` and `/logout`: an operator signs in with the write token and their name.

use std::collections::HashMap;
use std::time::Duration;

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::header::{LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::html;

use super::{Nav, Req, View, errors, render};
use crate::auth::{
    LOGIN_COOKIE, MAX_NAME, SESSION_COOKIE, SESSION_LIFETIME, cookie, random_token, same_origin,
    same_secret, set_cookie,
};
use crate::serve::App;

/// How long a wrong token waits before its answer, so guessing is slow.
const WRONG_TOKEN_DELAY: Duration = Duration::from_millis(500);

pub(crate) fn writes_off(req: &Req<'_>) -> Response {
    errors::page(
        req,
        StatusCode::FORBIDDEN,
        "Writes are off",
        "This dashboard was started read-only, so it pauses, unpauses and clears nothing. Nothing \
         was written.",
        "Start it with --allow-writes and a token in LEADER_DASHBOARD_TOKEN (leaderctl dashboard \
         --help), or act from a shell: leaderctl pause ROLE --by NAME --reason WHY.",
    )
}

/// A form whose body could not be read: too large, not a form, not UTF-8.
pub(crate) fn bad_form(req: &Req<'_>, rejection: &FormRejection) -> Response {
    let status = rejection.status();
    let what = if status == StatusCode::PAYLOAD_TOO_LARGE {
        format!(
            "The form is larger than the {} bytes a form here may be. Nothing was written.",
            crate::serve::MAX_BODY
        )
    } else {
        format!(
            "The form could not be read ({}). Nothing was written.",
            rejection.body_text()
        )
    };
    errors::page(
        req,
        status,
        "The form was refused",
        &what,
        "Go back, shorten the reason, and send the form from this dashboard's own page.",
    )
}

pub(crate) async fn form(State(app): State<App>, headers: HeaderMap) -> Response {
    let req = Req::new(&app, &headers);
    if !req.writes_on() {
        return writes_off(&req);
    }
    let csrf = random_token();
    let page = render(
        &req,
        View {
            status: StatusCode::OK,
            title: "Sign in".to_owned(),
            nav: Nav::Other,
            fixed: html! {},
            live: html! {
                div.card {
                    h1 { "Sign in to act" }
                    p.note { "The token is the one the dashboard was started with (LEADER_DASHBOARD_TOKEN). "
                             "Your name is recorded with each action you take." }
                    form.confirm #login method="post" action="/login" {
                        input type="hidden" name="csrf" value=(csrf);
                        label for="who" { "Your name" }
                        input #who type="text" name="who" required maxlength=(MAX_NAME) autocomplete="username";
                        label for="token" { "Token" }
                        input #token type="password" name="token" required autocomplete="current-password";
                        p { button.primary type="submit" { "Sign in" } }
                    }
                }
            },
            db_now: None,
            refreshes: false,
        },
    );
    with_cookie(
        page,
        &set_cookie(LOGIN_COOKIE, &csrf, Duration::from_secs(3600)),
    )
}

fn with_cookie(mut response: Response, cookie: &str) -> Response {
    if let Ok(value) = cookie.parse() {
        response.headers_mut().append(SET_COOKIE, value);
    }
    response
}

pub(crate) fn see_other(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(LOCATION, to.to_owned())]).into_response()
}

pub(crate) async fn sign_in(
    State(app): State<App>,
    headers: HeaderMap,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let req = Req::new(&app, &headers);
    let Some(token) = app.options.writes.as_ref() else {
        return writes_off(&req);
    };
    let Form(form) = match form {
        Ok(form) => form,
        Err(rejection) => return bad_form(&req, &rejection),
    };
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or("");
    let expected = cookie(&headers, LOGIN_COOKIE).unwrap_or("");
    if !same_origin(&headers)
        || expected.is_empty()
        || !same_secret(field("csrf").as_bytes(), expected.as_bytes())
    {
        return errors::page(
            &req,
            StatusCode::FORBIDDEN,
            "The sign-in form was refused",
            "Its CSRF token is missing or does not match this browser's: it was not sent from \
             this dashboard's sign-in page. Nothing changed.",
            "Open /login again and sign in from there.",
        );
    }
    let who = field("who").trim();
    if who.is_empty() || who.chars().count() > MAX_NAME || who.chars().any(char::is_control) {
        return errors::page(
            &req,
            StatusCode::BAD_REQUEST,
            "Say who you are",
            &format!(
                "Your name is recorded with each action: give 1 to {MAX_NAME} printable characters."
            ),
            "Open /login again.",
        );
    }
    if !same_secret(field("token").as_bytes(), token.secret()) {
        tokio::time::sleep(WRONG_TOKEN_DELAY).await;
        return errors::page(
            &req,
            StatusCode::UNAUTHORIZED,
            "Wrong token",
            "That is not the token this dashboard was started with. Nothing changed.",
            "Use the value of LEADER_DASHBOARD_TOKEN the dashboard runs with.",
        );
    }
    let (id, _) = app.sessions.start(who);
    tracing::info!(who, "operator signed in to the dashboard");
    let response = see_other("/");
    let response = with_cookie(response, &set_cookie(SESSION_COOKIE, &id, SESSION_LIFETIME));
    with_cookie(response, &set_cookie(LOGIN_COOKIE, "", Duration::ZERO))
}

pub(crate) async fn sign_out(
    State(app): State<App>,
    headers: HeaderMap,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let req = Req::new(&app, &headers);
    let Form(form) = match form {
        Ok(form) => form,
        Err(rejection) => return bad_form(&req, &rejection),
    };
    let csrf = form.get("csrf").map(String::as_str).unwrap_or("");
    match &req.session {
        Some(session) if same_secret(csrf.as_bytes(), session.csrf.as_bytes()) => {
            app.sessions.end(&headers);
            with_cookie(
                see_other("/"),
                &set_cookie(SESSION_COOKIE, "", Duration::ZERO),
            )
        }
        _ => errors::page(
            &req,
            StatusCode::FORBIDDEN,
            "Sign-out refused",
            "The form's CSRF token is missing or does not match your session.",
            "Reload the page and sign out from its header.",
        ),
    }
}
