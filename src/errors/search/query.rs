//! Running a search: `q` in the tantivy query language over `message`, `name`, `stack`,
//! `url`, `release`, `service`, `environment`, `level` and `tag.KEY`, plus a time range, a
//! group and exact release, environment and service, newest first; or the count of the
//! matches, or the groups of the newest matches (the error group list's event filters).
//!
//! Invariants: every query is restricted to the caller's organisation and to event documents.
//! Stack text lives in group documents, so each term of `q` that can match a stack (a
//! `stack:` term, or a term without a field, which searches `message`, `name`, `stack` and
//! `url`) is first run over the organisation's group documents, and the term is rewritten to
//! "the event's own fields match, or its group is one of those": `stack:x AND release:y` is
//! the events of release y in groups whose stack holds x. The query's boolean structure is
//! kept as written. Results are event ids; the caller reads the events from redb.

use std::collections::BTreeSet;
use std::ops::Bound;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, QueryParser, RangeQuery, TermQuery};
use tantivy::query_grammar::{self, Delimiter, UserInputAst, UserInputLeaf, UserInputLiteral};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{Searcher, TantivyDocument, Term};

use super::newest::{self, Counting};
use super::schema::{KIND_EVENT, KIND_GROUP};
use super::{Opened, Search, SearchError};

/// Groups whose stacks match one term that are carried into the event query.
const MAX_MATCHING_GROUPS: usize = 1_000;
/// Up to this many groups, a stack term's groups are a union of terms, each read as the search
/// advances; past it, one set, whose documents are all read when a segment is searched.
const GROUP_TERMS_UP_TO: usize = 64;
/// The fields a term without a field searches besides `stack`.
const EVENT_TEXT_FIELDS: [&str; 3] = ["message", "name", "url"];

#[derive(Clone)]
pub struct SearchRequest {
    pub org: String,
    pub q: Option<String>,
    /// Event time, ms since the epoch: `from` inclusive, `to` exclusive.
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub group: Option<String>,
    /// Exact values of the event's `release`, `environment` and `service`.
    pub release: Option<String>,
    pub environment: Option<String>,
    pub service: Option<String>,
    pub limit: usize,
    pub offset: usize,
}

/// A page of event ids, newest first, and how many events match in all.
pub struct Page {
    pub ids: Vec<String>,
    pub total: usize,
    pub total_is_estimate: bool,
}

/// The groups of the newest events matching a request.
pub struct MatchedGroups {
    pub groups: BTreeSet<String>,
    /// Events whose group was read, and events matching in all.
    pub read_events: usize,
    pub matched_events: usize,
}

impl SearchRequest {
    /// Every event of `org`: no filter, the first page of the default size.
    pub fn of_org(org: String) -> SearchRequest {
        SearchRequest {
            org,
            q: None,
            from: None,
            to: None,
            group: None,
            release: None,
            environment: None,
            service: None,
            limit: crate::http::page::DEFAULT_LIMIT,
            offset: 0,
        }
    }
}

pub(super) fn term(field: tantivy::schema::Field, text: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, text),
        IndexRecordOption::Basic,
    ))
}

impl Search {
    /// Event ids matching `request`, newest first (at most `limit` after skipping `offset`),
    /// and how many events match in all (exact up to `EXACT_TOTAL_UP_TO`): one newest-first
    /// visit for both. Blocking: call it from a blocking thread.
    pub fn query(&self, request: &SearchRequest) -> Result<Page, SearchError> {
        let fields = &self.inner.fields;
        let opened = self.opened();
        let searcher = opened.reader.searcher();
        let query = self.build_query(&opened, &searcher, request)?;
        let wanted = request.offset.saturating_add(request.limit.max(1));
        let newest = newest::newest(
            &searcher,
            &opened.maxima,
            &query,
            "timestamp",
            wanted,
            Counting::API,
        )?;
        tracing::debug!(
            visited = newest.visited,
            total = newest.total,
            exact = newest.exact,
            "events searched newest first"
        );
        let mut ids = Vec::with_capacity(request.limit);
        for (_, address) in newest.found.into_iter().skip(request.offset) {
            let document: TantivyDocument = searcher.doc(address)?;
            if let Some(id) = document.get_first(fields.id).and_then(|v| v.as_str()) {
                ids.push(id.to_string());
            }
        }
        Ok(Page {
            ids,
            total: newest.total,
            total_is_estimate: !newest.exact,
        })
    }

