//! Backup and restore through the real binary (CONTRACT.md section 8): a backup taken while
//! writers go on holds every record acknowledged before it began and restores into a data dir
//! that `serve` starts on; every refusal of `restore` has its exit code and leaves the target
//! byte-identical; `backup --verify` tells a good file from a truncated or bit-flipped one; and
//! a backup killed midway never leaves a file that verifies.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::backup_data::{large_database, rewrite_manifest, tree, with_suffix};
use crate::harness::{BIN, TestServer, run_cli, text, wait_for};

const PASSWORD: &str = "correct-horse-battery";

fn lookout(dir: &Path, args: &[&str]) -> Output {
    run_cli(dir, &[], args, "")
}

fn json_of(output: &Output, what: &str) -> Value {
    assert!(
        output.status.success(),
        "{what} failed ({:?}): {}",
        output.status.code(),
        text(&output.stderr)
    );
    serde_json::from_str(text(&output.stdout).trim()).expect("JSON output")
}

fn items(listing: &Value) -> &Vec<Value> {
    listing["items"].as_array().expect("items")
}

// ---- backup during writes, restore, serve -----------------------------------------------

/// One request on an admin-socket connection (the CLI's line protocol).
fn admin_call(stream: &mut BufReader<UnixStream>, request: &Value) -> std::io::Result<Value> {
    stream
        .get_mut()
        .write_all(format!("{request}\n").as_bytes())?;
    let mut reply = String::new();
    if stream.read_line(&mut reply)? == 0 {
        return Err(ErrorKind::UnexpectedEof.into());
    }
    serde_json::from_str(&reply).map_err(|err| std::io::Error::new(ErrorKind::InvalidData, err))
}

/// An acknowledged write: an org (`email` None) or a user in org `org`.
#[derive(Clone, Debug)]
struct Acknowledged {
    id: Value,
    name: String,
    email: Option<String>,
}

/// Writes orgs (even threads) or users (odd threads) until `stop`, appending each
/// acknowledged write to `log` the moment its reply arrives.
fn write_until_stopped(
    socket: PathBuf,
    thread: usize,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Acknowledged>>>,
) {
    let stream = UnixStream::connect(&socket).expect("admin socket");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut stream = BufReader::new(stream);
    let org = format!("writers-{thread}");
    for sequence in 0.. {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let name = format!("t{thread}-{sequence}");
        let request = if thread.is_multiple_of(2) {
            json!({"command": "org_create", "name": name})
        } else {
            json!({"command": "user_create", "email": format!("{name}@example.com"),
                "password": PASSWORD, "role": "member", "org": org})
        };
        let reply = admin_call(&mut stream, &request).expect("admin reply");
        assert_eq!(reply["ok"], true, "{request}: {reply}");
        let result = &reply["result"];
        let write = if thread.is_multiple_of(2) {
            Acknowledged {
                id: result["id"].clone(),
                name,
                email: None,
            }
        } else {
            let email = Some(format!("{name}@example.com"));
            Acknowledged {
                id: result["user"]["id"].clone(),
                name: org.clone(),
                email,
            }
        };
        log.lock().unwrap().push(write);
    }
}

/// Every acknowledged write is in the server's data, and every user is whole.
fn check_restored(dir: &Path, acknowledged: &[Acknowledged]) {
    let orgs = json_of(&lookout(dir, &["org", "list", "--json"]), "org list");
    let users = json_of(&lookout(dir, &["user", "list", "--json"]), "user list");
    let org_ids: BTreeMap<&str, &Value> = items(&orgs)
        .iter()
        .map(|org| (org["name"].as_str().unwrap(), &org["id"]))
        .collect();
    let mut users_by_email = BTreeMap::new();
    for user in items(&users) {
        let memberships = user["memberships"].as_array().unwrap();
        assert_eq!(
            memberships.len(),
            1,
            "a user restored without its membership: {user}"
        );
        let org = memberships[0]["org_name"].as_str().unwrap();
        assert_eq!(Some(&&memberships[0]["org_id"]), org_ids.get(org), "{user}");
        users_by_email.insert(user["email"].as_str().unwrap().to_string(), user.clone());
    }
    for write in acknowledged {
        match &write.email {
            None => assert_eq!(
                org_ids.get(write.name.as_str()),
                Some(&&write.id),
                "org {} was acknowledged before the backup but is not restored",
                write.name
            ),
            Some(email) => {
                let user = users_by_email.get(email).unwrap_or_else(|| {
                    panic!("user {email} was acknowledged before the backup but is not restored")
                });
                assert_eq!(user["id"], write.id);
                assert_eq!(user["memberships"][0]["org_name"], write.name.as_str());
            }
        }
    }
}

