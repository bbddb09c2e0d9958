//! What the store promises across crashes, upgrades and a full disk (STYLE.md "Storage over
//! redb"): every acknowledged write survives `kill -9` and no record is ever half-written; an
//! older schema is migrated forward (and a newer one refused untouched); a full disk turns
//! writes into 503 `store_unavailable` while reads go on, and the server heals once space frees.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{BIN, TestServer, TmpfsMount, http, run_cli, text, wait_for};

use crate::fixtures::{
    index_entry, stored_schema_version, write_schema_1, write_schema_version_only,
};

const PASSWORD: &str = "correct-horse-battery";

/// Runs `lookout ARGS` (no server in the way, or through its socket) and parses its JSON.
fn cli_json(dir: &Path, args: &[&str]) -> Value {
    let output = run_cli(dir, &[], args, "");
    assert!(
        output.status.success(),
        "lookout {args:?} failed: {}",
        text(&output.stderr)
    );
    serde_json::from_str(text(&output.stdout).trim()).expect("JSON output")
}

fn items(listing: &Value) -> &Vec<Value> {
    listing["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {listing}"))
}

// ---- kill -9 during acknowledged writes -------------------------------------------------

/// A write the server answered `ok:true`: an org (`name`), or a user (its e-mail) in `org`.
struct Acknowledged {
    name: String,
    id: Value,
    org: Option<String>,
}

/// One request over an admin-socket connection, in the line protocol the CLI speaks.
fn admin_call(stream: &mut BufReader<UnixStream>, request: &Value) -> std::io::Result<Value> {
    let line = format!("{request}\n");
    stream.get_mut().write_all(line.as_bytes())?;
    let mut reply = String::new();
    if stream.read_line(&mut reply)? == 0 {
        return Err(ErrorKind::UnexpectedEof.into());
    }
    serde_json::from_str(&reply).map_err(|err| std::io::Error::new(ErrorKind::InvalidData, err))
}

/// Writer `thread` of `round`: threads 0 and 1 create users in the round's org, the others
/// create orgs, until the server dies. Returns what was acknowledged.
fn write_until_killed(
    socket: PathBuf,
    round: usize,
    thread: usize,
    start: Arc<Barrier>,
) -> Vec<Acknowledged> {
    start.wait();
    let mut acknowledged = Vec::new();
    let Ok(stream) = UnixStream::connect(&socket) else {
        return acknowledged;
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut stream = BufReader::new(stream);
    let round_org = format!("round-{round}");
    for sequence in 0.. {
        let name = format!("r{round}-t{thread}-{sequence}");
        let request = if thread < 2 {
            json!({"command": "user_create", "email": format!("{name}@example.com"),
                "password": PASSWORD, "role": "owner", "org": round_org})
        } else {
            json!({"command": "org_create", "name": name})
        };
        // A dead server shows as EOF or a reset: the write in flight is simply not acknowledged.
        let Ok(reply) = admin_call(&mut stream, &request) else {
            break;
        };
        assert_eq!(reply["ok"], true, "{request} was refused: {reply}");
        let result = &reply["result"];
        acknowledged.push(if thread < 2 {
            assert_eq!(result["org"]["name"], round_org.as_str(), "{reply}");
            let (id, org) = (result["user"]["id"].clone(), Some(round_org.clone()));
            Acknowledged {
                name: format!("{name}@example.com"),
                id,
                org,
            }
        } else {
            Acknowledged {
                name,
                id: result["id"].clone(),
                org: None,
            }
        });
    }
    acknowledged
}

/// Checks that every acknowledged record is present and that every record present is whole:
/// each org complete, each user with exactly its one membership, both indexes agreeing.
fn check_store(dir: &Path, acknowledged: &[Acknowledged]) {
    let orgs = cli_json(dir, &["org", "list", "--json"]);
    let users = cli_json(dir, &["user", "list", "--json"]);
    let mut orgs_by_name = BTreeMap::new();
    for org in items(&orgs) {
        let name = org["name"]
            .as_str()
            .unwrap_or_else(|| panic!("org without a name: {org}"));
        assert!(
            org["id"].as_str().is_some_and(|id| id.starts_with("org_")),
            "{org}"
        );
        assert!(
            org["plan"] == "free" && org["created_at"].is_string(),
            "{org}"
        );
        assert!(name.starts_with('r'), "an org nobody asked for: {org}");
        assert!(
            orgs_by_name.insert(name, org).is_none(),
            "org {name} listed twice"
        );
    }
    let mut users_by_email = BTreeMap::new();
    let mut members_seen: BTreeMap<&str, u64> = BTreeMap::new();
    for user in items(&users) {
        let email = user["email"]
            .as_str()
            .unwrap_or_else(|| panic!("user without e-mail: {user}"));
        assert!(
            users_by_email.insert(email, user).is_none(),
            "user {email} listed twice"
        );
        let memberships = user["memberships"].as_array().unwrap();
        assert_eq!(
            memberships.len(),
            1,
            "each user has exactly its one membership: {user}"
        );
        assert_eq!(memberships[0]["role"], "owner", "{user}");
        let org_name = memberships[0]["org_name"].as_str().unwrap();
        let org = orgs_by_name
            .get(org_name)
            .unwrap_or_else(|| panic!("{user} names a missing org"));
        assert_eq!(memberships[0]["org_id"], org["id"], "{user}");
        *members_seen.entry(org_name).or_default() += 1;
    }
    for (name, org) in &orgs_by_name {
        let seen = members_seen.get(name).copied().unwrap_or(0);
        assert_eq!(
            org["members"], seen,
            "memberships and the user index disagree for {name}"
        );
    }
    for write in acknowledged {
        let Some(org_name) = &write.org else {
            let org = orgs_by_name.get(write.name.as_str());
            assert_eq!(
                org.map(|org| &org["id"]),
                Some(&write.id),
                "acknowledged org {} is lost",
                write.name
            );
            continue;
        };
        let user = users_by_email.get(write.name.as_str());
        let user = user.unwrap_or_else(|| panic!("acknowledged user {} is lost", write.name));
        assert_eq!(user["id"], write.id, "{user}");
        assert_eq!(
            user["memberships"][0]["org_name"],
            org_name.as_str(),
            "{user}"
        );
    }
}

#[test]
fn acknowledged_writes_survive_kill_9_in_every_round() {
    const ROUNDS: usize = 20;
    const THREADS: usize = 8;
    let mut server = TestServer::start();
    let socket = server.data_dir.join("admin.sock");
    let mut acknowledged = Vec::new();
    // Deterministic pseudo-random delays (xorshift), so a failing round can be replayed.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..ROUNDS {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_millis(50 + seed % 351);
        let start = Arc::new(Barrier::new(THREADS + 1));
        let writers: Vec<JoinHandle<Vec<Acknowledged>>> = (0..THREADS)
            .map(|thread| {
                let (socket, start) = (socket.clone(), start.clone());
                std::thread::spawn(move || write_until_killed(socket, round, thread, start))
            })
            .collect();
        start.wait();
        // Not a wait for a condition: the crash is meant to land at an arbitrary moment.
        std::thread::sleep(delay);
        server.kill9();
        let before = acknowledged.len();
        for writer in writers {
            acknowledged.extend(writer.join().expect("writer thread"));
        }
        let acked_this_round = acknowledged.len() - before;
        eprintln!("round {round}: killed after {delay:?}, {acked_this_round} writes acknowledged");
        server.restart();
        // The search index may still be catching up (`"search":"catching_up"`): the store is ok.
        let (status, health) = get_json(&server, "/healthz");
        assert_eq!(
            (status, &health["status"]),
            (200, &json!("ok")),
            "round {round}"
        );
        check_store(&server.data_dir, &acknowledged);
    }
    // Guard against a test that passes because nothing was ever acknowledged.
    let users = acknowledged.iter().filter(|w| w.org.is_some()).count();
    let orgs = acknowledged.len() - users;
    assert!(orgs >= 100, "only {orgs} orgs acknowledged");
    assert!(users > 0, "no user was acknowledged in {ROUNDS} rounds");
}

