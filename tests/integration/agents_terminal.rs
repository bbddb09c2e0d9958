//! The terminal through the real binary: single-use shell tickets, the Origin check, an
//! interactive round trip to a PTY on a real `lookout agent`, resize, `--no-shell`, and the
//! audit entries and session list (`GET /api/v1/agents/{id}/sessions`) of every session, and
//! the rule that a terminal never outlives its user's rights (checked at redemption, closed
//! within a second of a demotion, removal, second-factor reset or sign-out everywhere).

use std::time::{Duration, Instant};

use futures_util::SinkExt;
use reqwest::Method;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::agents_support::{
    OWNER, Revoke, audit_entries, online_agent, open_refused, open_websocket, process_ended,
    read_close, read_until, runtime, server_with_owner, shell_pid, signed_in_admin, ticket,
    type_bytes,
};
use crate::auth_support::{add_user, bearer, create_key, enrol as enrol_two_factor, sign_in};
use crate::harness::{text, wait_for};

#[test]
fn a_terminal_runs_commands_resizes_and_is_audited() {
    let (server, session) = server_with_owner();
    let (_process, agent) = online_agent(&server, &session, "web-1", &[]);
    let agent_id = agent["id"].as_str().unwrap();
    let minted = ticket(&server, &session, agent_id);
    let secret = minted["ticket"].as_str().unwrap();
    assert_eq!(secret.len(), 43, "32 bytes in base64url: {minted}");
    assert!(minted["expires_at"].as_str().unwrap().ends_with('Z'));
    let url = minted["url"].as_str().unwrap().to_string();
    assert!(url.starts_with("ws://") && url.contains(agent_id) && url.ends_with(secret));
    let origin = server.url("");

    let runtime = runtime();
    runtime.block_on(async {
        let mut terminal = open_websocket(&url, Some(&origin), None)
            .await
            .expect("terminal");
        type_bytes(&mut terminal, "echo hello\n").await;
        read_until(&mut terminal, "hello").await;
        // The typed command echoes too; only the shell's arithmetic proves it ran.
        type_bytes(&mut terminal, "echo result-$((20+22))\n").await;
        read_until(&mut terminal, "result-42").await;
        let resize = json!({"type": "resize", "cols": 123, "rows": 45}).to_string();
        terminal.send(Message::Text(resize.into())).await.unwrap();
        type_bytes(&mut terminal, "stty size\n").await;
        read_until(&mut terminal, "45 123").await;
        type_bytes(&mut terminal, "exit\n").await;
        let (code, _) = read_close(&mut terminal).await;
        assert_eq!(code, 1000);
    });

    let ended = wait_for("audit of the session end", Duration::from_secs(10), || {
        let entries = audit_entries(&server, &session, "agent.shell.ended");
        (!entries.is_empty()).then_some(entries)
    });
    let started = audit_entries(&server, &session, "agent.shell.started");
    assert_eq!(started.len(), 1);
    assert_eq!(ended.len(), 1);
    for entry in started.iter().chain(&ended) {
        assert_eq!(entry["target"], agent_id);
        assert_eq!(entry["actor_user_id"], session.user_id().as_str());
    }
    assert!(ended[0]["detail"]["bytes_to_shell"].as_u64().unwrap() > 0);
    assert!(ended[0]["detail"]["bytes_from_shell"].as_u64().unwrap() > 0);

    // A second, short session: the list shows both, newest first, one per page with limit=1.
    let url = ticket(&server, &session, agent_id)["url"]
        .as_str()
        .unwrap()
        .to_string();
    runtime.block_on(async {
        let mut terminal = open_websocket(&url, None, None).await.expect("terminal");
        type_bytes(
            &mut terminal,
            "exit
",
        )
        .await;
        read_close(&mut terminal).await;
    });
    let sessions_path = format!("/api/v1/agents/{agent_id}/sessions");
    let sessions = wait_for("both sessions ended", Duration::from_secs(10), || {
        let reply = session.get(&server, &sessions_path);
        assert_eq!(reply.status, 200, "{}", text(&reply.body));
        let items = reply.json()["items"].as_array().unwrap().clone();
        let ended = items.iter().all(|item| item["ended_at"].is_string());
        (items.len() == 2 && ended).then_some(items)
    });
    let (newest, oldest) = (&sessions[0], &sessions[1]);
    assert!(newest["started_at"].as_str() >= oldest["started_at"].as_str());
    for item in &sessions {
        assert_eq!(item["agent_id"], agent_id);
        assert_eq!(item["user_id"], session.user_id().as_str());
        assert_eq!(item["user_email"], OWNER);
        assert!(item["ended_at"].as_str() >= item["started_at"].as_str());
        assert!(item["reason"].is_string(), "{item}");
    }
    // The first session matches its audit entry byte for byte.
    assert_eq!(
        oldest["bytes_to_shell"],
        ended[0]["detail"]["bytes_to_shell"]
    );
    assert_eq!(
        oldest["bytes_from_shell"],
        ended[0]["detail"]["bytes_from_shell"]
    );
    assert_eq!(newest["bytes_to_shell"], "exit\n".len());
    let first_page = session
        .get(&server, &format!("{sessions_path}?limit=1"))
        .json();
    assert_eq!(first_page["items"][0]["id"], newest["id"]);
    let cursor = first_page["next_cursor"].as_str().expect("a next page");
    let second_page = session
        .get(&server, &format!("{sessions_path}?limit=1&cursor={cursor}"))
        .json();
    assert_eq!(second_page["items"][0]["id"], oldest["id"]);
    assert_eq!(second_page["next_cursor"], serde_json::Value::Null);
    let bad = session.get(&server, &format!("{sessions_path}?cursor=nope"));
    assert_eq!(bad.status, 400);

    // Admins only: a viewer is refused; an unknown agent is 404.
    add_user(&server, "viewer@example.com", "viewer");
    let viewer = sign_in(&server, "viewer@example.com");
    assert_eq!(viewer.get(&server, &sessions_path).status, 403);
    let unknown = session.get(
        &server,
        "/api/v1/agents/agt_01J00000000000000000000000/sessions",
    );
    assert_eq!(unknown.status, 404);
}

