//! What the gate keeps between proposals, and where its ledger lines go: the [`Keeper`].
//! A host keeps its person's approvals for the session and in the project's file, and its
//! ledger in a file ([`LocalKeeper`]); a gateway keeps its callers' approvals and one
//! ledger for all its replicas in a shared store. The gate decides the same way on either.

use std::sync::{Mutex, MutexGuard};

use futures::future::BoxFuture;
use serde_json::json;

use crate::{
    approvals::{ProjectFile, Remembered, Scope},
    caller::CallerName,
    config::Settings,
    ledger::{Entry, Ledger},
    trace::{Trace, Who},
};

/// Where the gate's memory lives: the approvals remembered for whoever proposes, and the
/// ledger. `who` names whose approvals: a gateway's caller; a host's keeper holds its one
/// person's, whoever proposes (`None`: its model).
pub trait Keeper: Send + Sync {
    /// The approvals that hold for `who` now (a keeper may answer from a cache).
    fn remembered<'a>(&'a self, who: Option<&'a CallerName>) -> BoxFuture<'a, Remembered>;
    /// The approvals for `who` read again where they are kept, past any cache: the gate
    /// asks before it would ask a person, so one given elsewhere since counts. `None`
    /// (the default) for a keeper that keeps no cache: its first answer stands.
    fn remembered_now<'a>(
        &'a self,
        who: Option<&'a CallerName>,
    ) -> BoxFuture<'a, Option<Remembered>> {
        let _ = who;
        Box::pin(async { None })
    }
    /// Remember that `who` approved `tool` at this definition, in `scope`; if it cannot
    /// be kept there, say so in `trace` and keep what can be kept.
    fn remember<'a>(
        &'a self,
        who: Option<&'a CallerName>,
        scope: Scope,
        tool: &'a str,
        fingerprint: &'a str,
        trace: &'a Trace,
    ) -> BoxFuture<'a, ()>;
    /// Append one decision to the ledger, durably, before anything is sent; `Ok` when
    /// there is no ledger. An entry that names a `confirmation` (a gateway's second
    /// round) uses it up: a keeper that is given them appends a second line with the same
    /// one never, and answers an error instead. A host's person confirms at its terminal
    /// and its entries name none.
    fn append(&self, entry: Entry) -> BoxFuture<'_, Result<(), String>>;
    /// Does [`Keeper::append`] keep what it is given? When it does not (a host with the
    /// ledger off), the gate leaves out of its lines what costs the most to make: the
    /// arguments' digest and the definition's.
    fn keeps_lines(&self) -> bool {
        true
    }
}

/// A host's memory: its person's approvals for this session and in the project's file,
/// and the ledger file.
pub struct LocalKeeper {
    remembered: Mutex<Remembered>,
    project: Option<ProjectFile>,
    ledger: Option<Ledger>,
}

impl LocalKeeper {
    /// The memory of a session with these settings: the project's remembered approvals
    /// read (those not sealed for this person are ignored, and the run says so), the
    /// ledger checked (a ledger that cannot be written is said at once: calls will be
    /// stopped).
    pub fn new(settings: &Settings, project: Option<ProjectFile>, trace: &Trace) -> LocalKeeper {
        let mut remembered = Remembered::default();
        if let Some(file) = &project {
            match file.load_into(&mut remembered) {
                Ok(0) => {}
                Ok(n) => trace.add(
                    Who::Host,
                    format!(
                        "warning: {n} approvals in {} are not sealed for you and are ignored",
                        file.path().display()
                    ),
                    json!({"ignored": n}),
                ),
                Err(e) => trace.add(
                    Who::Host,
                    format!("warning: remembered approvals are not used: {e}"),
                    json!({}),
                ),
            }
        }
        let ledger = settings
            .ledger
            .enabled
            .then(|| Ledger::new(settings.ledger.file()));
        if let Some(Err(e)) = ledger.as_ref().map(Ledger::check) {
            trace.add(
                Who::Host,
                format!("warning: {e}; calls will be stopped until it can be written"),
                json!({"ledger": "unwritable"}),
            );
        }
        LocalKeeper {
            remembered: Mutex::new(remembered),
            project,
            ledger,
        }
    }

    fn held(&self) -> MutexGuard<'_, Remembered> {
        self.remembered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Keeper for LocalKeeper {
    fn remembered<'a>(&'a self, _who: Option<&'a CallerName>) -> BoxFuture<'a, Remembered> {
        let now = self.held().clone();
        Box::pin(async move { now })
    }

    /// For the session, and in the project's file for `A` (if that cannot be written, for
    /// the session, as said).
    fn remember<'a>(
        &'a self,
        _who: Option<&'a CallerName>,
        scope: Scope,
        tool: &'a str,
        fingerprint: &'a str,
        trace: &'a Trace,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut kept = Scope::Session;
            if let (Scope::Project, Some(file)) = (scope, self.project.clone()) {
                let (name, fp) = (tool.to_owned(), fingerprint.to_owned());
                let written = tokio::task::spawn_blocking(move || {
                    file.approve(&name, &fp, &crate::ledger::now())
                })
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
                match written {
                    Ok(()) => kept = Scope::Project,
                    Err(e) => trace.add(
                        Who::Host,
                        format!("could not remember it in the project ({e}): remembered for this session only"),
                        json!({}),
                    ),
                }
            }
            let mut remembered = self.held();
            remembered.remember(Scope::Session, tool, fingerprint);
            if kept == Scope::Project {
                remembered.remember(Scope::Project, tool, fingerprint);
            }
        })
    }

    fn keeps_lines(&self) -> bool {
        self.ledger.is_some()
    }

    fn append(&self, entry: Entry) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let Some(ledger) = self.ledger.clone() else {
                return Ok(());
            };
            tokio::task::spawn_blocking(move || ledger.append(&entry).map(drop))
                .await
                .unwrap_or_else(|e| Err(format!("the ledger's writer failed: {e}")))
        })
    }
}
