//! `TestServer`: starts the built binary with `LOOKOUT_LISTEN=127.0.0.1:0` and a temp data
//! dir, reads the `listening on` line, waits for `/healthz`, kills the child on drop and
//! prints its log when the test failed. `run_cli` runs other subcommands on the same dir.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_lookout");

/// Polls `check` until it returns `Some` or `deadline` passes.
pub fn wait_for<T>(what: &str, deadline: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + deadline;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < until,
            "timed out after {deadline:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http client")
}

/// A server process and everything needed to restart it on the same data dir.
pub struct TestServer {
    child: Option<Child>,
    pub addr: SocketAddr,
    pub data_dir: PathBuf,
    env: Vec<(String, String)>,
    /// A command that runs the binary somewhere else (a namespace), empty for none.
    launcher: Vec<PathBuf>,
    /// Every stdout line so far (the setup URL, `listening on`), over all starts.
    stdout: Arc<Mutex<Vec<String>>>,
    /// Index in `stdout` of the first line of the latest start.
    latest_start: usize,
    /// The log (stderr) of every run of this server, printed when a test fails.
    log: Arc<Mutex<String>>,
    _temp: Option<tempfile::TempDir>,
}

pub struct ServerBuilder {
    env: Vec<(String, String)>,
    data_dir: Option<PathBuf>,
    launcher: Vec<PathBuf>,
}

impl ServerBuilder {
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Uses `dir` as the data dir instead of a fresh temp dir.
    pub fn data_dir(mut self, dir: &Path) -> Self {
        self.data_dir = Some(dir.to_path_buf());
        self
    }

    /// Runs the server inside `mount`'s namespace, on the data dir `data` of that tmpfs (every
    /// start: a restart sees the same mount).
    pub fn inside(mut self, mount: &TmpfsMount, data: &str) -> Self {
        self.launcher = mount.launcher();
        self.data_dir = Some(mount.inside().join(data));
        self
    }

    pub fn start(self) -> TestServer {
        let (temp, data_dir) = match self.data_dir {
            Some(dir) => (None, dir),
            None => {
                let temp = tempfile::tempdir().expect("temp dir");
                let dir = temp.path().join("data");
                (Some(temp), dir)
            }
        };
        let mut server = TestServer {
            child: None,
            addr: "127.0.0.1:0".parse().unwrap(),
            data_dir,
            env: self.env,
            launcher: self.launcher,
            stdout: Arc::default(),
            latest_start: 0,
            log: Arc::default(),
            _temp: temp,
        };
        server.spawn();
        server
    }
}