#[test]
fn backup_during_writes_restores_every_acknowledged_record() {
    for round in 0..3 {
        let server = TestServer::start();
        let socket = server.data_dir.join("admin.sock");
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let writers: Vec<_> = (0..6)
            .map(|thread| {
                let (socket, stop, log) = (socket.clone(), stop.clone(), log.clone());
                std::thread::spawn(move || write_until_stopped(socket, thread, stop, log))
            })
            .collect();
        // Let a few hundred records accumulate so the snapshot has something to copy.
        wait_for("writes before the backup", Duration::from_secs(30), || {
            (log.lock().unwrap().len() >= 300).then_some(())
        });

        let temp = tempfile::tempdir().unwrap();
        let file = temp.path().join("during-writes.lookout-backup");
        // Everything acknowledged by now was acknowledged before the backup began.
        let before: Vec<Acknowledged> = log.lock().unwrap().clone();
        let output = server.cli(&["backup", "--out", file.to_str().unwrap(), "--json"], "");
        let after_backup = log.lock().unwrap().len();
        stop.store(true, Ordering::Release);
        for writer in writers {
            writer.join().expect("writer thread");
        }
        let manifest = json_of(&output, "backup");
        assert!(
            output.stderr.is_empty(),
            "quiet without a terminal: {}",
            text(&output.stderr)
        );
        assert!(
            after_backup > before.len(),
            "round {round}: no write was acknowledged while the backup ran: writers were blocked"
        );
        let orgs_in_backup = manifest["tables"]["orgid_org"].as_u64().unwrap();
        let acked_orgs = before.iter().filter(|w| w.email.is_none()).count() as u64;
        assert!(orgs_in_backup >= acked_orgs, "{manifest}");
        assert!(!with_suffix(&file, ".partial").exists() && !with_suffix(&file, ".work").exists());
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );

        let restored = temp.path().join("restored");
        let output = lookout(&restored, &["restore", file.to_str().unwrap(), "--json"]);
        assert_eq!(
            json_of(&output, "restore"),
            manifest,
            "restore reports the backup's manifest"
        );
        let mut server = TestServer::builder().data_dir(&restored).start();
        assert_eq!(
            server.setup_token(),
            None,
            "users were restored: no setup link"
        );
        check_restored(&restored, &before);
        assert!(server.terminate(Duration::from_secs(15)).success());
        eprintln!(
            "round {round}: {} acknowledged before, {} by the end of the backup",
            before.len(),
            after_backup
        );
    }
}

// ---- refusals ----------------------------------------------------------------------------

