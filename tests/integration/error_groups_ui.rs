//! The error group APIs the web UI reads, through the real binary: the group list's filters
//! (`q`, `release`, `environment`, `service`, `from`, `to`, `new_since`), sorts, totals,
//! sparklines and cursor paging under every sort; the bulk status change (1 to 100 ids, all
//! or nothing, other organisations' ids unknown, viewers refused); a group's tag
//! distribution; a group's events paged with their `total`; and totals past 10,000 given as
//! estimates.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_support::{add_user_in, sign_in};
use crate::harness::{TestServer, wait_for};
use crate::http_basics::{Reply, send};
use crate::ingest_support::{accepted, bearer, ingest_server, owner_key, post, read};

const HOUR_MS: i64 = 3_600_000;
const STACK: &str = "TypeError: Cannot read properties of undefined (reading 'id')\n    at loadUser (https://shop.example.com/assets/app.3f9a1c2b.js:1:200)\n    at async render (https://shop.example.com/assets/app.3f9a1c2b.js:1:90)";
const CHROME_WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const FIREFOX_LINUX: &str =
    "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0";

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn rfc3339(ms: i64) -> String {
    lookout::clock::Timestamp(ms).to_rfc3339()
}

/// Three groups: `stack` (3 events now, release 1.0, production, shop), `payment` (4 events
/// 3 h ago, release 2.0, staging, gallery) and `timeout` (one event 2 days ago, one 1 h ago).
/// Last seen: stack, timeout, payment; first seen: stack, payment, timeout; count: payment,
/// stack, timeout.
fn ingest_three_groups(server: &TestServer) -> i64 {
    let now = now_ms();
    let stack = json!({"level": "error", "name": "TypeError", "message": "user not found",
        "stack": STACK, "url": "https://shop.example.com/cart?id=7", "release": "1.0",
        "environment": "production", "service": "shop", "user_agent": CHROME_WINDOWS,
        "tags": {"plan": "pro"}});
    let payment = json!({"level": "error", "message": "payment declined", "timestamp": now - 3 * HOUR_MS,
        "url": "https://shop.example.com/pay", "release": "2.0", "environment": "staging",
        "service": "gallery", "user_agent": FIREFOX_LINUX});
    let timeout = |at: i64| {
        json!({"level": "warning", "message": "timeout talking to api", "timestamp": at,
            "url": "https://shop.example.com/"})
    };
    let mut events = vec![stack.clone(), stack.clone(), stack];
    events.extend(std::iter::repeat_n(payment, 4));
    events.extend([timeout(now - 48 * HOUR_MS), timeout(now - HOUR_MS)]);
    let batch = json!({ "events": events });
    assert_eq!(
        accepted(&post(server, "/ingest/web-errors", &batch))["accepted"],
        9
    );
    now
}

fn list(server: &TestServer, key: &str, query: &str) -> Value {
    read(server, key, &format!("/api/v1/error-groups?{query}"))
}

fn messages(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|group| group["message"].as_str().unwrap().to_string())
        .collect()
}

/// Every page of `query` followed through `next_cursor`, checking `total` on each.
fn all_pages(server: &TestServer, key: &str, query: &str, total: u64) -> Vec<String> {
    let mut found = Vec::new();
    let mut path = query.to_string();
    loop {
        let page = list(server, key, &path);
        assert_eq!(page["total"], total, "{path}: {page}");
        assert_eq!(page["total_is_estimate"], false);
        found.extend(messages(&page));
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("{query}&cursor={cursor}"),
            None => return found,
        }
    }
}

fn bad(server: &TestServer, key: &str, path: &str) -> Value {
    send(bearer(server, key, Method::GET, path)).problem(400, "invalid_parameter")
}

