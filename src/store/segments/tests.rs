//! Unit tests of the event segments: records written, read back, cut after a crash, removed.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::MetadataExt;

use serde::{Deserialize, Serialize};

use super::*;
use crate::store::codec::Record;
use crate::store::codec::{self, CODEC_VERSION_SEGMENT, CODEC_VERSION_TAGGED, Encoded};
use crate::store::{ReadTxn, RecordTable, Scan, Store, StoreOptions};

/// A tagged record, stored as error events are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Note {
    text: String,
    #[serde(skip)]
    tag: String,
}

impl Record for Note {
    const KIND: &'static str = "note";

    fn attach_tag(&mut self, tag: &str) -> bool {
        self.tag = tag.to_string();
        true
    }
}

const NOTES: RecordTable<Note> = RecordTable::new(tables::EVENTS);

fn note(n: usize) -> Note {
    Note {
        text: format!("note {n} {}", "x".repeat(200 + n % 7)),
        tag: String::new(),
    }
}

fn open(dir: &Path) -> Store {
    Store::open(&dir.join("db.redb"), StoreOptions::default()).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Writes notes `range` in one commit, tagged `tag`.
fn write(store: &Store, range: std::ops::Range<usize>, tag: &'static str) {
    let encoded: Vec<(String, Encoded<Note>)> = range
        .map(|n| (format!("o/{n:06}"), Encoded::new(&note(n)).unwrap()))
        .collect();
    let encoded = Arc::new(encoded);
    runtime()
        .block_on(store.write(move |txn| {
            let mut notes = NOTES.writer(txn)?;
            for (key, note) in encoded.iter() {
                notes.insert_tagged(key, note, tag)?;
            }
            Ok::<_, StoreError>(())
        }))
        .unwrap();
}

fn remove(store: &Store, range: std::ops::Range<usize>) {
    runtime()
        .block_on(store.write(move |txn| {
            for n in range.clone() {
                NOTES.remove(txn, &format!("o/{n:06}"))?;
            }
            Ok::<_, StoreError>(())
        }))
        .unwrap();
}

fn read_all(store: &Store) -> Vec<(String, Note)> {
    store
        .read_blocking(|txn| NOTES.scan(txn, Scan::all()))
        .unwrap()
}

fn raw_rows(store: &Store) -> Vec<Vec<u8>> {
    store
        .read_blocking(|txn| {
            txn.open(NOTES.definition())?
                .scan_with(Scan::all(), |_, value| Ok(value.to_vec()))
        })
        .unwrap()
}

fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir_of(&dir.join("db.redb")))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files
}

/// Records written by the store's writer live in a segment file, their rows hold only the
/// tag and where the record is, and they read back whole, after a reopen too.
#[test]
fn records_go_to_a_segment_and_read_back_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    write(&store, 0..50, "grp_a");
    write(&store, 50..100, "grp_b");
    let rows = raw_rows(&store);
    assert_eq!(rows.len(), 100);
    for row in &rows {
        assert_eq!(row[0], CODEC_VERSION_SEGMENT);
        assert!(row.len() < 32, "a row of {} bytes", row.len());
    }
    let files = segment_files(dir.path());
    assert_eq!(files.len(), 1);
    assert!(fs::metadata(&files[0]).unwrap().len() > 100 * 200);
    let check = |store: &Store| {
        let read = read_all(store);
        assert_eq!(read.len(), 100);
        for (n, (key, record)) in read.iter().enumerate() {
            assert_eq!(key, &format!("o/{n:06}"));
            assert_eq!(record.text, note(n).text);
            assert_eq!(record.tag, if n < 50 { "grp_a" } else { "grp_b" });
        }
    };
    check(&store);
    store.close_blocking();
    let store = open(dir.path());
    check(&store);
    // Appends go on in the same segment after a reopen.
    write(&store, 100..110, "grp_c");
    assert_eq!(segment_files(dir.path()).len(), 1);
    assert_eq!(read_all(&store).len(), 110);
    store.close_blocking();
}

