//! `Page`: what a browser test does with the app, in a person's terms. Elements are found by
//! role and accessible name, by label or by visible text (`queries.js`), never by CSS class.
//!
//! Invariants:
//! - Every look-up waits (polling, `DEADLINE` by default); a timeout panics with what was looked
//!   for, why it was not found, the URL and the page's visible text, and saves a screenshot
//!   under the target dir.
//! - Every action first fails the test on any console error, uncaught exception or CSP report
//!   seen so far, and dropping the page checks once more.

// Not every test uses every helper of the API.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, InsertTextParams,
};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, RemoveScriptToEvaluateOnNewDocumentParams,
};
use chromiumoxide::layout::Point;
use chromiumoxide::page::ScreenshotParams;
use serde::Serialize;
use serde_json::Value;

use crate::chrome::Browser;
use crate::harness::TestServer;

/// How long a look-up waits unless a test says otherwise.
pub const DEADLINE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(50);
const QUERIES: &str = include_str!("queries.js");
const AXE: &str = include_str!("vendor/axe-core@4.14.1/axe.min.js");

/// What to look for, as a person would describe it.
#[derive(Serialize, Default, Clone)]
pub struct Query {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    level: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

impl Query {
    /// An element of `role` (explicit or implicit) with exactly this accessible name.
    pub fn role(role: &str, name: &str) -> Query {
        Query {
            role: Some(role.into()),
            name: Some(name.into()),
            ..Query::default()
        }
    }

    /// Any element of `role`, whatever its name.
    pub fn any_role(role: &str) -> Query {
        Query {
            role: Some(role.into()),
            ..Query::default()
        }
    }

    /// A heading of `level` (1 for `<h1>`) with exactly this text.
    pub fn heading(level: u8, name: &str) -> Query {
        Query {
            level: Some(level),
            ..Query::role("heading", name)
        }
    }

    /// The form control labelled `label`.
    pub fn label(label: &str) -> Query {
        Query {
            label: Some(label.into()),
            ..Query::default()
        }
    }

    /// The innermost element whose visible text contains `text`.
    pub fn text(text: &str) -> Query {
        Query {
            text: Some(text.into()),
            ..Query::default()
        }
    }

    fn describe(&self) -> String {
        match (&self.role, &self.name, &self.label, &self.text) {
            (Some(role), Some(name), _, _) => format!("the {role} named {name:?}"),
            (Some(role), None, _, _) => format!("a {role}"),
            (_, _, Some(label), _) => format!("the field labelled {label:?}"),
            (_, _, _, Some(text)) => format!("the text {text:?}"),
            _ => "nothing".into(),
        }
    }
}

/// One browser showing one server's UI.
pub struct Page {
    browser: Browser,
    base: String,
    /// How long look-ups wait (`DEADLINE` unless a test sets another).
    deadline: Duration,
}

impl Page {
    /// A fresh browser (own profile, no cookies) for `server`, on a blank page.
    pub fn open(server: &TestServer) -> Page {
        let base = server.url("");
        Page {
            browser: Browser::launch(),
            base,
            deadline: DEADLINE,
        }
    }

    /// Makes look-ups wait `deadline` instead of `DEADLINE`.
    pub fn set_deadline(&mut self, deadline: Duration) {
        self.deadline = deadline;
    }

    /// Opens `path` (or a full URL) as a person typing it in the address bar, and waits for its load.
    pub fn goto(&self, path: &str) {
        self.fail_on_page_problems();
        let url = if path.starts_with("http") {
            path.to_string()
        } else {
            format!("{}{path}", self.base)
        };
        let loaded = self.browser.block_on(self.browser.cdp().goto(url.as_str()));
        if let Err(err) = loaded {
            panic!("could not open {url}: {err}");
        }
    }

    /// The address bar.
    pub fn url(&self) -> String {
        let url = self.browser.block_on(self.browser.cdp().url());
        url.ok().flatten().unwrap_or_default()
    }

    /// The path and query of the address bar (`/login?next=%2F`).
    pub fn path(&self) -> String {
        self.url()
            .strip_prefix(&self.base)
            .unwrap_or_default()
            .to_string()
    }