/// A small database with one owner, backed up offline. Returns (temp dir, backup file).
fn small_backup() -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("source");
    let created = run_cli(
        &dir,
        &[],
        &[
            "user",
            "create",
            "--email",
            "ada@example.com",
            "--password-stdin",
            "--role",
            "owner",
        ],
        &format!("{PASSWORD}\n"),
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    let file = temp.path().join("small.lookout-backup");
    let output = lookout(&dir, &["backup", "--out", file.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    (temp, file)
}

#[test]
fn restore_refusals_have_exit_codes_and_leave_the_target_untouched() {
    let (temp, good) = small_backup();
    let bytes = std::fs::read(&good).unwrap();
    let truncated = temp.path().join("truncated");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let flipped = temp.path().join("flipped");
    let mut damaged = bytes.clone();
    damaged[40] ^= 0x01; // inside the compressed payload
    std::fs::write(&flipped, &damaged).unwrap();
    let newer_format = temp.path().join("newer-format");
    let mut newer = bytes.clone();
    newer[12..16].copy_from_slice(&2u32.to_be_bytes());
    std::fs::write(&newer_format, &newer).unwrap();
    let newer_schema = temp.path().join("newer-schema");
    rewrite_manifest(&good, &newer_schema, |manifest| {
        manifest["schema_version"] = json!(999)
    });

    // Each refusal, against an absent target, an empty one and one with content.
    let cases: [(&Path, i32, &str); 4] = [
        (&truncated, 4, "truncated"),
        (&flipped, 5, "corrupted"),
        (&newer_format, 6, "format version 2"),
        (&newer_schema, 7, "schema 999"),
    ];
    for (index, (file, code, words)) in cases.into_iter().enumerate() {
        let absent = temp.path().join(format!("absent-{index}"));
        let empty = temp.path().join(format!("empty-{index}"));
        std::fs::create_dir(&empty).unwrap();
        std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o755)).unwrap();
        for target in [&absent, &empty] {
            let before = tree(target);
            let output = lookout(target, &["restore", file.to_str().unwrap()]);
            let message = text(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(code),
                "{}: {message}",
                file.display()
            );
            assert!(message.contains(words), "{message}");
            assert_eq!(
                tree(target),
                before,
                "{} changed the target",
                file.display()
            );
        }
        let output = lookout(&absent, &["backup", "--verify", file.to_str().unwrap()]);
        assert_eq!(
            output.status.code(),
            Some(code),
            "--verify: {}",
            text(&output.stderr)
        );
    }

    // A target with anything in it is refused even with a good file.
    let busy = temp.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "keep me").unwrap();
    let before = tree(&busy);
    let output = lookout(&busy, &["restore", good.to_str().unwrap()]);
    let message = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{message}");
    assert!(
        message.contains("not empty") && message.contains("notes.txt"),
        "{message}"
    );
    assert_eq!(tree(&busy), before);

    // A file where the directory should be.
    let file_target = temp.path().join("a-file");
    std::fs::write(&file_target, "x").unwrap();
    let output = lookout(&file_target, &["restore", good.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert_eq!(std::fs::read(&file_target).unwrap(), b"x");

    // The good file restores into an empty directory. Run as root into a directory of another
    // user (a service's state directory), the files go to that user.
    let empty = temp.path().join("empty-ok");
    std::fs::create_dir(&empty).unwrap();
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let owner = match unsafe { libc::geteuid() } {
        0 => {
            std::os::unix::fs::chown(&empty, Some(65534), Some(65534)).unwrap();
            65534
        }
        uid => uid,
    };
    let output = lookout(&empty, &["restore", good.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    for name in ["lookout.redb", "lookout.lock"] {
        let metadata = std::fs::metadata(empty.join(name)).unwrap();
        assert_eq!(metadata.uid(), owner, "owner of {name}");
    }
    let users = json_of(&lookout(&empty, &["user", "list", "--json"]), "user list");
    assert_eq!(items(&users)[0]["email"], "ada@example.com");
}

#[test]
fn verify_tells_good_files_from_truncated_and_bit_flipped_ones() {
    let (temp, good) = small_backup();
    let dir = temp.path().join("unused");
    let output = lookout(&dir, &["backup", "--verify", good.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("backup verified"),
        "{}",
        text(&output.stdout)
    );
    assert!(!dir.exists(), "--verify does not touch the data dir");

    let bytes = std::fs::read(&good).unwrap();
    let len = bytes.len();
    let check = |name: &str, content: &[u8], code: i32, words: &str| {
        let path = temp.path().join(name);
        std::fs::write(&path, content).unwrap();
        let output = lookout(&dir, &["backup", "--verify", path.to_str().unwrap()]);
        let message = text(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{name}: {message}");
        assert!(message.contains(words), "{name}: {message}");
    };
    // Cut anywhere: no footer at the end.
    for cut in [0, 5, 16, 17, len / 2, len - 65, len - 1] {
        check(&format!("cut-{cut}"), &bytes[..cut], 4, "truncated");
    }
    // One bit flipped anywhere else: the signature, the version's high byte, the payload,
    // the manifest, the footer's sizes, the hash.
    for (offset, words) in [
        (0, "not a lookout backup"),
        (20, "corrupted"),
        (len / 2, "corrupted"),
        (len - 70, "corrupted"),
        (len - 60, "corrupted"),
        (len - 1, "checksum mismatch"),
    ] {
        let mut flipped = bytes.clone();
        flipped[offset] ^= 0x10;
        check(&format!("flip-{offset}"), &flipped, 5, words);
    }
    check("missing", b"", 4, "truncated");
}

// ---- killed backups ------------------------------------------------------------------------

fn spawn_backup(dir: &Path, out: &Path) -> Child {
    Command::new(BIN)
        .args(["backup", "--out", out.to_str().unwrap()])
        .env_clear()
        .envs(TestServer::base_env(dir))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lookout backup")
}

/// Kills `child` with SIGKILL once `ready` holds, and asserts it had not finished by then.
fn kill_when(child: &mut Child, what: &str, ready: impl Fn() -> bool) {
    wait_for(what, Duration::from_secs(60), || {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the backup finished ({status}) before {what}: the dataset is too small");
        }
        ready().then_some(())
    });
    child.kill().unwrap();
    child.wait().unwrap();
}

fn assert_nothing_verifies(dir: &Path, out: &Path) {
    assert!(!out.exists(), "a killed backup left {}", out.display());
    let partial = with_suffix(out, ".partial");
    if partial.exists() {
        let output = lookout(dir, &["backup", "--verify", partial.to_str().unwrap()]);
        assert_eq!(
            output.status.code(),
            Some(4),
            "a partial file verified: {}",
            text(&output.stderr)
        );
    }
}

#[test]
fn a_killed_backup_never_leaves_a_file_that_verifies() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let records = large_database(&dir, 60_000);
    let out = temp.path().join("big.lookout-backup");
    let partial = with_suffix(&out, ".partial");
    let work = with_suffix(&out, ".work");

    // Offline, killed while copying rows, then while compressing into the partial file.
    let mut child = spawn_backup(&dir, &out);
    kill_when(&mut child, "the copy to start", || {
        work.join("snapshot.redb").exists()
    });
    assert_nothing_verifies(&dir, &out);
    let mut child = spawn_backup(&dir, &out);
    kill_when(&mut child, "the partial file to grow", || {
        std::fs::metadata(&partial).is_ok_and(|m| m.len() > 64 * 1024)
    });
    assert_nothing_verifies(&dir, &out);

    // Online: the CLI is killed while the server snapshots; the server cancels and cleans up.
    let server = TestServer::builder().data_dir(&dir).start();
    let mut child = spawn_backup(&dir, &out);
    let work_dirs = || -> Vec<String> {
        std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".backup-"))
            .collect()
    };
    kill_when(&mut child, "the server's snapshot to start", || {
        !work_dirs().is_empty()
    });
    assert_nothing_verifies(&dir, &out);
    wait_for(
        "the server to remove its work dir",
        Duration::from_secs(60),
        || work_dirs().is_empty().then_some(()),
    );

    // The next run replaces the leftovers with a complete backup that verifies and restores.
    let output = server.cli(&["backup", "--out", out.to_str().unwrap(), "--json"], "");
    let manifest = json_of(&output, "backup after the killed ones");
    assert_eq!(manifest["tables"]["orgid_org"], records);
    assert!(!partial.exists() && !work.exists());
    let verified = json_of(
        &lookout(
            &dir,
            &["backup", "--verify", out.to_str().unwrap(), "--json"],
        ),
        "verify",
    );
    assert_eq!(verified, manifest);
}

// ---- progress ----------------------------------------------------------------------------

#[test]
fn progress_is_drawn_on_a_terminal_and_nowhere_else() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    large_database(&dir, 20_000);
    let out = temp.path().join("tty.lookout-backup");
    // script(1) runs the command on a pseudo-terminal and copies what it drew to our pipe.
    let command = format!("{BIN} backup --out {}", out.display());
    let output = Command::new("script")
        .args(["--quiet", "--return", "--command", &command, "/dev/null"])
        .env_clear()
        .envs(TestServer::base_env(&dir))
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .expect("script(1) from util-linux");
    let drawn = text(&output.stdout);
    assert!(output.status.success(), "{drawn}");
    for label in ["copying rows", "compressing", "verifying", "unpacking"] {
        assert!(
            drawn.contains(label),
            "no {label:?} on the terminal: {drawn:?}"
        );
    }
    assert!(
        drawn.contains("\r\u{1b}[2K"),
        "the bar redraws in place: {drawn:?}"
    );
    assert!(drawn.contains("backup written to"), "{drawn:?}");

    // The same command without a terminal prints its result and nothing on stderr.
    let output = lookout(&dir, &["backup", "--out", out.to_str().unwrap()]);
    assert!(output.status.success());
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
}
