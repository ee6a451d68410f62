//! Pauses heard at once: `leader_pause` notifies `leader_paused` with the role, the wake listener
//! hears it on the direct connection, and every running tick of that role sends its RENEW now
//! rather than at its next beat. The notice carries no authority: the RENEW's answer decides,
//! and cancels the tick as paused only if the database says the lease is gone. Without a direct
//! connection the tick hears of the pause at its next RENEW, within one heartbeat.

use leader_core::Role;
use tokio::sync::broadcast;

/// Room for notices not yet read by a heartbeat; one that falls behind renews at once
/// ([`PauseReceiver::heard`]), so nothing is lost by a small buffer.
const BUFFERED: usize = 64;

/// The pauses the wake listener heard, for every running tick's heartbeat.
#[derive(Debug, Clone)]
pub(crate) struct PauseNotices {
    sender: broadcast::Sender<Role>,
}

impl Default for PauseNotices {
    fn default() -> PauseNotices {
        PauseNotices {
            sender: broadcast::Sender::new(BUFFERED),
        }
    }
}

impl PauseNotices {
    /// `role` was paused (or one of its shards).
    pub(crate) fn heard(&self, role: Role) {
        // No receiver: no tick runs, and nothing is to be told.
        let _ = self.sender.send(role);
    }

    /// The notices from now on, for one tick of `role`.
    pub(crate) fn subscribe(&self, role: Role) -> PauseReceiver {
        PauseReceiver {
            receiver: self.sender.subscribe(),
            role,
        }
    }
}

/// One tick's view of the notices: only its own role's.
#[derive(Debug)]
pub(crate) struct PauseReceiver {
    receiver: broadcast::Receiver<Role>,
    role: Role,
}

impl PauseReceiver {
    /// Resolves when a pause of this role may have been heard: a notice naming it, or notices
    /// missed (the receiver fell behind). Never resolves once the notices have closed.
    pub(crate) async fn heard(&mut self) {
        loop {
            match self.receiver.recv().await {
                Ok(role) if role == self.role => return,
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leader_core::Role;

    use super::PauseNotices;

    #[tokio::test(start_paused = true)]
    async fn a_tick_hears_its_own_roles_pause_and_no_other() {
        let notices = PauseNotices::default();
        let (billing, dunning) = (Role::from_static("billing"), Role::from_static("dunning"));
        let mut tick = notices.subscribe(billing);
        notices.heard(dunning);
        let other = tokio::time::timeout(Duration::from_secs(60), tick.heard()).await;
        assert!(other.is_err(), "another role's pause woke the tick");
        notices.heard(billing);
        tokio::time::timeout(Duration::from_secs(60), tick.heard())
            .await
            .expect("its own role's pause wakes the tick");
    }

    #[tokio::test(start_paused = true)]
    async fn a_tick_that_fell_behind_counts_as_having_heard() {
        let notices = PauseNotices::default();
        let mut tick = notices.subscribe(Role::from_static("billing"));
        for _ in 0..super::BUFFERED + 1 {
            notices.heard(Role::from_static("dunning"));
        }
        tokio::time::timeout(Duration::from_secs(60), tick.heard())
            .await
            .expect("missed notices may have named its role");
    }
}