impl TestServer {
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            env: Vec::new(),
            data_dir: None,
            launcher: Vec::new(),
        }
    }

    pub fn start() -> TestServer {
        TestServer::builder().start()
    }

    /// The environment every lookout process of this test gets (and nothing from the host).
    pub fn base_env(data_dir: &Path) -> Vec<(String, String)> {
        vec![
            ("LOOKOUT_DATA_DIR".into(), data_dir.display().to_string()),
            ("LOOKOUT_LISTEN".into(), "127.0.0.1:0".into()),
            ("LOG_LEVEL".into(), "info".into()),
        ]
    }

    fn spawn(&mut self) {
        let mut command = lookout_command(&self.launcher);
        command
            .arg("serve")
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in Self::base_env(&self.data_dir)
            .into_iter()
            .chain(self.env.clone())
        {
            command.env(key, value);
        }
        self.latest_start = self.stdout.lock().unwrap().len();
        let mut child = command.spawn().expect("spawn lookout serve");
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (listening_tx, listening_rx) = mpsc::channel();
        let lines = self.stdout.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("listening on ") {
                    let _ = listening_tx.send(addr.to_string());
                }
                lines.lock().unwrap().push(line);
            }
        });
        let log = self.log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        self.child = Some(child);
        self.addr = self.await_listening(listening_rx);
        let url = self.url("/healthz");
        wait_for("healthz", Duration::from_secs(10), || {
            http().get(&url).send().ok().filter(|r| r.status() == 200)
        });
    }

    fn await_listening(&mut self, listening: Receiver<String>) -> SocketAddr {
        match listening.recv_timeout(Duration::from_secs(20)) {
            Ok(addr) => addr.parse().expect("listening address"),
            Err(_) => {
                let status = self
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten());
                panic!(
                    "server did not print `listening on` (exit: {status:?})\n{}",
                    self.log()
                );
            }
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server running").id()
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn stdout_lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    /// The token of the setup URL printed by the latest start, if any.
    pub fn setup_token(&self) -> Option<String> {
        let lines = self.stdout_lines();
        lines[self.latest_start.min(lines.len())..]
            .iter()
            .rev()
            .find_map(|line| {
                line.split("/setup?token=")
                    .nth(1)
                    .map(|t| t.trim().to_string())
            })
    }

    /// Sends SIGTERM and waits for the process (at most `deadline`).
    pub fn terminate(&mut self, deadline: Duration) -> ExitStatus {
        let mut child = self.child.take().expect("server running");
        signal(child.id(), libc::SIGTERM);
        let until = Instant::now() + deadline;
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            if Instant::now() > until {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "server did not exit within {deadline:?} of SIGTERM\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same data dir and environment.
    pub fn restart(&mut self) {
        if self.child.is_some() {
            self.terminate(Duration::from_secs(15));
        }
        self.log.lock().unwrap().push_str("---- restart ----\n");
        self.spawn();
    }

    /// `lookout user create` with `role` (in the `default` organisation, made when missing).
    pub fn add_user(&self, email: &str, role: &str, password: &str) {
        let mut args = vec!["user", "create", "--password-stdin"];
        args.extend(["--email", email, "--role", role]);
        let output = self.cli(&args, &format!("{password}\n"));
        assert!(
            output.status.success(),
            "user create {email}: {}",
            text(&output.stderr)
        );
    }

    /// Runs `lookout ARGS` against this server's data dir with `stdin` as input.
    pub fn cli(&self, args: &[&str], stdin: &str) -> Output {
        run_cli_in(&self.launcher, &self.data_dir, &self.env, args, stdin)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("---- lookout log ----\n{}", self.log());
        }
    }
}

/// The binary, run through `launcher` when there is one.
fn lookout_command(launcher: &[PathBuf]) -> Command {
    let Some((program, args)) = launcher.split_first() else {
        return Command::new(BIN);
    };
    let mut command = Command::new(program);
    command.args(args).arg(BIN);
    command
}

/// Runs a lookout subcommand with the test environment for `data_dir` plus `env`.
pub fn run_cli(data_dir: &Path, env: &[(String, String)], args: &[&str], stdin: &str) -> Output {
    run_cli_in(&[], data_dir, env, args, stdin)
}

/// `run_cli`, through `launcher` when it is not empty.
fn run_cli_in(
    launcher: &[PathBuf],
    data_dir: &Path,
    env: &[(String, String)],
    args: &[&str],
    stdin: &str,
) -> Output {
    let mut command = lookout_command(launcher);
    command
        .args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in TestServer::base_env(data_dir)
        .into_iter()
        .chain(env.iter().cloned())
    {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("spawn lookout");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        // A command that exits before reading (a usage error) closes the pipe: not a failure.
        .or_else(|err| match err.kind() {
            std::io::ErrorKind::BrokenPipe => Ok(()),
            _ => Err(err),
        })
        .expect("write stdin");
    child.wait_with_output().expect("lookout output")
}

pub fn signal(pid: u32, signal: i32) {
    let pid = i32::try_from(pid).expect("pid");
    // SAFETY: kill(2) with a pid we spawned and a valid signal number has no memory effects.
    let result = unsafe { libc::kill(pid, signal) };
    assert_eq!(result, 0, "kill({pid}, {signal}) failed");
}

/// Text of an output stream, for assertions and messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A tmpfs of `size` for one test, needing no root: it is mounted inside a user and mount
/// namespace of its own (`unshare --user --map-root-user --mount`), held open by a small
/// process that waits on its stdin. Only that namespace sees the mount; every other process
/// (the server, the CLI, the test itself) reaches it through the holder's root directory,
/// `/proc/<holder>/root/<at>`, which is the path in `.0`. Dropping it ends the holder, and the
/// kernel unmounts the tmpfs with the namespace (also when the test process dies: stdin closes).
pub struct TmpfsMount(pub PathBuf, Child, PathBuf);

impl TmpfsMount {
    pub fn new(at: &Path, size: &str) -> TmpfsMount {
        // `$0` is the mount point, `$1` the size; `read` returns when the test closes stdin.
        let script = r#"mount -t tmpfs -o "size=$1" tmpfs "$0" && echo mounted && read _"#;
        let spawned = Command::new("unshare")
            .args(["--user", "--map-root-user", "--mount", "sh", "-c", script])
            .arg(at)
            .arg(size)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut holder = spawned.unwrap_or_else(|err| {
            panic!("the full-disk tests need `unshare` (util-linux) to mount a tmpfs: {err}")
        });
        let mut ready = String::new();
        let stdout = holder.stdout.take().expect("holder stdout");
        let _ = BufReader::new(stdout).read_line(&mut ready);
        if ready.trim() != "mounted" {
            let _ = holder.kill();
            let output = holder.wait_with_output().expect("holder output");
            panic!(
                "cannot mount a tmpfs in an unprivileged user and mount namespace: the full-disk \
                 tests need user namespaces (sysctl user.max_user_namespaces > 0, and \
                 kernel.unprivileged_userns_clone=1 or \
                 kernel.apparmor_restrict_unprivileged_userns=0 where those exist): {}",
                text(&output.stderr).trim()
            );
        }
        let inside = at.strip_prefix("/").expect("an absolute mount point");
        let path = PathBuf::from(format!("/proc/{}/root", holder.id())).join(inside);
        TmpfsMount(path, holder, at.to_path_buf())
    }

    /// The mount point as processes inside the namespace see it. Programs that resolve their
    /// paths (tantivy canonicalises its directory) need this, and to run inside.
    pub fn inside(&self) -> &Path {
        &self.2
    }

    /// The command that runs a program inside the namespace, with the caller's credentials.
    pub fn launcher(&self) -> Vec<PathBuf> {
        let mut launcher = vec![program_on_path("nsenter")];
        launcher.extend(["--user", "--mount", "--preserve-credentials"].map(PathBuf::from));
        launcher.push(format!("--target={}", self.1.id()).into());
        launcher
    }
}

/// The full path of `name` on this process's `PATH` (children get an empty environment).
fn program_on_path(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("the full-disk tests need `{name}` (util-linux) on PATH"))
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = self.1.kill();
        let _ = self.1.wait();
    }
}
