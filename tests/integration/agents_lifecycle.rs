//! Agents across a server restart and across organisations: `lookout agent` reconnects by
//! itself when the server comes back, and a shell ticket minted in one organisation cannot
//! open a terminal on another organisation's agent. The token can stay off the command line.

use std::net::TcpListener;
use std::time::Duration;

use crate::agents_support::{
    AgentProcess, enrol, online_agent, open_refused, open_websocket, read_until, runtime,
    server_with_owner, ticket, type_bytes, wait_agent,
};
use crate::auth_support::{add_user, add_user_in, sign_in};
use crate::harness::{TestServer, wait_for};

/// A port free right now on loopback. The server must come back on the address the agent
/// dials, so the test picks the port instead of letting the server take port 0 each start.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

#[test]
fn the_agent_reconnects_by_itself_after_a_server_restart() {
    let listen = format!("127.0.0.1:{}", free_port());
    let mut server = TestServer::builder()
        .env("API_RATE_PER_MIN", "100000")
        .env("LOOKOUT_LISTEN", &listen)
        .start();
    add_user(&server, "owner@example.com", "owner");
    let session = sign_in(&server, "owner@example.com");
    let (token_id, token) = enrol(&server, &session, "web-1");
    let process = AgentProcess::start(&server, &token, &[]);
    let before = wait_agent(&server, &session, &token_id, "agent online", |agent| {
        agent["status"] == "online"
    });

    // A graceful stop, then a start on the same address and data dir. The hub of live
    // connections is memory only, so `online` afterwards means the agent connected again.
    server.restart();
    assert_eq!(server.addr.to_string(), listen);
    let after = wait_agent(&server, &session, &token_id, "agent back online", |agent| {
        agent["status"] == "online"
    });
    assert_eq!(
        after["id"], before["id"],
        "the host came back as a new agent"
    );

    // The reconnected agent runs terminals again.
    let agent_id = after["id"].as_str().unwrap();
    let url = ticket(&server, &session, agent_id)["url"]
        .as_str()
        .unwrap()
        .to_string();
    runtime().block_on(async {
        let mut terminal = open_websocket(&url, None, None).await.expect("terminal");
        type_bytes(&mut terminal, "echo back-$((40+2))\n").await;
        read_until(&mut terminal, "back-42").await;
    });
    // One process, welcomed twice: it reconnected rather than being started again.
    wait_for(
        "a second welcome in the agent log",
        Duration::from_secs(5),
        || (process.log().matches("welcomed by the server").count() >= 2).then_some(()),
    );
}

#[test]
fn a_ticket_of_one_organisation_cannot_open_another_organisations_agent() {
    let (server, owner_a) = server_with_owner();
    let (_agent_a, agent_a) = online_agent(&server, &owner_a, "web-a", &[]);
    add_user_in(&server, "bob@example.com", "owner", Some("Elsewhere"));
    let owner_b = sign_in(&server, "bob@example.com");
    let (_agent_b, agent_b) = online_agent(&server, &owner_b, "web-b", &[]);
    let (a_id, b_id) = (
        agent_a["id"].as_str().unwrap(),
        agent_b["id"].as_str().unwrap(),
    );

    // Organisation A's admin cannot even mint a ticket for B's agent: it does not exist for them.
    let path = format!("/api/v1/agents/{b_id}/shell/ticket");
    assert_eq!(owner_a.post_empty(&server, &path).status, 404);

    // A's ticket, presented at B's agent, is refused and spent.
    let minted = ticket(&server, &owner_a, a_id);
    let secret = minted["ticket"].as_str().unwrap();
    let foreign = server
        .url(&format!("/api/v1/agents/{b_id}/shell?ticket={secret}"))
        .replace("http://", "ws://");
    let runtime = runtime();
    let refused = runtime.block_on(open_refused(&foreign, None, None));
    assert_eq!(
        (refused.status, refused.code.as_str()),
        (401, "invalid_ticket")
    );
    let spent = runtime.block_on(open_refused(minted["url"].as_str().unwrap(), None, None));
    assert_eq!((spent.status, spent.code.as_str()), (401, "invalid_ticket"));
}

/// The token can stay out of the process list (which every local user can read): from
/// `LOOKOUT_AGENT_TOKEN`, as the systemd unit passes it, or from `--token-file`.
#[test]
fn the_token_can_come_from_the_environment_or_a_file_and_stays_off_the_command_line() {
    let (server, session) = server_with_owner();
    let (env_id, env_token) = enrol(&server, &session, "from-env");
    let agent = AgentProcess::start_with(&server, &[], &[("LOOKOUT_AGENT_TOKEN", &env_token)]);
    wait_agent(&server, &session, &env_id, "agent online", |a| {
        a["status"] == "online"
    });
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", agent.pid())).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains(&env_token));

    let (file_id, file_token) = enrol(&server, &session, "from-file");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.token");
    std::fs::write(&path, format!("{file_token}\n")).unwrap();
    let path = path.to_str().unwrap();
    let _agent = AgentProcess::start_with(&server, &["--token-file", path], &[]);
    wait_agent(&server, &session, &file_id, "agent online", |a| {
        a["status"] == "online"
    });

    let mut without = AgentProcess::start_with(&server, &[], &[]);
    assert_eq!(without.wait_exit(Duration::from_secs(10)), Some(1));
    // The log is read on its own thread: give it a moment after the exit.
    wait_for("the missing-token message", Duration::from_secs(5), || {
        without.log().contains("LOOKOUT_AGENT_TOKEN").then_some(())
    });
}
