//! The catalog of a running host: built from every server's listing, re-read when a server
//! announces a change (`subscriptions/listen` on 2026-07-28, a notification before) or when
//! a list is older than its `ttlMs`, and filtered by `--tools`. A tool on the allow-list
//! whose definition changed is flagged, so the person is asked before its next call.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, RwLock, RwLockReadGuard},
};

use futures::FutureExt;
use serde_json::json;

use super::{
    Catalog, Listing, fingerprint, host_tools, list_tools, read_resource_tool,
    search::{Answer, ToolIndex},
};
use crate::{
    config::{ServerName, ToolRules},
    connect::Connection,
    trace::{Trace, Who},
};

/// Most pages of `tools/list` the host follows for one server.
pub const MAX_LIST_PAGES: usize = 100;

/// A `subscriptions/listen` stream kept open for one server. It is read without waiting
/// before each decision: the transport takes a notification before the answer that
/// followed it on the wire, so a change announced during a call is seen before the next
/// step.
struct Listener {
    server: ServerName,
    subscription: tokio::sync::Mutex<rmcp::service::Subscription>,
}

/// The catalog as it is now, and what keeps it current.
pub struct Live {
    /// Rebuilt when a server's list changes; read for every decision.
    catalog: RwLock<Catalog>,
    /// Each server's tool list as last read, with its freshness. Shared with readers (the
    /// catalog kept for `policy explain`), so a reader copies no tool; a re-read list
    /// copies the lists once if a reader still holds them.
    listings: Mutex<Arc<Vec<Listing>>>,
    /// `--tools`: the only tools offered, kept so a re-read list is filtered the same way.
    only: Mutex<Option<Vec<String>>>,
    /// Open listen streams, one per server that announces list changes.
    listeners: Vec<Listener>,
    /// Does any server offer resources (so the host offers `read_resource`)?
    offers_resources: bool,
    /// Each server's `enabledTools`, `disabledTools` and `alwaysLoad`.
    rules: HashMap<ServerName, ToolRules>,
    /// The catalog's search index, built by the first search and dropped on a rebuild.
    index: Mutex<Option<Arc<ToolIndex>>>,
    /// Descriptions the model reads instead of the servers' (an eval's variant), kept so
    /// a rebuilt catalog reads them too.
    described: Mutex<BTreeMap<String, String>>,
}

impl Live {
    /// The catalog of these listings, listening for changes on every connection that
    /// announces them on 2026-07-28 (older servers notify without being asked).
    pub async fn start(listings: Vec<Listing>, connections: &[Connection]) -> Live {
        Live::start_with(listings, connections, HashMap::new()).await
    }

    /// [`Live::start`], each server's tools offered as its rules say.
    pub async fn start_with(
        listings: Vec<Listing>,
        connections: &[Connection],
        rules: HashMap<ServerName, ToolRules>,
    ) -> Live {
        let offers_resources = connections.iter().any(Connection::offers_resources);
        let catalog = build(&listings, offers_resources, None, &rules);
        let listeners = futures::future::join_all(connections.iter().map(listen))
            .await
            .into_iter()
            .flatten()
            .collect();
        Live {
            catalog: RwLock::new(catalog),
            listings: Mutex::new(Arc::new(listings)),
            only: Mutex::new(None),
            listeners,
            offers_resources,
            rules,
            index: Mutex::new(None),
            described: Mutex::new(BTreeMap::new()),
        }
    }

    /// The catalog's tools that `shown` lets through (by name) that best fit `request`,
    /// best first (at most `limit`), or that none fits it well and which servers come
    /// closest ([`ToolIndex::answer`]); the others are left out before ranking. The index
    /// is built by the first search of a catalog; an index that cannot be built finds
    /// nothing, and says why.
    pub fn search(
        &self,
        request: &str,
        limit: usize,
        shown: &dyn Fn(&str) -> bool,
    ) -> Result<Answer, String> {
        let index = {
            let mut slot = lock(&self.index);
            match &*slot {
                Some(index) => index.clone(),
                None => {
                    let index = Arc::new(ToolIndex::build(self.current().tools())?);
                    *slot = Some(index.clone());
                    index
                }
            }
        };
        Ok(index.answer(request, limit, shown))
    }