/// A record written and read back inside the same write transaction reads from the frames
/// not yet on disk; a write that fails leaves nothing named, and the next one writes over it.
#[test]
fn a_transaction_reads_its_own_records_and_an_aborted_one_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    write(&store, 0..3, "grp_a");
    let seen = runtime()
        .block_on(store.write(|txn| {
            NOTES.writer(txn)?.insert_tagged(
                "o/000010",
                &Encoded::new(&note(10)).unwrap(),
                "grp_new",
            )?;
            Ok::<_, StoreError>(NOTES.get(txn, "o/000010")?.map(|note| note.tag))
        }))
        .unwrap();
    assert_eq!(seen.as_deref(), Some("grp_new"));
    let refused = runtime().block_on(store.write(|txn| {
        NOTES
            .writer(txn)?
            .insert_tagged("o/000020", &Encoded::new(&note(20)).unwrap(), "grp_x")?;
        Err::<(), _>(StoreError::Storage("refused".into()))
    }));
    assert!(refused.is_err());
    write(&store, 30..31, "grp_d");
    let keys: Vec<String> = read_all(&store).into_iter().map(|(key, _)| key).collect();
    assert_eq!(
        keys,
        ["o/000000", "o/000001", "o/000002", "o/000010", "o/000030"]
    );
    assert_eq!(
        read_all(&store)[4].1,
        Note {
            tag: "grp_d".into(),
            ..note(30)
        }
    );
    store.close_blocking();
}

/// What a crash leaves (frames past the committed length, a segment file no row names) is
/// cut off and deleted when the store opens; every committed record still reads.
#[test]
fn opening_cuts_uncommitted_frames_and_deletes_unnamed_segments() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    write(&store, 0..20, "grp_a");
    store.close_blocking();
    let files = segment_files(dir.path());
    let committed = fs::metadata(&files[0]).unwrap().len();
    let mut segment = OpenOptions::new().append(true).open(&files[0]).unwrap();
    std::io::Write::write_all(&mut segment, &[7; 5000]).unwrap();
    let stray = files[0].with_file_name("00000099.seg");
    fs::write(&stray, [1; 100]).unwrap();

    let store = open(dir.path());
    assert_eq!(fs::metadata(&files[0]).unwrap().len(), committed);
    assert!(!stray.exists());
    assert_eq!(read_all(&store).len(), 20);
    // The next segment number is past every one seen, named or not.
    write(&store, 20..21, "grp_b");
    assert_eq!(read_all(&store).len(), 21);
    store.close_blocking();
}

/// Removing and writing records over gives their space back: holes punched in the segment
/// once the grace is over (here: as the store closes), a segment with nothing left deleted
/// whole, never while a backup holds the records.
#[test]
fn removed_records_give_their_space_back_but_not_during_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    write(&store, 0..2000, "grp_a");
    let file = segment_files(dir.path()).remove(0);
    let blocks = |file: &Path| fs::metadata(file).unwrap().blocks();
    remove(&store, 0..1500);
    // Written over: the old record is released too.
    write(&store, 1500..1600, "grp_b");
    let full = blocks(&file);
    assert_eq!(read_all(&store).len(), 500);
    {
        let _backup = store.shared.segments.snapshot_guard();
        store.shared.segments.reclaim(true);
        assert_eq!(blocks(&file), full, "nothing given back during a backup");
    }
    store.close_blocking();
    let punched = blocks(&file);
    assert!(
        punched * 2 < full,
        "{punched} blocks of {full} after removing three quarters"
    );
    let store = open(dir.path());
    let read = read_all(&store);
    assert_eq!(read.len(), 500);
    assert_eq!(
        read[0].1,
        Note {
            tag: "grp_b".into(),
            ..note(1500)
        }
    );
    assert_eq!(
        read[499].1,
        Note {
            tag: "grp_a".into(),
            ..note(1999)
        }
    );
    // A newer segment takes the appends once this one is closed for them; when every record
    // of the older one is gone, its file goes.
    store.close_blocking();
    let store = open(dir.path());
    remove(&store, 1500..2000);
    write(&store, 5000..5001, "grp_c");
    store.close_blocking();
    let store = open(dir.path());
    assert_eq!(read_all(&store).len(), 1);
    assert_eq!(segment_files(dir.path()).len(), 1);
    store.close_blocking();
}

/// A backup holds every record whole (version 3 rows), so a restored store needs no
/// segment, and the segments' own table is not copied.
#[test]
fn a_snapshot_holds_records_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    write(&store, 0..10, "grp_a");
    let work = tempfile::tempdir().unwrap();
    let snapshot = store
        .snapshot_blocking(work.path(), &mut crate::store::snapshot::no_progress)
        .unwrap();
    let (path, counts) = snapshot.copy();
    assert!(!counts.contains_key(tables::SEGMENT_STATE));
    assert_eq!(counts[tables::EVENTS], 10);
    let copy = redb::ReadOnlyDatabase::open(path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&copy).unwrap();
    let rows = txn
        .open(NOTES.definition())
        .unwrap()
        .scan_with(Scan::all(), |_, value| {
            assert_eq!(value[0], CODEC_VERSION_TAGGED);
            codec::decode::<Note>(value)
        })
        .unwrap();
    assert_eq!(rows.len(), 10);
    assert_eq!(
        rows[3],
        Note {
            tag: "grp_a".into(),
            ..note(3)
        }
    );
    store.close_blocking();
}