#[test]
fn tickets_work_once_for_their_agent_in_time_and_same_origin_only() {
    let (server, session) = server_with_owner();
    let (_first, agent) = online_agent(&server, &session, "web-1", &[]);
    let (_second, other) = online_agent(&server, &session, "web-2", &[]);
    let (agent_id, other_id) = (agent["id"].as_str().unwrap(), other["id"].as_str().unwrap());
    let origin = server.url("");
    let runtime = runtime();

    // A foreign Origin is refused before the ticket is touched: the same ticket works after.
    let url = ticket(&server, &session, agent_id)["url"]
        .as_str()
        .unwrap()
        .to_string();
    let refused = runtime.block_on(open_refused(&url, Some("https://evil.example"), None));
    assert_eq!(
        (refused.status, refused.code.as_str()),
        (403, "forbidden_origin")
    );
    let terminal = runtime.block_on(open_websocket(&url, Some(&origin), None));
    assert!(terminal.is_ok(), "{:?}", terminal.err());
    drop(terminal);
    // Used once: refused the second time, with or without an Origin.
    for origin in [Some(origin.as_str()), None] {
        let again = runtime.block_on(open_refused(&url, origin, None));
        assert_eq!((again.status, again.code.as_str()), (401, "invalid_ticket"));
    }

    // A ticket for one agent does not open another, and is spent by trying.
    let foreign = ticket(&server, &session, agent_id);
    let secret = foreign["ticket"].as_str().unwrap();
    let elsewhere = server
        .url(&format!("/api/v1/agents/{other_id}/shell?ticket={secret}"))
        .replace("http://", "ws://");
    let refused = runtime.block_on(open_refused(&elsewhere, None, None));
    assert_eq!(
        (refused.status, refused.code.as_str()),
        (401, "invalid_ticket")
    );
    let url = foreign["url"].as_str().unwrap();
    let spent = runtime.block_on(open_refused(url, None, None));
    assert_eq!(spent.status, 401);

    // Made up or missing: refused.
    let bogus = server
        .url(&format!("/api/v1/agents/{agent_id}/shell?ticket=AAAA"))
        .replace("http://", "ws://");
    let refused = runtime.block_on(open_refused(&bogus, None, None));
    assert_eq!(
        (refused.status, refused.code.as_str()),
        (401, "invalid_ticket")
    );

    // Expired: a ticket lives 30 s. The wait is for the wall clock, which the server reads.
    let late = ticket(&server, &session, agent_id);
    std::thread::sleep(Duration::from_secs(31));
    let url = late["url"].as_str().unwrap();
    let refused = runtime.block_on(open_refused(url, None, None));
    assert_eq!(
        (refused.status, refused.code.as_str()),
        (401, "invalid_ticket")
    );
}

