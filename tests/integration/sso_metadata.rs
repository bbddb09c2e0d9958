//! SAML metadata given by URL in the SSO configuration: fetched once when saved and stored as
//! served; an answer over 256 KiB, or one that is not metadata, is refused with
//! `invalid_saml_metadata` and nothing is saved.

use reqwest::Method;
use serde_json::json;

use crate::auth_support::{add_user, server, sign_in};
use crate::harness::text;
use crate::oidc_provider::{Behaviour, Provider, saml_metadata};

#[test]
fn saml_metadata_by_url_is_fetched_once_and_bounded() {
    let provider = Provider::start(Behaviour::person("a@example.com", "a"));
    let server = server(&[
        ("API_RATE_PER_MIN", "100000"),
        ("WEBHOOK_ALLOW_PRIVATE", "true"),
    ]);
    add_user(&server, "owner@example.com", "owner");
    let output = server.cli(&["org", "set-plan", "default", "enterprise"], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let owner = sign_in(&server, "owner@example.com");
    let put = |url: String| {
        let body = json!({"saml": {"idp_metadata_url": url}, "default_role": "member", "domains": [], "required": false});
        owner.write(&server, Method::PUT, "/api/v1/orgs/me/sso", &body)
    };
    let too_big = put(format!("{}/saml-metadata-too-big", provider.issuer));
    too_big.problem(400, "invalid_saml_metadata");
    put(format!("{}/nothing-here", provider.issuer)).problem(400, "invalid_saml_metadata");
    put("http://idp.example.com/metadata".to_string()).problem(400, "invalid_saml_metadata");
    let shown = owner.get(&server, "/api/v1/orgs/me/sso").json();
    assert_eq!(
        shown["saml"],
        json!(null),
        "nothing saved by a refusal: {shown}"
    );

    let saved = put(format!("{}/saml-metadata", provider.issuer));
    assert_eq!(saved.status, 200, "{}", text(&saved.body));
    let shown = owner.get(&server, "/api/v1/orgs/me/sso").json();
    assert_eq!(shown["saml"]["idp_metadata_xml"], saml_metadata());
    assert_eq!(
        shown["saml"]["idp_metadata_url"],
        format!("{}/saml-metadata", provider.issuer)
    );
    let facts = &shown["service_provider"];
    assert!(
        facts["saml_acs_url"]
            .as_str()
            .unwrap()
            .ends_with("/api/v1/auth/sso/saml/acs")
    );
    assert!(
        facts["saml_metadata_url"]
            .as_str()
            .unwrap()
            .contains("/api/v1/auth/sso/saml/metadata")
    );
}