#[test]
fn the_group_list_filters_sorts_counts_and_pages() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let now = ingest_three_groups(&server);
    wait_for("the events indexed", Duration::from_secs(5), || {
        (list(&server, &key, "q=declined")["items"].as_array()?.len() == 1).then_some(())
    });

    let (stack, payment, timeout) = (
        "user not found",
        "payment declined",
        "timeout talking to api",
    );
    let whole = list(&server, &key, "");
    assert_eq!(messages(&whole), [stack, timeout, payment]);
    assert_eq!(
        (whole["total"].clone(), whole["total_is_estimate"].clone()),
        (json!(3), json!(false))
    );
    let sums: Vec<u64> = whole["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|group| {
            let line = group["sparkline"].as_array().expect("sparkline");
            assert_eq!(line.len(), 24, "{group}");
            line.iter().map(|hour| hour.as_u64().unwrap()).sum()
        })
        .collect();
    // The timeout 2 days ago is outside the last 24 hours.
    assert_eq!(sums, [3, 1, 4]);
    assert_eq!(whole["items"][0]["sparkline"][23], 3, "this hour is last");

    // Every sort, one group a page, and two a page.
    for limit in [1, 2] {
        let sorted =
            |sort: &str| all_pages(&server, &key, &format!("sort={sort}&limit={limit}"), 3);
        assert_eq!(sorted("last_seen"), [stack, timeout, payment]);
        assert_eq!(sorted("first_seen"), [stack, payment, timeout]);
        assert_eq!(sorted("count"), [payment, stack, timeout]);
        assert_eq!(
            all_pages(&server, &key, &format!("limit={limit}"), 3),
            [stack, timeout, payment]
        );
    }

    // Event filters: groups with at least one matching event.
    let filtered: &[(String, &[&str])] = &[
        ("q=loadUser".into(), &[stack]),
        ("q=declined".into(), &[payment]),
        ("q=level:error".into(), &[stack, payment]),
        ("release=1.0".into(), &[stack]),
        ("environment=staging".into(), &[payment]),
        ("service=gallery".into(), &[payment]),
        ("release=9.9".into(), &[]),
        (format!("from={}", now - 90 * 60_000), &[stack, timeout]),
        (format!("to={}", rfc3339(now - 24 * HOUR_MS)), &[timeout]),
        (
            format!("new_since={}", rfc3339(now - 2 * HOUR_MS)),
            &[stack],
        ),
        (
            format!("new_since={}&status=resolved", rfc3339(now - 2 * HOUR_MS)),
            &[],
        ),
        ("q=level:error&sort=count".into(), &[payment, stack]),
        (
            "q=level:error&sort=first_seen&status=unresolved".into(),
            &[stack, payment],
        ),
    ];
    for (query, expected) in filtered {
        let total = expected.len() as u64;
        assert_eq!(
            all_pages(&server, &key, &format!("{query}&limit=1"), total),
            *expected,
            "{query}"
        );
    }

    for path in [
        "/api/v1/error-groups?sort=newest",
        "/api/v1/error-groups?new_since=yesterday",
        "/api/v1/error-groups?status=open",
        "/api/v1/error-groups?from=soon",
        "/api/v1/error-groups?cursor=garbage",
        "/api/v1/error-groups?sort=count&sort=first_seen",
        "/api/v1/error-groups?q=message:(unclosed",
    ] {
        bad(&server, &key, path);
    }
    let problem = bad(&server, &key, "/api/v1/error-groups?sort=newest");
    assert!(
        problem["detail"].as_str().unwrap().contains("sort"),
        "{problem}"
    );

    // The OpenAPI document describes each of them.
    let document = read(&server, &key, "/api/v1/openapi.json");
    let paths = &document["paths"];
    let list = &paths["/api/v1/error-groups"];
    assert!(list["patch"].is_object(), "bulk status documented");
    let names: Vec<&str> = list["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|parameter| parameter["name"].as_str().unwrap())
        .collect();
    for name in [
        "q",
        "release",
        "environment",
        "service",
        "from",
        "to",
        "new_since",
        "sort",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    assert!(paths["/api/v1/error-groups/{id}/tags"]["get"].is_object());
}

fn patch(server: &TestServer, key: &str, body: &Value) -> Reply {
    let request = bearer(server, key, Method::PATCH, "/api/v1/error-groups");
    send(request.json(body))
}

#[test]
fn bulk_status_changes_all_named_groups_or_none() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let events: Vec<Value> = (0..101)
        .map(|n| {
            json!({"level": "error", "message": "distinct", "url": "https://a.example/",
            "fingerprint": [format!("group-{n}")]})
        })
        .collect();
    for batch in events.chunks(100) {
        accepted(&post(
            &server,
            "/ingest/web-errors",
            &json!({ "events": batch }),
        ));
    }
    let ids: Vec<String> = list(&server, &key, "limit=500")["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|group| group["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 101);

    for body in [
        json!({"ids": ids, "status": "resolved"}),
        json!({"ids": [], "status": "resolved"}),
    ] {
        patch(&server, &key, &body).problem(400, "invalid_parameter");
    }
    patch(&server, &key, &json!({"ids": ids[..2], "status": "closed"}))
        .problem(400, "invalid_payload");
    // One unknown id: 404 and nothing changed.
    let mut with_unknown = ids[..5].to_vec();
    with_unknown.push("grp_01JZZZZZZZZZZZZZZZZZZZZZZZ".to_string());
    patch(
        &server,
        &key,
        &json!({"ids": with_unknown, "status": "ignored"}),
    )
    .problem(404, "not_found");
    assert_eq!(list(&server, &key, "status=ignored")["total"], 0);

    let reply = patch(
        &server,
        &key,
        &json!({"ids": ids[..100], "status": "resolved"}),
    );
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let body = reply.json();
    assert_eq!(body["updated"], 100);
    let items = body["items"].as_array().unwrap();
    assert_eq!(items.len(), 100);
    assert!(items.iter().all(|group| group["status"] == "resolved"));
    assert_eq!(items[0]["id"], ids[0].as_str(), "in the order of ids");
    assert_eq!(list(&server, &key, "status=resolved")["total"], 100);
    assert_eq!(list(&server, &key, "status=unresolved")["total"], 1);
    // Already resolved: nothing to update, still answered.
    let again = patch(
        &server,
        &key,
        &json!({"ids": [ids[0], ids[0]], "status": "resolved"}),
    );
    assert_eq!(
        (again.status, again.json()["updated"].clone()),
        (200, json!(0))
    );

    // Another organisation's owner does not know these ids; a viewer may not change status.
    add_user_in(&server, "other@example.com", "owner", Some("Other"));
    let other = sign_in(&server, "other@example.com");
    let body = json!({"ids": [ids[100]], "status": "ignored"});
    other
        .write(&server, Method::PATCH, "/api/v1/error-groups", &body)
        .problem(404, "not_found");
    add_user_in(&server, "viewer@example.com", "viewer", None);
    let viewer = sign_in(&server, "viewer@example.com");
    viewer
        .write(&server, Method::PATCH, "/api/v1/error-groups", &body)
        .problem(403, "forbidden");
    assert_eq!(list(&server, &key, "status=unresolved")["total"], 1);
}