#[test]
fn no_shell_agents_refuse_terminals_and_viewers_cannot_mint_tickets() {
    let (server, session) = server_with_owner();
    let (_process, agent) = online_agent(&server, &session, "locked-down", &["--no-shell"]);
    assert_eq!(agent["shell_enabled"], false);
    let agent_id = agent["id"].as_str().unwrap();
    let url = ticket(&server, &session, agent_id)["url"]
        .as_str()
        .unwrap()
        .to_string();
    let runtime = runtime();
    let (code, reason) = runtime.block_on(async {
        let mut terminal = open_websocket(&url, None, None).await.expect("upgrade");
        read_close(&mut terminal).await
    });
    assert_eq!(code, 4403, "{reason}");
    assert!(reason.contains("--no-shell"), "{reason}");
    assert!(audit_entries(&server, &session, "agent.shell.started").is_empty());

    add_user(&server, "viewer@example.com", "viewer");
    let viewer = sign_in(&server, "viewer@example.com");
    let path = format!("/api/v1/agents/{agent_id}/shell/ticket");
    let refused = viewer.post(&server, &path, &json!({}));
    assert_eq!(refused.status, 403, "{}", text(&refused.body));

    // Tickets come from a signed-in session: an admin's API key is refused.
    let key = create_key(&server, &session, "automation");
    let key = key["key"].as_str().expect("api key");
    let by_key = bearer(&server, key, Method::POST, &path)
        .json(&json!({}))
        .send()
        .unwrap();
    assert_eq!(by_key.status(), 403, "an API key minted a shell ticket");
}

