//! `sentry-cli sourcemaps upload` against the real binary: the real CLI (`compat_cli_support`)
//! injects debug ids into an esbuild bundle and uploads its map as an artifact bundle with a
//! member's API key; Sentry events whose `debug_meta` names that debug id come back with their
//! minified frames resolved, whatever URL served the file. Then the limits of the upload
//! endpoints at their edges, and their credentials.

use reqwest::Method;
use serde_json::{Value, json};
use sha1::{Digest, Sha1};

use crate::auth_support::{add_user, create_key, sign_in};
use crate::compat_cli_support::*;
use crate::compat_support::*;
use crate::harness::{TestServer, text};
use crate::http_basics::{Reply, send};
use crate::ingest_support::*;

const MESSAGE: &str = "Cannot read properties of undefined (reading 'amount')";

/// A Sentry event of the thrown frames, served from `url`, with a `sourcemap` image for it
/// when `debug_id` is given.
fn sentry_event(frames: &[(String, u64, u64)], url: &str, debug_id: Option<&str>) -> Value {
    // Sentry lists frames oldest first.
    let sentry_frames: Vec<Value> = frames
        .iter()
        .rev()
        .map(|(function, line, column)| {
            json!({"abs_path": url, "filename": url, "function": function, "lineno": line,
                   "colno": column, "in_app": true})
        })
        .collect();
    let mut event = json!({
        "level": "error", "platform": "javascript",
        "sdk": {"name": "sentry.javascript.browser", "version": "10.5.0"},
        "exception": {"values": [{"type": "TypeError", "value": MESSAGE,
            "stacktrace": {"frames": sentry_frames}}]},
        "request": {"url": "https://shop.example.com/cart"}
    });
    if let Some(debug_id) = debug_id {
        event["debug_meta"] =
            json!({"images": [{"type": "sourcemap", "code_file": url, "debug_id": debug_id}]});
    }
    event
}

fn envelope(event: &Value) -> Vec<u8> {
    format!("{{}}\n{{\"type\":\"event\"}}\n{event}\n").into_bytes()
}

#[test]
fn sentry_cli_uploads_debug_id_maps_and_sentry_events_resolve_through_them() {
    let peers = installed();
    let app = tempfile::tempdir().expect("temp dir");
    let debug_id = build_app(&peers, app.path());
    let frames = thrown_frames(app.path());
    assert_eq!(frames.len(), 2, "{frames:?}");
    let (server, key) = sentry_server(&[]);
    let project = project_of(&server, &key);

    // An event that arrives before its map is stored unresolved, with its frames' debug id.
    let early_url = "https://early.example.org/app.min.js";
    let early = sentry_event(&frames, early_url, Some(&debug_id));
    let reply = post_envelope(&server, project, &keyed_query(), &[], envelope(&early));
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let before = wait_for_events(&server, &key, 1);
    assert!(
        before[0]["frames"][0].get("resolved").is_none(),
        "{before:#?}"
    );

    // The real CLI against the real server, with the owner's API key.
    let upload = upload_maps(&peers, app.path(), &server, &key, &["--release", "1.0.0"]);
    let report = text(&upload.stdout);
    assert!(report.contains("File processing complete"), "{report}");

    // The same minified file served from two places, both naming its debug id; a third
    // without the image cannot be resolved.
    let sent = [
        sentry_event(
            &frames,
            "https://shop.example.com/app.min.js",
            Some(&debug_id),
        ),
        sentry_event(
            &frames,
            "https://cdn.example.net/v9/app.min.js",
            Some(&debug_id),
        ),
        sentry_event(&frames, "https://cdn.example.net/v9/app.min.js", None),
    ];
    for event in &sent {
        let reply = post_envelope(&server, project, &keyed_query(), &[], envelope(event));
        assert_eq!(reply.status, 200, "{}", text(&reply.body));
    }
    let events = wait_for_events(&server, &key, 4);
    let by_file = |file: &str, with_image: bool| {
        events
            .iter()
            .find(|event| {
                event["frames"][0]["file"] == file
                    && event["frames"][0].get("debug_id").is_some() == with_image
            })
            .unwrap_or_else(|| panic!("no event from {file}: {events:#?}"))
    };
    let shop = by_file("https://shop.example.com/app.min.js", true);
    let cdn = by_file("https://cdn.example.net/v9/app.min.js", true);
    // The early event is resolved on read, through the map that arrived after it.
    let early = by_file(early_url, true);
    let plain = by_file("https://cdn.example.net/v9/app.min.js", false);
    assert_eq!(shop["frames"][0]["debug_id"], debug_id.to_ascii_lowercase());
    for event in [shop, cdn, early] {
        let top = &event["frames"][0]["resolved"];
        assert!(
            top["file"].as_str().unwrap().ends_with("src/cart.js"),
            "{top}"
        );
        assert_eq!(
            (top["line"].as_u64(), top["function"].as_str()),
            (Some(4), Some("total"))
        );
        let caller = &event["frames"][1]["resolved"];
        assert!(
            caller["file"].as_str().unwrap().ends_with("src/main.js"),
            "{caller}"
        );
        assert_eq!(caller["function"], "checkout");
    }
    assert!(plain["frames"][0].get("resolved").is_none());
    // Both resolved events carry the same original frames, and grouping read them
    // (fingerprint version 3): one group whatever URL served the file, another for the event
    // no map resolves.
    assert_eq!(shop["frames"][0]["resolved"], cdn["frames"][0]["resolved"]);
    assert_eq!(shop["group_id"], cdn["group_id"]);
    assert_ne!(shop["group_id"], plain["group_id"]);

    // Uploaded again without a release: another bundle, its map stored by debug id alone.
    let again = upload_maps(&peers, app.path(), &server, &key, &[]);
    assert!(text(&again.stdout).contains("File processing complete"));
}