    /// The catalog as it is now. Do not hold the guard across an `.await`.
    pub fn current(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Each server's tool list as last read.
    pub fn listings(&self) -> Arc<Vec<Listing>> {
        Arc::clone(&lock(&self.listings))
    }

    /// Does any server offer resources (so the host offers `read_resource`)?
    pub fn offers_resources(&self) -> bool {
        self.offers_resources
    }

    /// Offer only these tools from now on; the names that match nothing are returned.
    pub fn offer_only(&self, names: &[String]) -> Vec<String> {
        *lock(&self.only) = Some(names.to_vec());
        let unknown = write(&self.catalog).retain_only(names);
        *lock(&self.index) = None;
        unknown
    }

    /// From now on the model and `search_tools` read `instead` (tool name → description)
    /// in place of the servers' descriptions; the policy still judges the servers' own.
    pub fn describe_as(&self, instead: &BTreeMap<String, String>) {
        *lock(&self.described) = instead.clone();
        write(&self.catalog).describe(instead);
        *lock(&self.index) = None;
    }

    /// The person approved a call to a changed tool: its new definition is the one decided on.
    pub fn mark_approved(&self, name: &str) {
        write(&self.catalog).mark_approved(name);
    }

    /// Re-read the tool lists that servers said changed, and (`by_age`) those older than
    /// their `ttlMs`; rebuild the catalog if any was re-read. Returns whether it was.
    pub async fn refresh(
        &self,
        connections: &[&Connection],
        by_age: bool,
        allow: &[String],
        timeout: std::time::Duration,
        trace: &Trace,
    ) -> bool {
        let heard = self.heard().await;
        let mut relisted = Vec::new();
        for &conn in connections {
            let announced = conn.handler().take_tools_changed() || heard.contains(&conn.name);
            let stale = by_age
                && lock(&self.listings)
                    .iter()
                    .any(|l| l.server == conn.name && l.stale());
            if !(announced || stale) {
                continue;
            }
            let what = match tokio::time::timeout(timeout, list_tools(conn, MAX_LIST_PAGES)).await {
                Ok(Ok(listing)) => {
                    relisted.push((listing, announced));
                    continue;
                }
                Ok(Err(e)) => format!("could not re-read the tools of {}: {e}", conn.name),
                Err(_) => format!("re-reading the tools of {} took too long", conn.name),
            };
            trace.add(
                Who::Host,
                format!("{what}; keeping the old list"),
                json!({"server": conn.name}),
            );
        }
        if relisted.is_empty() {
            return false;
        }
        let mut rebuilt = {
            let mut shared = lock(&self.listings);
            let listings = Arc::make_mut(&mut shared);
            for (listing, announced) in relisted {
                // A server that started late (a gateway's) has no list yet: it is added.
                let Some(old) = listings.iter_mut().find(|l| l.server == listing.server) else {
                    listings.push(listing);
                    continue;
                };
                if announced {
                    report_change(old, &listing, trace);
                }
                *old = listing;
            }
            build(
                listings,
                self.offers_resources,
                lock(&self.only).as_deref(),
                &self.rules,
            )
        };
        for name in rebuilt.carry_over(&self.current(), allow) {
            trace.add(
                Who::Host,
                format!("{name} changed since it was put on the allow-list: the person will be asked before its next call"),
                json!({"tool": name, "decision": "changed"}),
            );
        }
        let mut rebuilt = rebuilt;
        rebuilt.describe(&lock(&self.described));
        *write(&self.catalog) = rebuilt;
        *lock(&self.index) = None;
        true
    }

    /// The servers whose listen streams said their list changed since the last look.
    async fn heard(&self) -> Vec<ServerName> {
        let mut heard = Vec::new();
        for listener in &self.listeners {
            let mut subscription = listener.subscription.lock().await;
            while let Some(Ok(Some(_))) = subscription.next().now_or_never() {
                heard.push(listener.server.clone());
            }
        }
        heard
    }

    /// End each listen stream the way the revision says: `notifications/cancelled`.
    pub async fn close(&self) {
        let ending = self.listeners.iter().map(|l| async move {
            let _ = tokio::time::timeout(
                std::time::Duration::from_millis(500),
                l.subscription.lock().await.cancel(),
            )
            .await;
        });
        futures::future::join_all(ending).await;
    }
}

/// Build the catalog from every server's listing as its rules say, with the host's own
/// tools, keeping only `only` when `--tools` named some.
pub(crate) fn build(
    listings: &[Listing],
    offers_resources: bool,
    only: Option<&[String]>,
    rules: &HashMap<ServerName, ToolRules>,
) -> Catalog {
    let mut catalog = Catalog::build_with(
        listings
            .iter()
            .map(|l| (l.server.clone(), l.tools.clone()))
            .collect(),
        rules,
    );
    if offers_resources {
        catalog.add_host_tool(read_resource_tool());
    }
    if let Some(only) = only {
        catalog.retain_only(only);
    }
    let search = host_tools::search_tools_tool(catalog.len(), &catalog.servers());
    catalog.add_on_demand_tool(search);
    catalog.add_on_demand_tool(host_tools::read_result_tool());
    catalog
}

/// Say what a server's new tool list added, removed or changed.
fn report_change(old: &Listing, new: &Listing, trace: &Trace) {
    let names = |l: &Listing| {
        l.tools
            .iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>()
    };
    let (before, after) = (names(old), names(new));
    let added: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
    let removed: Vec<&String> = before.iter().filter(|n| !after.contains(n)).collect();
    let changed: Vec<String> = new
        .tools
        .iter()
        .filter(|t| {
            old.tools
                .iter()
                .any(|o| o.name == t.name && fingerprint(o) != fingerprint(t))
        })
        .map(|t| t.name.to_string())
        .collect();
    if added.is_empty() && removed.is_empty() && changed.is_empty() {
        return;
    }
    trace.add(
        Who::Host,
        format!("the tool list of {} changed", new.server),
        json!({"server": new.server, "added": added, "removed": removed, "changed": changed}),
    );
}

/// On 2026-07-28, a server that advertises `tools.listChanged` tells its listeners through
/// a `subscriptions/listen` stream; older servers send a notification the transport catches.
async fn listen(conn: &Connection) -> Option<Listener> {
    let modern = conn.protocol.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str();
    if !(conn.announces_tool_changes() && modern) {
        return None;
    }
    let subscription = conn.listen_for_tool_changes().await?;
    Some(Listener {
        server: conn.name.clone(),
        subscription: tokio::sync::Mutex::new(subscription),
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}