    /// Waits until the address's path and query (`/login?next=%2F`) satisfy `predicate`, and
    /// returns them.
    pub fn wait_url(&self, predicate: impl Fn(&str) -> bool) -> String {
        self.poll("the address the test expects", || {
            let path = self.path();
            if predicate(&path) {
                Ok(path)
            } else {
                Err(format!("it is {path}"))
            }
        })
    }

    /// Evaluates `expression` in the page (a promise is awaited) and returns its JSON value.
    pub fn eval(&self, expression: &str) -> Value {
        self.fail_on_page_problems();
        self.browser
            .evaluate(expression)
            .unwrap_or_else(|err| panic!("evaluating {expression}: {err}"))
    }

    /// Waits for `query`'s one element and returns the text a person reads in it.
    pub fn text_of(&self, query: &Query) -> String {
        self.poll(&query.describe(), || {
            let answer = self.run_query("textOf", query)?;
            Ok(answer["text"].as_str().unwrap_or_default().to_string())
        })
    }

    pub fn text_of_role(&self, role: &str, name: &str) -> String {
        self.text_of(&Query::role(role, name))
    }

    /// Waits until `query` describes exactly one shown element.
    pub fn wait(&self, query: &Query) {
        self.text_of(query);
    }

    pub fn wait_role(&self, role: &str, name: &str) {
        self.wait(&Query::role(role, name));
    }

    pub fn wait_text(&self, text: &str) {
        self.wait(&Query::text(text));
    }

    /// Clicks `query`'s element in its middle, once it is shown, enabled and not covered.
    pub fn click(&self, query: &Query) {
        let point_now = || -> Result<(f64, f64), String> {
            let answer = self.run_query("clickPoint", query)?;
            let x = answer["x"].as_f64().ok_or("no point")?;
            Ok((x, answer["y"].as_f64().ok_or("no point")?))
        };
        // The same point twice, a moment apart: a panel still loading above the element would
        // move it between aiming and clicking, and the click would land on something else.
        let point = self.poll(
            &format!("{} to click (and stay put)", query.describe()),
            || {
                let first = point_now()?;
                std::thread::sleep(std::time::Duration::from_millis(40));
                let (x, y) = point_now()?;
                if first != (x, y) {
                    return Err("it is still moving".to_string());
                }
                Ok(Point { x, y })
            },
        );
        let clicked = self.browser.block_on(self.browser.cdp().click(point));
        clicked.unwrap_or_else(|err| panic!("clicking {}: {err}", query.describe()));
    }

    pub fn click_role(&self, role: &str, name: &str) {
        self.click(&Query::role(role, name));
    }

    /// Puts `value` in the field labelled `label` as typed text, replacing what it held.
    pub fn fill_label(&self, label: &str, value: &str) {
        let query = Query::label(label);
        self.poll(&format!("{} to fill", query.describe()), || {
            self.run_query("focusField", &query).map(drop)
        });
        if value.is_empty() {
            self.press("Delete");
            return;
        }
        let typed = self
            .browser
            .block_on(self.browser.cdp().execute(InsertTextParams::new(value)));
        typed.unwrap_or_else(|err| panic!("typing into {}: {err}", query.describe()));
    }

    /// Presses one key (`Enter`, `Escape`, `Tab`, `a`, `/`) where the focus is.
    pub fn press(&self, key: &str) {
        let definition = chromiumoxide::keys::get_key_definition(key)
            .unwrap_or_else(|| panic!("no key named {key:?}"));
        let text = definition
            .text
            .or((definition.key.len() == 1).then_some(definition.key));
        let mut down = DispatchKeyEventParams::builder()
            .key(definition.key)
            .code(definition.code)
            .windows_virtual_key_code(definition.key_code)
            .native_virtual_key_code(definition.key_code);
        let up = down.clone().r#type(DispatchKeyEventType::KeyUp).build();
        down = match text {
            Some(text) => down.text(text).r#type(DispatchKeyEventType::KeyDown),
            None => down.r#type(DispatchKeyEventType::RawKeyDown),
        };
        for event in [down.build(), up] {
            let event = event.unwrap_or_else(|err| panic!("key {key:?}: {err}"));
            let sent = self.browser.block_on(self.browser.cdp().execute(event));
            sent.unwrap_or_else(|err| panic!("pressing {key:?}: {err}"));
        }
    }

