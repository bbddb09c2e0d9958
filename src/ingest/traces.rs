//! Pure views over stored spans: a trace as a tree, and duration percentiles per span name.
//!
//! Invariants: every span of a trace appears exactly once in its tree, whatever the parent
//! links say (a missing parent makes a root; a cycle is broken at the span that starts first);
//! spans deeper than `MAX_DEPTH` hang from their ancestor at that depth (so a tree has at most
//! `MAX_DEPTH + 1` levels), so rendering never recurses without bound. Percentiles are nearest-rank.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::spans::Span;

/// Deepest nesting of `children` in a trace response.
pub const MAX_DEPTH: usize = 64;

#[derive(Debug, Serialize, ToSchema)]
pub struct TraceSpan {
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: Option<String>,
    pub name: String,
    pub kind: Option<String>,
    pub start_time: String,
    pub end_time: String,
    pub duration_ms: f64,
    #[schema(value_type = Object)]
    pub status: Option<Value>,
    #[schema(value_type = Object)]
    pub attributes: Map<String, Value>,
    pub service: String,
    pub environment: Option<String>,
    /// The browser session the span was sent with.
    pub session_id: Option<String>,
    #[schema(no_recursion)]
    pub children: Vec<TraceSpan>,
}

fn view(span: Span) -> TraceSpan {
    TraceSpan {
        start_time: span.start_time.to_rfc3339(),
        end_time: span.end_time.to_rfc3339(),
        trace_id: span.trace_id,
        span_id: span.span_id,
        parent_span_id: span.parent_span_id,
        name: span.name,
        kind: span.kind,
        duration_ms: span.duration_ms,
        status: span.status,
        attributes: span.attributes,
        service: span.service,
        environment: span.environment,
        session_id: span.session_id,
        children: Vec::new(),
    }
}

/// The root spans of a trace with their descendants, each level in start order.
pub fn build_tree(mut spans: Vec<Span>) -> Vec<TraceSpan> {
    spans.sort_by(|a, b| (a.start_time, &a.span_id).cmp(&(b.start_time, &b.span_id)));
    let index: HashMap<&str, usize> = spans
        .iter()
        .enumerate()
        .map(|(i, span)| (span.span_id.as_str(), i))
        .collect();
    // The parent each span hangs from, if that parent is in the trace and not itself.
    let mut parent: Vec<Option<usize>> = spans
        .iter()
        .enumerate()
        .map(|(i, span)| {
            let p = span
                .parent_span_id
                .as_deref()
                .and_then(|p| index.get(p).copied());
            p.filter(|&p| p != i)
        })
        .collect();
    break_cycles(&mut parent);
    let depth = depths(&parent);
    // Spans deeper than MAX_DEPTH hang from their ancestor at MAX_DEPTH. Shallower spans are
    // settled first, so a span's parent already knows that ancestor.
    let mut by_depth: Vec<usize> = (0..parent.len()).collect();
    by_depth.sort_by_key(|&i| depth[i]);
    let mut anchor: Vec<Option<usize>> = vec![None; parent.len()];
    for i in by_depth {
        if depth[i] <= MAX_DEPTH {
            continue;
        }
        if let Some(p) = parent[i] {
            anchor[i] = if depth[p] == MAX_DEPTH {
                Some(p)
            } else {
                anchor[p]
            };
        }
    }
    for (i, capped) in anchor.into_iter().enumerate() {
        if capped.is_some() {
            parent[i] = capped;
        }
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); spans.len()];
    let mut roots = Vec::new();
    for (i, p) in parent.iter().enumerate() {
        match p {
            Some(p) => children[*p].push(i),
            None => roots.push(i),
        }
    }
    let mut views: Vec<Option<TraceSpan>> = spans.into_iter().map(|s| Some(view(s))).collect();
    // Children before parents (deepest first), so each node is complete when it is moved.
    let mut order: Vec<usize> = (0..views.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(depth[i].min(MAX_DEPTH + 1)));
    for i in order {
        let kids: Vec<TraceSpan> = children[i]
            .iter()
            .filter_map(|&child| views[child].take())
            .collect();
        if let Some(node) = views[i].as_mut() {
            node.children = kids;
        }
    }
    roots.into_iter().filter_map(|i| views[i].take()).collect()
}