// ---- schema migrations -------------------------------------------------------------------

#[test]
fn schema_1_database_is_migrated_and_memberships_are_indexed() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    let database = dir.join("lookout.redb");
    let (org_id, user_id) = write_schema_1(&database);

    // user list reads memberships through the schema-2 index, which only the migration fills.
    let users = cli_json(&dir, &["user", "list", "--json"]);
    let expected = json!([{"org_id": org_id, "org_name": "Legacy", "role": "member"}]);
    assert_eq!(items(&users).len(), 1, "{users}");
    assert_eq!(items(&users)[0]["id"], user_id.as_str());
    assert_eq!(items(&users)[0]["memberships"], expected, "{users}");
    let orgs = cli_json(&dir, &["org", "list", "--json"]);
    assert_eq!(items(&orgs)[0]["plan"], "enterprise", "{orgs}");
    assert_eq!(items(&orgs)[0]["members"], 1, "{orgs}");

    let mut server = TestServer::builder().data_dir(&dir).start();
    assert_eq!(server.setup_token(), None, "a user exists: no setup");
    let users = cli_json(&dir, &["user", "list", "--json"]);
    assert_eq!(items(&users)[0]["memberships"], expected, "{users}");
    assert!(server.terminate(Duration::from_secs(15)).success());

    assert_eq!(
        stored_schema_version(&database),
        lookout::store::migrations::CURRENT_VERSION
    );
    let reverse = index_entry(&database, "userid_orgid", &format!("{user_id}/{org_id}"));
    assert_eq!(reverse, Some(org_id), "the migration indexes memberships");
}

/// Runs `lookout serve` on `dir`, expecting it to exit on its own within a deadline.
fn serve_expecting_exit(dir: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .arg("serve")
        .env_clear()
        .envs(TestServer::base_env(dir))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lookout serve");
    let until = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill(); // a no-op unless serve is (wrongly) still running
    let output = child.wait_with_output().unwrap();
    (output.status.code(), text(&output.stderr))
}

