//! The newest matches of a query and how many there are, visiting only as many documents as
//! the answer needs: the page's matches, and matches enough to know the count is exact or past
//! `EXACT_TOTAL_UP_TO`.
//!
//! Each segment's documents are cut into blocks of `BLOCK_DOCS`, and each block's newest
//! timestamp is read once per segment (segments never change) and kept while the segment
//! lives. Blocks are visited newest first, in waves that double in size; within a wave one
//! scorer per segment walks its blocks in document order. A block is read for the page only
//! while it may hold a match newer than the page's oldest so far; the visit stops once the count
//! is past the exact bound, no block left can change the page, and at least
//! `Counting::always_visit` documents were visited; a store of at most that many live
//! documents is always counted exactly, deleted documents in its segments aside.
//!
//! Invariants: the order is timestamp descending, then segment and document descending (the
//! later of two documents written in the same millisecond first), so one searcher always
//! answers the same page. A total is exact when every block was visited or it is at most the
//! exact bound; otherwise it is the counted matches plus, per unvisited part of a segment, the
//! index's own estimate of its matches (its scorer's size hint, in proportion to the part's
//! documents), and never below the exact bound plus one.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};

use tantivy::index::SegmentId;
use tantivy::query::{EnableScoring, Query, Weight};
use tantivy::{DocAddress, DocId, DocSet, Searcher, SegmentReader};

/// Documents per block: a block's newest timestamp is one `i64` per this many documents.
const BLOCK_DOCS: u32 = 4_096;
/// Blocks in the first wave; each next wave has twice as many.
const FIRST_WAVE: usize = 4;

/// When a total may be an estimate.
#[derive(Clone, Copy)]
pub struct Counting {
    /// Totals up to this are exact.
    pub exact_up_to: usize,
    /// Documents always visited before a total may be estimated: a small store counts exactly.
    pub always_visit: u64,
}

impl Counting {
    /// The API's: exact up to `EXACT_TOTAL_UP_TO`, and exact in a store of up to 2^17 documents.
    pub const API: Counting = Counting {
        exact_up_to: super::EXACT_TOTAL_UP_TO,
        always_visit: 1 << 17,
    };
}

/// The newest timestamp of each block of each segment seen, kept while the segment lives.
#[derive(Default)]
pub struct BlockMaxima {
    segments: Mutex<HashMap<SegmentId, Arc<[i64]>>>,
}

/// The newest `(timestamp, address)` matches, newest first, and the count of all matches.
pub struct Newest {
    pub found: Vec<(i64, DocAddress)>,
    pub total: usize,
    pub exact: bool,
    /// Documents visited (matching or not).
    pub visited: u64,
}

/// A match's place in the order: larger is newer.
type Rank = (i64, u32, DocId);

impl BlockMaxima {
    /// The block maxima of every segment of `searcher` (`i64::MIN` for a block without a
    /// timestamp); segments no longer searched are forgotten.
    fn of(&self, searcher: &Searcher, field: &str) -> tantivy::Result<Vec<Arc<[i64]>>> {
        let mut known = self
            .segments
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut maxima = Vec::with_capacity(searcher.segment_readers().len());
        for reader in searcher.segment_readers() {
            let id = reader.segment_id();
            let blocks = match known.get(&id) {
                Some(blocks) => blocks.clone(),
                None => {
                    let blocks: Arc<[i64]> = block_maxima(reader, field)?.into();
                    known.insert(id, blocks.clone());
                    blocks
                }
            };
            maxima.push(blocks);
        }
        if known.len() > maxima.len() {
            let live: Vec<SegmentId> = searcher
                .segment_readers()
                .iter()
                .map(SegmentReader::segment_id)
                .collect();
            known.retain(|id, _| live.contains(id));
        }
        Ok(maxima)
    }
}

fn block_maxima(reader: &SegmentReader, field: &str) -> tantivy::Result<Vec<i64>> {
    let column = reader.fast_fields().i64(field)?;
    let max_doc = reader.max_doc();
    let mut maxima = Vec::with_capacity(max_doc.div_ceil(BLOCK_DOCS) as usize);
    let (mut docs, mut values) = (Vec::new(), Vec::new());
    for start in (0..max_doc).step_by(BLOCK_DOCS as usize) {
        let end = start.saturating_add(BLOCK_DOCS).min(max_doc);
        docs.clear();
        docs.extend(start..end);
        values.clear();
        values.resize(docs.len(), None);
        column.first_vals(&docs, &mut values);
        maxima.push(values.iter().flatten().copied().max().unwrap_or(i64::MIN));
    }
    Ok(maxima)
}

/// One block: its newest timestamp, segment and index in the segment.
#[derive(Clone, Copy)]
struct Block {
    newest: i64,
    segment: u32,
    index: u32,
}

