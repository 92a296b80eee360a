//! A keeper in memory: the approvals remembered per caller, the ledger's lines as a list,
//! the confirmations used once, and appends that can be made to fail (a full disk, a store
//! that went away), so a test sees that nothing is sent unrecorded.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use futures::future::BoxFuture;

use crate::{
    approvals::{Remembered, Scope},
    caller::CallerName,
    gate::Keeper,
    ledger::Entry,
    trace::Trace,
};

/// The keeper in memory.
#[derive(Default)]
pub struct InMemory {
    remembered: Mutex<HashMap<Option<CallerName>, Remembered>>,
    lines: Mutex<Vec<Entry>>,
    used: Mutex<HashSet<String>>,
    failing: AtomicBool,
}

impl InMemory {
    /// A keeper with nothing remembered and an empty ledger.
    pub fn new() -> InMemory {
        InMemory::default()
    }

    /// Every line appended so far.
    pub fn lines(&self) -> Vec<Entry> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// From now on, every append fails (`false`: succeeds again).
    pub fn fail_appends(&self, fail: bool) {
        self.failing.store(fail, Ordering::SeqCst);
    }
}

impl Keeper for InMemory {
    fn remembered<'a>(&'a self, who: Option<&'a CallerName>) -> BoxFuture<'a, Remembered> {
        let now = self
            .remembered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&who.cloned())
            .cloned()
            .unwrap_or_default();
        Box::pin(async move { now })
    }

    fn remember<'a>(
        &'a self,
        who: Option<&'a CallerName>,
        scope: Scope,
        tool: &'a str,
        fingerprint: &'a str,
        _trace: &'a Trace,
    ) -> BoxFuture<'a, ()> {
        self.remembered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(who.cloned())
            .or_default()
            .remember(scope, tool, fingerprint);
        Box::pin(async {})
    }

    fn append(&self, entry: Entry) -> BoxFuture<'_, Result<(), String>> {
        let kept = if self.failing.load(Ordering::SeqCst) {
            Err("the test's ledger refuses every append".to_owned())
        } else {
            let fresh = entry.confirmation.as_ref().is_none_or(|nonce| {
                self.used
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(nonce.clone())
            });
            if fresh {
                self.lines
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(entry);
                Ok(())
            } else {
                Err("this confirmation was already used".to_owned())
            }
        };
        Box::pin(async move { kept })
    }
}
