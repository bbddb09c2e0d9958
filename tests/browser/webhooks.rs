//! Webhook channels and inbound tokens in a real browser: a channel created in the UI with a
//! signing secret and tested against a receiver this test runs (the signature checked, the
//! answer shown), a delivery to a closed port dead-lettered and redriven from the UI, and an
//! inbound token created, shown once, its Jenkins URL used as the plugin would, and revoked.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::errors_support::{ApiSession, wait_until};
use crate::harness::{TestServer, http};
use crate::page::{Page, Query};
use crate::support::{OWNER, PASSWORD, owner_page, sign_in};

const SECRET: &str = "s3cret-typed-in-the-form";
const VIEWER: &str = "viewer@example.com";

/// One request a receiver got: its headers (names lower-cased) and raw body.
#[derive(Clone)]
struct Request {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> &str {
        let found = self.headers.iter().find(|(key, _)| key == name);
        found.map_or("", |(_, value)| value.as_str())
    }
}

/// A webhook receiver on `listener` answering `200 received` to every request.
fn receive_on(listener: TcpListener) -> Arc<Mutex<Vec<Request>>> {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let kept = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            if let Some(request) = read_request(&stream) {
                kept.lock().unwrap().push(request);
            }
            let mut stream = stream;
            let answer =
                "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 8\r\n\r\nreceived";
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    requests
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        match line.trim_end().split_once(':') {
            Some((name, value)) => headers.push((name.to_lowercase(), value.trim().to_string())),
            None => break,
        }
    }
    let request = Request {
        headers,
        body: Vec::new(),
    };
    let mut body = vec![0; request.header("content-length").parse().unwrap_or(0)];
    reader.read_exact(&mut body).ok()?;
    Some(Request { body, ..request })
}

fn webhook_server() -> TestServer {
    let server = TestServer::builder()
        .env("WEBHOOK_ALLOW_PRIVATE", "true")
        .env("WEBHOOK_RETRY_DELAYS_SECONDS", "1,1")
        .start();
    server.add_user(OWNER, "owner", PASSWORD);
    server.add_user(VIEWER, "viewer", PASSWORD);
    server
}

/// A receiver on a fresh port: its URL and what it got.
fn receiver() -> (String, Arc<Mutex<Vec<Request>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind receiver");
    let address = format!("http://{}/hook", listener.local_addr().unwrap());
    (address, receive_on(listener))
}

/// Waits until the deliveries tables on the page show exactly these states.
fn wait_for_states(page: &Page, states: Value) {
    wait_until(&format!("deliveries in states {states}"), || {
        page.eval(
            "[...document.querySelectorAll('table.deliveries .pill')].map(p => p.textContent)",
        ) == states
    });
}

fn hex_hmac(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

#[test]
fn a_channel_made_in_the_ui_sends_a_signed_test_and_shows_the_answer() {
    let server = webhook_server();
    let (address, received) = receiver();

    let page = owner_page(&server);
    page.goto("/settings/webhooks");
    page.wait(&Query::heading(1, "Webhooks"));
    page.wait_text("No channel yet.");
    page.fill_label("Name", "ops");
    page.fill_label("URL", &address);
    page.fill_label("Signing secret (optional)", SECRET);
    page.click_role("button", "Create channel");
    page.wait_url(|path| path.starts_with("/channels/chn_"));
    page.wait(&Query::heading(1, "Channel: ops"));
    page.wait_text("a secret is set");
    page.wait_text("Nothing was sent to this channel yet.");

    let clicked = std::time::Instant::now();
    page.click_role("button", "Test");
    page.wait_text("The receiver accepted the test");
    // From the click until the receiver's answer is on screen (reported, not asserted).
    eprintln!(
        "test answer shown after {} ms",
        clicked.elapsed().as_millis()
    );
    page.wait_text("It answered: received");
    let result = page.eval("document.querySelector('.test-result').innerText");
    assert!(result.as_str().unwrap().contains("HTTP 200 in"), "{result}");
    let requests = received.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "one test request");
    let request = &requests[0];
    assert_eq!(request.header("x-lookout-event"), "test");
    assert_eq!(
        request.header("x-lookout-signature"),
        hex_hmac(SECRET, &request.body),
        "the signature is the HMAC-SHA256 of the body under the secret typed in the form"
    );
    let body: Value = serde_json::from_slice(&request.body).expect("JSON body");
    assert!(
        body["url"].as_str().unwrap().contains("/channels/chn_"),
        "{body}"
    );
    // The delivery log shows the attempt once it is recorded.
    wait_for_states(&page, json!(["delivered"]));
    page.check_accessibility();
    page.screenshot("channel");

    page.goto("/settings/webhooks");
    page.wait_role("link", "ops");
    page.wait_text("every event");
    page.check_accessibility();
    page.screenshot("webhooks");
}

