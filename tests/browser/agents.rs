//! The agents pages and the terminal in a real browser, against a real `lookout agent`: an
//! enrolment token made in the UI (its secret shown once) enrols the agent, which the list
//! shows online and whose page charts its metrics; an admin (not the only owner) runs a command
//! in the terminal and reads its output from xterm's rows, then the owner demotes that admin
//! through the API and the terminal says that access was revoked; the token revoked in the UI
//! disconnects the agent. A viewer sees no terminal, and Escape then Tab leaves the terminal.

use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::Method;
use serde_json::{Value, json};

use crate::errors_support::{ApiSession, count, wait_until};
use crate::harness::{BIN, TestServer};
use crate::page::{Page, Query};
use crate::support::{OWNER, PASSWORD, owner_page, server_with_owner, sign_in};

const ADMIN: &str = "admin@example.com";
const VIEWER: &str = "viewer@example.com";
const TOKEN_NAME: &str = "web servers";

/// A `lookout agent` child process, killed when the test ends however it ends.
struct AgentGuard(Child);

impl AgentGuard {
    fn start(server: &TestServer, token: &str) -> AgentGuard {
        // `sh` reads no start-up files of this machine's account: the screen shows only the test.
        let child = Command::new(BIN)
            .args(["agent", "--server", &server.url(""), "--token", token])
            .args(["--shell", "/bin/sh"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn lookout agent");
        AgentGuard(child)
    }
}

impl Drop for AgentGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The one agent of the organisation once it is online, read through the API.
fn online_agent(api: &ApiSession) -> Value {
    let mut found = Value::Null;
    wait_until("the agent to be online", || {
        let agents = api.get("/api/v1/agents");
        found = agents["items"][0].clone();
        found["status"] == "online"
    });
    found
}

/// The text on the terminal's screen (xterm's rows as the DOM renderer draws them).
fn screen(page: &Page) -> String {
    let rows = page.eval("(document.querySelector('.xterm-rows') || {}).innerText || ''");
    rows.as_str().unwrap_or_default().to_string()
}

/// The user id of `email` among the organisation's members.
fn member_id(api: &ApiSession, email: &str) -> String {
    let members = api.get("/api/v1/orgs/me/members");
    let items = members["items"].as_array().expect("items");
    let member = items.iter().find(|member| member["email"] == email);
    member.expect("the member")["user_id"]
        .as_str()
        .expect("user_id")
        .to_string()
}

#[test]
fn an_agent_enrolled_in_the_ui_runs_a_terminal_until_its_admin_is_demoted() {
    let server = server_with_owner();
    server.add_user(ADMIN, "admin", PASSWORD);
    server.add_user(VIEWER, "viewer", PASSWORD);
    let api = ApiSession::sign_in(&server, OWNER);

    // The owner enrols a host from the empty Agents page: the token is shown once, with the
    // command to run on the host.
    let page = owner_page(&server);
    page.goto("/agents");
    page.wait(&Query::heading(1, "Agents"));
    page.wait_text("No agent is enrolled yet.");
    page.fill_label("Token name", TOKEN_NAME);
    page.click_role("button", "Create enrolment token");
    page.wait_text("This will not be shown again. Keep it somewhere safe now.");
    let token = page.eval("document.querySelector('.secret input').value");
    let token = token.as_str().expect("the token on screen").to_string();
    let command = format!("lookout agent --server {} --token {token}", server.url(""));
    page.wait_text(&command);
    page.check_accessibility();
    let _agent_process = AgentGuard::start(&server, &token);
    let agent = online_agent(&api);
    let agent_id = agent["id"].as_str().expect("id").to_string();

    // The list shows it online; the secret is gone from the page for good.
    page.goto("/agents");
    page.wait_role("link", TOKEN_NAME);
    let pill = page.eval("document.querySelector('main tbody .pill').textContent");
    assert_eq!(pill, json!("online"));
    assert_eq!(count(&page, &Query::label("Enrolment token")), 0);
    page.wait_role("button", &format!("Revoke {TOKEN_NAME}"));
    page.check_accessibility();
    page.screenshot("agents");

    // Its page: facts, the charts of its first heartbeat, and the way into a terminal.
    page.click_role("link", TOKEN_NAME);
    page.wait(&Query::heading(1, &format!("Agent: {TOKEN_NAME}")));
    // CPU needs two readings, so the first heartbeat has none: memory, disk and load are drawn.
    page.wait(&Query::heading(3, "Memory in use (%)"));
    wait_until("the charts' canvases", || {
        let charts = page.eval("document.querySelectorAll('figure.chart canvas').length");
        charts.as_u64().is_some_and(|n| n >= 3)
    });
    page.wait_role("link", "Open terminal");
    page.wait_text("No terminal was opened on this agent yet.");
    page.check_accessibility();
    page.screenshot("agent");
    // Reached by an in-app navigation, the terminal page loads itself again to get its own
    // style policy: xterm draws without a single CSP report (any would fail the next look-up).
    let terminal_path = format!("/agents/{agent_id}/terminal");
    page.eval(&format!(
        "history.pushState(null, '', '{terminal_path}'); dispatchEvent(new PopStateEvent('popstate'))"
    ));
    page.wait_text(&format!(
        "Connected to {}.",
        agent["hostname"].as_str().unwrap()
    ));
    assert_eq!(
        page.eval("performance.getEntriesByType('navigation')[0].name.endsWith('/terminal')"),
        json!(true)
    );
    page.goto(&format!("/agents/{agent_id}"));
    page.wait(&Query::heading(1, &format!("Agent: {TOKEN_NAME}")));

    // A viewer reads the agent but sees no terminal, no sessions and no tokens.
    let viewer = Page::open(&server);
    viewer.goto("/login");
    sign_in(&viewer, VIEWER, PASSWORD);
    viewer.goto(&format!("/agents/{agent_id}"));
    viewer.wait(&Query::heading(1, &format!("Agent: {TOKEN_NAME}")));
    viewer.wait(&Query::heading(2, "Host metrics, last 24 hours"));
    assert_eq!(count(&viewer, &Query::role("link", "Open terminal")), 0);
    assert_eq!(count(&viewer, &Query::heading(2, "Terminal sessions")), 0);
    viewer.goto("/agents");
    viewer.wait_role("link", TOKEN_NAME);
    assert_eq!(count(&viewer, &Query::heading(2, "Enrolment tokens")), 0);

    // An admin opens the terminal and runs a command; only its output has the sum.
    let admin = Page::open(&server);
    admin.goto("/login");
    sign_in(&admin, ADMIN, PASSWORD);
    admin.goto(&format!("/agents/{agent_id}"));
    admin.click_role("link", "Open terminal");
    admin.wait_url(|path| path == format!("/agents/{agent_id}/terminal"));
    admin.wait(&Query::heading(1, &format!("Terminal: {TOKEN_NAME}")));
    let hostname = agent["hostname"].as_str().expect("hostname");
    admin.wait_text(&format!("Connected to {hostname}."));
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
        % 100_000;
    let marker = format!("hello-{}-marker", seed + 1);
    admin.fill_label(
        "Terminal input",
        &format!("echo hello-$(({seed}+1))-marker"),
    );
    admin.press("Enter");
    wait_until("the command's output on the terminal", || {
        screen(&admin).contains(&marker)
    });
    // The shell's terminal has the size of the box on screen, not the 80×24 it starts at.
    admin.fill_label("Terminal input", "stty size");
    admin.press("Enter");
    let rows = admin.eval("document.querySelector('.xterm-rows').childElementCount");
    let mut size = (0, 0);
    wait_until("the terminal size from stty", || {
        let found = screen(&admin).lines().find_map(|line| {
            let (rows, cols) = line.trim().split_once(' ')?;
            Some((rows.parse::<u64>().ok()?, cols.parse::<u64>().ok()?))
        });
        size = found.unwrap_or_default();
        found.is_some()
    });
    assert_eq!(json!(size.0), rows, "stty rows");
    assert!(size.1 > 80, "stty columns {size:?}");
    admin.check_accessibility();
    admin.screenshot("terminal");
    // Tab belongs to the shell; Escape then Tab moves the focus out of the terminal.
    let in_terminal = "!!document.activeElement.closest('.xterm')";
    admin.press("Tab");
    assert_eq!(
        admin.eval(in_terminal),
        json!(true),
        "Tab left the terminal"
    );
    admin.press("Escape");
    admin.press("Tab");
    assert_eq!(
        admin.eval(in_terminal),
        json!(false),
        "Escape, Tab kept the focus"
    );

    // The owner demotes the admin: the terminal closes and says why, without a reconnect.
    let path = format!("/api/v1/orgs/me/members/{}", member_id(&api, ADMIN));
    let demoted = api
        .call(Method::PATCH, &path)
        .json(&json!({"role": "member"}))
        .send()
        .expect("demote");
    assert!(demoted.status().is_success(), "{:?}", demoted.text());
    admin.wait_text("Your access was revoked");
    assert_eq!(count(&admin, &Query::role("button", "Reconnect")), 0);

    // The owner revokes the token, after confirming: the agent is disconnected at once.
    page.goto("/agents");
    // Both tables first: the agents' one, drawn above, would move the button under the click.
    page.wait_role("link", TOKEN_NAME);
    page.click_role("button", &format!("Revoke {TOKEN_NAME}"));
    page.wait(&Query::heading(2, &format!("Revoke {TOKEN_NAME}?")));
    page.click_role("button", "Revoke token");
    wait_until("the token to show as revoked", || {
        count(
            &page,
            &Query::role("button", &format!("Revoke {TOKEN_NAME}")),
        ) == 0
    });
    wait_until("the agent to be offline", || {
        api.get("/api/v1/agents")["items"][0]["status"] == "offline"
    });
}
