//! The dashboard's test harness: a database with roles and an operator's login, the server on a
//! free loopback port, and a plain HTTP/1.1 client (one request per connection).
#![allow(dead_code)]

use std::net::SocketAddr;

use leader_dashboard::Options;
use leader_testkit::TestDb;
use sqlx::PgPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The roles: alpha, beta and gamma seeded, delta only in the CHECK (registered, no row).
pub const ROLES: &str = "
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('alpha', 'beta', 'gamma', 'delta'));
INSERT INTO leader_leases (role, holder_token)
VALUES ('alpha', leader_seed_token()), ('beta', leader_seed_token()), ('gamma', leader_seed_token());
DO $$ BEGIN
    CREATE ROLE leader_operator LOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$;
SELECT leader_grant_operator_role('leader_operator');
DO $$ BEGIN
    CREATE ROLE leader_app LOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$;
SELECT leader_grant_app_role('leader_app');
";

/// A migrated database with [`ROLES`], and a pool of the operator's login.
pub async fn operator_database() -> (TestDb, PgPool) {
    let db = TestDb::new().await;
    db.exec(ROLES).await;
    let operator = db.pool_as("leader_operator", 4).await;
    (db, operator)
}

/// The dashboard over `pool` on a free loopback port.
pub async fn serve(pool: PgPool, options: Options) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(leader_dashboard::serve(
        listener,
        pool,
        options,
        std::future::pending(),
    ));
    addr
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `name=value` of the `Set-Cookie` that sets `name`.
    pub fn cookie(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
            .map(|(_, v)| v.split(';').next().unwrap_or("").to_owned())
            .find(|pair| pair.starts_with(&format!("{name}=")))
    }

    /// The `value` of the first `name="NAME" value="..."` input in the body.
    pub fn input(&self, name: &str) -> Option<String> {
        let at = self.body.find(&format!("name=\"{name}\" value=\""))?;
        let rest = &self.body[at + name.len() + 15..];
        Some(rest[..rest.find('"')?].to_owned())
    }
}

/// Sends one request and reads the whole answer.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    // A refused oversized body may be answered before it is all sent; the answer is what counts.
    let _ = stream.write_all(body).await;
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    let chunked = text.to_lowercase().contains("transfer-encoding: chunked");
    Answer {
        status,
        headers,
        body: if chunked {
            dechunk(body)
        } else {
            body.to_owned()
        },
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

pub async fn get(addr: SocketAddr, path: &str) -> Answer {
    request(addr, "GET", path, &[], b"").await
}

/// `field=value&...`, percent-encoded.
pub fn form(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Signs in as `who` with `token`: the session cookie (`name=value`), and the CSRF token of the
/// page at `path` (read from its form).
pub async fn sign_in(addr: SocketAddr, who: &str, token: &str) -> String {
    let page = get(addr, "/login").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let login_cookie = page
        .cookie("leader_dashboard_login")
        .expect("a login cookie");
    let csrf = page.input("csrf").expect("the form's CSRF token");
    let signed = request(
        addr,
        "POST",
        "/login",
        &[("Cookie", &login_cookie)],
        form(&[("csrf", &csrf), ("who", who), ("token", token)]).as_bytes(),
    )
    .await;
    assert_eq!(signed.status, 303, "{}", signed.body);
    signed
        .cookie("leader_dashboard_session")
        .expect("a session cookie")
}
