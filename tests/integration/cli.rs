//! `lookout user …` and `lookout org …` as an operator runs them (CONTRACT.md section 0): on a
//! data dir no server holds (the CLI opens the store itself) and on one a running `serve` holds
//! (the CLI goes through the admin socket), with the same results and the same refusals.
//! Also the admin socket's file (0600 while serving, gone after a clean shutdown) and exit code
//! 75 when the data dir is locked by a process that does not answer on the socket.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{TestServer, http, run_cli, text};

const PASSWORD: &str = "correct-horse-battery\n";

/// Runs `lookout ARGS` on `dir` with no server in the way.
fn offline(dir: &Path, args: &[&str], stdin: &str) -> Output {
    run_cli(dir, &[], args, stdin)
}

/// Asserts success and parses stdout as JSON.
fn json_of(output: &Output, what: &str) -> Value {
    assert!(
        output.status.success(),
        "{what} failed ({:?}): {}",
        output.status,
        text(&output.stderr)
    );
    serde_json::from_str(text(&output.stdout).trim()).unwrap_or_else(|err| {
        panic!(
            "{what} did not print JSON ({err}): {}",
            text(&output.stdout)
        )
    })
}

/// Asserts a failure with a non-zero exit code and returns stderr.
fn refused(output: &Output, what: &str) -> String {
    assert!(
        !output.status.success(),
        "{what} should fail, but exited 0 with {}",
        text(&output.stdout)
    );
    text(&output.stderr)
}

/// `user create` for `email` (owner), in `org` when given, followed by `extra`.
fn user_create(email: &str, org: Option<&str>, extra: &[&str]) -> Vec<String> {
    let mut args = [
        "user",
        "create",
        "--email",
        email,
        "--password-stdin",
        "--role",
        "owner",
    ]
    .map(String::from)
    .to_vec();
    if let Some(org) = org {
        args.extend(["--org".to_string(), org.to_string()]);
    }
    args.extend(extra.iter().map(|arg| arg.to_string()));
    args
}

fn args(owned: &[String]) -> Vec<&str> {
    owned.iter().map(String::as_str).collect()
}

fn items(listing: &Value) -> &Vec<Value> {
    listing["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {listing}"))
}

fn find<'a>(listing: &'a Value, field: &str, value: &str) -> &'a Value {
    items(listing)
        .iter()
        .find(|item| item[field] == value)
        .unwrap_or_else(|| panic!("no item with {field} = {value} in {listing}"))
}

fn assert_user_id(id: &Value) {
    let id = id
        .as_str()
        .unwrap_or_else(|| panic!("user id is not a string: {id}"));
    let ulid = id
        .strip_prefix("usr_")
        .unwrap_or_else(|| panic!("{id} lacks usr_"));
    assert_eq!(ulid.len(), 26, "{id}");
    assert!(
        ulid.bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()),
        "{id}"
    );
}

