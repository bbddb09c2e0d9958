//! Running a search: `q` in the tantivy query language over `message`, `name`, `stack`,
//! `url`, `release`, `service`, `environment`, `level` and `tag.KEY`, plus a time range and a
//! group, newest first.
//!
//! Invariants: every query is restricted to the caller's organisation and to event documents.
//! Stack text lives in group documents, so `q` is run twice: over the organisation's group
//! documents (which hold only `stack`), giving groups whose stack matches, then over its event
//! documents, where an event matches `q` itself or belongs to one of those groups. A term on
//! `stack` therefore combines with event fields by OR, not AND (`stack:x AND release:y`
//! matches nothing: no document holds both; filter with `group` instead). Results are event
//! ids; the caller reads the events from redb.

use std::collections::BTreeSet;
use std::ops::Bound;

use tantivy::collector::TopDocs;
use tantivy::query::{
    BooleanQuery, Occur, Query, QueryParser, RangeQuery, TermQuery, TermSetQuery,
};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{Order, TantivyDocument, Term};

use super::schema::{KIND_EVENT, KIND_GROUP};
use super::{Search, SearchError};

/// Groups whose stacks match that are carried into the event query.
const MAX_MATCHING_GROUPS: usize = 1_000;

pub struct SearchRequest {
    pub org: String,
    pub q: Option<String>,
    /// Event time, ms since the epoch: `from` inclusive, `to` exclusive.
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub group: Option<String>,
    pub limit: usize,
    pub offset: usize,
}

fn term(field: tantivy::schema::Field, text: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, text),
        IndexRecordOption::Basic,
    ))
}

impl Search {
    /// Event ids matching `request`, newest first: at most `limit` after skipping `offset`.
    /// Blocking: call it from a blocking thread.
    pub fn query(&self, request: &SearchRequest) -> Result<Vec<String>, SearchError> {
        let fields = &self.inner.fields;
        let opened = self.opened();
        let searcher = opened.reader.searcher();
        let parsed = match request
            .q
            .as_deref()
            .map(str::trim)
            .filter(|q| !q.is_empty())
        {
            Some(q) => {
                let defaults = vec![fields.message, fields.name, fields.stack, fields.url];
                let mut parser = QueryParser::for_index(&opened.index, defaults);
                parser.set_conjunction_by_default();
                Some(
                    parser
                        .parse_query(q)
                        .map_err(|error| SearchError::InvalidQuery(error.to_string()))?,
                )
            }
            None => None,
        };
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![
            (Occur::Must, term(fields.kind, KIND_EVENT)),
            (Occur::Must, term(fields.org, &request.org)),
        ];
        if let Some(group) = &request.group {
            clauses.push((Occur::Must, term(fields.group, group)));
        }
        if request.from.is_some() || request.to.is_some() {
            let bound = |at: Option<i64>, inclusive: bool| match at {
                Some(at) if inclusive => {
                    Bound::Included(Term::from_field_i64(fields.timestamp, at))
                }
                Some(at) => Bound::Excluded(Term::from_field_i64(fields.timestamp, at)),
                None => Bound::Unbounded,
            };
            let range = RangeQuery::new(bound(request.from, true), bound(request.to, false));
            clauses.push((Occur::Must, Box::new(range)));
        }
        if let Some(parsed) = parsed {
            let groups_query = BooleanQuery::new(vec![
                (Occur::Must, term(fields.kind, KIND_GROUP)),
                (Occur::Must, term(fields.org, &request.org)),
                (Occur::Must, parsed.box_clone()),
            ]);
            let mut groups = BTreeSet::new();
            for (_, address) in searcher.search(
                &groups_query,
                &TopDocs::with_limit(MAX_MATCHING_GROUPS).order_by_score(),
            )? {
                let document: TantivyDocument = searcher.doc(address)?;
                if let Some(group) = document.get_first(fields.group).and_then(|v| v.as_str()) {
                    groups.insert(Term::from_field_text(fields.group, group));
                }
            }
            let mut either: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Should, parsed)];
            if !groups.is_empty() {
                either.push((Occur::Should, Box::new(TermSetQuery::new(groups))));
            }
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(either))));
        }
        let query = BooleanQuery::new(clauses);
        let top = TopDocs::with_limit(request.limit.max(1))
            .and_offset(request.offset)
            .order_by_fast_field::<i64>("timestamp", Order::Desc);
        let mut ids = Vec::new();
        for (_, address) in searcher.search(&query, &top)? {
            let document: TantivyDocument = searcher.doc(address)?;
            if let Some(id) = document.get_first(fields.id).and_then(|v| v.as_str()) {
                ids.push(id.to_string());
            }
        }
        Ok(ids)
    }
}
