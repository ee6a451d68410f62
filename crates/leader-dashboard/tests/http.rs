//! The dashboard over HTTP against PostgreSQL (no browser): the login it runs as, bad input of
//! every kind, writes without the token or the CSRF token, an action recorded with who and why,
//! and a database that goes away mid-page. Each bad request gets a page that says what was wrong,
//! with its status, and writes nothing.

mod common;

use std::time::Duration;

use common::*;
use leader_dashboard::{LoginError, Options, WriteToken, check_operator_login};
use leader_testkit::{Cluster, TestDb};

const TOKEN: &str = "a-token-of-at-least-sixteen-characters";

fn writes() -> Options {
    Options::default().with_writes(WriteToken::new(TOKEN).unwrap())
}

/// Nothing written: no action recorded, no role paused, no cooldown changed.
async fn nothing_written(db: &TestDb) {
    assert_eq!(
        db.count("SELECT count(*) FROM leader_operator_actions")
            .await,
        0
    );
    assert_eq!(
        db.count("SELECT count(*) FROM leader_leases WHERE paused_at IS NOT NULL")
            .await,
        0
    );
}

#[tokio::test]
async fn the_login_check_refuses_the_owner_and_the_application_and_accepts_the_operator() {
    let (db, operator) = operator_database().await;
    check_operator_login(&operator)
        .await
        .expect("the operator's login");
    let owner = check_operator_login(db.admin()).await.unwrap_err();
    assert!(
        matches!(owner, LoginError::TooPowerful { .. })
            && owner
                .to_string()
                .contains("leader_grant_operator_role('ops')"),
        "{owner}"
    );
    // An owner that is no superuser, and has even revoked its own write privileges.
    db.exec(
        "DO $$ BEGIN CREATE ROLE leader_owner LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
         ALTER TABLE leader_leases OWNER TO leader_owner;
         SET ROLE leader_owner;
         REVOKE INSERT, UPDATE, DELETE ON leader_leases FROM leader_owner;
         RESET ROLE;",
    )
    .await;
    let owner = db.pool_as("leader_owner", 1).await;
    let err = check_operator_login(&owner).await.unwrap_err();
    assert!(err.to_string().contains("it owns leader_leases"), "{err}");
    let app = db.pool_as("leader_app", 1).await;
    let err = check_operator_login(&app).await.unwrap_err();
    assert!(
        err.to_string().contains("may write leader_leases directly"),
        "{err}"
    );
    db.exec(
        "DO $$ BEGIN CREATE ROLE leader_nobody LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
         GRANT SELECT ON leader_leases, leader_status TO leader_nobody;",
    )
    .await;
    let nobody = db.pool_as("leader_nobody", 1).await;
    let err = check_operator_login(&nobody).await.unwrap_err();
    assert!(
        matches!(&err, LoginError::NotGranted { what, .. } if what.contains("leader_tick_history")),
        "{err}"
    );
}