#[test]
fn a_terminal_hears_in_its_close_frame_how_it_ended() {
    let (server, session) = server_with_owner();
    let (mut process, agent) = online_agent(&server, &session, "web-1", &[]);
    let agent_id = agent["id"].as_str().unwrap().to_string();
    let open =
        |url: String| async move { open_websocket(&url, None, None).await.expect("terminal") };
    let runtime = runtime();
    let url = || {
        ticket(&server, &session, &agent_id)["url"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let ended_with = |(code, reason): (u16, String), expected: u16, word: &str| {
        assert_eq!(code, expected, "{reason}");
        assert!(reason.starts_with(&format!("{word}: ")), "{reason}");
    };
    // The shell exits: 1000, `shell_exited`. (Tickets are minted outside the runtime.)
    let first = url();
    let closed = runtime.block_on(async {
        let mut terminal = open(first).await;
        type_bytes(&mut terminal, "exit\n").await;
        read_close(&mut terminal).await
    });
    ended_with(closed, 1000, "shell_exited");
    // The agent dies under a running terminal: 4410, `agent_gone`, not a shell exit.
    let second = url();
    let closed = runtime.block_on(async {
        let mut terminal = open(second).await;
        type_bytes(&mut terminal, "echo ready\n").await;
        read_until(&mut terminal, "ready").await;
        process.kill9();
        read_close(&mut terminal).await
    });
    ended_with(closed, 4410, "agent_gone");
    // It is offline now: 4404, `agent_offline`.
    let third = url();
    let closed = runtime.block_on(async { read_close(&mut open(third).await).await });
    ended_with(closed, 4404, "agent_offline");
}

#[test]
fn a_ticket_opens_nothing_once_its_user_lost_the_rights_it_was_minted_with() {
    let (server, owner) = server_with_owner();
    let (_process, agent) = online_agent(&server, &owner, "web-1", &[]);
    let agent_id = agent["id"].as_str().unwrap();
    let runtime = runtime();
    for (n, revoke) in [Revoke::Demote, Revoke::Remove, Revoke::LogoutEverywhere]
        .into_iter()
        .enumerate()
    {
        let admin = signed_in_admin(&server, &format!("admin-{n}@example.com"));
        let url = ticket(&server, &admin, agent_id)["url"]
            .as_str()
            .unwrap()
            .to_string();
        revoke.apply(&server, &owner, &admin);
        let refused = runtime.block_on(open_refused(&url, None, None));
        assert_eq!(
            (refused.status, refused.code.as_str()),
            (401, "invalid_ticket"),
            "{revoke:?}"
        );
    }
    assert!(audit_entries(&server, &owner, "agent.shell.started").is_empty());
    // The owner, whose rights did not change, still opens one.
    let url = ticket(&server, &owner, agent_id)["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(runtime.block_on(open_websocket(&url, None, None)).is_ok());
}

#[test]
fn an_open_terminal_closes_within_a_second_when_its_user_loses_rights() {
    let (server, owner) = server_with_owner();
    let (_process, agent) = online_agent(&server, &owner, "web-1", &[]);
    let agent_id = agent["id"].as_str().unwrap();
    let runtime = runtime();
    let revokes = [
        Revoke::Demote,
        Revoke::Remove,
        Revoke::LogoutEverywhere,
        Revoke::ResetTwoFactor,
    ];
    for (n, revoke) in revokes.into_iter().enumerate() {
        let admin = signed_in_admin(&server, &format!("admin-{n}@example.com"));
        if matches!(revoke, Revoke::ResetTwoFactor) {
            enrol_two_factor(&server, &admin);
        }
        let url = ticket(&server, &admin, agent_id)["url"]
            .as_str()
            .unwrap()
            .to_string();
        let (mut terminal, pid) = runtime.block_on(async {
            let mut terminal = open_websocket(&url, None, None).await.expect("terminal");
            let pid = shell_pid(&mut terminal).await;
            (terminal, pid)
        });
        let revoked_at = Instant::now();
        revoke.apply(&server, &owner, &admin);
        let (code, reason) = runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(1), read_close(&mut terminal))
                .await
                .unwrap_or_else(|_| panic!("{revoke:?}: the terminal stayed open for 1 s"))
        });
        let elapsed = revoked_at.elapsed();
        assert!(elapsed < Duration::from_secs(1), "{revoke:?}: {elapsed:?}");
        assert_eq!(code, 4401, "{revoke:?}: {reason}");
        assert!(reason.starts_with("access_revoked"), "{revoke:?}: {reason}");
        // The shell behind it is gone too: nothing typed there runs or echoes any more.
        wait_for("the shell ended", Duration::from_secs(5), || {
            process_ended(pid).then_some(())
        });

        let user_id = admin.user_id();
        let ended = wait_for("audit of the session end", Duration::from_secs(5), || {
            let entries = audit_entries(&server, &owner, "agent.shell.ended");
            entries.into_iter().find(|e| e["actor_user_id"] == user_id)
        });
        assert_eq!(ended["detail"]["reason"], "access_revoked", "{revoke:?}");
        let sessions = owner
            .get(&server, &format!("/api/v1/agents/{agent_id}/sessions"))
            .json();
        let row = sessions["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["user_id"] == user_id);
        assert_eq!(row.unwrap()["reason"], "access_revoked", "{revoke:?}");
    }
}