    /// Presses keys in turn, separated by spaces: `type_keys("g e")` is the `g e` shortcut.
    pub fn type_keys(&self, keys: &str) {
        keys.split_whitespace().for_each(|key| self.press(key));
    }

    /// Saves the viewport as `docs/screenshots/<name>.png`, once the page's fonts are ready.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        self.fail_on_page_problems();
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots");
        let path = dir.join(format!("{name}.png"));
        let _ = self
            .browser
            .evaluate("document.fonts.ready.then(() => true)");
        // A blinking caret would make each run's picture differ: hidden while the picture is taken.
        let root_style = "document.documentElement.style";
        let _ = self
            .browser
            .evaluate(&format!("{root_style}.caretColor = 'transparent'"));
        let saved = self.save_png(&path);
        let _ = self
            .browser
            .evaluate(&format!("{root_style}.removeProperty('caret-color')"));
        saved.unwrap_or_else(|err| panic!("screenshot {}: {err}", path.display()));
        path
    }

    /// Runs the vendored axe-core on the page and fails on any serious or critical violation.
    pub fn check_accessibility(&self) {
        self.fail_on_page_problems();
        // The library is a script of statements: evaluated as it is, once per document.
        if self.eval("typeof window.axe") != "object" {
            let loaded = self.browser.evaluate(AXE);
            loaded.unwrap_or_else(|err| panic!("loading axe-core: {err}"));
        }
        let report = self.eval(
            "axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations
               .filter((v) => v.impact === 'serious' || v.impact === 'critical')
               .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                              nodes: v.nodes.map((node) => node.target.join(' ')) })))",
        );
        let violations = report.as_array().cloned().unwrap_or_default();
        if violations.is_empty() {
            return;
        }
        let listed: Vec<String> = violations
            .iter()
            .map(|v| {
                format!(
                    "- {} ({}): {}\n    {}",
                    v["id"], v["impact"], v["help"], v["nodes"]
                )
            })
            .collect();
        panic!(
            "accessibility violations on {}:\n{}",
            self.url(),
            listed.join("\n")
        );
    }

    /// Opens `path` and measures, in milliseconds from the navigation's start, until `query`'s
    /// element is there and the main thread is idle: a figure to print, never to assert
    /// (loopback timing varies with load). A script set up before the navigation watches each
    /// animation frame, so the figure does not depend on when `goto` returns.
    pub fn interactive_ms(&self, path: &str, query: &Query) -> f64 {
        let spec = serde_json::to_string(query).expect("query as JSON");
        let watcher = format!(
            "window.__lookoutInteractive = new Promise((resolve) => {{
               const queries = {QUERIES};
               const tick = () => document.body && queries.findAll({spec}).length
                 ? requestIdleCallback(() => resolve(performance.now()), {{ timeout: 1000 }})
                 : requestAnimationFrame(tick);
               tick();
             }});"
        );
        let cdp = self.browser.cdp();
        let installed = self.browser.block_on(cdp.evaluate_on_new_document(watcher));
        let identifier = installed.unwrap_or_else(|err| panic!("installing the watcher: {err}"));
        self.goto(path);
        let measured = self.browser.evaluate(&format!(
            "Promise.race([window.__lookoutInteractive,
               new Promise((_, reject) => setTimeout(() => reject(new Error('not there')), {}))])",
            self.deadline.as_millis()
        ));
        let removed = RemoveScriptToEvaluateOnNewDocumentParams::new(identifier);
        let _ = self.browser.block_on(cdp.execute(removed));
        match measured {
            Ok(value) => value.as_f64().expect("a number of milliseconds"),
            Err(reason) => self.timed_out(&query.describe(), &reason),
        }
    }

    /// Every script URL the page loaded (resource timing, module preloads included), once no
    /// new one has come for `SETTLED` (a page loads some modules only when its data arrives).
    pub fn loaded_scripts(&self) -> Vec<String> {
        const SETTLED: Duration = Duration::from_millis(500);
        let list = || -> Vec<String> {
            let urls = self.eval(
                "[...new Set(performance.getEntriesByType('resource').map((entry) => entry.name)
                   .filter((name) => /\\.m?js($|\\?)/.test(new URL(name).pathname)))]",
            );
            serde_json::from_value(urls).expect("a list of URLs")
        };
        let mut seen = list();
        let mut since = Instant::now();
        self.poll("the page to stop loading scripts", || {
            let now = list();
            if now != seen {
                (seen, since) = (now, Instant::now());
            }
            match since.elapsed() >= SETTLED {
                true => Ok(seen.clone()),
                false => Err(format!("{} scripts so far", seen.len())),
            }
        })
    }

    /// Takes the console errors, exceptions and CSP reports seen so far, so a test that
    /// provokes one on purpose can assert on it.
    pub fn take_page_problems(&self) -> Vec<String> {
        // A round trip first: events sent before its answer have then been collected.
        let _ = self.browser.evaluate("0");
        std::thread::sleep(POLL);
        self.browser.take_problems()
    }

    fn fail_on_page_problems(&self) {
        let problems = self.browser.take_problems();
        if !problems.is_empty() {
            panic!(
                "the page reported problems on {}:\n{}",
                self.url(),
                problems.join("\n")
            );
        }
    }

    /// Calls `queries.js`'s `function` with `query`; `Err` says why it did not succeed yet.
    fn run_query(&self, function: &str, query: &Query) -> Result<Value, String> {
        let spec = serde_json::to_string(query).expect("query as JSON");
        let answer = self
            .browser
            .evaluate(&format!("{QUERIES}.{function}({spec})"))?;
        match answer["problem"].as_str() {
            Some(problem) => Err(problem.to_string()),
            None => Ok(answer),
        }
    }

    /// Retries `attempt` until it succeeds or `DEADLINE` passes; its last `Err` says why not.
    fn poll<T>(&self, what: &str, mut attempt: impl FnMut() -> Result<T, String>) -> T {
        let until = Instant::now() + self.deadline;
        loop {
            self.fail_on_page_problems();
            let reason = match attempt() {
                Ok(value) => return value,
                Err(reason) => reason,
            };
            if Instant::now() >= until {
                self.timed_out(what, &reason);
            }
            std::thread::sleep(POLL);
        }
    }

    fn timed_out(&self, what: &str, reason: &str) -> ! {
        let test = std::thread::current()
            .name()
            .unwrap_or("browser")
            .replace("::", "-");
        let shot =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("browser-failures/{test}.png"));
        let saved = match self.save_png(&shot) {
            Ok(()) => format!("screenshot: {}", shot.display()),
            Err(err) => format!("no screenshot: {err}"),
        };
        let text = self
            .browser
            .evaluate("document.body ? document.body.innerText : ''");
        let text = text
            .ok()
            .and_then(|t| t.as_str().map(str::to_string))
            .unwrap_or_default();
        let visible: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let visible: String = visible.chars().take(1500).collect();
        panic!(
            "timed out after {:?} waiting for {what} ({reason})\nat {}\nvisible text: {visible}\n{saved}",
            self.deadline,
            self.url()
        );
    }

    fn save_png(&self, path: &std::path::Path) -> Result<(), String> {
        std::fs::create_dir_all(path.parent().expect("a parent dir")).map_err(|e| e.to_string())?;
        let params = ScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Png)
            .build();
        let saved = self
            .browser
            .block_on(self.browser.cdp().save_screenshot(params, path));
        saved.map(drop).map_err(|err| err.to_string())
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let problems = self.take_page_problems();
        if !problems.is_empty() {
            panic!("the page reported problems:\n{}", problems.join("\n"));
        }
    }
}
