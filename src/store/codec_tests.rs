//! The codec: every version decodes, records take exact allocations, damage and unknown
//! versions are corrupt (never a panic), tags come back, also to a part of a record, and
//! dictionaries make records smaller.

use super::*;
use serde::Deserialize;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Sample {
    name: String,
    #[serde(default)]
    added_later: u32,
}
impl Record for Sample {
    const KIND: &'static str = "sample";
}

#[test]
fn long_records_are_compressed_and_every_version_decodes() {
    let short = Sample {
        name: "a".repeat(COMPRESS_ABOVE - 40),
        added_later: 1,
    };
    let bytes = encode(&short).unwrap();
    assert_eq!(bytes[0], CODEC_VERSION);
    assert_eq!(decode::<Sample>(&bytes).unwrap(), short);

    let long = Sample {
        name: "at render (https://app.example.com/assets/app.js:10:20)\n".repeat(40),
        added_later: 2,
    };
    let bytes = encode(&long).unwrap();
    assert_eq!(bytes[0], CODEC_VERSION_ZSTD);
    assert!(bytes.len() < long.name.len() / 4, "{} bytes", bytes.len());
    assert_eq!(decode::<Sample>(&bytes).unwrap(), long);
    // A record written as plain JSON, however long, still reads.
    let plain = [&[CODEC_VERSION][..], &serde_json::to_vec(&long).unwrap()].concat();
    assert_eq!(decode::<Sample>(&plain).unwrap(), long);
}

#[test]
fn records_are_stored_in_exact_allocations_and_the_scratch_stays_small() {
    let huge = Sample {
        name: (0..20_000).map(|n| format!("{n:x} ")).collect(),
        added_later: 3,
    };
    let short = Sample {
        name: "b".into(),
        added_later: 4,
    };
    // One thread's scratch serves each record in turn: nothing of one is left in the next.
    for record in [&huge, &short, &huge, &short] {
        let bytes = encode(record).unwrap();
        assert_eq!(bytes.capacity(), bytes.len());
        assert_eq!(&decode::<Sample>(&bytes).unwrap(), record);
        SCRATCH.with_borrow(|scratch| {
            assert!(scratch.json.capacity() <= SCRATCH_KEPT);
            assert!(scratch.compressed.capacity() <= SCRATCH_KEPT);
        });
    }
}

#[test]
fn damaged_compressed_records_are_corrupt_not_a_panic() {
    let long = Sample {
        name: "x".repeat(4 * COMPRESS_ABOVE),
        added_later: 0,
    };
    let bytes = encode(&long).unwrap();
    for damaged in [
        bytes[..bytes.len() / 2].to_vec(),
        vec![CODEC_VERSION_ZSTD],
        vec![CODEC_VERSION_ZSTD, 1, 2, 3, 4, 5, 6, 7, 8],
    ] {
        assert!(matches!(
            decode::<Sample>(&damaged),
            Err(StoreError::Corrupt { .. })
        ));
    }
}

