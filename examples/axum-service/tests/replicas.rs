//! Two replicas of the service as separate processes on one database: one leads each role, the
//! enqueue endpoint's emails are sent exactly once, and a SIGTERMed leader exits 0 after
//! releasing, its follower taking the role over through the wake channel.
//!
//! Every wait is for a condition, with a generous bound; no duration is asserted.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use leader_testkit::TestDb;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// Timings under which a poll cannot explain a takeover within the test: a lease lasts an hour
/// from its last RENEW, a follower polls at most every two hours, and `daily_report`, once it
/// ran at start-up, is not due for an hour. A follower refused at start-up next polls on its own
/// schedule about an hour later; any takeover sooner is the wake channel's.
const WAKE_ONLY: [&str; 6] = [
    "--lease-ttl-ms",
    "3600000",
    "--max-poll-ms",
    "7200000",
    "--report-every-secs",
    "3600",
];

/// A follower's scheduled poll at least this far away cannot have caused a takeover that the
/// test waits for within [`TAKEOVER_BOUND`] (the whole test runs in well under it).
const FAR: Duration = Duration::from_secs(600);
/// How long the test waits for the follower to lead after the leader exited.
const TAKEOVER_BOUND: Duration = Duration::from_secs(120);
/// The bound on the other waits: generous, for a loaded machine.
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigtermed_leader_hands_its_role_over_through_the_wake_channel_and_every_email_is_sent_once()
 {
    let db = TestDb::unmigrated().await;
    let http = Http::new();
    // The first replica applies the migrations (--migrate) before it serves; the second starts
    // once it serves.
    let mut a = Replica::start(&db, "web-a", &["--migrate"]).await;
    let mut b = Replica::start(&db, "web-b", &[]).await;

    // Exactly one replica leads the dispatcher, and the table agrees with it.
    let (leader_is_a, token) = eventually("exactly one replica leading email_outbox", WAIT, || {
        let (a, b, http) = (&a, &b, &http);
        async move {
            let (ha, hb) = (a.health(http).await?, b.health(http).await?);
            for health in [&ha, &hb] {
                assert_eq!(roles_of(health), ["daily_report", "email_outbox"]);
            }
            match (leading(&ha, "email_outbox"), leading(&hb, "email_outbox")) {
                (Some(token), None) => Some((true, token)),
                (None, Some(token)) => Some((false, token)),
                (Some(_), Some(_)) => panic!("both replicas lead email_outbox: {ha} {hb}"),
                (None, None) => None,
            }
        }
    })
    .await;
    let (leader, follower) = if leader_is_a {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    assert_eq!(
        lease(&db, "email_outbox").await,
        (Some(leader.name.to_owned()), token),
        "leader_leases names the replica /healthz says leads, with its token"
    );

    // The periodic role ran once, at start-up, on one of the two: the roles are covered.
    eventually("the first report written", WAIT, || async {
        (count(&db, "SELECT count(*) FROM email_reports").await > 0).then_some(())
    })
    .await;
    let (seq, written_by): (i64, String) =
        sqlx::query_as("SELECT seq, written_by FROM email_reports")
            .fetch_one(db.admin())
            .await
            .unwrap();
    assert_eq!(seq, 1, "one report, written once");
    assert!(
        [leader.name, follower.name].contains(&written_by.as_str()),
        "{written_by}"
    );

    // Emails enqueued on either replica are sent by the leader.
    let mut emails = Vec::new();
    for i in 0..10 {
        let via = if i % 2 == 0 { &*leader } else { &*follower };
        emails.push(via.enqueue(&http, i).await);
    }
    for &id in &emails {
        let sent_by = follower.sent_by(&http, id).await;
        assert_eq!(sent_by, leader.name, "email {id}");
    }

    // The wake channel's proof, before the SIGTERM: both replicas listen, and the follower's last
    // poll put its next one far away (a lease an hour long, the report not due for an hour).
    eventually(
        "both replicas listening on leader_released",
        WAIT,
        || async {
            (count(
                &db,
                r#"SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND backend_type = 'client backend'
                  AND query LIKE '%LISTEN "leader_released"%' AND pid <> pg_backend_pid()"#,
            )
            .await
                >= 2)
                .then_some(())
        },
    )
    .await;
    eventually(
        "the follower's last poll scheduling its next one far away",
        WAIT,
        || async {
            let waits: Vec<_> = ["email_outbox", "daily_report"]
                .iter()
                .map(|role| follower.last_poll_wait(role))
                .collect();
            waits
                .iter()
                .all(|wait| wait.is_some_and(|wait| wait > FAR))
                .then_some(())
        },
    )
    .await;

    // SIGTERM: the leader releases its tick and exits 0.
    leader.sigterm();
    let status = leader.exit(WAIT).await;
    assert!(status.success(), "{} exited with {status}", leader.name);
    assert!(
        leader.logged(&[
            "released role=email_outbox",
            "outcome=shutdown changed=true"
        ]),
        "{} released email_outbox as shut down:\n{}",
        leader.name,
        leader.logs()
    );
    let (holder, _) = lease(&db, "email_outbox").await;
    assert!(
        holder.is_none() || holder.as_deref() == Some(follower.name),
        "after the leader's exit the lease is released or the follower's, not {holder:?}"
    );

    // The follower leads at once: a poll would come about an hour later, so only the release's
    // notification can have made it ask within the bound.
    let new_token = eventually(
        "the follower leading email_outbox",
        TAKEOVER_BOUND,
        || async {
            let health = follower.health(&http).await?;
            leading(&health, "email_outbox")
        },
    )
    .await;
    assert!(new_token > token, "{new_token} after {token}");
    assert_eq!(
        lease(&db, "email_outbox").await,
        (Some(follower.name.to_owned()), new_token)
    );
    assert!(
        follower.logged(&["became leader role=email_outbox", "last_tick_holder=nobody"]),
        "the follower took a released lease (last_tick_holder=nobody), not an expired one:\n{}",
        follower.logs()
    );

    // It sends what is enqueued from now on.
    let mut after = Vec::new();
    for i in 10..20 {
        after.push(follower.enqueue(&http, i).await);
    }
    for &id in &after {
        assert_eq!(
            follower.sent_by(&http, id).await,
            follower.name,
            "email {id}"
        );
    }
    emails.extend(after);

    // The metrics endpoint serves the runtime's series.
    let metrics = leader_testkit::get_metrics(follower.metrics).expect("/metrics answers");
    assert!(
        metrics.contains("leader_interval_seconds{role=\"daily_report\"} 3600")
            && metrics.contains("emails_enqueued_total"),
        "{metrics}"
    );

    follower.sigterm();
    let status = follower.exit(WAIT).await;
    assert!(status.success(), "{} exited with {status}", follower.name);
    assert_eq!(
        lease(&db, "email_outbox").await.0,
        None,
        "the last replica released the role"
    );

    // Each email enqueued over HTTP was delivered exactly once.
    assert_eq!(count(&db, "SELECT count(*) FROM emails").await, 20);
    assert_eq!(
        count(&db, "SELECT count(*) FROM emails WHERE sent_at IS NULL").await,
        0
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM email_deliveries").await,
        20,
        "one delivery per email"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM emails e
              WHERE (SELECT count(*) FROM email_deliveries d
                      WHERE d.email_id = e.id AND d.sent_by = e.sent_by) <> 1"
        )
        .await,
        0,
        "each email delivered once, by the replica that marked it sent"
    );
    let ids: BTreeSet<i64> = emails.into_iter().collect();
    assert_eq!(ids.len(), 20, "each POST got an id of its own");
}