#[tokio::test]
async fn each_page_reads_and_bad_input_gets_a_clear_page_with_nothing_written() {
    let (db, operator) = operator_database().await;
    let addr = serve(operator, writes()).await;

    let overview = get(addr, "/").await;
    assert_eq!(overview.status, 200, "{}", overview.body);
    for role in ["alpha", "beta", "gamma", "delta"] {
        assert!(
            overview.body.contains(&format!("data-role=\"{role}\"")),
            "{role}"
        );
    }
    assert!(overview.body.contains("not registered"));
    assert!(
        overview
            .header("content-security-policy")
            .is_some_and(|csp| csp.contains("script-src 'self'"))
    );
    for (path, status) in [
        ("/roles/alpha", 200),
        ("/roles/delta", 200),
        ("/replicas", 200),
        ("/?state=paused&sort=holder&desc=1&q=al", 200),
        ("/healthz", 200),
        ("/assets/live.js", 200),
    ] {
        let page = get(addr, path).await;
        assert_eq!(page.status, status, "{path}: {}", page.body);
    }
    let fragment = request(addr, "GET", "/", &[("x-leader-fragment", "1")], b"").await;
    assert!(
        fragment.body.starts_with("<p") && !fragment.body.contains("<html"),
        "the live part only: {}",
        &fragment.body[..fragment.body.len().min(200)]
    );

    let unknown = get(addr, "/roles/nope").await;
    assert_eq!(unknown.status, 404);
    assert!(
        unknown.body.contains("No role named `nope`")
            && unknown.body.contains("alpha, beta, gamma"),
        "{}",
        unknown.body
    );
    let sql = get(
        addr,
        "/roles/alpha%27%3B%20DROP%20TABLE%20leader_leases%3B%20--",
    )
    .await;
    assert_eq!(sql.status, 400, "{}", sql.body);
    assert!(sql.body.contains("is not a role name"), "{}", sql.body);
    assert!(
        !sql.body.contains("<script>alert"),
        "the name is escaped wherever it is shown"
    );
    let xss = get(addr, "/roles/%3Cscript%3Ealert(1)%3C%2Fscript%3E").await;
    assert_eq!(xss.status, 400);
    assert!(!xss.body.contains("<script>alert") && xss.body.contains("&lt;script&gt;"));
    let action = get(addr, "/roles/alpha/explode").await;
    assert_eq!(action.status, 404);
    assert_eq!(get(addr, "/no/such/page").await.status, 404);

    // Writes: without a session, without the CSRF token, with another site's origin, oversized.
    let pause = form(&[("csrf", "x"), ("shard", "all"), ("reason", "why")]);
    let anonymous = request(addr, "POST", "/roles/alpha/pause", &[], pause.as_bytes()).await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
    let session = sign_in(addr, "alice", TOKEN).await;
    let cookie = [("Cookie", session.as_str())];
    let no_csrf = form(&[("shard", "all"), ("reason", "why")]);
    let refused = request(
        addr,
        "POST",
        "/roles/alpha/pause",
        &cookie,
        no_csrf.as_bytes(),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("CSRF token is missing"),
        "{}",
        refused.body
    );
    let confirm = request(addr, "GET", "/roles/alpha/pause", &cookie, b"").await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    let csrf = confirm
        .input("csrf")
        .expect("the confirm form's CSRF token");
    let foreign = request(
        addr,
        "POST",
        "/roles/alpha/pause",
        &[
            ("Cookie", session.as_str()),
            ("Origin", "http://evil.example"),
        ],
        form(&[("csrf", &csrf), ("shard", "all"), ("reason", "why")]).as_bytes(),
    )
    .await;
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    let huge = form(&[
        ("csrf", &csrf),
        ("shard", "all"),
        ("reason", &"x".repeat(100_000)),
    ]);
    let oversized = request(addr, "POST", "/roles/alpha/pause", &cookie, huge.as_bytes()).await;
    assert_eq!(oversized.status, 413, "{}", oversized.body);
    assert!(oversized.body.contains("larger than"), "{}", oversized.body);
    let long = form(&[
        ("csrf", &csrf),
        ("shard", "all"),
        ("reason", &"x".repeat(501)),
    ]);
    let too_long = request(addr, "POST", "/roles/alpha/pause", &cookie, long.as_bytes()).await;
    assert_eq!(too_long.status, 400, "{}", too_long.body);
    let blank = form(&[("csrf", &csrf), ("shard", "all"), ("reason", "   ")]);
    assert_eq!(
        request(
            addr,
            "POST",
            "/roles/alpha/pause",
            &cookie,
            blank.as_bytes()
        )
        .await
        .status,
        400
    );
    let bad_shard = form(&[("csrf", &csrf), ("shard", "7"), ("reason", "why")]);
    assert_eq!(
        request(
            addr,
            "POST",
            "/roles/alpha/pause",
            &cookie,
            bad_shard.as_bytes()
        )
        .await
        .status,
        400
    );
    let not_a_form = request(
        addr,
        "POST",
        "/roles/alpha/pause",
        &cookie,
        &[0xff, 0xfe, b'='],
    )
    .await;
    assert!(not_a_form.status >= 400, "{}", not_a_form.status);
    let wrong_token = get(addr, "/login").await;
    let refused = request(
        addr,
        "POST",
        "/login",
        &[(
            "Cookie",
            &wrong_token.cookie("leader_dashboard_login").unwrap(),
        )],
        form(&[
            ("csrf", &wrong_token.input("csrf").unwrap()),
            ("who", "mallory"),
            ("token", "not-the-token-at-all"),
        ])
        .as_bytes(),
    )
    .await;
    assert_eq!(refused.status, 401);
    nothing_written(&db).await;

    // And the action itself, recorded with who and why.
    let done = request(
        addr,
        "POST",
        "/roles/alpha/pause",
        &cookie,
        form(&[
            ("csrf", &csrf),
            ("shard", "all"),
            ("reason", "SMTP key rotation"),
        ])
        .as_bytes(),
    )
    .await;
    assert_eq!(done.status, 303, "{}", done.body);
    let (who, why, login): (String, String, String) = sqlx::query_as(
        "SELECT who, why, login::text FROM leader_operator_actions WHERE action = 'pause'",
    )
    .fetch_one(db.admin())
    .await
    .unwrap();
    assert_eq!(
        (who.as_str(), why.as_str(), login.as_str()),
        ("alice", "SMTP key rotation", "leader_operator")
    );
    let role = get(addr, "/roles/alpha").await;
    assert!(
        role.body.contains("Paused by alice") && role.body.contains("SMTP key rotation"),
        "{}",
        role.body
    );
    let again = request(
        addr,
        "POST",
        "/roles/alpha/pause",
        &cookie,
        form(&[("csrf", &csrf), ("shard", "all"), ("reason", "twice")]).as_bytes(),
    )
    .await;
    assert_eq!(again.status, 409, "already paused: {}", again.body);
}

