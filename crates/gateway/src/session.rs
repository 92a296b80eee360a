//! What an older client's session sets for itself (its `logging/setLevel`), kept where
//! every replica reads it: behind a round-robin balancer one request of a session may
//! land on one replica and the next on another, so the level is written to the session's
//! row in the shared store when it changes and read from there before each call. Without
//! a session shared this way (stdio, 2026-07-28 requests) it stays in the session's
//! memory only.

use rmcp::{ErrorData, RoleServer, service::RequestContext};
use serde::{Deserialize, Serialize};

use super::Gateway;
use crate::{caller::CallerName, error::Error};

/// A session's state as its row keeps it (JSON).
#[allow(deprecated)] // SEP-2577 deprecates logging; older revisions still have it
#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kept {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log_level: Option<rmcp::model::LoggingLevel>,
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

impl Gateway {
    /// The shared session of `context`'s request, and its caller.
    fn shared_session(&self, context: &RequestContext<RoleServer>) -> Option<(String, CallerName)> {
        let id = self.inner.callers.session_of(context)?;
        Some((id, self.inner.callers.of(context)))
    }

    /// Read what the session keeps (set on any replica) into this copy of it. A store
    /// that cannot be read leaves this copy's as it was.
    pub(super) async fn load_session(&self, context: &RequestContext<RoleServer>) {
        let Some((id, caller)) = self.shared_session(context) else {
            return;
        };
        let Ok(Some(data)) = self.inner.store.mcp_session_data(&id, &caller, now()).await else {
            return;
        };
        let kept: Kept = serde_json::from_str(&data).unwrap_or_default();
        *self.log_level() = kept.log_level;
    }

    /// Keep this copy's state in the session's row, for every replica.
    pub(super) async fn keep_session(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let Some((id, caller)) = self.shared_session(context) else {
            return Ok(());
        };
        let kept = Kept {
            log_level: *self.log_level(),
        };
        let data = serde_json::to_string(&kept).unwrap_or_default();
        self.inner
            .store
            .set_mcp_session_data(&id, &caller, &data)
            .await
            .map_err(|cause| {
                let what = "the session's state";
                Error::Store { what, cause }.into()
            })
    }

    #[allow(deprecated)]
    pub(super) fn log_level(&self) -> std::sync::MutexGuard<'_, Option<rmcp::model::LoggingLevel>> {
        self.session
            .log_level
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}
