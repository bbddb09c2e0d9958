//! Tables of what the scrubber replaces and what it must leave alone, and properties over
//! generated text: planted secrets never survive, clean text is never touched, no input panics.

use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use serde_json::json;

use super::names::SENSITIVE_NAMES;
use super::*;

/// The shapes a review found passing through: each must lose its secret entirely.
#[test]
fn replaces_the_shapes_that_used_to_pass() {
    let cases = [
        // A Basic credential keeps neither user nor password, as a header or in a sentence.
        (
            "Authorization: Basic dXNlcjpodW50ZXIy",
            "Authorization: [redacted]",
        ),
        (
            "retry with Basic dXNlcjpodW50ZXIy now",
            "retry with Basic [token] now",
        ),
        ("basic YWRtaW46czNjcjN0", "basic [token]"),
        // Single-quoted, double-quoted and backquoted values go whole, spaces and all.
        ("password='hunter two'", "password='[redacted]'"),
        (
            "password = \"correct horse battery\" ok",
            "password = \"[redacted]\" ok",
        ),
        ("{\"secret\": \"a b c\"}", "{\"secret\": \"[redacted]\"}"),
        ("token=`x y`", "token=`[redacted]`"),
        // A Cookie header's value is replaced up to the end of its line.
        (
            "Cookie: sid=abc; theme=dark\nnext",
            "Cookie: [redacted]\nnext",
        ),
        // IPv4 inside a URL path, zero-padded or not.
        ("GET /hosts/10.0.0.7/status", "GET /hosts/[ip]/status"),
        ("https://x.test/p/192.168.1.20", "https://x.test/p/[ip]"),
        ("from 010.001.002.003 here", "from [ip] here"),
    ];
    for (input, expected) in cases {
        assert_eq!(scrub_text(input), expected, "{input}");
    }
}

/// An item scrubbed as ingest scrubs it, as JSON.
fn scrubbed(item: Value) -> Value {
    let mut item = Item::from(item);
    scrub_item(&mut item);
    item.to_value()
}

#[test]
fn keys_tags_and_exempt_looking_fields_are_scrubbed() {
    let item = json!({
        "message": "boom",
        "tags": {"owner": "jane@example.com", "jane@example.com": "x", "10.1.2.3": 1,
                 "card": 4111111111111111u64, "peer": "10.0.0.9"},
        "release": "1.2.3 jane@example.com",
        "environment": "prod 203.0.113.9",
        "service": "api 4111 1111 1111 1111",
        "user_id": "password='x y z'",
        "timestamp": 4111111111111111u64,
        "frames": [{"file": "https://x.test/10.0.0.1/app.js", "line": 4111111111111111u64, "column": 7}],
        "extra": [{"nested": {"deep@example.com": 5500000000000004u64}}],
    });
    let item = scrubbed(item);
    let text = item.to_string();
    for secret in [
        "jane@example.com",
        "10.1.2.3",
        "4111111111111111",
        "10.0.0.9",
        "203.0.113.9",
        "4111 1111",
        "x y z",
        "10.0.0.1",
        "deep@example.com",
        "5500000000000004",
    ] {
        let kept_as_quantity = secret == "4111111111111111";
        if kept_as_quantity {
            // Only the structural quantities (timestamp, line) may keep these digits.
            assert_eq!(item["tags"]["card"], "[card]");
            assert_eq!(item["timestamp"], 4111111111111111u64);
            assert_eq!(item["frames"][0]["line"], 4111111111111111u64);
        } else {
            assert!(!text.contains(secret), "{secret} survived in {text}");
        }
    }
    assert_eq!(item["release"], "1.2.3 [email]");
    assert_eq!(item["tags"]["[email]"], "[redacted]");
}

#[test]
fn releases_keep_dotted_versions() {
    for release in [
        "1.2.3",
        "2024.11.05",
        "v10.0.0.1",
        "10.0.0.1",
        "app@1.2.3.4",
    ] {
        let item = scrubbed(json!({"release": release}));
        assert_eq!(item["release"], release, "{release}");
        assert_eq!(scrub_release(release), release);
    }
    assert_eq!(scrub_release("1.0 by jane@example.com"), "1.0 by [email]");
}

