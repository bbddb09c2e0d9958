//! A small OpenID provider for the SSO tests, on a loopback port 0: discovery, a key set of
//! RSA keys (`tests/fixtures/oidc/keys.json`), and a token endpoint that checks the client's
//! credentials and the PKCE verifier and answers an RS256 ID token. The test plays the
//! browser: it reads the authorization URL Lookout redirects to and asks `authorize` for a
//! code. What the token endpoint signs is scripted by `Behaviour`, so tests can make it
//! misbehave.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub const CLIENT_ID: &str = "lookout-test";
pub const CLIENT_SECRET: &str = "a client secret of the test provider";
/// What `/saml-metadata` serves: usable IdP metadata (a sign-on service and the fixture's
/// signing certificate), as XML.
pub fn saml_metadata() -> String {
    let pem = include_str!("../fixtures/saml/idp-cert.pem");
    let cert: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    format!(
        r#"<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="https://idp.example.com"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>{cert}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor><md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example.com/sso"/></md:IDPSSODescriptor></md:EntityDescriptor>"#
    )
}

/// What the next ID tokens look like.
#[derive(Clone, Debug)]
pub struct Behaviour {
    pub email: String,
    pub subject: String,
    pub email_verified: Value,
    pub amr: Option<Vec<String>>,
    /// The key that signs (`kid`), one of the fixture keys.
    pub signing_key: String,
    /// Sent as `alg: none` without a signature.
    pub unsigned: bool,
    pub audience: String,
    /// `None`: the provider's own issuer.
    pub issuer: Option<String>,
    /// Seconds from now; negative for an expired token.
    pub expires_in: i64,
    /// Answer the last ID token again, whatever was asked (a replay).
    pub replay_last: bool,
    /// More claims, set over the others (`null` removes one), e.g. Entra ID's `xms_edov`.
    pub extra: Value,
}

impl Behaviour {
    pub fn person(email: &str, subject: &str) -> Behaviour {
        Behaviour {
            email: email.to_string(),
            subject: subject.to_string(),
            email_verified: json!(true),
            amr: None,
            signing_key: "key-1".to_string(),
            unsigned: false,
            audience: CLIENT_ID.to_string(),
            issuer: None,
            expires_in: 300,
            replay_last: false,
            extra: json!({}),
        }
    }
}

struct Grant {
    nonce: String,
    challenge: String,
}

struct State {
    behaviour: Behaviour,
    /// The kids published in the key set.
    published: Vec<String>,
    grants: HashMap<String, Grant>,
    last_token: Option<String>,
    jwks_fetches: usize,
}

pub struct Provider {
    pub issuer: String,
    state: Arc<Mutex<State>>,
    keys: Arc<Vec<Value>>,
}

fn fixture_keys() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/oidc/keys.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("key fixture")).expect("keys")
}

impl Provider {
    pub fn start(behaviour: Behaviour) -> Provider {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind provider");
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            behaviour,
            published: vec!["key-1".to_string()],
            grants: HashMap::new(),
            last_token: None,
            jwks_fetches: 0,
        }));
        let keys = Arc::new(fixture_keys());
        let provider = Provider {
            issuer: issuer.clone(),
            state: state.clone(),
            keys: keys.clone(),
        };
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (state, keys, issuer) = (state.clone(), keys.clone(), issuer.clone());
                std::thread::spawn(move || serve(stream, &state, &keys, &issuer));
            }
        });
        provider
    }

    pub fn behave(&self, change: impl FnOnce(&mut Behaviour)) {
        change(&mut self.state.lock().unwrap().behaviour);
    }

    /// Publishes exactly these keys from now on.
    pub fn publish(&self, kids: &[&str]) {
        self.state.lock().unwrap().published = kids.iter().map(|k| k.to_string()).collect();
    }

    pub fn jwks_fetches(&self) -> usize {
        self.state.lock().unwrap().jwks_fetches
    }

    /// The authorization step: checks what Lookout's redirect asked for and returns the
    /// redirect back (the callback URL with `code` and `state`).
    pub fn authorize(&self, authorization_url: &str) -> String {
        let url = url::Url::parse(authorization_url).expect("authorization URL");
        assert!(authorization_url.starts_with(&format!("{}/authorize?", self.issuer)));
        let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
        assert_eq!(query["response_type"], "code");
        assert_eq!(query["client_id"], CLIENT_ID);
        assert_eq!(query["code_challenge_method"], "S256");
        assert_eq!(query["scope"], "openid email profile");
        let code = format!("code-{}", rand_id());
        self.state.lock().unwrap().grants.insert(
            code.clone(),
            Grant {
                nonce: query["nonce"].clone(),
                challenge: query["code_challenge"].clone(),
            },
        );
        let mut back = url::Url::parse(&query["redirect_uri"]).expect("redirect_uri");
        back.query_pairs_mut()
            .append_pair("code", &code)
            .append_pair("state", &query["state"]);
        back.to_string()
    }
}

