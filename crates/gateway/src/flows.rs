//! Where a gateway caller's arguments came from: what the gateway relayed to each caller
//! (the tools' definitions it offers, each result and server error of the caller's calls)
//! is kept per caller, and the caller's next proposals are traced against it, so `from`
//! conditions and the rule of two hold through the gateway as they do in the host.
//!
//! The caller's own conversation is never seen, so a value found nowhere cannot be told:
//! never the person's, and a `from` condition on it does not let an `allow` apply. The
//! text stays on the replica that relayed it; behind several replicas, a value another
//! replica relayed is not seen here, which likewise cannot be told. Whether the context
//! holds untrusted text needs no sharing: the definitions every caller is offered decide
//! it the same way on every replica, and a tool's results are trusted exactly when its
//! definition is (`policy::result_trust`).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use rmcp::model::CallToolResult;

use super::Gateway;
use crate::caller::CallerName;
use gatehouse::{
    catalog::CatalogTool,
    dispatch::CallEnd,
    flow::{Flows, Origin},
    policy::result_trust,
};

/// Most callers whose relayed text one replica keeps at once (each at most
/// `flow::MAX_CALLER_FLOW_BYTES`); the one unheard from longest makes room, and its
/// values then cannot be told, which never loosens the policy.
pub const MAX_TRACED_CALLERS: usize = 64;

/// Each caller's flows on this replica, least recently used first out.
#[derive(Default)]
pub(super) struct CallerFlows {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    callers: HashMap<CallerName, (Arc<Flows>, u64)>,
    clock: u64,
}

impl CallerFlows {
    /// `caller`'s flows, made if new.
    fn of(&self, caller: &CallerName) -> Arc<Flows> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.clock += 1;
        let now = kept.clock;
        if let Some((flows, used)) = kept.callers.get_mut(caller) {
            *used = now;
            return flows.clone();
        }
        if kept.callers.len() >= MAX_TRACED_CALLERS {
            let oldest = kept
                .callers
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(c, _)| c.clone());
            if let Some(oldest) = oldest {
                kept.callers.remove(&oldest);
            }
        }
        let flows = Arc::new(Flows::of_unseen_caller());
        kept.callers.insert(caller.clone(), (flows.clone(), now));
        flows
    }
}

impl Gateway {
    /// `caller`'s flows, holding the definitions the gateway offers now (each once).
    pub(super) fn flows_of(&self, caller: &CallerName) -> Arc<Flows> {
        let flows = self.inner.flows.of(caller);
        let host = self.host();
        let catalog = host.catalog();
        for (shown, tool) in self.names().offered(&catalog, |t| self.offers(t)) {
            let Some(server) = tool.origin.server() else {
                continue;
            };
            let trust = result_trust(host.settings(), Some(tool));
            let text = format!(
                "{shown}: {}",
                tool.tool.description.as_deref().unwrap_or_default()
            );
            let origin = Origin::Definitions {
                server: server.to_string(),
            };
            flows.add_once(origin, trust, &text);
        }
        flows
    }

    /// What the gateway relays to `caller` as the end of call `step` of `tool`, entered
    /// into the caller's flows with the tool's trust.
    pub(super) fn relayed(
        &self,
        caller: &CallerName,
        tool: &CatalogTool,
        step: u64,
        end: &CallEnd,
    ) {
        let text = match end {
            CallEnd::Result(result) => text_of(result),
            CallEnd::ProtocolError(e) => e.message.to_string(),
            _ => return,
        };
        let Some(server) = tool.origin.server() else {
            return;
        };
        let origin = Origin::Relayed {
            server: server.to_string(),
            tool: self.names().tool_name(tool),
            step,
        };
        let trust = result_trust(self.host().settings(), Some(tool));
        self.inner.flows.of(caller).add(origin, trust, &text);
    }
}

/// A result's text as its caller reads it: its blocks as text, and its structured
/// content.
fn text_of(result: &CallToolResult) -> String {
    let mut text = gatehouse::result::blocks::content_text(&result.content);
    if let Some(structured) = &result.structured_content {
        text.push('\n');
        text.push_str(&structured.to_string());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::who;

    #[test]
    fn the_caller_unheard_from_longest_makes_room_and_the_others_keep_theirs() {
        let flows = CallerFlows::default();
        let first = flows.of(&who("caller-0"));
        for i in 1..MAX_TRACED_CALLERS {
            flows.of(&who(&format!("caller-{i}")));
        }
        // caller-0 is heard from again: caller-1 is now the oldest.
        assert!(Arc::ptr_eq(&first, &flows.of(&who("caller-0"))));
        let one = flows.of(&who("caller-1"));
        flows.of(&who("caller-2"));
        let _ = flows.of(&who("newcomer"));
        let kept = flows.kept.lock().unwrap();
        assert_eq!(kept.callers.len(), MAX_TRACED_CALLERS);
        assert!(kept.callers.contains_key(&who("caller-0")));
        assert!(
            !kept.callers.contains_key(&who("caller-3")),
            "the oldest went"
        );
        assert!(Arc::ptr_eq(&one, &kept.callers[&who("caller-1")].0));
    }
}
