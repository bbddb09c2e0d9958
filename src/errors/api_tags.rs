//! `GET /api/v1/error-groups/{id}/tags`: how the values of each tag are spread over a group's
//! newest events, with the built-in facets `release`, `environment`, `service`, `browser`,
//! `os` (both read simply from the stored user agent) and `url` (its path, without query).
//!
//! Invariants: a sample, not a scan: at most `MAX_SAMPLED_EVENTS` of the group's newest
//! events are read (in one read transaction on a blocking thread), and the answer says how
//! many; each key keeps its `TOP_VALUES` most frequent values. Keys are paged like every
//! list, the cursor being a key's place (total, then name). An event tag named like a
//! built-in facet is left to the facet, so no event counts twice under one key.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;
use utoipa::ToSchema;

use super::api::group_id;
use super::db;
use super::event::ErrorEvent;
use super::event_db::EVENTS;
use super::group_events;
use crate::auth::Viewer;
use crate::http::ApiError;
use crate::http::page::PageRequest;
use crate::http::problems;
use crate::store::{Store, StoreError, tables};

/// Newest events of a group read for its tag distribution.
pub const MAX_SAMPLED_EVENTS: usize = 5_000;
/// Values kept per key, most frequent first.
pub const TOP_VALUES: usize = 10;
/// The facets every event is counted under besides its own tags.
const FACETS: [&str; 6] = ["release", "environment", "service", "browser", "os", "url"];

#[derive(Debug, Serialize, ToSchema)]
pub struct TagValueCount {
    pub value: String,
    pub count: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TagDistribution {
    pub key: String,
    /// Sampled events that carry the key.
    pub total: u64,
    /// The most frequent values (at most 10), most first.
    pub values: Vec<TagValueCount>,
}

/// Tag keys of a group's sampled events, the most common key first.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupTags {
    /// Events read: the group's newest, at most 5,000.
    pub sampled_events: u64,
    pub items: Vec<TagDistribution>,
    /// Keys are paged like every list (`limit`, default 50, and `cursor`).
    pub next_cursor: Option<String>,
}

/// The tag value distribution of one error group over its newest events (viewer).
#[utoipa::path(get, path = "/api/v1/error-groups/{id}/tags", tag = "errors",
    params(("id" = String, Path, description = "grp_…"),
        ("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = GroupTags), problems::NotFound))]
pub(super) async fn group_tags(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    page: PageRequest,
) -> Result<Json<GroupTags>, ApiError> {
    let id = group_id(&id)?;
    let org = caller.org_id;
    let counted = store
        .read(move |txn| {
            // A merged group's id reads the events of the group it was merged into.
            let Some(group) = db::get_group(txn, &org, &id)? else {
                return Ok::<_, StoreError>(None);
            };
            let (org_id, group_id) = (org.as_str(), group.id.as_str());
            let ids = group_events::newest(txn, org_id, group_id, None, MAX_SAMPLED_EVENTS)?;
            let mut tally = Tally::default();
            for event_id in ids {
                let key = tables::composite_key(org.as_str(), &event_id);
                if let Some(event) = EVENTS.get(txn, &key)? {
                    tally.count(&event);
                }
            }
            Ok(Some(tally))
        })
        .await?;
    let tally = counted.ok_or_else(|| ApiError::not_found("error group"))?;
    Ok(Json(tally.into_tags(&page)))
}

/// Counts per key and value.
#[derive(Default)]
struct Tally {
    events: u64,
    keys: HashMap<String, HashMap<String, u64>>,
}

impl Tally {
    fn count(&mut self, event: &ErrorEvent) {
        self.events += 1;
        let agent = event.user_agent.as_deref();
        let facets = [
            ("release", event.release.clone()),
            ("environment", event.environment.clone()),
            ("service", event.service.clone()),
            ("browser", agent.map(|agent| browser_of(agent).to_string())),
            ("os", agent.map(|agent| os_of(agent).to_string())),
            ("url", Some(url_path(&event.url))),
        ];
        for (key, value) in facets {
            if let Some(value) = value {
                self.add(key, value);
            }
        }
        for (key, value) in &event.tags {
            if FACETS.contains(&key.as_str()) {
                continue;
            }
            let text = match value {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            self.add(key, text);
        }
    }

    fn add(&mut self, key: &str, value: String) {
        let values = self.keys.entry(key.to_string()).or_default();
        *values.entry(value).or_insert(0) += 1;
    }

    /// The keys, most common first (then by name), each with its top values; one page.
    fn into_tags(self, page: &PageRequest) -> GroupTags {
        let mut items: Vec<TagDistribution> = self
            .keys
            .into_iter()
            .map(|(key, values)| {
                let total = values.values().sum();
                let mut values: Vec<TagValueCount> = values
                    .into_iter()
                    .map(|(value, count)| TagValueCount { value, count })
                    .collect();
                values.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.value.cmp(&b.value)));
                values.truncate(TOP_VALUES);
                TagDistribution { key, total, values }
            })
            .collect();
        items.sort_by_key(position);
        let (items, next_cursor) = page.of_sorted(items, position);
        GroupTags {
            sampled_events: self.events,
            items,
            next_cursor,
        }
    }
}

/// A key's place in the list, ascending: the highest total first, then by name.
fn position(item: &TagDistribution) -> String {
    format!("{:020}/{}", u64::MAX - item.total, item.key)
}

/// The browser of a user agent: Edge, Firefox, Chrome, Safari or Other.
pub fn browser_of(agent: &str) -> &'static str {
    let has = |needle: &str| agent.contains(needle);
    if has("Edg/") || has("Edge/") || has("EdgA/") || has("EdgiOS/") {
        "Edge"
    } else if has("Firefox/") || has("FxiOS/") {
        "Firefox"
    } else if has("Chrome/") || has("CriOS/") || has("Chromium/") {
        "Chrome"
    } else if has("Safari/") {
        "Safari"
    } else {
        "Other"
    }
}

/// The operating system of a user agent: iOS, Android, Windows, macOS, Linux or Other.
pub fn os_of(agent: &str) -> &'static str {
    let has = |needle: &str| agent.contains(needle);
    if has("iPhone") || has("iPad") || has("iPod") {
        "iOS"
    } else if has("Android") {
        "Android"
    } else if has("Windows") {
        "Windows"
    } else if has("Macintosh") || has("Mac OS X") {
        "macOS"
    } else if has("Linux") || has("X11") {
        "Linux"
    } else {
        "Other"
    }
}

/// The path of a page address, without query or fragment.
fn url_path(address: &str) -> String {
    match url::Url::parse(address) {
        Ok(parsed) if parsed.has_host() => parsed.path().to_string(),
        _ => address
            .split(['?', '#'])
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_agents_name_their_browser_and_system() {
        let cases = [
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.0.0",
                "Edge",
                "Windows",
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
                "Safari",
                "macOS",
            ),
            (
                "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
                "Firefox",
                "Linux",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0 Mobile/15E148 Safari/604.1",
                "Chrome",
                "iOS",
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
                "Chrome",
                "Android",
            ),
            ("curl/8.5.0", "Other", "Other"),
        ];
        for (agent, browser, os) in cases {
            assert_eq!((browser_of(agent), os_of(agent)), (browser, os), "{agent}");
        }
    }

    #[test]
    fn url_facets_drop_query_and_fragment() {
        assert_eq!(url_path("https://shop.example.com/cart?id=3#top"), "/cart");
        assert_eq!(url_path("/checkout?step=2"), "/checkout");
    }
}
