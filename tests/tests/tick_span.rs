//! The `leader.tick` span against a real PostgreSQL: an event a job logs carries the tick's
//! role, token and holder, and the transition lines keep their levels.

mod common;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use leader_runtime::{JobError, Runtime, TickContext};
use tokio_util::sync::CancellationToken;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span's or event's fields, as text.
#[derive(Debug, Clone, Default, PartialEq)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// One captured event: its level, message, and the spans it was logged in (innermost first).
#[derive(Debug, Clone)]
struct Captured {
    level: Level,
    message: String,
    spans: Vec<(String, Fields)>,
}

/// Records every event with the name and fields of each span around it.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

impl Capture {
    fn events(&self) -> Vec<Captured> {
        self.0.lock().unwrap().clone()
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let spans = ctx
            .event_scope(event)
            .into_iter()
            .flatten()
            .map(|span| {
                let fields = span
                    .extensions()
                    .get::<Fields>()
                    .cloned()
                    .unwrap_or_default();
                (span.name().to_owned(), fields)
            })
            .collect();
        self.0.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            message: fields.0.remove("message").unwrap_or_default(),
            spans,
        });
    }
}

const JOB_LINE: &str = "billing the due subscriptions";

// The current-thread runtime keeps every task on this thread, where `set_default` applies.
#[tokio::test]
async fn an_event_logged_inside_a_job_carries_the_ticks_role_token_and_holder() {
    let capture = Capture::default();
    let _subscriber =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let db = database().await;
    let tokens = Arc::new(Mutex::new(Vec::<i64>::new()));
    let seen = tokens.clone();
    let runtime = Runtime::builder(db.pool().clone())
        .timings(FAST)
        .holder_id("replica-a")
        .role(
            ALPHA,
            Duration::from_secs(3_600),
            move |tick: TickContext| {
                let seen = seen.clone();
                async move {
                    tracing::info!(rows = 3, "{JOB_LINE}");
                    seen.lock().unwrap().push(tick.fence().token());
                    Ok::<(), JobError>(())
                }
            },
        )
        .build()
        .unwrap();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(runtime.run_until_cancelled(shutdown.clone()));
    while !capture.events().iter().any(|e| e.message == "released") {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shutdown.cancel();
    running.await.unwrap().unwrap();

    let token = tokens.lock().unwrap()[0];
    let events = capture.events();
    let job_line = events
        .iter()
        .find(|e| e.message == JOB_LINE)
        .expect("the job's event was captured");
    let expected = Fields(BTreeMap::from([
        ("holder_id".to_owned(), "replica-a".to_owned()),
        ("role".to_owned(), "alpha".to_owned()),
        ("token".to_owned(), token.to_string()),
    ]));
    assert_eq!(
        job_line.spans,
        [("leader.tick".to_owned(), expected.clone())],
        "{events:#?}"
    );
    // INFO only when leadership changes hands or something goes wrong: a completed tick's
    // release is DEBUG.
    for (message, level) in [("became leader", Level::INFO), ("released", Level::DEBUG)] {
        let line = events
            .iter()
            .find(|e| e.message == message)
            .unwrap_or_else(|| panic!("no {message:?} line: {events:#?}"));
        assert_eq!(line.level, level, "{message}");
        assert_eq!(line.spans, [("leader.tick".to_owned(), expected.clone())]);
    }
}
