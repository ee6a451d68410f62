//! A scripted statement layer for the paused-clock tests.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use chrono::Utc;
use futures_util::future::BoxFuture;
use leader_core::lease::{
    Acquired, Grant, LossReason, Refusal, RefusalReason, Released, Renewed, Wanted,
};
use leader_core::{Fence, ReleaseOutcome, Role, Statement, StatementError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One statement the fake received.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Call {
    /// One ACQUIRE statement, with the roles it asked for.
    Acquire(Duration, Vec<Role>),
    Renew(Duration),
    Release(Duration, ReleaseOutcome),
    /// LEAVE, with the roles it named.
    Leave(Duration, Vec<Role>),
}

/// Answers each RENEW with the next scripted (delay, answer), or `Extended` at once when the
/// script is empty; answers each role of an ACQUIRE with the next scripted answer and, once that
/// script is empty, cancels `acquires_done` and refuses as paused. Records every call with its time since
/// `epoch`.
pub(crate) struct FakeStatements {
    pub epoch: Instant,
    pub renews: Mutex<VecDeque<(Duration, Result<Renewed, StatementError>)>>,
    pub acquires: Mutex<VecDeque<Result<Acquired, StatementError>>>,
    pub acquires_done: CancellationToken,
    pub calls: Mutex<Vec<Call>>,
    /// Makes RELEASE panic, as a bug in the runtime's own loop would.
    pub release_panics: std::sync::atomic::AtomicBool,
    /// What RELEASE answers: released (`None`), or found the lease lost for this reason.
    pub release_finds: Mutex<Option<LossReason>>,
    /// Called as RELEASE is sent, to observe what has ended by then.
    pub on_release: Mutex<Option<Box<dyn Fn() + Send>>>,
}

pub(crate) fn refused(
    reason: RefusalReason,
    retry_after: Option<Duration>,
) -> Result<Acquired, StatementError> {
    Ok(Acquired::Refused(Refusal::forge(
        reason,
        retry_after,
        None,
        Utc::now(),
    )))
}

pub(crate) fn extended() -> Result<Renewed, StatementError> {
    Ok(Renewed::Extended {
        expires_at: Utc::now(),
        db_now: Utc::now(),
    })
}

pub(crate) fn failed() -> Result<Renewed, StatementError> {
    Err(StatementError::Timeout {
        statement: Statement::Renew,
        timeout: Duration::from_secs(2),
    })
}

impl FakeStatements {
    pub fn new(script: Vec<(Duration, Result<Renewed, StatementError>)>) -> FakeStatements {
        FakeStatements {
            epoch: Instant::now(),
            renews: Mutex::new(script.into()),
            acquires: Mutex::new(VecDeque::new()),
            acquires_done: CancellationToken::new(),
            calls: Mutex::new(Vec::new()),
            release_panics: std::sync::atomic::AtomicBool::new(false),
            release_finds: Mutex::new(None),
            on_release: Mutex::new(None),
        }
    }

    /// A fake whose ACQUIREs answer `script`, in order.
    pub fn acquiring(script: Vec<Result<Acquired, StatementError>>) -> FakeStatements {
        let fake = FakeStatements::new(vec![]);
        *fake.acquires.lock().unwrap() = script.into();
        fake
    }

    /// The times of the ACQUIREs received, since `epoch`.
    pub fn acquire_times(&self) -> Vec<Duration> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Acquire(at, _) => Some(at),
                _ => None,
            })
            .collect()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// The roles each ACQUIRE asked for, in order.
    pub fn acquired_roles(&self) -> Vec<Vec<Role>> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Acquire(_, roles) => Some(roles),
                _ => None,
            })
            .collect()
    }

    pub fn grant(role: &'static str) -> Grant {
        Grant::forge(
            Fence::forge(Role::from_static(role), 42),
            Utc::now(),
            Utc::now(),
        )
    }
}

impl crate::statements::LeaseStatements for FakeStatements {
    fn acquire_many(
        &self,
        roles: Vec<Wanted>,
        _anchor: Option<leader_core::lease::Anchor>,
    ) -> BoxFuture<'_, Result<Vec<Acquired>, StatementError>> {
        let asked: Vec<Role> = roles.iter().map(Wanted::role).collect();
        self.calls
            .lock()
            .unwrap()
            .push(Call::Acquire(self.epoch.elapsed(), asked.clone()));
        let mut answers = Vec::with_capacity(asked.len());
        for _ in &asked {
            let answer = self.acquires.lock().unwrap().pop_front();
            let answer = answer.unwrap_or_else(|| {
                self.acquires_done.cancel();
                refused(RefusalReason::Paused, None)
            });
            match answer {
                Ok(answer) => answers.push(answer),
                Err(error) => return Box::pin(async move { Err(error) }),
            }
        }
        Box::pin(async move { Ok(answers) })
    }

    fn renew(&self, _fence: Fence) -> BoxFuture<'_, Result<Renewed, StatementError>> {
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
    ) -> BoxFuture<'_, Result<Released, StatementError>> {
        self.calls
            .lock()
            .unwrap()
            .push(Call::Release(self.epoch.elapsed(), outcome));
        assert!(
            !self
                .release_panics
                .load(std::sync::atomic::Ordering::SeqCst),
            "a bug in the role loop"
        );
        if let Some(observe) = self.on_release.lock().unwrap().as_ref() {
            observe();
        }
        let lost = *self.release_finds.lock().unwrap();
        Box::pin(async move { Ok(Released::forge(lost)) })
    }

    fn leave(&self, roles: Vec<Role>) -> BoxFuture<'_, Result<u64, StatementError>> {
        let left = roles.len() as u64;
        self.calls
            .lock()
            .unwrap()
            .push(Call::Leave(self.epoch.elapsed(), roles));
        Box::pin(async move { Ok(left) })
    }
}