    /// How many events match `request` (its `limit` and `offset` aside): exact up to
    /// `EXACT_TOTAL_UP_TO`, an estimate past it. Blocking: call it from a blocking thread.
    pub fn count(&self, request: &SearchRequest) -> Result<usize, SearchError> {
        let opened = self.opened();
        let searcher = opened.reader.searcher();
        let query = self.build_query(&opened, &searcher, request)?;
        let counted = newest::newest(
            &searcher,
            &opened.maxima,
            &query,
            "timestamp",
            0,
            Counting::API,
        )?;
        Ok(counted.total)
    }

    /// The distinct groups of the newest `max_events` events matching `request`. Blocking:
    /// call it from a blocking thread.
    pub fn groups_of_matches(
        &self,
        request: &SearchRequest,
        max_events: usize,
    ) -> Result<MatchedGroups, SearchError> {
        let fields = &self.inner.fields;
        let opened = self.opened();
        let searcher = opened.reader.searcher();
        let query = self.build_query(&opened, &searcher, request)?;
        let newest = newest::newest(
            &searcher,
            &opened.maxima,
            &query,
            "timestamp",
            max_events.max(1),
            Counting::API,
        )?;
        let mut groups = BTreeSet::new();
        for (_, address) in &newest.found {
            let document: TantivyDocument = searcher.doc(*address)?;
            if let Some(group) = document.get_first(fields.group).and_then(|v| v.as_str()) {
                groups.insert(group.to_string());
            }
        }
        Ok(MatchedGroups {
            groups,
            read_events: newest.found.len(),
            matched_events: newest.total,
        })
    }

    /// The query of `request`: its organisation, filters and parsed `q`.
    fn build_query(
        &self,
        opened: &Opened,
        searcher: &Searcher,
        request: &SearchRequest,
    ) -> Result<BooleanQuery, SearchError> {
        let fields = &self.inner.fields;
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
                let ast = query_grammar::parse_query(q)
                    .map_err(|_| SearchError::InvalidQuery(format!("cannot parse {q:?}")))?;
                let rewriter = StackTerms {
                    parser: &parser,
                    searcher,
                    org: &request.org,
                    search: self,
                };
                let ast = rewriter.rewrite(ast)?;
                Some(
                    parser
                        .build_query_from_user_input_ast(ast)
                        .map_err(|error| SearchError::InvalidQuery(error.to_string()))?,
                )
            }
            None => None,
        };
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![
            (Occur::Must, term(fields.kind, KIND_EVENT)),
            (Occur::Must, term(fields.org, &request.org)),
        ];
        let exact = [
            (fields.group, &request.group),
            (fields.release, &request.release),
            (fields.environment, &request.environment),
            (fields.service, &request.service),
        ];
        for (field, value) in exact {
            if let Some(value) = value {
                clauses.push((Occur::Must, term(field, value)));
            }
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
            clauses.push((Occur::Must, parsed));
        }
        Ok(BooleanQuery::new(clauses))
    }
}

/// Rewrites the terms of a query that can match stack text (see the module invariants).
struct StackTerms<'a> {
    parser: &'a QueryParser,
    searcher: &'a Searcher,
    org: &'a str,
    search: &'a Search,
}

