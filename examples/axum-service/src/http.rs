//! The HTTP API: enqueue an email, read it back, and this replica's health.
//!
//! | route | answer |
//! |---|---|
//! | `POST /emails` `{"to", "subject", "body"}` | `202 {"id"}`: enqueued; whichever replica leads `email_outbox` sends it. `422` for a recipient without `@` |
//! | `GET /emails/{id}` | `200` the email with `sent_at` and `sent_by` once sent; `404` |
//! | `GET /healthz` | `200 {"holder_id", "roles", "leading": [{"role", "token"}]}`: this replica's holder id, the roles it runs jobs for, and those it leads now |
//!
//! `/metrics` is served apart, on `--metrics-addr`, by the runtime's exporter (see the crate
//! docs for why).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use leader_runtime::{Leadership, Runtime};
use serde::Serialize;

use crate::App;
use crate::store::NewEmail;

/// What `/healthz` reads: fixed when the runtime is built, plus its [`Leadership`] handle.
///
/// Kept apart from [`App`] because the handle exists only once the runtime is built, after
/// [`App`] was handed to it.
#[derive(Debug, Clone)]
pub struct Health {
    holder: Arc<str>,
    roles: Arc<[String]>,
    leadership: Leadership,
}

impl Health {
    /// The health of `runtime`'s replica. Take it before `Runtime::run`.
    pub fn of(runtime: &Runtime) -> Health {
        Health {
            holder: runtime.holder_id().into(),
            roles: runtime.roles().iter().map(ToString::to_string).collect(),
            leadership: runtime.leadership(),
        }
    }
}

/// The `/healthz` answer.
#[derive(Debug, Serialize)]
struct HealthReport {
    holder_id: String,
    roles: Vec<String>,
    leading: Vec<Leading>,
}

#[derive(Debug, Serialize)]
struct Leading {
    role: String,
    /// `index/count` for a shard of a sharded role.
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<String>,
    token: i64,
}

/// The service's routes: the API on `app`, `/healthz` on `health`.
pub fn router(app: App, health: Health) -> Router {
    let api = Router::new()
        .route("/emails", post(enqueue))
        .route("/emails/{id}", get(email))
        .with_state(app);
    let health = Router::new()
        .route("/healthz", get(healthz))
        .with_state(health);
    api.merge(health)
}

async fn enqueue(State(app): State<App>, Json(email): Json<NewEmail>) -> Response {
    if !email.to.contains('@') {
        let error = format!("`to` must be an email address, got {:?}", email.to);
        return (StatusCode::UNPROCESSABLE_ENTITY, error).into_response();
    }
    match app.store().enqueue(&email).await {
        Ok(id) => {
            metrics::counter!("emails_enqueued_total").increment(1);
            (StatusCode::ACCEPTED, Json(serde_json::json!({ "id": id }))).into_response()
        }
        Err(error) => database_error(&error),
    }
}

async fn email(State(app): State<App>, Path(id): Path<i64>) -> Response {
    match app.store().email(id).await {
        Ok(Some(email)) => Json(email).into_response(),
        Ok(None) => (StatusCode::NOT_FOUND, format!("no email {id}")).into_response(),
        Err(error) => database_error(&error),
    }
}

async fn healthz(State(health): State<Health>) -> Json<HealthReport> {
    let leading = health
        .leadership
        .leading()
        .into_iter()
        .map(|lead| Leading {
            role: lead.role.to_string(),
            shard: lead.shard.map(|shard| shard.to_string()),
            token: lead.token,
        })
        .collect();
    Json(HealthReport {
        holder_id: health.holder.to_string(),
        roles: health.roles.to_vec(),
        leading,
    })
}

fn database_error(error: &sqlx::Error) -> Response {
    tracing::warn!(%error, "database error");
    (StatusCode::SERVICE_UNAVAILABLE, "database unavailable").into_response()
}