#[test]
fn a_group_shows_its_tag_distribution_and_pages_its_events() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    ingest_three_groups(&server);
    let extra = json!({"level": "error", "name": "TypeError", "message": "user not found",
        "stack": STACK, "url": "https://shop.example.com/account", "release": "1.1",
        "environment": "production", "service": "shop", "user_agent": FIREFOX_LINUX,
        "tags": {"plan": "free", "release": "ignored"}});
    accepted(&post(
        &server,
        "/ingest/web-errors",
        &json!({"events": [extra]}),
    ));
    let groups = list(&server, &key, "");
    let stack = groups["items"][0]["id"].as_str().unwrap().to_string();

    let tags = read(&server, &key, &format!("/api/v1/error-groups/{stack}/tags"));
    assert_eq!(tags["sampled_events"], 4, "{tags}");
    let item = |name: &str| -> Value {
        tags["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["key"] == name)
            .unwrap_or_else(|| panic!("{name} in {tags}"))
            .clone()
    };
    let values = |name: &str| -> Vec<(String, u64)> {
        item(name)["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                (
                    v["value"].as_str().unwrap().to_string(),
                    v["count"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let pairs = |list: &[(&str, u64)]| -> Vec<(String, u64)> {
        list.iter().map(|(v, c)| (v.to_string(), *c)).collect()
    };
    assert_eq!(values("release"), pairs(&[("1.0", 3), ("1.1", 1)]));
    assert_eq!(values("browser"), pairs(&[("Chrome", 3), ("Firefox", 1)]));
    assert_eq!(values("os"), pairs(&[("Windows", 3), ("Linux", 1)]));
    assert_eq!(values("url"), pairs(&[("/cart", 3), ("/account", 1)]));
    assert_eq!(values("plan"), pairs(&[("pro", 3), ("free", 1)]));
    assert_eq!(item("environment")["total"], 4);
    let totals: Vec<u64> = tags["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["total"].as_u64().unwrap())
        .collect();
    assert!(
        totals.windows(2).all(|pair| pair[0] >= pair[1]),
        "{totals:?}"
    );

    let missing = "/api/v1/error-groups/grp_01JZZZZZZZZZZZZZZZZZZZZZZZ/tags";
    send(bearer(&server, &key, Method::GET, missing)).problem(404, "not_found");
    add_user_in(&server, "other@example.com", "owner", Some("Other"));
    let other = sign_in(&server, "other@example.com");
    other
        .get(&server, &format!("/api/v1/error-groups/{stack}/tags"))
        .problem(404, "not_found");

    // The group's events, a page of one at a time, each page with the group's total.
    let mut seen = Vec::new();
    let mut path = format!("/api/v1/errors?group={stack}&limit=1");
    loop {
        let page = read(&server, &key, &path);
        assert_eq!(
            (page["total"].clone(), page["total_is_estimate"].clone()),
            (json!(4), json!(false))
        );
        let items = page["items"].as_array().unwrap();
        assert!(
            items
                .iter()
                .all(|event| event["group_id"] == stack.as_str())
        );
        seen.extend(
            items
                .iter()
                .map(|event| event["id"].as_str().unwrap().to_string()),
        );
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/api/v1/errors?group={stack}&limit=1&cursor={cursor}"),
            None => break,
        }
    }
    let mut distinct = seen.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!((seen.len(), distinct.len()), (4, 4));
    assert_eq!(read(&server, &key, "/api/v1/errors?limit=2")["total"], 10);
    wait_for("the events indexed", Duration::from_secs(5), || {
        (read(&server, &key, "/api/v1/errors?q=declined")["total"] == 4).then_some(())
    });
    let searched = read(&server, &key, "/api/v1/errors?q=level:error&limit=1");
    assert_eq!(
        (
            searched["total"].clone(),
            searched["total_is_estimate"].clone()
        ),
        (json!(8), json!(false))
    );
}

#[test]
fn totals_are_exact_up_to_ten_thousand_then_estimates() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    // 10,050 events, each its own group; 50 of them in staging.
    for batch in 0..101 {
        let size = if batch == 100 { 50 } else { 100 };
        let events: Vec<Value> = (0..size)
            .map(|n| {
                let environment = if batch == 100 {
                    "staging"
                } else {
                    "production"
                };
                json!({"level": "error", "message": "m", "url": "https://a.example/",
                    "environment": environment, "fingerprint": [format!("g-{batch}-{n}")]})
            })
            .collect();
        accepted(&post(
            &server,
            "/ingest/web-errors",
            &json!({ "events": events }),
        ));
    }
    wait_for("the events indexed", Duration::from_secs(30), || {
        (read(&server, &key, "/api/v1/errors?q=level:error")["total"] == 10_050).then_some(())
    });
    let total = |path: &str| {
        let page = read(&server, &key, path);
        (
            page["total"].as_u64().unwrap(),
            page["total_is_estimate"].as_bool().unwrap(),
        )
    };
    assert_eq!(
        total("/api/v1/errors?q=level:error"),
        (10_050, false),
        "the index counts"
    );
    assert_eq!(
        total("/api/v1/errors"),
        (10_050, true),
        "past 10,000: the index's count"
    );
    assert_eq!(total("/api/v1/errors?q=environment:staging"), (50, false));
    assert_eq!(
        total("/api/v1/error-groups"),
        (10_001, true),
        "more than 10,000"
    );
    assert_eq!(
        total("/api/v1/error-groups?environment=staging"),
        (50, false)
    );
    let (groups, estimate) = total("/api/v1/error-groups?q=level:error");
    assert!(estimate && groups > 10_000, "{groups}");
    let (sorted, estimate) = total("/api/v1/error-groups?sort=count&status=unresolved");
    assert!(estimate && sorted >= 10_000, "{sorted}");
}