/// `sentry-cli sourcemaps upload` of `dir/dist` to the server with `key` (checked to succeed).
fn upload_maps(
    peers: &std::path::Path,
    dir: &std::path::Path,
    server: &TestServer,
    key: &str,
    extra: &[&str],
) -> std::process::Output {
    let url = server.url("");
    let output = sentry_cli(peers, dir)
        .args(["--url", url.trim_end_matches('/'), "--auth-token", key])
        .args([
            "sourcemaps",
            "upload",
            "--org",
            "any-org",
            "--project",
            "web",
        ])
        .args(extra)
        .arg("dist")
        .output()
        .expect("sentry-cli");
    check("sentry-cli sourcemaps upload", &output);
    output
}

fn sha1_hex(bytes: &[u8]) -> String {
    Sha1::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A chunk upload of `chunks` as `file` fields named by their SHA-1 (or by `name`).
fn post_chunks(server: &TestServer, key: &str, chunks: &[(String, Vec<u8>)]) -> Reply {
    let boundary = "chunk-boundary-7d1";
    let mut body = Vec::new();
    for (name, bytes) in chunks {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    send(
        bearer(
            server,
            key,
            Method::POST,
            "/api/0/organizations/o/chunk-upload/",
        )
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body),
    )
}

fn named(bytes: Vec<u8>) -> (String, Vec<u8>) {
    (sha1_hex(&bytes), bytes)
}

fn assemble(server: &TestServer, key: &str, body: &Value) -> Reply {
    send(
        bearer(
            server,
            key,
            Method::POST,
            "/api/0/organizations/o/artifactbundle/assemble/",
        )
        .header("content-type", "application/json")
        .body(body.to_string()),
    )
}

#[test]
fn chunk_uploads_are_bounded_checked_and_need_a_member_key() {
    let (server, key) = sentry_server(&[]);
    let options_path = "/api/0/organizations/o/chunk-upload/";
    let options = send(bearer(&server, &key, Method::GET, options_path)).json();
    let chunk_size = options["chunkSize"].as_u64().unwrap() as usize;
    let per_request = options["chunksPerRequest"].as_u64().unwrap() as usize;
    assert_eq!(options["hashAlgorithm"], "sha1");
    assert_eq!(
        options["accept"],
        json!(["artifact_bundles", "artifact_bundles_v2"])
    );
    assert!(
        options["url"]
            .as_str()
            .unwrap()
            .starts_with("/api/0/organizations/")
    );

    // Credentials: none is 401, a viewer's key 403, for every route.
    let unsigned = send(reqwest::blocking::Client::new().get(server.url(options_path)));
    unsigned.problem(401, "unauthorized");
    let viewer = viewer_key(&server, &key);
    send(bearer(&server, &viewer, Method::GET, options_path)).problem(403, "forbidden");
    post_chunks(&server, &viewer, &[named(b"x".to_vec())]).problem(403, "forbidden");
    let body = json!({"checksum": sha1_hex(b"x"), "chunks": [sha1_hex(b"x")]});
    assemble(&server, &viewer, &body).problem(403, "forbidden");

    // A chunk of exactly the chunk size is kept; one byte more is 413; a wrong name is 400.
    assert_eq!(
        post_chunks(&server, &key, &[named(vec![7; chunk_size])]).status,
        200
    );
    post_chunks(&server, &key, &[named(vec![8; chunk_size + 1])]).problem(413, "body_too_large");
    let wrong = vec![(sha1_hex(b"other"), b"this".to_vec())];
    post_chunks(&server, &key, &wrong).problem(400, "invalid_payload");

    // Chunks per request, at the edge.
    let small = |from: usize, count: usize| -> Vec<(String, Vec<u8>)> {
        (from..from + count)
            .map(|i| named(i.to_be_bytes().to_vec()))
            .collect()
    };
    post_chunks(&server, &key, &small(0, per_request + 1)).problem(413, "body_too_large");
    assert_eq!(
        post_chunks(&server, &key, &small(0, per_request)).status,
        200
    );
    // Chunks waiting per organisation: 64 in all (one big one and 63 small), then 413.
    for start in [per_request, 2 * per_request, 3 * per_request] {
        let count = (63 - start).min(per_request);
        assert_eq!(post_chunks(&server, &key, &small(start, count)).status, 200);
    }
    post_chunks(&server, &key, &small(100, 1)).problem(413, "body_too_large");

    // Assembly: missing chunks are listed; a bundle that is not a zip is an error with its
    // reason, and stays one; more chunks than may wait is 413.
    let missing = sha1_hex(b"never sent");
    let answer = assemble(
        &server,
        &key,
        &json!({"checksum": missing, "chunks": [missing]}),
    );
    assert_eq!(answer.json()["state"], "not_found");
    assert_eq!(answer.json()["missingChunks"], json!([missing]));
    let garbage = small(0, 1).remove(0);
    let body = json!({"checksum": garbage.0, "chunks": [garbage.0]});
    let failed = assemble(&server, &key, &body).json();
    assert_eq!(failed["state"], "error", "{failed}");
    assert_eq!(failed["detail"], "the bundle is not a zip archive");
    assert_eq!(assemble(&server, &key, &body).json(), failed);
    let too_many: Vec<String> = (0..65).map(|i: u32| sha1_hex(&i.to_be_bytes())).collect();
    let body = json!({"checksum": missing, "chunks": too_many});
    assemble(&server, &key, &body).problem(413, "body_too_large");
    assemble(&server, &key, &json!({"checksum": "ABC", "chunks": []}))
        .problem(400, "invalid_payload");
}

/// The API key of an admin made a viewer afterwards (keys act with their issuer's role).
fn viewer_key(server: &TestServer, owner_key: &str) -> String {
    let email = "keeper@lookout.test";
    add_user(server, email, "admin");
    let created = create_key(server, &sign_in(server, email), "keeper");
    let members = read(server, owner_key, "/api/v1/orgs/me/members");
    let member = members["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|item| item["email"] == email)
        .expect("the keeper");
    let path = format!(
        "/api/v1/orgs/me/members/{}",
        member["user_id"].as_str().unwrap()
    );
    let demote = bearer(server, owner_key, Method::PATCH, &path).json(&json!({"role": "viewer"}));
    let demoted = send(demote);
    assert_eq!(demoted.status, 200, "{}", text(&demoted.body));
    created["key"].as_str().expect("key").to_string()
}