#[test]
fn replaces_each_kind_of_personal_data() {
    let cases = [
        ("mail jane.doe@example.com now", "mail [email] now"),
        ("to=jane%40example.com", "to=[email]"),
        ("from 203.0.113.77 at", "from [ip] at"),
        ("http://10.1.2.3:8080/x", "http://[ip]:8080/x"),
        ("peer 2001:db8::7334 said", "peer [ip] said"),
        ("peer [2001:db8:0:0:0:0:2:1]:443", "peer [[ip]]:443"),
        ("mapped ::ffff:192.0.2.1 here", "mapped [ip] here"),
        ("card 4111111111111111.", "card [card]."),
        ("card 4111 1111 1111 1111 ok", "card [card] ok"),
        ("amex 3782-822463-10005", "amex [card]"),
        (
            "Authorization: Bearer abc.def-ghi",
            "Authorization: [redacted]",
        ),
        (
            "got eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-_x end",
            "got [token] end",
        ),
        (
            "/login?user=bob&password=hunter2&x=1",
            "/login?user=bob&password=[redacted]&x=1",
        ),
        (
            "https://a.test/?access_token=abc#f",
            "https://a.test/?access_token=[redacted]#f",
        ),
        (
            "?redirect=/home&api_key=k1",
            "?redirect=/home&api_key=[redacted]",
        ),
        (r#"{"secret": "s3"}"#, r#"{"secret": "[redacted]"}"#),
        ("phone: 5551234", "phone: [redacted]"),
    ];
    for (input, expected) in cases {
        assert_eq!(scrub_text(input), expected, "{input}");
    }
}

#[test]
fn leaves_ordinary_text_alone() {
    let unchanged = [
        "TypeError: undefined is not a function",
        "at render (https://app.example.com/static/app.js:10:5)",
        "handleClick@https://app.example.com/app.js:1:2",
        "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0.0.0 Safari/537.36",
        "2026-11-22T12:00:00.000Z",
        "std::vec::Vec and aa:bb:cc:dd:ee:ff",
        "version 1.2.3.4.5",
        "trace 4bf92f3577b34da6a3ce929d0e0e4736",
        "order 4111111111111112 is not a card",
        "12345678901234567890123 too long",
        "session_id=abc&page=2",
        "",
    ];
    for input in unchanged {
        assert_eq!(scrub_text(input), input);
    }
}

#[test]
fn sensitive_names() {
    for name in [
        "password",
        "PASSWORD",
        "passwd",
        "api_key",
        "API-Key",
        "apiKey",
        "x_api_key",
        "access_token",
        "X-Auth-Token",
        "userEmail",
        "set-cookie",
        "session",
        "ssn",
        "Authorization",
    ] {
        assert!(is_sensitive_name(name), "{name}");
    }
    for name in [
        "session_id",
        "sessionId",
        "author",
        "tokens_used",
        "user_id",
        "emailVerified",
        "",
        "-",
    ] {
        assert!(!is_sensitive_name(name), "{name}");
    }
}

#[test]
fn items_are_scrubbed_by_field() {
    let item = json!({
        "message": "failed for jane@example.com",
        "release": "1.2.3.4",
        "timestamp": 4111111111111111u64,
        "tags": {"password": "p", "card": 4111111111111111u64, "plain": "ok", "token": null},
        "user": {"email": "x", "name": "Jane"},
        "frames": [{"file": "https://10.0.0.1/a.js", "line": 4111111111111111u64}],
    });
    assert_eq!(
        scrubbed(item),
        json!({
            "message": "failed for [email]",
            "release": "1.2.3.4",
            "timestamp": 4111111111111111u64,
            "tags": {"password": "[redacted]", "card": "[card]", "plain": "ok", "token": null},
            "user": {"email": "[redacted]", "name": "Jane"},
            "frames": [{"file": "https://[ip]/a.js", "line": 4111111111111111u64}],
        })
    );
}

/// A card number sent as a number where text is expected is read as the text `[card]`.
#[test]
fn a_card_sent_as_a_number_is_read_as_text() {
    let mut item = Item::from(json!({"level": "error", "url": "u",
        "message": 4111111111111111u64, "timestamp": 4111111111111111u64}));
    scrub_item(&mut item);
    assert_eq!(item.get("message").and_then(Slot::as_str), Some(CARD));
    assert!(matches!(
        item.get("timestamp"),
        Some(Slot::Json(Value::Number(_)))
    ));
    let event = crate::ingest::web_errors::parse_event(&item, crate::clock::Timestamp(0), None);
    assert_eq!(event.map(|event| event.message).as_deref(), Ok(CARD));
}

#[test]
fn luhn() {
    let digits = |text: &str| text.bytes().map(|b| b - b'0').collect::<Vec<_>>();
    assert!(luhn_valid(&digits("4111111111111111")));
    assert!(luhn_valid(&digits("378282246310005")));
    assert!(!luhn_valid(&digits("4111111111111112")));
    assert!(!luhn_valid(&[]));
}

/// Appends the Luhn check digit to `body`.
fn with_check_digit(body: &[u8]) -> Vec<u8> {
    let mut digits = body.to_vec();
    digits.push(0);
    let check = (0..10u8)
        .find(|&d| {
            *digits.last_mut().unwrap() = d;
            luhn_valid(&digits)
        })
        .unwrap();
    *digits.last_mut().unwrap() = check;
    digits
}

/// Text around a secret: words and punctuation that cannot glue onto it.
fn filler() -> impl Strategy<Value = String> {
    "[a-z ,;()!]{0,20}".prop_map(|s| format!(" {s} "))
}

/// A browser stack holds hundreds of `file:line:column` colons but neither an address nor a
/// sensitive name: neither of those passes scans it (they were most of a stack's scrubbing).
#[test]
fn a_stack_runs_neither_the_address_nor_the_named_value_pass() {
    let stack = "TypeError: Cannot read properties of undefined (reading 'price')\n    \
        at computeTotals (https://shop.example.com/assets/checkout.4e1f9a2c.js:12:3456)\n    \
        at Array.forEach (<anonymous>)\n    \
        at async runTask (https://shop.example.com/node_modules/.vite/deps/react-dom.js?v=8c2d1e7f:3:99)";
    let clues = Clues::of(stack);
    assert!(
        !clues.may_hold_ipv6() && !clues.may_hold_named_value(),
        "{clues:?}"
    );
    assert_eq!(scrub_text(stack), stack);
    // The same text with an address or a sensitive name runs the pass it needs.
    let with_address = format!("{stack} from fe80::1");
    assert!(Clues::of(&with_address).may_hold_ipv6());
    assert_eq!(scrub_text(&with_address), format!("{stack} from [ip]"));
    let with_name = format!("{stack} ?session_token=abc");
    assert!(Clues::of(&with_name).may_hold_named_value());
    assert!(scrub_text(&with_name).ends_with("?session_token=[redacted]"));
}

/// Digit chains of twelve and thirteen digits, plain or with gaps, at every offset from the
/// bytes `has_card_chain` samples; names before separators in each form `NAMED_VALUE` reads.
#[test]
fn sampled_chains_and_names_before_separators_are_found_where_scans_find_them() {
    for chain in [
        "123456789012",
        "1234567890123",
        "4111 1111-1111 1",
        "4111 1111-1111 ",
        "1 2 3 4 5 6 7 8 9 0 1 2 3",
        "1 2 3 4 5 6 7 8 9 0 1 2  3",
    ] {
        for offset in 0..30 {
            let text = format!("{}{chain}x", "a".repeat(offset));
            assert_eq!(Clues::of(&text), Clues::of_by_scans(&text), "{text:?}");
        }
    }
    let names = [
        ("password=x", true),
        ("password =x", true),
        ("password\t:x", true),
        ("\"password\": \"x\"", true),
        ("{\\\"password\\\":\\\"x\\\"}", true),
        ("'api_key' = x", true),
        ("x-auth-TOKEN:x", true),
        ("user.e-mail=x", true),
        ("password\\:x", false),
        ("password x=y", false),
        ("password\"\":x", false),
        ("password \":x", false),
        ("passwords=x", false),
        ("password", false),
    ];
    for (text, sensitive) in names {
        assert_eq!(Clues::of(text), Clues::of_by_scans(text), "{text:?}");
        assert_eq!(
            Clues::of(text).may_hold_named_value(),
            sensitive,
            "{text:?}"
        );
    }
}

/// Markers written by one pass can make what a later pass finds: a clue of the original text
/// must still let that pass run.
#[test]
fn markers_keep_the_later_passes_running() {
    for text in [
        "x@y.com::1",
        "1.2.3.4-hone: 555",
        "a@b.io-token: v",
        "Bearer abc:password x",
    ] {
        let skipping = scrub_text(text).into_owned();
        let every_pass = scrub_text_with(text, &Clues::every_pass(), Passes::ALL).into_owned();
        assert_eq!(skipping, every_pass, "{text}");
    }
}

proptest! {
    #[test]
    fn the_clues_are_those_separate_scans_find(
        text in "([bBaAsSiIcCeErRyYJj@%40:=. 0-9x_\\[\\]-]|token|PHONE|Session|_key|authorization|::|f:){0,60}",
    ) {
        prop_assert_eq!(Clues::of(&text), Clues::of_by_scans(&text));
    }

    // Words, hex or not, around every kind of byte a clue reads.
    #[test]
    fn words_and_punctuation_give_the_clues_separate_scans_find(
        text in "([a-zA-Z]{1,12}|[a-fA-F]{1,6}|[ :=.@%_()/0-9\\[\\]-]|eyJ|Bearer|fe80::|40|password){0,40}",
    ) {
        prop_assert_eq!(Clues::of(&text), Clues::of_by_scans(&text));
    }

    // Names before separators, quoted, escaped and spaced as `NAMED_VALUE` allows or not, and
    // digit chains of every length around the sampled bytes.
    #[test]
    fn names_and_digit_chains_give_the_clues_separate_scans_find(
        text in "([a-zA-Z_.\\[\\]-]{1,9}|token|Pass_word|x-api-KEY|e.mail|[\"'\\\\ \t]{1,3}|[:=]|[0-9]{1,14}|[ -]){0,40}",
    ) {
        prop_assert_eq!(Clues::of(&text), Clues::of_by_scans(&text));
    }

    #[test]
    fn planted_emails_never_survive(
        local in "[a-z][a-z0-9._+-]{0,15}",
        domain in "[a-z][a-z0-9-]{0,10}",
        tld in "[a-z]{2,6}",
        before in filler(),
        after in filler(),
    ) {
        let email = format!("{local}@{domain}.{tld}");
        let scrubbed = scrub_text(&format!("{before}{email}{after}")).into_owned();
        prop_assert!(!scrubbed.contains(&email), "{}", scrubbed);
    }

    #[test]
    fn planted_addresses_never_survive(
        v4 in any::<[u8; 4]>(),
        v6 in any::<[u16; 8]>(),
        before in filler(),
        after in filler(),
    ) {
        for address in [Ipv4Addr::from(v4).to_string(), Ipv6Addr::from(v6).to_string()] {
            let scrubbed = scrub_text(&format!("{before}{address}{after}")).into_owned();
            prop_assert!(!scrubbed.contains(&address), "{} -> {}", address, scrubbed);
        }
    }

    #[test]
    fn planted_cards_never_survive(
        body in proptest::collection::vec(0u8..10, 12..19),
        before in filler(),
        after in filler(),
    ) {
        let card: String = with_check_digit(&body).iter().map(|d| char::from(b'0' + d)).collect();
        let scrubbed = scrub_text(&format!("{before}{card}{after}")).into_owned();
        prop_assert!(!scrubbed.contains(&card), "{}", scrubbed);
    }

    #[test]
    fn sensitive_parameters_never_survive(
        name in prop::sample::select(SENSITIVE_NAMES),
        value in "[A-Za-z0-9]{6,20}",
    ) {
        let url = format!("https://shop.test/cart?item=3&{name}={value}&page=1");
        let scrubbed = scrub_text(&url).into_owned();
        prop_assert!(!scrubbed.contains(&value), "{}", scrubbed);
    }

    #[test]
    fn text_without_markers_of_data_is_untouched(text in "[a-zA-Z ,;()!/_-]{0,200}") {
        prop_assert_eq!(scrub_text(&text), text.as_str());
    }

    #[test]
    fn skipping_passes_by_their_clues_changes_nothing(
        text in "([a-zA-Z0-9 .:=@%/&?_'\"\\[\\]\t\\\\-]|bearer |Bearer |eyJ|password|api_key|hone|%40|::|::1|fe80::|1.2.3.4|4111 1111-1111 1111|10.0.0.1){0,60}",
    ) {
        let skipping = scrub_text(&text).into_owned();
        let every_pass = scrub_text_with(&text, &Clues::every_pass(), Passes::ALL).into_owned();
        prop_assert_eq!(skipping, every_pass);
    }

    #[test]
    fn any_text_scrubs_without_panic_and_twice_is_once(text in "\\PC{0,300}") {
        let once = scrub_text(&text).into_owned();
        let twice = scrub_text(&once).into_owned();
        prop_assert_eq!(once, twice);
    }
}