/// Cuts every parent cycle at its first span (spans are sorted by start).
fn break_cycles(parent: &mut [Option<usize>]) {
    // 0 = unvisited, 1 = on the current path, 2 = done.
    let mut state = vec![0u8; parent.len()];
    for start in 0..parent.len() {
        let mut path = Vec::new();
        let mut at = Some(start);
        while let Some(i) = at {
            match state[i] {
                2 => break,
                1 => {
                    // `i` closes a cycle: the earliest-starting span on it becomes a root.
                    let cycle_start = path.iter().position(|&p| p == i).unwrap_or(0);
                    if let Some(&first) = path[cycle_start..].iter().min() {
                        parent[first] = None;
                    }
                    break;
                }
                _ => {
                    state[i] = 1;
                    path.push(i);
                    at = parent[i];
                }
            }
        }
        for i in path {
            state[i] = 2;
        }
    }
}

/// Depth of each span below its root (roots are 1), for an acyclic parent list.
fn depths(parent: &[Option<usize>]) -> Vec<usize> {
    let mut depth = vec![0usize; parent.len()];
    for start in 0..parent.len() {
        let mut path = Vec::new();
        let mut at = Some(start);
        while let Some(i) = at {
            if depth[i] > 0 {
                break;
            }
            path.push(i);
            at = parent[i];
        }
        let mut base = at.map_or(0, |i| depth[i]);
        for &i in path.iter().rev() {
            base += 1;
            depth[i] = base;
        }
    }
    depth
}

#[derive(Debug, Serialize, ToSchema, PartialEq)]
pub struct SpanStats {
    pub name: String,
    pub count: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

/// Count and p50/p95/p99 of the durations of each span name, names in order.
pub fn percentiles(durations: BTreeMap<String, Vec<f64>>) -> Vec<SpanStats> {
    durations
        .into_iter()
        .filter(|(_, values)| !values.is_empty())
        .map(|(name, mut values)| {
            values.sort_by(f64::total_cmp);
            SpanStats {
                name,
                count: values.len() as u64,
                p50_ms: nearest_rank(&values, 50.0),
                p95_ms: nearest_rank(&values, 95.0),
                p99_ms: nearest_rank(&values, 99.0),
            }
        })
        .collect()
}

/// The smallest value with at least `p` percent of the values at or below it.
pub(super) fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;

    fn span(id: &str, parent: Option<&str>, start: i64) -> Span {
        Span {
            trace_id: "t".into(),
            span_id: id.into(),
            parent_span_id: parent.map(str::to_string),
            name: id.into(),
            kind: None,
            start_time: Timestamp(start),
            end_time: Timestamp(start + 1),
            duration_ms: 1.0,
            status: None,
            attributes: Map::new(),
            service: "web".into(),
            environment: None,
            received_at: Timestamp(0),
            session_id: None,
        }
    }

    fn shape(nodes: &[TraceSpan]) -> String {
        let parts: Vec<String> = nodes
            .iter()
            .map(|n| match n.children.is_empty() {
                true => n.span_id.clone(),
                false => format!("{}({})", n.span_id, shape(&n.children)),
            })
            .collect();
        parts.join(" ")
    }

    #[test]
    fn trees_keep_every_span_once() {
        let spans = vec![
            span("c", Some("a"), 3),
            span("a", None, 1),
            span("b", Some("a"), 2),
            span("d", Some("c"), 4),
            span("o", Some("missing"), 0),
            span("x", Some("y"), 5),
            span("y", Some("x"), 6),
            span("s", Some("s"), 7),
        ];
        assert_eq!(shape(&build_tree(spans)), "o a(b c(d)) x(y) s");
    }

    #[test]
    fn deep_chains_are_capped() {
        let ids: Vec<String> = (0..1000).map(|i| format!("{i:04}")).collect();
        let spans = (0..1000)
            .map(|i| span(&ids[i], (i > 0).then(|| ids[i - 1].as_str()), i as i64))
            .collect();
        let tree = build_tree(spans);
        let (mut depth, mut level, mut total) = (0, &tree, 0);
        while let Some(node) = level.first() {
            depth += 1;
            total += level.len();
            level = &node.children;
        }
        assert_eq!(depth, MAX_DEPTH + 1);
        assert_eq!(total, 1000);
        serde_json::to_string(&tree).unwrap();
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut durations = BTreeMap::new();
        durations.insert("a".to_string(), (1..=100).map(f64::from).rev().collect());
        durations.insert("b".to_string(), vec![7.0]);
        let stats = percentiles(durations);
        assert_eq!(
            stats[0],
            SpanStats {
                name: "a".into(),
                count: 100,
                p50_ms: 50.0,
                p95_ms: 95.0,
                p99_ms: 99.0
            }
        );
        assert_eq!((stats[1].p50_ms, stats[1].p99_ms), (7.0, 7.0));
    }
}
