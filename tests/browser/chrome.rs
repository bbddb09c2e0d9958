//! One headless Chromium per test, driven over the DevTools protocol (`chromiumoxide`), behind
//! a blocking face so browser tests read like the other integration tests.
//!
//! Invariants:
//! - The browser is Debian's `chromium` (or `LOOKOUT_CHROMIUM`); without one the test fails with
//!   a message naming the package, never skips.
//! - Each browser has a fresh profile in a temp dir, a 1280x800 viewport and the light scheme;
//!   it runs sandboxed unless the tests run as root (Chromium refuses root with a sandbox).
//! - Every console error, uncaught exception and security report (CSP) the page produces is
//!   collected from the moment the page opens; `Page` fails the test on any.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::browser::BrowserConfig;
use chromiumoxide::cdp::browser_protocol::emulation::MediaFeature;
use chromiumoxide::cdp::browser_protocol::log::{EventEntryAdded, LogEntryLevel, LogEntrySource};
use chromiumoxide::cdp::js_protocol::runtime::{
    ConsoleApiCalledType, EvaluateParams, EventConsoleApiCalled, EventExceptionThrown,
};
use chromiumoxide::handler::viewport::Viewport;
use futures_util::StreamExt;
use serde_json::Value;

const INSTALL_HINT: &str = "install Debian's chromium: apt-get install chromium";
pub const VIEWPORT_WIDTH: u32 = 1280;
pub const VIEWPORT_HEIGHT: u32 = 800;

/// The Chromium to run: `LOOKOUT_CHROMIUM` when set, else `/usr/bin/chromium` or `chromium` on `PATH`.
pub fn find_chromium(
    configured: Option<OsString>,
    path: Option<OsString>,
) -> Result<PathBuf, String> {
    if let Some(configured) = configured {
        let configured = PathBuf::from(configured);
        return match configured.is_file() {
            true => Ok(configured),
            false => Err(format!(
                "LOOKOUT_CHROMIUM is {}, which is not a file; {INSTALL_HINT}",
                configured.display()
            )),
        };
    }
    let path = path.unwrap_or_default();
    let on_path = std::env::split_paths(&path).map(|dir| dir.join("chromium"));
    std::iter::once(PathBuf::from("/usr/bin/chromium"))
        .chain(on_path)
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| format!("the browser tests need Chromium and found none; {INSTALL_HINT}"))
}

fn running_as_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A running Chromium with one page, its event pumps on a runtime of its own.
pub struct Browser {
    runtime: tokio::runtime::Runtime,
    browser: Option<chromiumoxide::Browser>,
    page: chromiumoxide::Page,
    /// Console errors, uncaught exceptions and security reports, in arrival order.
    problems: Arc<Mutex<Vec<String>>>,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub fn launch() -> Browser {
        let executable = find_chromium(
            std::env::var_os("LOOKOUT_CHROMIUM"),
            std::env::var_os("PATH"),
        )
        .unwrap_or_else(|message| panic!("{message}"));
        let profile = tempfile::tempdir().expect("a temp dir for the browser profile");
        let config = browser_config(&executable, profile.path());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the browser");
        let problems = Arc::new(Mutex::new(Vec::new()));
        let (browser, page) = runtime
            .block_on(open(config, problems.clone()))
            .unwrap_or_else(|err| {
                panic!(
                    "could not start {} ({err}); {INSTALL_HINT}",
                    executable.display()
                )
            });
        Browser {
            runtime,
            browser: Some(browser),
            page,
            problems,
            _profile: profile,
        }
    }

    /// Runs `future` (a DevTools exchange) to completion on the browser's runtime.
    pub fn block_on<T>(&self, future: impl Future<Output = T>) -> T {
        self.runtime.block_on(future)
    }

    /// The DevTools page, for exchanges `Page` does not wrap.
    pub fn cdp(&self) -> &chromiumoxide::Page {
        &self.page
    }

    /// Evaluates `expression` in the page (promises awaited) and returns its JSON value.
    pub fn evaluate(&self, expression: &str) -> Result<Value, String> {
        let params = EvaluateParams::builder()
            .expression(expression)
            .await_promise(true)
            .return_by_value(true)
            .build()
            .map_err(|err| err.to_string())?;
        let evaluated = self.block_on(self.page.evaluate_expression(params));
        match evaluated {
            Ok(result) => Ok(result.value().cloned().unwrap_or(Value::Null)),
            Err(err) => Err(err.to_string()),
        }
    }

    /// Takes the problems collected so far (each is reported once).
    pub fn take_problems(&self) -> Vec<String> {
        std::mem::take(&mut *self.problems.lock().unwrap())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let Some(mut browser) = self.browser.take() else {
            return;
        };
        self.runtime.block_on(async {
            let closed = tokio::time::timeout(Duration::from_secs(5), browser.close()).await;
            if !matches!(closed, Ok(Ok(_))) {
                browser.kill().await;
            }
            let _ = tokio::time::timeout(Duration::from_secs(5), browser.wait()).await;
        });
    }
}

