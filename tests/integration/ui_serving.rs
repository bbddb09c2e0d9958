//! The web UI served like a product (issue 14), seen from an HTTP client: the shell for every
//! page path and deep link, a strict Content-Security-Policy with `nosniff` and a
//! Referrer-Policy, gzip with strong ETags and 304 answers, immutable caching for versioned
//! vendor files, and machine paths that stay 404 problems.

use std::io::Read;

use flate2::read::GzDecoder;

use crate::harness::{TestServer, http};
use crate::http_basics::{Reply, send};

fn get(server: &TestServer, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut request = http().get(server.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    send(request)
}

#[test]
fn the_shell_carries_a_strict_csp_nosniff_and_a_referrer_policy() {
    let server = TestServer::start();
    let reply = get(&server, "/", &[]);
    assert_eq!(reply.status, 200);
    assert!(
        reply.header("content-type").starts_with("text/html"),
        "{reply:?}"
    );
    let csp = reply.header("content-security-policy");
    let directives: Vec<&str> = csp.split(';').map(str::trim).collect();
    let script_src = directives
        .iter()
        .find(|d| d.starts_with("script-src "))
        .expect(csp);
    assert!(script_src.starts_with("script-src 'self'"), "{csp}");
    for forbidden in ["'unsafe-inline'", "'unsafe-eval'", "*", "data:", "http:"] {
        assert!(
            !script_src.split(' ').any(|source| source == forbidden),
            "{csp}"
        );
    }
    assert!(directives.contains(&"frame-ancestors 'none'"), "{csp}");
    assert!(directives.contains(&"object-src 'none'"), "{csp}");
    assert_eq!(reply.header("x-content-type-options"), "nosniff");
    assert!(!reply.header("referrer-policy").is_empty(), "{reply:?}");
}

#[test]
fn only_the_terminal_page_allows_inline_styles_and_its_scripts_stay_strict() {
    let server = TestServer::start();
    let directive = |path: &str, name: &str| {
        let reply = get(&server, path, &[]);
        assert_eq!(reply.status, 200, "{path}");
        let csp = reply.header("content-security-policy").to_string();
        let found = csp.split(';').map(str::trim).find(|d| d.starts_with(name));
        found
            .unwrap_or_else(|| panic!("{path}: no {name} in {csp}"))
            .to_string()
    };
    for path in ["/", "/agents", "/agents/agt_1"] {
        assert_eq!(directive(path, "style-src "), "style-src 'self'", "{path}");
    }
    let terminal = "/agents/agt_1/terminal";
    assert_eq!(
        directive(terminal, "style-src "),
        "style-src 'self' 'unsafe-inline'"
    );
    assert_eq!(
        directive(terminal, "script-src "),
        directive("/", "script-src ")
    );
    assert_eq!(
        directive(terminal, "connect-src "),
        directive("/", "connect-src ")
    );
}

#[test]
fn app_files_are_gzipped_with_a_strong_etag_and_answer_304_when_unchanged() {
    let server = TestServer::start();
    let plain = get(&server, "/assets/main.js", &[]);
    assert_eq!(plain.status, 200);
    assert!(
        plain.header("content-type").contains("javascript"),
        "{plain:?}"
    );

    let gzipped = get(&server, "/assets/main.js", &[("accept-encoding", "gzip")]);
    assert_eq!(gzipped.header("content-encoding"), "gzip");
    let mut unpacked = Vec::new();
    GzDecoder::new(&gzipped.body[..])
        .read_to_end(&mut unpacked)
        .expect("a gzip body");
    assert_eq!(unpacked, plain.body, "the gzip body unpacks to the file");

    let etag = gzipped.header("etag");
    assert!(
        etag.starts_with('"') && !etag.starts_with("W/"),
        "a strong ETag: {etag:?}"
    );
    assert_ne!(
        etag,
        plain.header("etag"),
        "each representation has its own ETag"
    );
    let again = get(
        &server,
        "/assets/main.js",
        &[("accept-encoding", "gzip"), ("if-none-match", etag)],
    );
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), etag);
}

#[test]
fn versioned_vendor_files_are_immutable_and_app_files_revalidate() {
    let server = TestServer::start();
    let vendor = get(&server, "/vendor/preact@11.2.0/preact.mjs", &[]);
    assert_eq!(vendor.status, 200);
    let caching = vendor.header("cache-control");
    assert!(
        caching.contains("immutable") && caching.contains("max-age=31536000"),
        "{caching}"
    );
    let app = get(&server, "/assets/main.js", &[]);
    assert!(
        !app.header("cache-control").contains("immutable"),
        "{app:?}"
    );
}

#[test]
fn deep_links_answer_the_shell_and_machine_paths_stay_problems() {
    let server = TestServer::start();
    let shell = get(&server, "/", &[]);
    for path in [
        "/errors/grp_x",
        "/alerts/alr_x?tab=history",
        "/login?next=%2Ferrors",
        "/invite?token=x",
    ] {
        let reply = get(&server, path, &[]);
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.body, shell.body, "{path} answers the app's shell");
        assert!(
            !reply.header("content-security-policy").is_empty(),
            "{path}"
        );
    }
    for path in [
        "/api/v1/nope",
        "/assets/nope.js",
        "/vendor/nope@1.0.0/nope.mjs",
    ] {
        let reply = get(&server, path, &[]);
        reply.problem(404, "not_found");
    }
    let posted = send(http().post(server.url("/errors/grp_x")));
    assert_ne!(posted.status, 200, "only GET and HEAD answer the shell");
}

#[test]
fn head_answers_the_headers_of_get_with_the_same_length_and_no_body() {
    let server = TestServer::start();
    for (path, encoding) in [
        ("/", "identity"),
        ("/assets/main.js", "gzip"),
        ("/errors", "gzip"),
    ] {
        let got = get(&server, path, &[("accept-encoding", encoding)]);
        let head = send(
            http()
                .head(server.url(path))
                .header("accept-encoding", encoding),
        );
        assert_eq!(head.status, 200, "{path}: {head:?}");
        assert!(head.body.is_empty(), "{path}: {head:?}");
        assert_eq!(head.header("etag"), got.header("etag"), "{path}");
        assert_eq!(
            head.header("content-length"),
            got.body.len().to_string(),
            "{path}: {head:?}"
        );
    }
}