#[test]
fn a_dead_letter_is_redriven_from_the_ui_once_the_receiver_is_back() {
    let server = webhook_server();
    // A port with nothing listening: every attempt is refused.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let api = ApiSession::sign_in(&server, OWNER);
    let channel = api.post(
        "/api/v1/channels",
        &json!({"name": "down", "url": format!("http://127.0.0.1:{port}/hook")}),
    );
    let channel = channel["id"].as_str().unwrap().to_string();

    let page = owner_page(&server);
    page.goto(&format!("/channels/{channel}"));
    page.wait(&Query::heading(1, "Channel: down"));
    page.click_role("button", "Test");
    page.wait_text("The test failed");
    // Two retries one second apart, then the dead-letter queue.
    let mut dead = Vec::new();
    wait_until("the delivery to be dead-lettered", || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        dead = api.get("/api/v1/deliveries/dead")["items"]
            .as_array()
            .unwrap()
            .clone();
        !dead.is_empty()
    });
    let delivery = dead[0]["id"].as_str().unwrap().to_string();
    // On the channel page: dead in the delivery log and among its dead letters.
    page.goto(&format!("/channels/{channel}"));
    wait_for_states(&page, json!(["dead", "dead"]));
    page.wait_role("button", "Redrive all");

    page.goto("/settings/webhooks/dead-letters");
    page.wait(&Query::heading(1, "Dead letters"));
    wait_for_states(&page, json!(["dead"]));
    page.wait_role("link", "down");
    page.wait_role("button", "Redrive all of down");
    page.check_accessibility();
    page.screenshot("dead-letters");

    // The receiver comes back on the same port, and the dead letter is redriven.
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("the port again");
    let received = receive_on(listener);
    page.click_role("button", &format!("Redrive {delivery}"));
    page.wait_text("No dead letters.");
    wait_until("the redriven delivery to arrive", || {
        !received.lock().unwrap().is_empty()
    });
    let request = received.lock().unwrap()[0].clone();
    assert_eq!(request.header("x-lookout-delivery"), delivery);
    page.goto(&format!("/channels/{channel}"));
    wait_for_states(&page, json!(["delivered"]));
}

#[test]
fn an_inbound_token_is_shown_once_and_its_jenkins_url_records_a_build() {
    let server = webhook_server();
    let page = owner_page(&server);
    page.goto("/settings/inbound-tokens");
    page.wait(&Query::heading(1, "Inbound tokens"));
    page.wait_text("No inbound token yet.");
    page.fill_label("Name", "Jenkins CI");
    page.click_role("button", "Create token");
    page.wait(&Query::heading(3, "Token Jenkins CI created"));
    page.wait_text("This will not be shown again.");
    let token = page.eval("document.querySelector('.secret input').value");
    let token = token.as_str().expect("the token").to_string();
    assert!(token.starts_with("lkin_"), "{token}");
    let jenkins_url = page.eval(
        "document.querySelector('section[aria-label=\"Jenkins Notification plugin\"] code').textContent",
    );
    let jenkins_url = jenkins_url.as_str().expect("the URL").to_string();
    assert_eq!(
        jenkins_url,
        server.url(&format!("/api/v1/jenkins/notify?token={token}"))
    );
    page.check_accessibility();
    page.screenshot("inbound-tokens");

    // The URL as pasted into the Notification plugin records a build.
    let notify = |url: &str| {
        http()
            .post(url)
            .json(
                &json!({"name": "shop-deploy", "build": {"number": 7, "phase": "COMPLETED",
                "status": "SUCCESS", "full_url": "https://ci.example.com/job/shop-deploy/7/"}}),
            )
            .send()
            .expect("notify")
            .status()
    };
    assert!(notify(&jenkins_url).is_success());
    let api = ApiSession::sign_in(&server, OWNER);
    let builds = api.get("/api/v1/builds");
    assert_eq!(builds["items"][0]["job"], "shop-deploy");

    // Done: the list has it, and the secret is nowhere on the page any more.
    page.click_role("button", "Done");
    page.wait_role("button", "Revoke Jenkins CI");
    page.goto("/settings/inbound-tokens");
    page.wait_role("button", "Revoke Jenkins CI");
    let shown = page.eval("document.body.innerHTML");
    assert!(!shown.as_str().unwrap().contains(&token), "the token again");
    // Revoked after a confirmation, the URL no longer works.
    page.click_role("button", "Revoke Jenkins CI");
    page.click_role("button", "Revoke token");
    wait_until("the token to show revoked", || {
        page.eval("[...document.querySelectorAll('td .pill')].map(p => p.textContent)")
            == json!(["revoked"])
    });
    assert_eq!(notify(&jenkins_url), 401);
}

