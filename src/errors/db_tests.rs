//! Grouping across fingerprint versions: a group stored under a version 1 fingerprint keeps
//! receiving the events of its site after the rule changed, and several new fingerprints that
//! lead to one old group count into it once per event.

use serde_json::json;

use super::*;
use crate::store::migrations::scratch_database;
// Marked so the arrow check (tests/integration/tidy.rs) reads it as test-only, as it is.
#[cfg(test)]
use crate::ingest::web_errors::parse_event;

const NOW: i64 = 1_795_348_800_000;

fn event(stack: &str) -> ErrorEvent {
    let item = json!({"level": "error", "name": "TypeError", "message": "m", "url": "u",
        "timestamp": NOW, "stack": stack});
    parse_event(&item.clone().into(), crate::clock::Timestamp(NOW), None).unwrap()
}

/// Stores `events` in one transaction as `store_events` does; returns their group ids.
fn store(
    database: &redb::Database,
    org: &OrgId,
    events: &[(ErrorEvent, Fingerprint)],
) -> Vec<String> {
    let txn = database.begin_write().unwrap();
    let mut grouping = Grouping::new(&txn, org).unwrap();
    let ids = events
        .iter()
        .map(|(event, found)| {
            grouping
                .assign(&txn, event, found)
                .unwrap()
                .0
                .as_str()
                .to_string()
        })
        .collect();
    grouping.finish(&txn).unwrap();
    txn.commit().unwrap();
    ids
}

/// The fingerprint a server before version 2 computed: the version 1 hash as the key.
fn as_stored_by_version_1(found: &Fingerprint) -> Fingerprint {
    Fingerprint {
        hash: found
            .legacy
            .clone()
            .expect("versions differ for this stack"),
        basis: found.basis,
        legacy: None,
    }
}

#[test]
fn a_version_1_group_keeps_its_site_after_the_upgrade() {
    let (_dir, database) = scratch_database();
    let org = OrgId::generate();
    // Chromium and Firefox stacks of one site: version 1 made two groups of them.
    let chromium = event(
        "TypeError: x\n    at Cart.checkout (https://a.test/app.js:3:34)\n    at render (https://a.test/app.js:6:14)",
    );
    let firefox = event("checkout@https://a.test/app.js:3:34\nrender@https://a.test/app.js:6:14\n");
    let (chromium_found, firefox_found) = (fingerprint_of(&chromium), fingerprint_of(&firefox));
    assert_eq!(chromium_found.hash, firefox_found.hash);
    assert!(chromium_found.legacy.is_some());
    let old = store(
        &database,
        &org,
        &[(chromium.clone(), as_stored_by_version_1(&chromium_found))],
    );

    // After the upgrade: the same site from both engines, twice in one batch, then again.
    let batch = [
        (chromium.clone(), chromium_found.clone()),
        (firefox.clone(), firefox_found.clone()),
        (chromium.clone(), chromium_found.clone()),
    ];
    let new = store(&database, &org, &batch);
    assert!(new.iter().all(|id| *id == old[0]), "{old:?} {new:?}");
    let later = store(&database, &org, &[(firefox, firefox_found)]);
    assert_eq!(later[0], old[0]);

    let txn = database.begin_write().unwrap();
    let id = GroupId::parse(&old[0]).unwrap();
    let group = get_group(&txn, &org, &id).unwrap().unwrap();
    assert_eq!(group.count, 5, "every event counted once");
}

#[test]
fn two_new_fingerprints_of_one_old_group_count_once_each() {
    let (_dir, database) = scratch_database();
    let org = OrgId::generate();
    let old_key = "0".repeat(32);
    let found = |hash: &str| Fingerprint {
        hash: hash.to_string(),
        basis: fingerprint::Basis::Stack,
        legacy: Some(old_key.clone()),
    };
    let site = event("f@https://a.test/app.js:1:1\n");
    let old = store(
        &database,
        &org,
        &[(
            site.clone(),
            Fingerprint {
                hash: old_key.clone(),
                basis: fingerprint::Basis::Stack,
                legacy: None,
            },
        )],
    );
    let new = store(
        &database,
        &org,
        &[
            (site.clone(), found(&"1".repeat(32))),
            (site, found(&"2".repeat(32))),
        ],
    );
    assert_eq!(new, vec![old[0].clone(), old[0].clone()]);
    let txn = database.begin_write().unwrap();
    let group = get_group(&txn, &org, &GroupId::parse(&old[0]).unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(group.count, 3);
}
