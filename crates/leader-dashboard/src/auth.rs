//! Who may write: operators signed in with the write token, each session with its own CSRF token.
//!
//! A session is a random 256-bit id in an `HttpOnly`, `SameSite=Strict` cookie, kept in this
//! process's memory for [`SESSION_LIFETIME`] (a restart signs everyone out). Every form a signed-in
//! operator sees carries the session's CSRF token, and every write checks it; the sign-in form
//! carries one of its own, tied to a cookie set with the form (a double-submit token), so no other
//! site can sign a browser in either. Tokens are compared in constant time.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::http::header::{COOKIE, HOST, ORIGIN};
use rand::RngCore;
use subtle::ConstantTimeEq;

/// The session cookie's name.
pub(crate) const SESSION_COOKIE: &str = "leader_dashboard_session";
/// The sign-in form's CSRF cookie.
pub(crate) const LOGIN_COOKIE: &str = "leader_dashboard_login";
/// How long a session lasts from sign-in.
pub(crate) const SESSION_LIFETIME: Duration = Duration::from_secs(8 * 3600);
/// The longest operator name kept.
pub(crate) const MAX_NAME: usize = 100;

/// A signed-in operator.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// The name they signed in with, recorded as `who` with each action.
    pub who: String,
    /// The token every form of theirs carries.
    pub csrf: String,
    expires: Instant,
}

/// The sessions of this process.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    by_id: Mutex<HashMap<String, Session>>,
}

/// 32 random bytes from the thread's CSPRNG (ChaCha, seeded from the OS), as hex.
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let mut hex = String::with_capacity(64);
    for byte in bytes {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Whether `given` is `expected`, in time independent of where they differ.
pub(crate) fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.ct_eq(expected).into()
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub(crate) fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value)
}

/// `Set-Cookie` for `name` (HttpOnly, SameSite=Strict, the whole site); `max_age` 0 deletes it.
pub(crate) fn set_cookie(name: &str, value: &str, max_age: Duration) -> String {
    format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        max_age.as_secs()
    )
}

/// Whether a write's `Origin`, when the browser sent one, is this server (the `Host` it was
/// asked for): a cross-site form post carries the other site's origin.
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let Some(host) = headers.get(HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|o| o == host)
}

impl Sessions {
    /// Starts a session for `who`; its id, for the cookie.
    pub fn start(&self, who: &str) -> (String, Session) {
        let id = random_token();
        let session = Session {
            who: who.to_owned(),
            csrf: random_token(),
            expires: Instant::now() + SESSION_LIFETIME,
        };
        let mut by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        by_id.retain(|_, s| s.expires > Instant::now());
        by_id.insert(id.clone(), session.clone());
        (id, session)
    }

    /// The live session the request's cookie names.
    pub fn of(&self, headers: &HeaderMap) -> Option<Session> {
        let id = cookie(headers, SESSION_COOKIE)?;
        let by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        by_id
            .get(id)
            .filter(|s| s.expires > Instant::now())
            .cloned()
    }

    /// Ends the request's session, if any.
    pub fn end(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, SESSION_COOKIE) {
            let mut by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
            by_id.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_session_is_found_by_its_cookie_only_and_tokens_are_unguessable() {
        let sessions = Sessions::default();
        let (id, session) = sessions.start("alice");
        assert_eq!((id.len(), session.csrf.len()), (64, 64));
        assert_ne!(id, session.csrf);
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_str(&format!("other=1; {SESSION_COOKIE}={id}")).unwrap(),
        );
        assert_eq!(sessions.of(&headers).unwrap().who, "alice");
        let mut forged = HeaderMap::new();
        forged.insert(
            COOKIE,
            HeaderValue::from_str(&format!("{SESSION_COOKIE}={}", random_token())).unwrap(),
        );
        assert!(sessions.of(&forged).is_none());
        sessions.end(&headers);
        assert!(sessions.of(&headers).is_none());
        assert!(same_secret(b"abc", b"abc") && !same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"", b"abc"));
    }

    #[test]
    fn a_write_from_another_origin_is_told_apart() {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("127.0.0.1:7878"));
        assert!(
            same_origin(&headers),
            "no Origin: a same-origin form or a tool"
        );
        headers.insert(ORIGIN, HeaderValue::from_static("http://127.0.0.1:7878"));
        assert!(same_origin(&headers));
        headers.insert(ORIGIN, HeaderValue::from_static("http://evil.example"));
        assert!(!same_origin(&headers));
    }
}