#[test]
fn a_channel_changed_in_the_ui_sends_to_its_new_url_unsigned() {
    let server = webhook_server();
    let (old_address, _) = receiver();
    let (new_address, received) = receiver();
    let api = ApiSession::sign_in(&server, OWNER);
    let channel = api.post(
        "/api/v1/channels",
        &json!({"name": "ops", "url": old_address, "signing_secret": SECRET}),
    );
    let channel = channel["id"].as_str().unwrap().to_string();

    let page = owner_page(&server);
    page.goto(&format!("/channels/{channel}"));
    page.wait(&Query::heading(1, "Channel: ops"));
    page.fill_label("Name", "");
    page.fill_label("Name", "ops-renamed");
    page.fill_label("URL", "");
    page.fill_label("URL", &new_address);
    page.click_role("radio", "Remove it (send unsigned)");
    page.click_role("radio", "Only the events chosen below");
    page.click_role("checkbox", "Every alert event");
    page.click_role("button", "Save changes");
    page.wait(&Query::heading(1, "Channel: ops-renamed"));
    page.wait_text("unsigned");
    let saved = api.get(&format!("/api/v1/channels/{channel}"));
    assert_eq!(saved["url"], new_address.as_str());
    assert_eq!(saved["events"], json!(["alert.*"]));
    assert_eq!(saved["has_signing_secret"], false);

    page.click_role("button", "Test");
    page.wait_text("The receiver accepted the test");
    let requests = received.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("x-lookout-signature"),
        "",
        "sent unsigned"
    );

    // Deleted after a confirmation, back on the webhooks page.
    page.click_role("button", "Delete");
    page.click_role("button", "Delete channel");
    page.wait_url(|path| path == "/settings/webhooks");
    page.wait_text("No channel yet.");
}

#[test]
fn a_viewer_reads_channels_but_sees_no_button_that_changes_them() {
    let server = webhook_server();
    let (address, _) = receiver();
    let api = ApiSession::sign_in(&server, OWNER);
    let channel = api.post("/api/v1/channels", &json!({"name": "ops", "url": address}));
    let channel = channel["id"].as_str().unwrap().to_string();

    let page = Page::open(&server);
    page.goto("/login");
    sign_in(&page, VIEWER, PASSWORD);
    page.goto("/settings/webhooks");
    page.wait_role("link", "ops");
    page.goto(&format!("/channels/{channel}"));
    page.wait(&Query::heading(1, "Channel: ops"));
    page.wait_text("Nothing was sent to this channel yet.");
    let buttons =
        page.eval("[...document.querySelectorAll('main button')].map(b => b.textContent)");
    assert_eq!(
        buttons,
        json!(["Refresh"]),
        "no Test, Delete or Save for a viewer"
    );
    page.goto("/settings/inbound-tokens");
    page.wait_text("Only admins manage inbound tokens.");
    page.check_accessibility();
}
