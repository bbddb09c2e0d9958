//! The browser SDK served for other origins (issue 16), seen from an HTTP client: both files at
//! their latest and versioned paths with `Access-Control-Allow-Origin: *` and
//! `Cross-Origin-Resource-Policy: cross-origin`, immutable caching only at the versioned path,
//! the 8 KB gzip budget, and `/sdk/manifest.json`'s SRI hashes checked against the bytes served.

use std::io::Read;

use base64::Engine;
use flate2::read::GzDecoder;
use serde_json::Value;
use sha2::{Digest, Sha384};

use crate::harness::{TestServer, http};
use crate::http_basics::{Reply, send};

/// The most each served file may weigh gzipped (issue 16).
const GZIP_BUDGET_BYTES: usize = 8 * 1024;
const FILES: [&str; 2] = ["lookout.js", "lookout.iife.js"];

fn get(server: &TestServer, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut request = http().get(server.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    send(request)
}

fn manifest(server: &TestServer) -> Value {
    let reply = get(server, "/sdk/manifest.json", &[]);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.header("access-control-allow-origin"), "*");
    serde_json::from_slice(&reply.body).expect("manifest JSON")
}

fn assert_open_to_every_origin(path: &str, reply: &Reply) {
    assert_eq!(
        reply.header("access-control-allow-origin"),
        "*",
        "{path}: {reply:?}"
    );
    assert_eq!(
        reply.header("cross-origin-resource-policy"),
        "cross-origin",
        "{path}"
    );
}

#[test]
fn sdk_files_are_served_to_every_origin_and_immutable_only_at_their_version() {
    let server = TestServer::start();
    let version = manifest(&server)["version"]
        .as_str()
        .expect("a version")
        .to_string();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    for file in FILES {
        let latest_path = format!("/sdk/{file}");
        let latest = get(
            &server,
            &latest_path,
            &[("origin", "https://shop.example.com")],
        );
        assert_eq!(latest.status, 200, "{latest_path}: {latest:?}");
        assert!(
            latest.header("content-type").starts_with("text/javascript"),
            "{latest:?}"
        );
        assert_open_to_every_origin(&latest_path, &latest);
        assert_eq!(latest.header("cache-control"), "no-cache");
        assert_eq!(latest.header("x-content-type-options"), "nosniff");

        let versioned_path = format!("/sdk/{version}/{file}");
        let versioned = get(&server, &versioned_path, &[]);
        assert_eq!(versioned.status, 200, "{versioned_path}");
        assert_open_to_every_origin(&versioned_path, &versioned);
        assert!(
            versioned.header("cache-control").contains("immutable"),
            "{versioned:?}"
        );
        assert_eq!(versioned.body, latest.body, "{file}: one file, two paths");

        let etag = versioned.header("etag").to_string();
        let again = get(&server, &versioned_path, &[("if-none-match", &etag)]);
        assert_eq!(again.status, 304, "{versioned_path} with its ETag");
    }
    // Another version, or another file, is a 404 problem that scripts on other origins may read.
    for missing in [
        "/sdk/0.0.1/lookout.js",
        "/sdk/lookout.min.js",
        "/sdk/x/y/z.js",
    ] {
        let reply = get(&server, missing, &[]);
        assert_eq!(reply.status, 404, "{missing}: {reply:?}");
        assert!(
            reply.header("content-type").contains("problem+json"),
            "{missing}"
        );
        if missing != "/sdk/x/y/z.js" {
            assert_open_to_every_origin(missing, &reply);
        }
    }
}

#[test]
fn sdk_files_fit_the_gzip_budget_and_match_their_manifest_integrity() {
    let server = TestServer::start();
    let manifest = manifest(&server);
    let listed = manifest["files"].as_array().expect("files");
    assert_eq!(listed.len(), FILES.len(), "{manifest}");
    for entry in listed {
        let path = entry["path"].as_str().expect("a path");
        let gzipped = get(&server, path, &[("accept-encoding", "gzip")]);
        assert_eq!(gzipped.status, 200, "{path}");
        assert_eq!(gzipped.header("content-encoding"), "gzip", "{path}");
        assert!(
            gzipped.body.len() <= GZIP_BUDGET_BYTES,
            "{path} is {} bytes gzipped, over {GZIP_BUDGET_BYTES}",
            gzipped.body.len()
        );
        let mut plain = Vec::new();
        GzDecoder::new(gzipped.body.as_slice())
            .read_to_end(&mut plain)
            .expect("gzip");
        let sri = base64::engine::general_purpose::STANDARD.encode(Sha384::digest(&plain));
        assert_eq!(entry["integrity"], format!("sha384-{sri}"), "{path}");
        assert_eq!(entry["bytes"], plain.len(), "{path}");
        assert_eq!(entry["gzip_bytes"], gzipped.body.len(), "{path}");
    }
    let module = String::from_utf8(get(&server, "/sdk/lookout.js", &[]).body).expect("utf-8");
    assert!(module.contains("export default Lookout;"), "an ES module");
    let script = String::from_utf8(get(&server, "/sdk/lookout.iife.js", &[]).body).expect("utf-8");
    assert!(!script.contains("export "), "the IIFE is a classic script");
    assert!(script.contains("window.Lookout = Lookout;"));
}

#[test]
fn sdk_routes_are_in_the_openapi_document() {
    let server = TestServer::start();
    let reply = get(&server, "/api/v1/openapi.json", &[]);
    assert_eq!(reply.status, 200, "{reply:?}");
    let document: Value = serde_json::from_slice(&reply.body).expect("OpenAPI JSON");
    for path in ["/sdk/manifest.json", "/sdk/{file}", "/sdk/{version}/{file}"] {
        assert!(document["paths"].get(path).is_some(), "{path} documented");
    }
}
