//! A scripted statement layer for the paused-clock tests.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use chrono::Utc;
use futures_util::future::BoxFuture;
use leader_core::lease::{Acquired, Grant, Released, Renewed};
use leader_core::{Error, Fence, ReleaseOutcome, Role};
use tokio::time::Instant;

/// One statement the fake received.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Call {
    Renew(Duration),
    Release(Duration, ReleaseOutcome),
}

/// Answers each RENEW with the next scripted (delay, answer), or `Extended` at once when the
/// script is empty; records every call with its time since `epoch`.
pub(crate) struct FakeStatements {
    pub epoch: Instant,
    pub renews: Mutex<VecDeque<(Duration, Result<Renewed, Error>)>>,
    pub calls: Mutex<Vec<Call>>,
}

pub(crate) fn extended() -> Result<Renewed, Error> {
    Ok(Renewed::Extended {
        expires_at: Utc::now(),
        db_now: Utc::now(),
    })
}

pub(crate) fn failed() -> Result<Renewed, Error> {
    Err(Error::Timeout {
        statement: "RENEW",
        timeout: Duration::from_secs(2),
    })
}

impl FakeStatements {
    pub fn new(script: Vec<(Duration, Result<Renewed, Error>)>) -> FakeStatements {
        FakeStatements {
            epoch: Instant::now(),
            renews: Mutex::new(script.into()),
            calls: Mutex::new(Vec::new()),
        }
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    pub fn grant(role: &'static str) -> Grant {
        Grant {
            fence: Fence::forge(Role::from_static(role), 42),
            db_now: Utc::now(),
            expires_at: Utc::now(),
        }
    }
}

impl crate::statements::LeaseStatements for FakeStatements {
    fn acquire(&self, _role: Role, _interval: Duration) -> BoxFuture<'_, Result<Acquired, Error>> {
        unimplemented!("the tick tests grant directly")
    }

    fn renew(&self, _fence: Fence) -> BoxFuture<'_, Result<Renewed, Error>> {
        self.calls
            .lock()
            .unwrap()
            .push(Call::Renew(self.epoch.elapsed()));
        let (delay, answer) = self
            .renews
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or((Duration::ZERO, extended()));
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            answer
        })
    }

    fn release(
        &self,
        _fence: Fence,
        outcome: ReleaseOutcome,
        _interval: Duration,
    ) -> BoxFuture<'_, Result<Released, Error>> {
        self.calls
            .lock()
            .unwrap()
            .push(Call::Release(self.epoch.elapsed(), outcome));
        Box::pin(async { Ok(Released { changed: true }) })
    }
}