/// A row naming a place its segment does not hold, or bytes that fail their checksum, reads
/// as corrupt, never as another record; a pointer read outside any store says so.
#[test]
fn damaged_frames_and_reads_outside_a_store_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    write(&store, 0..3, "grp_a");
    store.close_blocking();
    let file = segment_files(dir.path()).remove(0);
    let mut bytes = fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&file, bytes).unwrap();
    let store = open(dir.path());
    let error = store
        .read_blocking(|txn| NOTES.get(txn, "o/000002"))
        .unwrap_err();
    assert!(error.to_string().contains("checksum"), "{error}");
    assert!(
        store
            .read_blocking(|txn| NOTES.get(txn, "o/000001"))
            .is_ok()
    );
    let row = raw_rows(&store).remove(0);
    let outside = codec::decode::<Note>(&row).unwrap_err();
    assert!(
        outside.to_string().contains("outside its store"),
        "{outside}"
    );
    let pointer = codec::segment_pointer(&row).unwrap();
    let past = Pointer {
        offset: 1 << 30,
        ..pointer
    };
    let error = store.shared.segments.read(past).unwrap_err();
    assert!(error.to_string().contains("past"), "{error}");
    store.close_blocking();
}

#[test]
fn pointers_round_trip() {
    let pointer = Pointer {
        segment: 7,
        offset: 123_456_789_012,
        len: 300,
    };
    assert_eq!(Pointer::from_bytes(&pointer.to_bytes()), Some(pointer));
    assert_eq!(Pointer::from_bytes(&[0; 15]), None);
    let state = SegmentState { live: 5, end: 99 };
    assert_eq!(SegmentState::from_bytes(&state.to_bytes()), Some(state));
}

/// Space is given back in a segment that is no longer the one appended to (opened again for
/// the punching: readers hold it read-only).
#[test]
fn removed_records_give_space_back_in_an_older_segment() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    write(&store, 0..2000, "grp_a");
    store.close_blocking();
    // The segment counts as full: the next start appends to a new one.
    let database = redb::Database::open(dir.path().join("db.redb")).unwrap();
    let txn = database.begin_write().unwrap();
    {
        let mut table = txn.open_table(write::definition()).unwrap();
        let full = SegmentState {
            live: 2000,
            end: SEGMENT_BYTES,
        };
        table
            .insert(state_key(1).as_str(), full.to_bytes().as_slice())
            .unwrap();
    }
    txn.commit().unwrap();
    drop(database);
    let store = open(dir.path());
    write(&store, 5000..5001, "grp_b");
    assert_eq!(segment_files(dir.path()).len(), 2);
    let old = segment_files(dir.path()).remove(0);
    let full = fs::metadata(&old).unwrap().blocks();
    remove(&store, 0..1500);
    store.close_blocking();
    let punched = fs::metadata(&old).unwrap().blocks();
    assert!(punched * 2 < full, "{punched} blocks of {full}");
    let store = open(dir.path());
    assert_eq!(read_all(&store).len(), 501);
    store.close_blocking();
}

/// Only whole blocks are punched: a lone record's bytes inside a block stay until its
/// segment empties, neighbours removed together free the blocks they cover.
#[test]
fn holes_cover_whole_blocks_only() {
    let pointer = |offset, len| Pointer {
        segment: 3,
        offset,
        len,
    };
    // Two neighbours (8 + 992 and 8 + 5_000 bytes from 100) and a lone one far away.
    let released = vec![
        pointer(1_100, 5_000),
        pointer(100, 992),
        pointer(50_000, 100),
    ];
    assert_eq!(
        reclaim::ranges(released, &[]),
        Vec::<(u32, u64, u64)>::new()
    );
    let released = vec![pointer(100, 992), pointer(1_100, 12_000)];
    assert_eq!(reclaim::ranges(released, &[]), [(3, 4_096, 12_288)]);
    assert!(reclaim::ranges(vec![pointer(0, 20_000)], &[3]).is_empty());
}