#[tokio::test]
async fn writes_are_refused_when_off() {
    let (db, operator) = operator_database().await;
    let addr = serve(operator, Options::default()).await;
    let page = get(addr, "/roles/alpha").await;
    assert!(page.body.contains("Writes are off"), "{}", page.body);
    assert!(
        !page.body.contains("/roles/alpha/pause\""),
        "no pause button"
    );
    for path in ["/roles/alpha/pause", "/login"] {
        assert_eq!(get(addr, path).await.status, 403, "{path}");
    }
    let post = request(
        addr,
        "POST",
        "/roles/alpha/pause",
        &[],
        form(&[("reason", "why")]).as_bytes(),
    )
    .await;
    assert_eq!(post.status, 403);
    assert!(post.body.contains("Writes are off"));
    nothing_written(&db).await;
}

#[tokio::test]
async fn a_database_that_goes_away_mid_page_gets_a_clear_page_and_the_pages_come_back() {
    let cluster = tokio::task::spawn_blocking(Cluster::start)
        .await
        .unwrap()
        .expect("a private cluster");
    let admin = sqlx::PgPool::connect(&cluster.url()).await.unwrap();
    leader_core::schema::MIGRATOR.run(&admin).await.unwrap();
    sqlx::raw_sql(ROLES).execute(&admin).await.unwrap();
    let url = cluster.url().replacen("postgres@", "leader_operator@", 1);
    let operator = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(3))
        .connect(&url)
        .await
        .unwrap();
    let addr = serve(operator, Options::default()).await;
    assert_eq!(get(addr, "/").await.status, 200);
    admin.close().await;

    let cluster = tokio::task::spawn_blocking(move || {
        cluster.shut_down().expect("the server stops");
        cluster
    })
    .await
    .unwrap();
    for path in ["/", "/roles/alpha", "/replicas"] {
        let page = get(addr, path).await;
        assert_eq!(page.status, 503, "{path}: {}", page.body);
        assert!(
            page.body.contains("The database does not answer")
                && page.body.contains("Nothing was written"),
            "{path}: {}",
            page.body
        );
    }
    assert_eq!(
        get(addr, "/healthz").await.status,
        200,
        "the server still serves"
    );

    let _cluster = tokio::task::spawn_blocking(move || {
        cluster.restart("fast").expect("the server starts again");
        cluster
    })
    .await
    .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        if get(addr, "/").await.status == 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pages come back once the database does"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
