//! Replacing documents by the millisecond their ids were minted, over a scratch store and an
//! index in memory: a sweep across a batch boundary inside one millisecond, a moved event, an
//! event of a millisecond already read back, and no term per event in the index; an index of
//! another schema or format started over.

use serde_json::json;
use tantivy::collector::Count;
use tantivy::query::{BooleanQuery, Occur};

use super::*;
use crate::accounts::model::Org;
use crate::clock::{Clock, Timestamp};
use crate::errors::event_db::{EventBatch, remove_event, rewrite_event, store_events};
use crate::errors::search::query::term;
use crate::errors::search::schema::KIND_EVENT;
use crate::errors::search::{FORMAT, FORMAT_FILE, open_index};
// Marked so the arrow check (tests/integration/tidy.rs) reads it as test-only, as it is.
#[cfg(test)]
use crate::ingest::web_errors::parse_event;
use crate::store::tables::composite_key;
use crate::store::{Store, StoreOptions};

const NOW: Timestamp = Timestamp(1_795_348_800_000);
/// The millisecond every test event is minted in, but those of `minted_at`.
const MS: u64 = 1_795_348_800_000;

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    org: Org,
    fields: Fields,
    target: Target,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db.redb"), StoreOptions::default()).unwrap();
    let org = crate::accounts::create_org(&store, &Clock::system(), "Acme")
        .await
        .unwrap();
    let (schema, fields) = schema::schema();
    let target = Target::new(Index::create_in_ram(schema)).unwrap();
    Fixture {
        _dir: dir,
        store,
        org,
        fields,
        target,
    }
}

/// An event with the given word in its message, minted in `ms` (its `n`th id there).
fn minted_at(ms: u64, n: u128, word: &str) -> ErrorEvent {
    let item = json!({"level": "error", "message": format!("{word} failed"), "url": "u",
        "stack": format!("Error: {word}\n    at f (https://a.test/app.js:1:1)")});
    let mut event = parse_event(&item.clone().into(), NOW, None).unwrap();
    event.id =
        crate::errors::EventId::parse(&format!("evt_{}", ulid::Ulid::from_parts(ms, 1_000 + n)))
            .unwrap();
    event
}

impl Fixture {
    /// Stores the events (each assigned a group) and returns them as stored.
    async fn store(&self, events: Vec<ErrorEvent>) -> Vec<ErrorEvent> {
        let org = self.org.id.clone();
        self.store
            .write(move |txn| {
                let mut batch = EventBatch::new(&org, events.clone());
                store_events(txn, &org, &mut batch)?;
                Ok::<_, StoreError>(batch.events().to_vec())
            })
            .await
            .unwrap()
    }

    fn org(&self) -> &str {
        self.org.id.as_str()
    }

    /// Event documents of the organisation, and those with `word` in their message.
    fn count(&mut self, word: Option<&str>) -> usize {
        self.target.commit().unwrap();
        let mut clauses = vec![
            (Occur::Must, term(self.fields.kind, KIND_EVENT)),
            (Occur::Must, term(self.fields.org, self.org.id.as_str())),
        ];
        if let Some(word) = word {
            clauses.push((Occur::Must, term(self.fields.message, word)));
        }
        let searcher = self.target.reader.searcher();
        searcher
            .search(&BooleanQuery::new(clauses), &Count)
            .unwrap()
    }
}

#[tokio::test]
async fn a_sweep_across_a_batch_boundary_inside_a_millisecond_finds_each_stored_event_once() {
    let mut f = fixture().await;
    let events: Vec<ErrorEvent> = (0..6)
        .map(|n| minted_at(MS, n, "first"))
        .chain((0..4).map(|n| minted_at(MS + 1, n, "first")))
        .collect();
    let stored = f.store(events).await;
    let org = f.org().to_string();
    f.target
        .add_stored(&f.fields, &org, &stored, &mut Sweep::none());
    assert_eq!(f.count(None), 10);
    // A crash's catch-up reads them again in two batches split inside the first millisecond,
    // after one of them was removed from redb (retention ran meanwhile).
    let gone = stored[2].id.to_string();
    let key = composite_key(&org, &gone);
    f.store
        .write(move |txn| remove_event(txn, &key))
        .await
        .unwrap();
    let kept: Vec<ErrorEvent> = stored
        .into_iter()
        .filter(|e| e.id.as_str() != gone)
        .collect();
    let mut sweep = Sweep::from_id(kept[0].id.as_str());
    let (head, tail) = kept.split_at(3);
    f.target.add_stored(&f.fields, &org, head, &mut sweep);
    f.target.add_stored(&f.fields, &org, tail, &mut sweep);
    assert_eq!(
        f.count(None),
        9,
        "each kept event once, the removed one gone"
    );
    assert_eq!(f.target.replaced_to(), Some(MS + 1));
}

