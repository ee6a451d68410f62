//! What the dashboard's browser tests stand on: headless Chromium behind chromedriver, driven over
//! WebDriver ([`Browser`]), and replica processes of a real runtime to kill ([`Replica`]).
//!
//! # Chromium
//!
//! The tests need Debian's `chromium` and `chromium-driver` (`apt-get install -y chromium
//! chromium-driver`; CI installs them). Without them a test prints that it skipped and why, and
//! passes, unless `LEADER_REQUIRE_CHROMIUM=1` is set (CI sets it): then a missing browser fails
//! the test, so CI cannot pass without having driven a browser. `LEADER_CHROMIUM` and
//! `LEADER_CHROMEDRIVER` name other binaries.
//!
//! Chromium runs with `--headless --no-sandbox` (it runs as root here), a fresh profile in a
//! temporary folder, and no background networking, component updates or sync: the machines these
//! tests run on have no network beyond loopback.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use tokio::process::{Child, Command};

/// Set to `1` to make a missing Chromium or chromedriver fail the tests (CI).
pub const REQUIRE_VAR: &str = "LEADER_REQUIRE_CHROMIUM";

/// How long a test waits for something the page must come to show, however loaded the machine.
pub const EVENTUALLY: Duration = Duration::from_secs(120);

/// A boxed error, for the harness's results.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

fn find(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .chain([
                PathBuf::from("/usr/bin"),
                PathBuf::from("/usr/lib/chromium"),
            ])
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// Chromium and chromedriver, or `None` after saying why the test skips; panics instead when
/// [`REQUIRE_VAR`] is `1`.
pub fn chromium() -> Option<(PathBuf, PathBuf)> {
    let browser = find(
        "LEADER_CHROMIUM",
        &["chromium", "chromium-browser", "google-chrome"],
    );
    let driver = find("LEADER_CHROMEDRIVER", &["chromedriver"]);
    match (browser, driver) {
        (Some(browser), Some(driver)) => Some((browser, driver)),
        (browser, _) => {
            let missing = if browser.is_none() {
                "chromium"
            } else {
                "chromedriver"
            };
            let message = format!(
                "{missing} is not installed (apt-get install -y chromium chromium-driver, or set \
                 LEADER_CHROMIUM / LEADER_CHROMEDRIVER)"
            );
            assert!(
                std::env::var(REQUIRE_VAR).as_deref() != Ok("1"),
                "{message}; {REQUIRE_VAR}=1 makes the browser tests mandatory"
            );
            eprintln!("SKIPPED: {message}; set {REQUIRE_VAR}=1 to make this a failure");
            None
        }
    }
}

/// Headless Chromium behind its own chromedriver; both end with it.
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free port and a Chromium session through it, or `None` when
    /// Chromium is missing and not required (see [`chromium`]).
    ///
    /// # Errors
    ///
    /// chromedriver did not start, or no session within [`EVENTUALLY`].
    pub async fn start() -> Result<Option<Browser>, Error> {
        let Some((chromium, chromedriver)) = chromium() else {
            return Ok(None);
        };
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0")?;
            probe.local_addr()?.port()
        };
        // A process group of its own, which Chromium joins, so that dropping the browser ends
        // every process of it, also when a test fails before `close`.
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", chromedriver.display()))?;
        let profile = tempfile::tempdir()?;
        let client = connect(port, &chromium, profile.path()).await?;
        Ok(Some(Browser {
            client,
            driver,
            _profile: profile,
        }))
    }

    /// The text of the first element `css` selects, once there is one. The live part of a page
    /// is re-rendered while it is read, so an element that went stale is found again.
    ///
    /// # Errors
    ///
    /// None appeared within [`EVENTUALLY`].
    pub async fn text(&self, css: &str) -> Result<String, Error> {
        self.until_text(css, "any text", |_| true).await
    }

    /// Clicks the first element `css` selects, once there is one (found again if it went stale
    /// before the click).
    ///
    /// # Errors
    ///
    /// None could be clicked within [`EVENTUALLY`].
    pub async fn click(&self, css: &str) -> Result<(), Error> {
        let deadline = tokio::time::Instant::now() + EVENTUALLY;
        loop {
            let error = match self.client.find(Locator::Css(css)).await {
                Ok(element) => match element.click().await {
                    Ok(()) => return Ok(()),
                    Err(e) => e.to_string(),
                },
                Err(e) => e.to_string(),
            };
            if tokio::time::Instant::now() > deadline {
                return Err(format!("cannot click `{css}` within {EVENTUALLY:?}: {error}").into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The first element `css` selects, once there is one: for a page whose live part does not
    /// re-render (a form).
    ///
    /// # Errors
    ///
    /// None appeared within [`EVENTUALLY`].
    pub async fn wait_for(&self, css: &str) -> Result<fantoccini::elements::Element, Error> {
        Ok(self
            .client
            .wait()
            .at_most(EVENTUALLY)
            .for_element(Locator::Css(css))
            .await
            .map_err(|e| format!("no `{css}` within {EVENTUALLY:?}: {e}"))?)
    }

    /// Waits until `check` holds for the text of the first element `css` selects (read again
    /// every 100 ms, with the page left as it is: no reload), and returns that text.
    ///
    /// # Errors
    ///
    /// It did not hold within [`EVENTUALLY`]; the error says what the text was.
    pub async fn until_text(
        &self,
        css: &str,
        what: &str,
        check: impl Fn(&str) -> bool,
    ) -> Result<String, Error> {
        let deadline = tokio::time::Instant::now() + EVENTUALLY;
        let mut last = String::new();
        loop {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && let Ok(text) = element.text().await
            {
                if check(&text) {
                    return Ok(text);
                }
                last = text;
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!(
                    "`{css}` never came to show {what} within {EVENTUALLY:?}; last: {last:?}"
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Ends the session and chromedriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill().await;
    }
}

impl Drop for Browser {
    /// Kills chromedriver's process group: Chromium and its helpers too, which killing
    /// chromedriver alone would leave running.
    fn drop(&mut self) {
        if let Some(pid) = self.driver.id() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &format!("-{pid}")])
                .stderr(Stdio::null())
                .status();
        }
    }
}

async fn connect(port: u16, chromium: &Path, profile: &Path) -> Result<Client, Error> {
    let capabilities = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                "--disable-extensions", "--window-size=1440,900",
                format!("--user-data-dir={}", profile.display()),
            ],
        },
    });
    let serde_json::Value::Object(capabilities) = capabilities else {
        unreachable!("an object literal");
    };
    let url = format!("http://127.0.0.1:{port}");
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(capabilities.clone())
            .connect(&url)
            .await
        {
            Ok(client) => return Ok(client),
            Err(e) if tokio::time::Instant::now() > deadline => {
                return Err(format!("no Chromium session through chromedriver: {e}").into());
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// A replica process (`browser-replica`), killed with SIGKILL when dropped.
pub struct Replica {
    /// Its holder id.
    pub holder: String,
    child: Child,
}

impl Replica {
    /// Starts `browser-replica` (the binary at `binary`) on `url` as `holder`.
    ///
    /// # Errors
    ///
    /// It could not be started.
    pub fn start(binary: &str, url: &str, holder: &str) -> Result<Replica, Error> {
        let child = Command::new(binary)
            .args([url, holder])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        Ok(Replica {
            holder: holder.to_owned(),
            child,
        })
    }

    /// Kills it with SIGKILL, without a release, and waits for it to be gone.
    ///
    /// # Errors
    ///
    /// The kill failed.
    pub async fn kill(&mut self) -> Result<(), Error> {
        self.child.kill().await?;
        Ok(())
    }
}
