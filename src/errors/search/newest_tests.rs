//! The newest-first visit against a brute-force reading of every match: the same page in the
//! same order, exact totals up to the bound, a visit that stops early, estimates near the count.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tantivy::collector::Count;
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{Query, TermQuery};
use tantivy::schema::{FAST, Field, INDEXED, IndexRecordOption, STRING, Schema};
use tantivy::{Index, TantivyDocument, Term};

use super::*;

struct Fixture {
    index: Index,
    word: Field,
}

/// `segments` segments of `per_segment` documents: timestamps mostly rising (a few out of
/// order, many shared), word `a` on half, `b` on a third, `c` on one in 97, `old` only in the
/// first segment; one document in 50 has no timestamp; one in 13 is deleted afterwards.
fn fixture(segments: usize, per_segment: usize) -> Fixture {
    let mut builder = Schema::builder();
    let timestamp = builder.add_i64_field("timestamp", INDEXED | FAST);
    let word = builder.add_text_field("word", STRING);
    let id = builder.add_u64_field("id", INDEXED);
    let index = Index::create_in_ram(builder.build());
    let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
    writer.set_merge_policy(Box::new(NoMergePolicy));
    // Seeded, so every run builds the same index.
    let mut rng = StdRng::seed_from_u64(0x9e37_79b9_7f4a_7c15);
    let mut n = 0u64;
    for segment in 0..segments {
        for _ in 0..per_segment {
            let mut document = TantivyDocument::default();
            document.add_u64(id, n);
            if n % 50 != 7 {
                let jitter = rng.random_range(0..5i64);
                let at = if n % 101 == 3 {
                    0
                } else {
                    (n / 4) as i64 + jitter
                };
                document.add_i64(timestamp, at);
            }
            for (name, every) in [("a", 2), ("b", 3), ("c", 97)] {
                if n.is_multiple_of(every) {
                    document.add_text(word, name);
                }
            }
            if segment == 0 {
                document.add_text(word, "old");
            }
            writer.add_document(document).unwrap();
            n += 1;
        }
        writer.commit().unwrap();
    }
    for gone in (0..n).step_by(13) {
        writer.delete_term(Term::from_field_u64(id, gone));
    }
    writer.commit().unwrap();
    Fixture { index, word }
}

impl Fixture {
    fn query(&self, word: &str) -> TermQuery {
        TermQuery::new(
            Term::from_field_text(self.word, word),
            IndexRecordOption::Basic,
        )
    }

    /// Every alive match with a timestamp, newest first in the module's order.
    fn all(&self, searcher: &Searcher, query: &dyn Query) -> Vec<(i64, DocAddress)> {
        let weight = query
            .weight(EnableScoring::disabled_from_searcher(searcher))
            .unwrap();
        let mut all = Vec::new();
        for (ord, reader) in searcher.segment_readers().iter().enumerate() {
            let column = reader.fast_fields().i64("timestamp").unwrap();
            let mut scorer = weight.scorer(reader, 1.0).unwrap();
            let mut doc = scorer.doc();
            while doc != tantivy::TERMINATED {
                if reader
                    .alive_bitset()
                    .is_none_or(|alive| alive.is_alive(doc))
                    && let Some(at) = column.first(doc)
                {
                    all.push((at, DocAddress::new(ord as u32, doc)));
                }
                doc = scorer.advance();
            }
        }
        all.sort_by_key(|&(at, address)| std::cmp::Reverse((at, address)));
        all
    }
}

fn searcher(fixture: &Fixture) -> Searcher {
    fixture.index.reader().unwrap().searcher()
}