fn browser_config(executable: &Path, profile: &Path) -> BrowserConfig {
    let viewport = Viewport {
        width: VIEWPORT_WIDTH,
        height: VIEWPORT_HEIGHT,
        device_scale_factor: Some(1.0),
        emulating_mobile: false,
        is_landscape: true,
        has_touch: false,
    };
    let mut builder = BrowserConfig::builder()
        .chrome_executable(executable)
        .new_headless_mode()
        .user_data_dir(profile)
        .window_size(VIEWPORT_WIDTH, VIEWPORT_HEIGHT)
        .viewport(viewport)
        .launch_timeout(Duration::from_secs(30))
        .args([
            "disable-gpu",
            "disable-quic",
            "no-first-run",
            "disable-background-networking",
            "disable-component-update",
            "disable-sync",
        ]);
    if running_as_root() {
        builder = builder.no_sandbox();
    }
    builder.build().expect("a browser configuration")
}

/// Starts the browser, its message pump and one blank page that already reports its problems.
async fn open(
    config: BrowserConfig,
    problems: Arc<Mutex<Vec<String>>>,
) -> chromiumoxide::Result<(chromiumoxide::Browser, chromiumoxide::Page)> {
    let (browser, mut handler) = chromiumoxide::Browser::launch(config).await?;
    tokio::spawn(async move { while handler.next().await.is_some() {} });
    let page = browser.new_page("about:blank").await?;
    collect_problems(&page, problems).await?;
    page.enable_log().await?;
    page.emulate_media_features(vec![MediaFeature {
        name: "prefers-color-scheme".into(),
        value: "light".into(),
    }])
    .await?;
    Ok((browser, page))
}

/// Pumps the page's exceptions, console errors and error log entries into `problems`.
async fn collect_problems(
    page: &chromiumoxide::Page,
    problems: Arc<Mutex<Vec<String>>>,
) -> chromiumoxide::Result<()> {
    let mut exceptions = page.event_listener::<EventExceptionThrown>().await?;
    let mut console = page.event_listener::<EventConsoleApiCalled>().await?;
    let mut log = page.event_listener::<EventEntryAdded>().await?;
    tokio::spawn(async move {
        loop {
            let problem = tokio::select! {
                Some(event) = exceptions.next() => Some(describe_exception(&event)),
                Some(event) = console.next() => describe_console(&event),
                Some(event) = log.next() => describe_log(&event),
                else => break,
            };
            if let Some(problem) = problem {
                problems.lock().unwrap().push(problem);
            }
        }
    });
    Ok(())
}

fn describe_exception(event: &EventExceptionThrown) -> String {
    let details = &event.exception_details;
    let description = details
        .exception
        .as_ref()
        .and_then(|e| e.description.clone());
    let at = details.url.clone().unwrap_or_default();
    let line = details.line_number;
    format!(
        "uncaught exception: {} at {at}:{line}",
        description.unwrap_or(details.text.clone())
    )
}

fn describe_console(event: &EventConsoleApiCalled) -> Option<String> {
    if event.r#type != ConsoleApiCalledType::Error {
        return None;
    }
    let words: Vec<String> = event
        .args
        .iter()
        .map(|arg| match (&arg.value, &arg.description) {
            (Some(Value::String(text)), _) => text.clone(),
            (Some(value), _) => value.to_string(),
            (None, Some(description)) => description.clone(),
            (None, None) => format!("{:?}", arg.r#type),
        })
        .collect();
    Some(format!("console.error: {}", words.join(" ")))
}

/// Error log entries, but not the browser's note on each 4xx answer: the app handles those
/// (a 401 before sign-in, a 404 problem shown in words) and tests assert what it shows.
fn describe_log(event: &EventEntryAdded) -> Option<String> {
    let entry = &event.entry;
    if entry.level != LogEntryLevel::Error {
        return None;
    }
    let client_error =
        entry.source == LogEntrySource::Network && entry.text.contains("status of 4");
    if client_error {
        return None;
    }
    let url = entry.url.clone().unwrap_or_default();
    Some(format!("{:?} error: {} {url}", entry.source, entry.text))
}

#[test]
fn a_missing_browser_names_the_package_to_install() {
    let configured = Some(OsString::from("/nonexistent/chromium"));
    let message = find_chromium(configured, None).unwrap_err();
    assert!(message.contains("apt-get install chromium"), "{message}");

    let found = find_chromium(None, Some(OsString::from("/nonexistent")));
    if !Path::new("/usr/bin/chromium").is_file() {
        assert!(found.unwrap_err().contains("apt-get install chromium"));
    }
}