#[test]
fn newer_schema_is_refused_and_the_file_left_untouched() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    let path = dir.join("lookout.redb");
    write_schema_version_only(&path, 99);
    let before = std::fs::read(&path).unwrap();

    let listed = run_cli(&dir, &[], &["user", "list", "--json"], "");
    let message = text(&listed.stderr);
    assert!(!listed.status.success(), "user list accepted schema 99");
    assert!(message.contains("newer"), "{message}");
    assert_eq!(stored_schema_version(&path), 99);
    assert!(
        std::fs::read(&path).unwrap() == before,
        "user list changed the bytes of a newer database"
    );

    let (code, message) = serve_expecting_exit(&dir);
    assert!(
        code.is_some_and(|code| code != 0),
        "serve exit {code:?}: {message}"
    );
    assert!(message.contains("newer"), "{message}");
    assert_eq!(stored_schema_version(&path), 99);
    assert!(
        std::fs::read(&path).unwrap() == before,
        "serve changed the bytes of a newer database"
    );
}

// ---- full disk ---------------------------------------------------------------------------

/// GETs `path` and returns the status and JSON body.
fn get_json(server: &TestServer, path: &str) -> (u16, Value) {
    let response = http().get(server.url(path)).send().unwrap();
    (response.status().as_u16(), response.json().unwrap())
}

/// Writes `path` until the file system says ENOSPC, down to the last byte it will take.
fn fill_until_enospc(path: &Path) -> std::fs::File {
    let mut filler = std::fs::File::create(path).unwrap();
    let chunk = vec![0x5a_u8; 64 * 1024];
    loop {
        match filler.write(&chunk) {
            Ok(0) => panic!("write returned 0 before ENOSPC"),
            Ok(_) => {}
            Err(err) if err.raw_os_error() == Some(libc::ENOSPC) => return filler,
            Err(err) if err.kind() == ErrorKind::Interrupted => {}
            Err(err) => panic!("filling the disk failed with {err} instead of ENOSPC"),
        }
    }
}

#[test]
fn full_disk_refuses_writes_keeps_reads_and_recovers() {
    let temp = tempfile::tempdir().unwrap();
    let mount = TmpfsMount::new(temp.path(), "8m");
    // The server runs inside the mount's namespace; the CLI and the filler reach it from here.
    let dir = mount.0.join("data");
    let mut server = TestServer::builder().inside(&mount, "data").start();
    let token = server
        .setup_token()
        .expect("first start prints a setup link");
    let setup = json!({"token": token, "email": "first@example.com", "password": PASSWORD, "org_name": "Full"});
    let post_setup = || {
        http()
            .post(server.url("/api/v1/setup"))
            .json(&setup)
            .send()
            .unwrap()
    };

    let filler_path = mount.0.join("filler");
    let filler = fill_until_enospc(&filler_path);

    let response = post_setup();
    assert_eq!(response.status(), 503, "setup on a full disk");
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let seconds = retry_after.as_deref().and_then(|v| v.parse::<u64>().ok());
    assert!(
        seconds.is_some_and(|s| s > 0),
        "Retry-After: {retry_after:?}"
    );
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let problem: Value = response.json().unwrap();
    assert_eq!(
        (&problem["code"], &problem["status"]),
        (&json!("store_unavailable"), &json!(503))
    );

    assert_eq!(
        get_json(&server, "/healthz"),
        (200, json!({"status": "degraded"}))
    );
    // Reads go on while writes are refused: over HTTP and through the admin socket.
    assert_eq!(
        get_json(&server, "/api/v1/setup"),
        (200, json!({"required": true}))
    );
    assert_eq!(
        cli_json(&dir, &["org", "list", "--json"]),
        json!({"items": []})
    );
    assert_eq!(
        post_setup().status(),
        503,
        "still refused while the disk is full"
    );
    assert_eq!(get_json(&server, "/healthz").1["status"], "degraded");

    drop(filler);
    std::fs::remove_file(&filler_path).unwrap();
    wait_for(
        "healthz ok after space is freed",
        Duration::from_secs(10),
        || (get_json(&server, "/healthz").1["status"] == "ok").then_some(()),
    );
    let response = post_setup();
    assert_eq!(response.status(), 201, "the same setup after recovery");
    let created: Value = response.json().unwrap();
    assert_eq!(created["user"]["email"], "first@example.com");
    assert_eq!(created["org"]["name"], "Full");

    server.restart();
    // stdout accumulates over restarts: only the first start may have printed a setup link.
    let lines = server.stdout_lines();
    let links = lines
        .iter()
        .filter(|line| line.contains("/setup?token="))
        .count();
    assert_eq!(
        links, 1,
        "the user persisted, so the restart prints no setup link"
    );
    assert_eq!(
        get_json(&server, "/api/v1/setup"),
        (200, json!({"required": false}))
    );
    let users = cli_json(&dir, &["user", "list", "--json"]);
    assert_eq!(items(&users)[0]["id"], created["user"]["id"]);
    assert_eq!(items(&users)[0]["memberships"][0]["org_name"], "Full");
}
