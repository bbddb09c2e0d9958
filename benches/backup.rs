//! Backup, verification and restore speed through the real binary, on a database of
//! 100 000 users (each with an argon2id hash, an e-mail index row and a membership in one of
//! 1 000 organisations, with its reverse index row): about 400 000 rows.
//!
//! Run: `cargo bench --bench backup` (`-- --users N` changes the number of users).
//! Each step runs three times on a warm page cache; the median is printed. The online backup
//! goes through a running `lookout serve` and its admin socket.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redb::{Database, Durability, TableDefinition};

use lookout::accounts::model::{Membership, Org, Role, User, org_name_key};
use lookout::clock::Timestamp;
use lookout::store::{codec, migrations, tables};

const BIN: &str = env!("CARGO_BIN_EXE_lookout");
const ORGS: usize = 1_000;

/// An argon2id PHC string with a pseudo-random salt and digest, as real records carry: random
/// bytes do not compress, so the backup's size is honest.
fn password_hash(state: &mut u64) -> String {
    use base64::Engine;
    let mut bytes = [0u8; 48];
    for chunk in bytes.chunks_mut(8) {
        // xorshift64: deterministic, so every run measures the same data.
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        chunk.copy_from_slice(&state.to_le_bytes());
    }
    let encode = |part: &[u8]| base64::engine::general_purpose::STANDARD_NO_PAD.encode(part);
    format!(
        "$argon2id$v=19$m=19456,t=2,p=1${}${}",
        encode(&bytes[..16]),
        encode(&bytes[16..])
    )
}

fn bytes_table(name: &'static str) -> TableDefinition<'static, &'static str, &'static [u8]> {
    TableDefinition::new(name)
}

fn text_table(name: &'static str) -> TableDefinition<'static, &'static str, &'static str> {
    TableDefinition::new(name)
}

/// Writes the dataset with lookout's own record types and codec; returns the row count.
fn build_dataset(dir: &Path, users: usize) -> u64 {
    lookout::store::data_dir::create_private_dir(dir).expect("data dir");
    let database = Database::create(dir.join("lookout.redb")).expect("database");
    migrations::migrate(&database).expect("migrate");
    let now = Timestamp::from_unix_millis(1_795_348_800_000);
    let mut txn = database.begin_write().expect("txn");
    txn.set_durability(Durability::Immediate)
        .expect("durability");
    let orgs: Vec<Org> = (0..ORGS)
        .map(|index| Org::new(format!("Organisation {index:04}"), now))
        .collect();
    {
        let mut org_table = txn.open_table(bytes_table(tables::ORGS)).unwrap();
        let mut org_names = txn.open_table(text_table(tables::ORG_NAMES)).unwrap();
        for org in &orgs {
            let record = codec::encode(org).unwrap();
            org_table
                .insert(org.id.as_str(), record.as_slice())
                .unwrap();
            org_names
                .insert(org_name_key(&org.name).as_str(), org.id.as_str())
                .unwrap();
        }
        let mut user_table = txn.open_table(bytes_table(tables::USERS)).unwrap();
        let mut emails = txn.open_table(text_table(tables::USER_EMAILS)).unwrap();
        let mut memberships = txn.open_table(bytes_table(tables::MEMBERSHIPS)).unwrap();
        let mut user_orgs = txn.open_table(text_table(tables::USER_ORGS)).unwrap();
        let mut random = 0x9e37_79b9_7f4a_7c15_u64;
        for index in 0..users {
            let user = User::new(
                format!("person{index:06}@example.com"),
                password_hash(&mut random),
                now,
            );
            let org = &orgs[index % ORGS];
            let membership = Membership::active(org.id.clone(), user.id.clone(), Role::Member, now);
            let user_record = codec::encode(&user).unwrap();
            user_table
                .insert(user.id.as_str(), user_record.as_slice())
                .unwrap();
            emails
                .insert(user.email.as_str(), user.id.as_str())
                .unwrap();
            let key = tables::composite_key(org.id.as_str(), user.id.as_str());
            let membership_record = codec::encode(&membership).unwrap();
            memberships
                .insert(key.as_str(), membership_record.as_slice())
                .unwrap();
            let reverse = tables::composite_key(user.id.as_str(), org.id.as_str());
            user_orgs.insert(reverse.as_str(), org.id.as_str()).unwrap();
        }
    }
    txn.commit().expect("commit");
    (2 * ORGS + 4 * users) as u64
}

/// Runs `lookout ARGS` three times (after `before` each time) and returns the median time.
fn time_command(data_dir: &Path, args: &[&str], before: impl Fn()) -> Duration {
    let mut times: Vec<Duration> = (0..3)
        .map(|_| {
            before();
            let started = Instant::now();
            let output = Command::new(BIN)
                .args(args)
                .env_clear()
                .env("LOOKOUT_DATA_DIR", data_dir)
                .output()
                .expect("run lookout");
            let elapsed = started.elapsed();
            assert!(
                output.status.success(),
                "lookout {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            elapsed
        })
        .collect();
    times.sort();
    times[1]
}

/// Times `backup --out` through a server running on `data_dir`.
fn time_online_backup(data_dir: &Path, file: &str) -> Duration {
    let mut server = Command::new(BIN)
        .arg("serve")
        .env_clear()
        .env("LOOKOUT_DATA_DIR", data_dir)
        .env("LOOKOUT_LISTEN", "127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lookout serve");
    let stdout = server.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    while let Some(Ok(line)) = lines.next() {
        if line.starts_with("listening on ") {
            break;
        }
    }
    let time = time_command(data_dir, &["backup", "--out", file], || {});
    let _ = server.kill();
    let _ = server.wait();
    time
}

fn main() {
    let users: usize = std::env::args()
        .skip_while(|arg| arg != "--users")
        .nth(1)
        .and_then(|value| value.parse().ok())
        .unwrap_or(100_000);
    let temp = tempfile::tempdir().expect("temp dir");
    let source = temp.path().join("source");
    let started = Instant::now();
    let rows = build_dataset(&source, users);
    let database_bytes = std::fs::metadata(source.join("lookout.redb"))
        .unwrap()
        .len();
    println!(
        "dataset: {users} users, {rows} rows, database {:.1} MiB (built in {:.1?})",
        database_bytes as f64 / 1048576.0,
        started.elapsed()
    );

    let file = temp.path().join("bench.lookout-backup");
    let file_arg = file.to_str().unwrap();
    let backup = time_command(&source, &["backup", "--out", file_arg], || {});
    let file_bytes = std::fs::metadata(&file).unwrap().len();
    let online = time_online_backup(&source, file_arg);
    let verify = time_command(&source, &["backup", "--verify", file_arg], || {});
    let target = temp.path().join("restored");
    let restore = time_command(&target, &["restore", file_arg], || {
        let _ = std::fs::remove_dir_all(&target);
    });
    let report = |what: &str, time: Duration| {
        let seconds = time.as_secs_f64();
        println!(
            "{what:<28} {seconds:>6.2} s  {:>8.0} rows/s  {:>6.1} MiB/s of database",
            rows as f64 / seconds,
            database_bytes as f64 / 1048576.0 / seconds
        );
    };
    println!(
        "backup file: {:.1} MiB ({:.1}% of the database)",
        file_bytes as f64 / 1048576.0,
        file_bytes as f64 * 100.0 / database_bytes as f64
    );
    report("backup --out (offline)", backup);
    report("backup --out (online)", online);
    report("backup --verify", verify);
    report("restore", restore);
}