/// One replica: the service's binary as a child process, its log lines kept (and echoed to the
/// test's stderr, so a failing run shows them).
struct Replica {
    name: &'static str,
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    /// The task that reads its stderr into `log`; it ends at the pipe's end, after the process.
    reader: Option<tokio::task::JoinHandle<()>>,
    http: SocketAddr,
    metrics: SocketAddr,
}

impl Replica {
    /// Starts the replica on `db` with `--listen 127.0.0.1:0` and [`WAKE_ONLY`] timings, and
    /// waits until it serves. Its pool is the test's application URL (through the pooler on a
    /// pooler run); its wake listener and migrations use the direct URL.
    async fn start(db: &TestDb, name: &'static str, extra: &[&str]) -> Replica {
        let metrics = free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_axum-service"));
        for var in [
            "LISTEN_ADDR",
            "METRICS_ADDR",
            "REPLICA_NAME",
            "REPORT_EVERY_SECS",
            "LEASE_TTL_MS",
            "MAX_POLL_MS",
            "POOL_SIZE",
        ] {
            command.env_remove(var);
        }
        command
            .env("DATABASE_URL", db.app_url())
            .env("DIRECT_DATABASE_URL", db.url())
            .env("RUST_LOG", "info,leader_runtime=debug")
            .args(["--listen", "127.0.0.1:0", "--replica", name])
            .args(["--metrics-addr", &metrics.to_string()])
            .args(WAKE_ONLY)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("the service's binary starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let reader = tokio::spawn({
            let log = log.clone();
            async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    eprintln!("[{name}] {line}");
                    log.lock().unwrap().push(line);
                }
            }
        });
        let mut replica = Replica {
            name,
            child,
            log,
            reader: Some(reader),
            http: metrics,
            metrics,
        };
        let deadline = Instant::now() + WAIT;
        replica.http = loop {
            if let Some(addr) = replica.listening() {
                break addr;
            }
            if let Ok(Some(status)) = replica.child.try_wait() {
                panic!(
                    "{name} exited with {status} before serving:\n{}",
                    replica.logs()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{name} did not serve within {WAIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        replica
    }

    /// The address of its "listening on http://ADDR" line, once logged.
    fn listening(&self) -> Option<SocketAddr> {
        const LISTENING: &str = "listening on http://";
        let log = self.log.lock().unwrap();
        let line = log.iter().find(|line| line.contains(LISTENING))?;
        let rest = &line[line.find(LISTENING)? + LISTENING.len()..];
        rest.split_whitespace().next()?.parse().ok()
    }

    fn logs(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Whether one of its log lines contains each of `parts`.
    fn logged(&self, parts: &[&str]) -> bool {
        let log = self.log.lock().unwrap();
        log.iter()
            .any(|line| parts.iter().all(|part| line.contains(part)))
    }

    /// The wait its poller logged after the last refusal of `role` (the runtime's DEBUG "not
    /// leading" line), if any.
    fn last_poll_wait(&self, role: &str) -> Option<Duration> {
        let refused = format!("not leading role={role} ");
        let log = self.log.lock().unwrap();
        let line = log.iter().rev().find(|line| line.contains(&refused))?;
        let wait = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("wait="))?;
        parse_debug_duration(wait)
    }

    /// Its `/healthz`, or `None` while it does not answer.
    async fn health(&self, http: &Http) -> Option<Value> {
        let url = format!("http://{}/healthz", self.http);
        match http.get(&url).await {
            Ok((StatusCode::OK, health)) => {
                assert_eq!(health["holder_id"], self.name, "{health}");
                Some(health)
            }
            _ => None,
        }
    }

    /// Enqueues email number `i` through `POST /emails`; returns its id.
    async fn enqueue(&self, http: &Http, i: usize) -> i64 {
        let url = format!("http://{}/emails", self.http);
        let email =
            json!({ "to": format!("user{i}@example.com"), "subject": format!("hello {i}") });
        let (status, answer) = http.post(&url, &email).await.expect("POST /emails answers");
        assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
        answer["id"].as_i64().expect("an id")
    }

    /// Waits until `GET /emails/{id}` says the email was sent; returns the replica that sent it.
    async fn sent_by(&self, http: &Http, id: i64) -> String {
        let url = format!("http://{}/emails/{id}", self.http);
        eventually(&format!("email {id} sent"), WAIT, || async {
            let (status, email) = http.get(&url).await.ok()?;
            assert_eq!(status, StatusCode::OK, "{email}");
            email["sent_at"].as_str()?;
            Some(email["sent_by"].as_str().expect("sent_by").to_owned())
        })
        .await
    }

    fn sigterm(&self) {
        let pid = self.child.id().expect("still running").to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {pid}");
    }

    /// Waits for it to exit and for its last log lines to be read (the process can exit before
    /// the test has read what it wrote last).
    async fn exit(&mut self, within: Duration) -> ExitStatus {
        let exited = async {
            let status = self.child.wait().await;
            if let Some(reader) = self.reader.take() {
                let _ = reader.await;
            }
            status
        };
        match tokio::time::timeout(within, exited).await {
            Ok(status) => status.expect("its exit status"),
            Err(_) => panic!(
                "{} did not exit within {within:?} of SIGTERM:\n{}",
                self.name,
                self.logs()
            ),
        }
    }
}

/// A tiny HTTP/1 client: hyper-util's, which axum already builds on.
struct Http(Client<HttpConnector, Body>);

impl Http {
    fn new() -> Http {
        Http(Client::builder(TokioExecutor::new()).build_http())
    }

    async fn get(&self, url: &str) -> Result<(StatusCode, Value), String> {
        self.send(Request::get(url).body(Body::empty()).unwrap())
            .await
    }

    async fn post(&self, url: &str, body: &Value) -> Result<(StatusCode, Value), String> {
        let request = Request::post(url)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        self.send(request).await
    }

    /// Sends `request`; the answer's status and its body as JSON (or as a JSON string).
    async fn send(&self, request: Request<Body>) -> Result<(StatusCode, Value), String> {
        let response = tokio::time::timeout(Duration::from_secs(10), self.0.request(request))
            .await
            .map_err(|_| "no answer within 10 s".to_owned())?
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body = axum::body::to_bytes(Body::new(response.into_body()), 1 << 20)
            .await
            .map_err(|e| e.to_string())?;
        let value = serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
        Ok((status, value))
    }
}

/// Calls `check` every 100 ms until it returns `Some`, for at most `within`; panics naming
/// `what` otherwise.
async fn eventually<T, F, Fut>(what: &str, within: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn roles_of(health: &Value) -> Vec<&str> {
    let mut roles: Vec<&str> = health["roles"]
        .as_array()
        .expect("roles")
        .iter()
        .map(|role| role.as_str().unwrap())
        .collect();
    roles.sort_unstable();
    roles
}

/// The token with which `health` says its replica leads `role`, if it does.
fn leading(health: &Value, role: &str) -> Option<i64> {
    health["leading"]
        .as_array()
        .expect("leading")
        .iter()
        .find(|led| led["role"] == role)
        .map(|led| led["token"].as_i64().expect("a token"))
}

/// The holder and token of `role`'s lease row.
async fn lease(db: &TestDb, role: &str) -> (Option<String>, i64) {
    sqlx::query_as("SELECT holder_id, holder_token FROM leader_leases WHERE role = $1")
        .bind(role)
        .fetch_one(db.admin())
        .await
        .unwrap()
}

async fn count(db: &TestDb, sql: &'static str) -> i64 {
    db.count(sql).await
}

/// A `Duration`'s `Debug` form (`3599.2s`, `12.5ms`, ...) as a duration.
fn parse_debug_duration(text: &str) -> Option<Duration> {
    let (number, scale) = [("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0)]
        .iter()
        .find_map(|(unit, scale)| Some((text.strip_suffix(unit)?, *scale)))?;
    let seconds: f64 = number.parse().ok()?;
    Some(Duration::from_secs_f64(seconds * scale))
}

/// A free TCP port on loopback, for the metrics listener (whose bound port the exporter does not
/// report, so `:0` cannot be used there).
fn free_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().unwrap()
}

#[test]
fn debug_durations_parse() {
    assert_eq!(
        parse_debug_duration("3599.5s"),
        Some(Duration::from_millis(3_599_500))
    );
    assert_eq!(
        parse_debug_duration("12ms"),
        Some(Duration::from_millis(12))
    );
    assert_eq!(parse_debug_duration("soon"), None);
}
