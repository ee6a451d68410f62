//! The reconnect backoff of the runtime's direct connections (the wake listener, the anchor
//! watcher): 1 s after the first failure, doubling to 30 s, back to 1 s once connected.

use std::time::Duration;

const FIRST: Duration = Duration::from_secs(1);
const MAX: Duration = Duration::from_secs(30);

/// The wait before the next connection attempt.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff { next: FIRST }
    }
}

impl Backoff {
    /// The connection is up: the next failure waits the first step again.
    pub(crate) fn reset(&mut self) {
        self.next = FIRST;
    }

    /// Waits the current step, and doubles the next (up to the maximum).
    pub(crate) async fn wait(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(MAX);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::Backoff;

    #[tokio::test(start_paused = true)]
    async fn doubles_to_thirty_seconds_and_starts_over_once_connected() {
        let mut backoff = Backoff::default();
        let mut waited = Vec::new();
        for _ in 0..7 {
            let start = Instant::now();
            backoff.wait().await;
            waited.push(start.elapsed().as_secs());
        }
        assert_eq!(waited, [1, 2, 4, 8, 16, 30, 30]);
        backoff.reset();
        let start = Instant::now();
        backoff.wait().await;
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }
}