#[tokio::test]
async fn a_moved_event_and_a_late_one_of_a_millisecond_read_back_replace_their_documents() {
    let mut f = fixture().await;
    let org = f.org().to_string();
    let stored = f
        .store((0..5).map(|n| minted_at(MS, n, "payment")).collect())
        .await;
    let fresh = f.store(vec![minted_at(MS + 9, 0, "payment")]).await;
    f.target
        .add_live(&f.fields, &f.store, &org, &stored, false)
        .unwrap();
    f.target
        .add_live(&f.fields, &f.store, &org, &fresh, false)
        .unwrap();
    assert_eq!(f.count(Some("payment")), 6);
    assert_eq!(f.target.replaced_to(), None, "nothing was read back");

    // One event moves to another group (its message rewritten here, so the move shows in a
    // search); an event of the same millisecond reaches redb before the move is indexed, and
    // the writer only later.
    let mut moved = stored[1].clone();
    moved.message = "refund failed".into();
    moved.group_id = Some("grp_01JGZ0000000000000000000000".into());
    let (org_id, key, rewritten) = (
        f.org.id.clone(),
        composite_key(&org, moved.id.as_str()),
        moved.clone(),
    );
    f.store
        .write(move |txn| rewrite_event(txn, &org_id, &key, &rewritten))
        .await
        .unwrap();
    let late = f.store(vec![minted_at(MS, 99, "payment")]).await;
    f.target
        .add_live(&f.fields, &f.store, &org, &[moved], true)
        .unwrap();
    assert_eq!(f.count(Some("refund")), 1);
    assert_eq!(
        f.count(Some("payment")),
        6,
        "the four left, the late one and the later millisecond's, once each"
    );
    assert_eq!(f.target.replaced_to(), Some(MS));

    // The late event's own hand-over: its millisecond was read back, so it replaces.
    f.target
        .add_live(&f.fields, &f.store, &org, &late, false)
        .unwrap();
    assert_eq!(
        f.count(None),
        7,
        "six stored before, the late one, each once"
    );
    // An event of a later millisecond is added as it comes.
    let newer = f.store(vec![minted_at(MS + 10, 0, "payment")]).await;
    f.target
        .add_live(&f.fields, &f.store, &org, &newer, false)
        .unwrap();
    assert_eq!(f.count(None), 8);
}

#[tokio::test]
async fn no_field_holds_a_term_per_event() {
    let mut f = fixture().await;
    let org = f.org().to_string();
    let stored = f
        .store(
            (0..50)
                .map(|n| minted_at(MS + n as u64 % 2, n, "checkout"))
                .collect(),
        )
        .await;
    f.target
        .add_live(&f.fields, &f.store, &org, &stored, false)
        .unwrap();
    assert_eq!(f.count(None), 50);
    let searcher = f.target.reader.searcher();
    let terms = |field| -> u64 {
        searcher
            .segment_readers()
            .iter()
            .map(|segment| segment.inverted_index(field).unwrap().terms().num_terms() as u64)
            .sum()
    };
    assert_eq!(terms(f.fields.id_ms), 2, "one per millisecond");
    assert_eq!(terms(f.fields.id), 0, "ids are stored, not indexed");
    assert_eq!(terms(f.fields.timestamp), 0, "timestamps are a column");
    // The group's document is found by its group, once.
    let group = stored[0].group_id.clone().unwrap();
    let groups = BooleanQuery::new(vec![
        (Occur::Must, term(f.fields.kind, KIND_GROUP)),
        (Occur::Must, term(f.fields.group, &group)),
    ]);
    assert_eq!(searcher.search(&groups, &Count).unwrap(), 1);
}

#[test]
fn an_index_of_the_earlier_schema_is_started_over() {
    let dir = tempfile::tempdir().unwrap();
    // Of this format: only the schema differs.
    std::fs::write(dir.path().join(FORMAT_FILE), FORMAT).unwrap();
    // The schema before `id_ms`: ids and timestamps indexed.
    let mut builder = tantivy::schema::Schema::builder();
    let id = builder.add_text_field("id", tantivy::schema::STRING | tantivy::schema::STORED);
    builder.add_i64_field(
        "timestamp",
        tantivy::schema::INDEXED | tantivy::schema::FAST,
    );
    let earlier = Index::create_in_dir(dir.path(), builder.build()).unwrap();
    let mut writer = earlier.writer_with_num_threads(1, 15_000_000).unwrap();
    let mut document = tantivy::TantivyDocument::default();
    document.add_text(id, "evt_01JGZ0000000000000000000000");
    writer.add_document(document).unwrap();
    let mut prepared = writer.prepare_commit().unwrap();
    prepared.set_payload("evt_01JGZ0000000000000000000000\ncomplete");
    prepared.commit().unwrap();
    drop(writer);

    let opened = open_index(dir.path()).unwrap();
    assert_eq!(opened.schema(), schema::schema().0);
    let target = Target::new(opened).unwrap();
    assert_eq!(target.reader.searcher().num_docs(), 0);
    // No checkpoint: every stored event is indexed again, in the background.
    assert_eq!(target.checkpoint(), None);
}

/// One event's document committed to `index` with the event as the checkpoint.
fn commit_one_event(index: &Index) {
    let (_, fields) = schema::schema();
    let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
    let mut document = tantivy::TantivyDocument::default();
    document.add_text(fields.kind, KIND_EVENT);
    document.add_text(fields.id, "evt_01JGZ0000000000000000000000");
    writer.add_document(document).unwrap();
    let mut prepared = writer.prepare_commit().unwrap();
    prepared.set_payload("evt_01JGZ0000000000000000000000\ncomplete");
    prepared.commit().unwrap();
}

#[test]
fn an_index_without_the_format_file_is_started_over_and_one_with_it_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    // This schema, but written without the file, as indexes of FST term dictionaries were.
    commit_one_event(&Index::create_in_dir(dir.path(), schema::schema().0).unwrap());

    let started_over = Target::new(open_index(dir.path()).unwrap()).unwrap();
    assert_eq!(started_over.reader.searcher().num_docs(), 0);
    assert_eq!(started_over.checkpoint(), None);
    assert_eq!(std::fs::read(dir.path().join(FORMAT_FILE)).unwrap(), FORMAT);
    // Its writer holds the index's lock until it is dropped.
    let index = started_over.index.clone();
    drop(started_over);
    commit_one_event(&index);

    let kept = Target::new(open_index(dir.path()).unwrap()).unwrap();
    assert_eq!(kept.reader.searcher().num_docs(), 1);
    assert_eq!(kept.checkpoint(), Some("evt_01JGZ0000000000000000000000"));
}