/// The `k` newest matches of `query` by the i64 fast field `field`, and the count of all
/// matches (see the module invariants).
pub fn newest(
    searcher: &Searcher,
    maxima: &BlockMaxima,
    query: &dyn Query,
    field: &str,
    k: usize,
    mut counting: Counting,
) -> tantivy::Result<Newest> {
    // A store of few live documents counts exactly, however many deleted ones (documents
    // replaced after a crash, until merged) its segments still hold.
    if searcher.num_docs() <= counting.always_visit {
        counting.always_visit = u64::MAX;
    }
    let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
    let segment_maxima = maxima.of(searcher, field)?;
    let mut blocks: Vec<Block> = Vec::new();
    for (segment, maxima) in segment_maxima.iter().enumerate() {
        for (index, &newest) in maxima.iter().enumerate() {
            if newest != i64::MIN {
                blocks.push(Block {
                    newest,
                    segment: segment as u32,
                    index: index as u32,
                });
            }
        }
    }
    blocks.sort_unstable_by_key(|block| Reverse((block.newest, block.segment, block.index)));
    let mut visit = Visit {
        searcher,
        weight: weight.as_ref(),
        field,
        k,
        counting,
        page: BinaryHeap::with_capacity(k.saturating_add(1).min(1 << 16)),
        counted: 0,
        visited: vec![0; segment_maxima.len()],
        counted_in: vec![0; segment_maxima.len()],
        visited_total: 0,
        cut_short: false,
    };
    let (mut next, mut wave) = (0, FIRST_WAVE);
    while next < blocks.len() && !visit.done(blocks[next].newest, visit.visited_total) {
        let end = next.saturating_add(wave).min(blocks.len());
        let mut this_wave = blocks[next..end].to_vec();
        this_wave.sort_unstable_by_key(|block| (block.segment, block.index));
        for run in this_wave.chunk_by(|a, b| a.segment == b.segment) {
            visit.segment(run)?;
        }
        (next, wave) = (end, wave.saturating_mul(2));
    }
    let exact_up_to = counting.exact_up_to;
    let exact = visit.counted <= exact_up_to || (next == blocks.len() && !visit.cut_short);
    let total = if exact {
        visit.counted
    } else {
        visit.estimate()?.max(exact_up_to + 1)
    };
    let mut found: Vec<Rank> = visit.page.into_iter().map(|Reverse(rank)| rank).collect();
    found.sort_unstable_by(|a, b| b.cmp(a));
    Ok(Newest {
        found: found
            .into_iter()
            .map(|(at, segment_ord, doc_id)| (at, DocAddress::new(segment_ord, doc_id)))
            .collect(),
        total,
        exact,
        visited: visit.visited_total,
    })
}

struct Visit<'a> {
    searcher: &'a Searcher,
    weight: &'a dyn Weight,
    field: &'a str,
    k: usize,
    counting: Counting,
    /// The page so far, oldest on top.
    page: BinaryHeap<Reverse<Rank>>,
    counted: usize,
    /// Documents visited and matches counted, per segment.
    visited: Vec<u64>,
    counted_in: Vec<u64>,
    visited_total: u64,
    /// Whether a block was left part-way, its count past the exact bound.
    cut_short: bool,
}

impl Visit<'_> {
    /// Whether a block whose newest timestamp is `newest` could enter the page.
    fn may_enter(&self, newest: i64) -> bool {
        self.k > 0
            && (self.page.len() < self.k
                || self
                    .page
                    .peek()
                    .is_some_and(|Reverse((oldest, ..))| newest >= *oldest))
    }

    /// Whether nothing from `newest` on (blocks come newest first) can change the page, the
    /// count is past exact and `visited` documents are enough to estimate from.
    fn done(&self, newest: i64, visited: u64) -> bool {
        self.counted > self.counting.exact_up_to
            && visited >= self.counting.always_visit
            && !self.may_enter(newest)
    }

    /// Visits the blocks of `run`, all of one segment, in document order.
    fn segment(&mut self, run: &[Block]) -> tantivy::Result<()> {
        let ord = run[0].segment;
        let reader = self.searcher.segment_reader(ord);
        let column = reader.fast_fields().i64(self.field)?;
        let alive = reader.alive_bitset();
        let mut scorer = self.weight.scorer(reader, 1.0)?;
        let max_doc = reader.max_doc();
        for block in run {
            let start = block.index * BLOCK_DOCS;
            let end = start.saturating_add(BLOCK_DOCS).min(max_doc);
            let entering = self.may_enter(block.newest);
            let mut doc = scorer.doc();
            if doc < start {
                doc = scorer.seek(start);
            }
            let mut reached = end;
            while doc < end {
                if alive.is_none_or(|alive| alive.is_alive(doc)) {
                    self.counted += 1;
                    self.counted_in[ord as usize] += 1;
                    if entering && let Some(at) = column.first(doc) {
                        self.offer((at, ord, doc));
                    }
                    let visited = self.visited_total + u64::from(doc + 1 - start);
                    if !entering && self.done(block.newest, visited) {
                        // Nothing here can enter the page and the count is past exact.
                        reached = doc + 1;
                        self.cut_short = true;
                        break;
                    }
                }
                doc = scorer.advance();
            }
            self.visited[ord as usize] += u64::from(reached - start);
            self.visited_total += u64::from(reached - start);
        }
        Ok(())
    }

    fn offer(&mut self, rank: Rank) {
        if self.page.len() < self.k {
            self.page.push(Reverse(rank));
        } else if let Some(mut oldest) = self.page.peek_mut()
            && rank > oldest.0
        {
            *oldest = Reverse(rank);
        }
    }

    /// The counted matches plus the index's estimate for the documents not visited.
    fn estimate(&self) -> tantivy::Result<usize> {
        let mut total = self.counted as f64;
        for (ord, reader) in self.searcher.segment_readers().iter().enumerate() {
            let max_doc = u64::from(reader.max_doc());
            let unvisited = max_doc.saturating_sub(self.visited[ord]);
            if unvisited == 0 || max_doc == 0 {
                continue;
            }
            let hint = f64::from(self.weight.scorer(reader, 1.0)?.size_hint());
            let alive = f64::from(reader.num_docs()) / max_doc as f64;
            let share = unvisited as f64 / max_doc as f64;
            let left = (hint * alive - self.counted_in[ord] as f64).max(0.0);
            total += (hint * alive * share).min(left);
        }
        Ok(total.round() as usize)
    }
}

#[cfg(test)]
#[path = "newest_tests.rs"]
mod tests;
