//! What the server is started with: whether writes are allowed (and the token they need), how
//! often live pages refresh, when a due role counts as overdue.

use std::fmt;
use std::time::Duration;

/// The dashboard's settings.
///
/// ```
/// use leader_dashboard::Options;
/// let options = Options::default();
/// assert!(options.writes.is_none(), "read-only unless given a token");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// The token operators sign in with to pause, unpause and clear cooldowns; `None` (the
    /// default) serves the pages read-only and refuses every write.
    pub writes: Option<WriteToken>,
    /// How often the live pages re-render (the event stream's period).
    pub refresh: Duration,
    /// How long past its next due time an unheld, unpaused role may go before the page calls it
    /// overdue: a follower polls at least every `max_poll` (5 s by default), so less than that is
    /// only a poll not yet made.
    pub overdue_after: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            writes: None,
            refresh: Duration::from_secs(1),
            overdue_after: Duration::from_secs(30),
        }
    }
}

impl Options {
    /// These options, with writes allowed to operators who sign in with `token`.
    #[must_use]
    pub fn with_writes(mut self, token: WriteToken) -> Options {
        self.writes = Some(token);
        self
    }

    /// These options, refreshing live pages every `refresh` (at least 100 ms).
    #[must_use]
    pub fn with_refresh(mut self, refresh: Duration) -> Options {
        self.refresh = refresh.max(Duration::from_millis(100));
        self
    }

    /// These options, calling a due role overdue once it is `after` past due.
    #[must_use]
    pub fn with_overdue_after(mut self, after: Duration) -> Options {
        self.overdue_after = after;
        self
    }
}

/// The secret operators sign in with to write. Its `Debug` never shows it.
///
/// ```
/// use leader_dashboard::WriteToken;
/// assert!(WriteToken::new("short").is_err());
/// let token = WriteToken::new("correct horse battery staple").unwrap();
/// assert_eq!(format!("{token:?}"), "WriteToken(..)");
/// ```
#[derive(Clone)]
pub struct WriteToken(String);

/// The shortest token accepted, in bytes.
const MIN_TOKEN: usize = 16;

impl WriteToken {
    /// `secret` as the write token.
    ///
    /// # Errors
    ///
    /// [`TokenError::TooShort`] for fewer than 16 bytes.
    pub fn new(secret: impl Into<String>) -> Result<WriteToken, TokenError> {
        let secret = secret.into();
        if secret.trim().len() < MIN_TOKEN {
            return Err(TokenError::TooShort { min: MIN_TOKEN });
        }
        Ok(WriteToken(secret))
    }

    /// The token in the environment variable `var`.
    ///
    /// # Errors
    ///
    /// [`TokenError::Missing`] when it is unset or not Unicode, [`TokenError::TooShort`] as
    /// [`WriteToken::new`].
    pub fn from_env(var: &str) -> Result<WriteToken, TokenError> {
        let secret = std::env::var(var).map_err(|_| TokenError::Missing {
            var: var.to_owned(),
        })?;
        WriteToken::new(secret)
    }

    pub(crate) fn secret(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl fmt::Debug for WriteToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WriteToken(..)")
    }
}

/// Why a write token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The environment variable is not set.
    #[error(
        "writes need a token in the environment: set {var} to a secret of at least 16 \
         characters (never on the command line, where `ps` shows it), or drop --allow-writes"
    )]
    Missing {
        /// The variable read.
        var: String,
    },
    /// The token is too short to resist guessing.
    #[error("the write token is shorter than {min} characters: use a longer secret")]
    TooShort {
        /// The shortest accepted.
        min: usize,
    },
}