#[test]
fn round_trips_and_tolerates_added_fields() {
    let sample = Sample {
        name: "a".into(),
        added_later: 7,
    };
    assert_eq!(decode::<Sample>(&encode(&sample).unwrap()).unwrap(), sample);
    let old = [&[CODEC_VERSION][..], br#"{"name":"old"}"#].concat();
    assert_eq!(
        decode::<Sample>(&old).unwrap(),
        Sample {
            name: "old".into(),
            added_later: 0
        }
    );
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Tagged {
    body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tag: Option<String>,
}
impl Record for Tagged {
    const KIND: &'static str = "tagged";
    fn attach_tag(&mut self, tag: &str) -> bool {
        self.tag = Some(tag.to_string());
        true
    }
}

#[test]
fn tagged_records_read_with_their_tag_and_damage_is_corrupt() {
    let mut row = Vec::new(); // the long body first: nothing of it may stay for the short
    for body in ["a long body of text ".repeat(100), "short".to_string()] {
        let record = Tagged { body, tag: None };
        let encoded = Encoded::new(&record).unwrap();
        let bytes = encoded.tagged("grp_01").unwrap();
        encoded.tagged_into("grp_01", &mut row).unwrap();
        assert_eq!(row, bytes);
        assert_eq!(bytes[0], CODEC_VERSION_TAGGED);
        let read: Tagged = decode(&bytes).unwrap();
        assert_eq!(read.tag.as_deref(), Some("grp_01"));
        assert_eq!(read.body, record.body);
        for damaged in [&bytes[..1], &bytes[..4], &bytes[..bytes.len() - 3]] {
            assert!(matches!(
                decode::<Tagged>(damaged),
                Err(StoreError::Corrupt { .. })
            ));
        }
        // A kind without tags refuses tagged bytes rather than dropping the tag.
        let sample = Encoded::new(&Sample {
            name: "n".into(),
            added_later: 0,
        })
        .unwrap();
        assert!(matches!(
            decode::<Sample>(&sample.tagged("t").unwrap()),
            Err(StoreError::Corrupt { .. })
        ));
    }
    assert!(
        Encoded::new(&Tagged {
            body: "b".into(),
            tag: None
        })
        .unwrap()
        .tagged(&"x".repeat(256))
        .is_err()
    );
    let nested = [
        &[CODEC_VERSION_TAGGED, 1, b'a', CODEC_VERSION_TAGGED, 0][..],
        b"\x01{}",
    ]
    .concat();
    assert!(decode::<Tagged>(&nested).is_err());
}

/// Part of a `Tagged` record: its tag only.
#[derive(Debug, Deserialize)]
struct TagOnly {
    #[serde(default)]
    tag: Option<String>,
}
impl Decode for TagOnly {
    const KIND: &'static str = "tagged";
    fn attach_tag(&mut self, tag: &str) -> bool {
        self.tag = Some(tag.to_string());
        true
    }
}

#[test]
fn a_part_of_a_record_reads_its_fields_and_tag_and_skips_the_others() {
    let record = Tagged {
        body: "a long body of text ".repeat(100),
        tag: None,
    };
    let bytes = Encoded::new(&record).unwrap().tagged("grp_02").unwrap();
    let part: TagOnly = decode(&bytes).unwrap();
    assert_eq!(part.tag.as_deref(), Some("grp_02"));
    let whole = encode(&Tagged {
        body: "b".into(),
        tag: Some("grp_03".into()),
    })
    .unwrap();
    assert_eq!(
        decode::<TagOnly>(&whole).unwrap().tag.as_deref(),
        Some("grp_03")
    );
    assert!(matches!(
        decode::<TagOnly>(&bytes[..bytes.len() - 3]),
        Err(StoreError::Corrupt { .. })
    ));
}

#[test]
fn records_compressed_with_a_dictionary_are_smaller_and_read_back() {
    let owner = "org_codec_test";
    let bytes = dictionaries::sample_dictionary("codec", 400);
    dictionaries::activate(owner, &bytes, crate::clock::Timestamp(1)).unwrap();
    let dictionary = dictionaries::current(owner).unwrap();
    let record = Tagged {
        body: format!(
            "TypeError codec 7 at render (https://app.example.com/assets/codec.js:7:20) {}",
            "at commit (https://app.example.com/assets/vendor.js:1:7) ".repeat(3)
        ),
        tag: None,
    };
    let plain = Encoded::new(&record).unwrap().tagged("grp_1").unwrap();
    let small = Encoded::with_dictionary(&record, Some(dictionary))
        .unwrap()
        .tagged("grp_1")
        .unwrap();
    assert_eq!(small[2 + 5], CODEC_VERSION_DICTIONARY);
    assert!(
        small.len() * 2 < plain.len(),
        "{} vs {}",
        small.len(),
        plain.len()
    );
    let read: Tagged = decode(&small).unwrap();
    assert_eq!(
        (read.body, read.tag.as_deref()),
        (record.body, Some("grp_1"))
    );

    // A short record is compressed too, and damage or an unknown dictionary is corrupt.
    let short = encode_with(
        &Sample {
            name: "a".into(),
            added_later: 1,
        },
        Some(dictionary),
    );
    let short = short.unwrap();
    assert_eq!(decode::<Sample>(&short).unwrap().name, "a");
    let mut unknown = short.clone();
    unknown[1] ^= 0xff;
    for damaged in [&short[..5], &short[..short.len() - 2], &unknown[..]] {
        assert!(matches!(
            decode::<Sample>(damaged),
            Err(StoreError::Corrupt { .. })
        ));
    }
}

#[test]
fn rejects_unknown_versions_and_garbage() {
    for bytes in [&b""[..], &b"\x02{}"[..], &b"\x01not json"[..]] {
        assert!(matches!(
            decode::<Sample>(bytes),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