fn rand_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{nanos:x}")
}

fn serve(mut stream: TcpStream, state: &Mutex<State>, keys: &[Value], issuer: &str) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line.trim().is_empty() {
            break;
        }
        if let Some((key, value)) = line.split_once(':') {
            headers.insert(key.trim().to_lowercase(), value.trim().to_string());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_string();
    let (status, answer) = match path.as_str() {
        "/.well-known/openid-configuration" => (
            200,
            json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "jwks_uri": format!("{issuer}/jwks"),
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
            }),
        ),
        "/jwks" => {
            let mut state = state.lock().unwrap();
            state.jwks_fetches += 1;
            let published: Vec<Value> = keys
                .iter()
                .filter(|key| state.published.iter().any(|kid| key["kid"] == kid.as_str()))
                .map(|key| json!({"kty": "RSA", "use": "sig", "alg": "RS256", "kid": key["kid"], "n": key["n"], "e": key["e"]}))
                .collect();
            (200, json!({"keys": published}))
        }
        "/token" => token(state, keys, issuer, &headers, &body),
        // SAML metadata served by URL, small and over the 256 KiB Lookout keeps.
        "/saml-metadata" => (200, json!(saml_metadata())),
        "/saml-metadata-too-big" => (
            200,
            json!(format!(
                "<EntityDescriptor>{}</EntityDescriptor>",
                "x".repeat(256 * 1024)
            )),
        ),
        _ => (404, json!({"error": "not_found"})),
    };
    // Metadata goes out as XML (the string itself); everything else as JSON.
    let (kind, text) = match answer {
        Value::String(xml) => ("application/samlmetadata+xml", xml),
        other => ("application/json", other.to_string()),
    };
    let reply = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.write_all(reply.as_bytes());
}

fn token(
    state: &Mutex<State>,
    keys: &[Value],
    issuer: &str,
    headers: &HashMap<String, String>,
    body: &[u8],
) -> (u16, Value) {
    let expected = format!(
        "Basic {}",
        STANDARD.encode(format!("{CLIENT_ID}:{}", form_encode(CLIENT_SECRET)))
    );
    if headers.get("authorization") != Some(&expected) {
        return (401, json!({"error": "invalid_client"}));
    }
    let form: HashMap<String, String> = url::form_urlencoded::parse(body).into_owned().collect();
    let mut state = state.lock().unwrap();
    let replayed = state
        .last_token
        .clone()
        .filter(|_| state.behaviour.replay_last);
    if let Some(last) = replayed {
        return (
            200,
            json!({"access_token": "x", "token_type": "Bearer", "id_token": last}),
        );
    }
    let Some(grant) = form.get("code").and_then(|code| state.grants.remove(code)) else {
        return (400, json!({"error": "invalid_grant"}));
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != grant.challenge {
        return (
            400,
            json!({"error": "invalid_grant", "error_description": "PKCE"}),
        );
    }
    let behaviour = state.behaviour.clone();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut claims = json!({
        "iss": behaviour.issuer.clone().unwrap_or_else(|| issuer.to_string()),
        "sub": behaviour.subject,
        "aud": behaviour.audience,
        "iat": now,
        "exp": now + behaviour.expires_in,
        "nonce": grant.nonce,
        "email": behaviour.email,
        "email_verified": behaviour.email_verified,
        "name": "Test Person",
    });
    if let Some(amr) = behaviour.amr {
        claims["amr"] = json!(amr);
    }
    for (name, value) in behaviour.extra.as_object().into_iter().flatten() {
        match value {
            Value::Null => drop(claims.as_object_mut().unwrap().remove(name)),
            value => claims[name] = value.clone(),
        }
    }
    let id_token = if behaviour.unsigned {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        format!("{header}.{payload}.")
    } else {
        let key = keys
            .iter()
            .find(|key| key["kid"] == behaviour.signing_key.as_str())
            .expect("a fixture key");
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(behaviour.signing_key.clone());
        let der = STANDARD
            .decode(key["pkcs1_der_base64"].as_str().unwrap())
            .expect("a base64 key");
        let encoding = EncodingKey::from_rsa_der(&der);
        jsonwebtoken::encode(&header, &claims, &encoding).expect("sign")
    };
    state.last_token = Some(id_token.clone());
    (
        200,
        json!({"access_token": "x", "token_type": "Bearer", "id_token": id_token}),
    )
}

fn form_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