#[test]
fn offline_user_create_is_listed_and_serve_then_skips_setup() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");

    let created = json_of(
        &offline(
            &dir,
            &args(&user_create("Ada@Example.com", None, &["--json"])),
            PASSWORD,
        ),
        "user create --json",
    );
    assert_user_id(&created["user"]["id"]);
    assert_eq!(created["user"]["email"], "ada@example.com");
    assert_eq!(created["org"]["name"], "default");
    assert_eq!(created["role"], "owner");

    // The plain form prints the new user's id too.
    let plain = offline(
        &dir,
        &args(&user_create("bob@example.com", Some("Acme"), &[])),
        PASSWORD,
    );
    assert!(plain.status.success(), "{}", text(&plain.stderr));

    let users = json_of(&offline(&dir, &["user", "list", "--json"], ""), "user list");
    assert_eq!(items(&users).len(), 2, "{users}");
    let ada = find(&users, "email", "ada@example.com");
    assert_eq!(ada["id"], created["user"]["id"]);
    assert_eq!(ada["memberships"].as_array().unwrap().len(), 1, "{ada}");
    assert_eq!(ada["memberships"][0]["org_name"], "default");
    assert_eq!(ada["memberships"][0]["role"], "owner");
    let bob = find(&users, "email", "bob@example.com");
    assert_user_id(&bob["id"]);
    let bob_id = bob["id"].as_str().unwrap();
    assert!(
        text(&plain.stdout).contains(bob_id),
        "plain output lacks {bob_id}: {}",
        text(&plain.stdout)
    );
    assert_eq!(bob["memberships"][0]["org_name"], "Acme");

    let orgs = json_of(&offline(&dir, &["org", "list", "--json"], ""), "org list");
    assert_eq!(items(&orgs).len(), 2, "{orgs}");
    let default = find(&orgs, "name", "default");
    assert_eq!(default["id"], created["org"]["id"]);
    assert_eq!(default["members"], 1);
    assert_eq!(default["plan"], "free");
    assert_eq!(find(&orgs, "name", "Acme")["members"], 1);

    // A user exists, so the server has no setup link to print.
    let server = TestServer::builder().data_dir(&dir).start();
    assert_eq!(
        server.setup_token(),
        None,
        "stdout: {:?}",
        server.stdout_lines()
    );
    let status: Value = http()
        .get(server.url("/api/v1/setup"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(status, serde_json::json!({"required": false}));
}

#[test]
fn commands_act_on_the_running_server_through_the_admin_socket() {
    let server = TestServer::start();
    assert!(
        server.setup_token().is_some(),
        "a fresh server prints a setup link"
    );
    let setup_required = || -> Value {
        let response = http().get(server.url("/api/v1/setup")).send().unwrap();
        response.json::<Value>().unwrap()["required"].clone()
    };
    assert_eq!(setup_required(), true);

    let create = user_create("ops@example.com", Some("Ops"), &["--json"]);
    let created = json_of(
        &server.cli(&args(&create), PASSWORD),
        "user create via socket",
    );
    assert_user_id(&created["user"]["id"]);
    assert_eq!(created["org"]["name"], "Ops");
    // No polling: the command returned after the server's own store committed the user.
    assert_eq!(setup_required(), false);

    let org = json_of(
        &server.cli(&["org", "create", "Billing", "--json"], ""),
        "org create",
    );
    assert!(org["id"].as_str().unwrap().starts_with("org_"), "{org}");
    let plan = json_of(
        &server.cli(&["org", "set-plan", "ops", "enterprise", "--json"], ""),
        "set-plan",
    );
    assert_eq!(plan["plan"], "enterprise");

    let orgs = json_of(&server.cli(&["org", "list", "--json"], ""), "org list");
    assert_eq!(items(&orgs).len(), 2, "{orgs}");
    assert_eq!(find(&orgs, "name", "Ops")["members"], 1);
    assert_eq!(find(&orgs, "name", "Ops")["plan"], "enterprise");
    assert_eq!(find(&orgs, "name", "Billing")["members"], 0);
    let users = json_of(&server.cli(&["user", "list", "--json"], ""), "user list");
    let ops = find(&users, "email", "ops@example.com");
    assert_eq!(ops["id"], created["user"]["id"]);
    assert_eq!(ops["memberships"][0]["org_name"], "Ops");

    check_refusals(&server.data_dir, "ops@example.com", "Billing");
}

#[test]
fn offline_commands_refuse_bad_input_like_the_server_does() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let created = offline(
        &dir,
        &args(&user_create("ops@example.com", None, &[])),
        PASSWORD,
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    let org = offline(&dir, &["org", "create", "Billing"], "");
    assert!(org.status.success(), "{}", text(&org.stderr));
    check_refusals(&dir, "ops@example.com", "Billing");
}

/// The refusals of `user` and `org`, on a dir holding user `email` and org `org` (free plan).
/// Works the same whether a server holds the dir or not.
fn check_refusals(dir: &Path, email: &str, org: &str) {
    let cli = |argv: &[&str], stdin: &str| run_cli(dir, &[], argv, stdin);
    let users_before = json_of(&cli(&["user", "list", "--json"], ""), "user list");

    // The same address in another case is the same user.
    let duplicate = cli(
        &args(&user_create(&email.to_uppercase(), Some("Elsewhere"), &[])),
        PASSWORD,
    );
    let message = refused(&duplicate, "duplicate e-mail");
    assert!(message.contains("already exists"), "{message}");

    // These exit before reading standard input, so they get none (a write could hit EPIPE).
    let words = |line: &'static str| line.split(' ').collect::<Vec<_>>();
    let bad_role = cli(
        &words("user create --email r@example.com --password-stdin --role root"),
        "",
    );
    let message = text(&bad_role.stderr);
    assert_eq!(bad_role.status.code(), Some(2), "usage error: {message}");

    let no_stdin_flag = cli(&words("user create --email p@example.com --role owner"), "");
    let message = refused(&no_stdin_flag, "missing --password-stdin");
    assert!(message.contains("--password-stdin"), "{message}");

    let short = cli(
        &args(&user_create("short@example.com", None, &[])),
        "seven77\n",
    );
    let message = refused(&short, "7-character password");
    assert!(
        message.contains('8'),
        "the message should state the minimum: {message}"
    );

    let same_name = cli(&["org", "create", &org.to_uppercase()], "");
    let message = refused(&same_name, "org name differing only in case");
    assert!(message.contains("already exists"), "{message}");

    let unknown = cli(&["org", "set-plan", "no-such-org", "enterprise"], "");
    let message = refused(&unknown, "set-plan on an unknown org");
    assert!(message.contains("no-such-org"), "{message}");
    let bad_plan = cli(&["org", "set-plan", org, "gold"], "");
    assert_eq!(
        bad_plan.status.code(),
        Some(2),
        "{}",
        text(&bad_plan.stderr)
    );

    // Nothing of the refused commands was written; the plan is set case-insensitively by name.
    let users_after = json_of(&cli(&["user", "list", "--json"], ""), "user list");
    assert_eq!(users_after, users_before);
    let set = cli(&["org", "set-plan", &org.to_lowercase(), "enterprise"], "");
    assert!(set.status.success(), "{}", text(&set.stderr));
    let orgs = json_of(&cli(&["org", "list", "--json"], ""), "org list");
    assert_eq!(find(&orgs, "name", org)["plan"], "enterprise", "{orgs}");
    assert!(
        items(&orgs).iter().all(|o| o["name"] != "Elsewhere"),
        "{orgs}"
    );
}

#[test]
fn admin_socket_is_private_while_serving_and_removed_on_clean_shutdown() {
    let mut server = TestServer::start();
    let socket = server.data_dir.join("admin.sock");
    let metadata = std::fs::metadata(&socket).expect("admin.sock exists while serving");
    assert!(
        metadata.file_type().is_socket(),
        "{socket:?} is not a socket"
    );
    assert_eq!(metadata.permissions().mode() & 0o777, 0o600);

    let status = server.terminate(Duration::from_secs(15));
    assert!(status.success(), "clean shutdown exit: {status:?}");
    assert!(
        !socket.exists(),
        "admin.sock is left behind after a clean shutdown"
    );
}

#[test]
fn locked_data_dir_without_a_reachable_server_exits_75_naming_the_holder() {
    let server = TestServer::start();
    // The lock is held but nothing answers on the socket: a process that is not a server.
    std::fs::remove_file(server.data_dir.join("admin.sock")).unwrap();
    let output = server.cli(&["user", "list"], "");
    let message = text(&output.stderr);
    assert_eq!(output.status.code(), Some(75), "{message}");
    assert!(
        message.contains(&format!("pid {}", server.pid())),
        "{message}"
    );
    assert!(message.contains("lookout serve"), "{message}");
}