#[test]
fn the_page_is_the_newest_matches_and_a_small_total_is_exact() {
    let fixture = fixture(6, 7_000);
    let searcher = searcher(&fixture);
    let maxima = BlockMaxima::default();
    let counting = Counting {
        exact_up_to: 500,
        always_visit: 0,
    };
    for word in ["a", "b", "c", "old", "none"] {
        let query = fixture.query(word);
        let all = fixture.all(&searcher, &query);
        let matches = searcher.search(&query, &Count).unwrap();
        for k in [0, 1, 7, 50, 333, 5_000] {
            let found = newest(&searcher, &maxima, &query, "timestamp", k, counting).unwrap();
            let expected: Vec<_> = all.iter().take(k).copied().collect();
            assert_eq!(found.found, expected, "word {word}, k {k}");
            if matches <= counting.exact_up_to {
                assert_eq!((found.total, found.exact), (matches, true), "word {word}");
            } else {
                assert!(found.total > counting.exact_up_to, "word {word}, k {k}");
            }
            if found.exact {
                assert_eq!(found.total, matches, "word {word}, k {k}");
            }
        }
    }
}

#[test]
fn the_visit_stops_at_what_the_answer_needs() {
    let fixture = fixture(8, 8_000);
    let searcher = searcher(&fixture);
    let maxima = BlockMaxima::default();
    let documents: u64 = searcher
        .segment_readers()
        .iter()
        .map(|reader| u64::from(reader.max_doc()))
        .sum();
    let query = fixture.query("a");
    let counting = Counting {
        exact_up_to: 1_000,
        always_visit: 0,
    };
    let found = newest(&searcher, &maxima, &query, "timestamp", 10, counting).unwrap();
    assert!(!found.exact);
    assert!(
        found.visited < documents / 3,
        "visited {} of {documents}",
        found.visited
    );
    // Half the documents hold `a`, one in 13 deleted: the estimate is near the count.
    let matches = searcher.search(&query, &Count).unwrap() as f64;
    let ratio = found.total as f64 / matches;
    assert!((0.8..1.25).contains(&ratio), "{} of {matches}", found.total);
    // A word only the oldest segment holds is estimated from that segment, not extrapolated
    // from the newest documents.
    let old = fixture.query("old");
    let matches = searcher.search(&old, &Count).unwrap();
    let found = newest(&searcher, &maxima, &old, "timestamp", 10, counting).unwrap();
    assert!(
        found.total > 1_000 && found.total <= matches * 5 / 4,
        "{}",
        found.total
    );
    // Counting alone (k = 0) stops as soon as it is past the bound.
    let counted = newest(&searcher, &maxima, &query, "timestamp", 0, counting).unwrap();
    assert!(counted.found.is_empty() && !counted.exact && counted.visited < documents / 3);
}

#[test]
fn a_store_smaller_than_always_visit_is_counted_exactly() {
    let fixture = fixture(4, 5_000);
    let searcher = searcher(&fixture);
    let query = fixture.query("a");
    let counting = Counting {
        exact_up_to: 100,
        always_visit: 1 << 17,
    };
    let found = newest(
        &searcher,
        &BlockMaxima::default(),
        &query,
        "timestamp",
        5,
        counting,
    )
    .unwrap();
    let matches = searcher.search(&query, &Count).unwrap();
    assert_eq!((found.total, found.exact), (matches, true));
}

#[test]
fn block_maxima_forget_segments_no_longer_searched() {
    let fixture = fixture(3, 5_000);
    let maxima = BlockMaxima::default();
    let query = fixture.query("a");
    let counting = Counting::API;
    newest(
        &searcher(&fixture),
        &maxima,
        &query,
        "timestamp",
        1,
        counting,
    )
    .unwrap();
    assert_eq!(maxima.segments.lock().unwrap().len(), 3);
    let mut writer: tantivy::IndexWriter = fixture
        .index
        .writer_with_num_threads(1, 15_000_000)
        .unwrap();
    let ids = fixture.index.searchable_segment_ids().unwrap();
    writer.merge(&ids).wait().unwrap();
    writer.commit().unwrap();
    let reader = fixture.index.reader().unwrap();
    reader.reload().unwrap();
    newest(
        &reader.searcher(),
        &maxima,
        &query,
        "timestamp",
        1,
        counting,
    )
    .unwrap();
    assert_eq!(maxima.segments.lock().unwrap().len(), 1);
}