impl StackTerms<'_> {
    fn rewrite(&self, ast: UserInputAst) -> Result<UserInputAst, SearchError> {
        Ok(match ast {
            UserInputAst::Clause(clauses) => UserInputAst::Clause(
                clauses
                    .into_iter()
                    .map(|(occur, clause)| Ok((occur, self.rewrite(clause)?)))
                    .collect::<Result<_, SearchError>>()?,
            ),
            UserInputAst::Boost(inner, boost) => {
                UserInputAst::Boost(Box::new(self.rewrite(*inner)?), boost)
            }
            UserInputAst::Leaf(leaf) => self.rewrite_leaf(*leaf)?,
        })
    }

    fn rewrite_leaf(&self, leaf: UserInputLeaf) -> Result<UserInputAst, SearchError> {
        let field = match &leaf {
            UserInputLeaf::Literal(literal) => literal.field_name.as_deref(),
            UserInputLeaf::Set { field, .. } => field.as_deref(),
            _ => return Ok(UserInputAst::Leaf(Box::new(leaf))),
        };
        let unfielded = match field {
            None => true,
            Some("stack") => false,
            Some(_) => return Ok(UserInputAst::Leaf(Box::new(leaf))),
        };
        let on = |field: &str| UserInputAst::Leaf(Box::new(with_field(leaf.clone(), field)));
        let groups = self.groups_matching(on("stack"))?;
        let mut either: Vec<(Option<query_grammar::Occur>, UserInputAst)> = Vec::new();
        if unfielded {
            for field in EVENT_TEXT_FIELDS {
                either.push((Some(query_grammar::Occur::Should), on(field)));
            }
        }
        if groups.len() > GROUP_TERMS_UP_TO || either.is_empty() {
            // An empty set matches nothing, which is what a stack term no group holds means.
            let set = UserInputLeaf::Set {
                field: Some("group".to_string()),
                elements: groups,
            };
            either.push((
                Some(query_grammar::Occur::Should),
                UserInputAst::Leaf(Box::new(set)),
            ));
        } else {
            // A few groups: one term each, read lazily (a set reads all its documents up front).
            for group in groups {
                let literal = UserInputLiteral {
                    field_name: Some("group".to_string()),
                    phrase: group,
                    delimiter: Delimiter::None,
                    slop: 0,
                    prefix: false,
                };
                either.push((
                    Some(query_grammar::Occur::Should),
                    UserInputAst::Leaf(Box::new(UserInputLeaf::Literal(literal))),
                ));
            }
        }
        Ok(UserInputAst::Clause(either))
    }

    /// The organisation's groups whose stack matches `stack_term`.
    fn groups_matching(&self, stack_term: UserInputAst) -> Result<Vec<String>, SearchError> {
        let fields = &self.search.inner.fields;
        let term_query = self
            .parser
            .build_query_from_user_input_ast(stack_term)
            .map_err(|error| SearchError::InvalidQuery(error.to_string()))?;
        let groups_query = BooleanQuery::new(vec![
            (Occur::Must, term(fields.kind, KIND_GROUP)),
            (Occur::Must, term(fields.org, self.org)),
            (Occur::Must, term_query),
        ]);
        let mut groups = BTreeSet::new();
        let top = TopDocs::with_limit(MAX_MATCHING_GROUPS).order_by_score();
        for (_, address) in self.searcher.search(&groups_query, &top)? {
            let document: TantivyDocument = self.searcher.doc(address)?;
            if let Some(group) = document.get_first(fields.group).and_then(|v| v.as_str()) {
                groups.insert(group.to_string());
            }
        }
        Ok(groups.into_iter().collect())
    }
}

fn with_field(leaf: UserInputLeaf, field: &str) -> UserInputLeaf {
    match leaf {
        UserInputLeaf::Literal(mut literal) => {
            literal.field_name = Some(field.to_string());
            UserInputLeaf::Literal(literal)
        }
        UserInputLeaf::Set { elements, .. } => UserInputLeaf::Set {
            field: Some(field.to_string()),
            elements,
        },
        other => other,
    }
}
