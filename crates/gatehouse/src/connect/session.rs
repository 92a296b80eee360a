//! One run of a server: its rmcp client, its process id and stderr reader (stdio), and
//! what broke it. A [`super::Connection`] holds the run in use; a restart
//! (`restart.rs`) makes the next one.

use std::sync::{Arc, Mutex};

use rmcp::{RoleClient, service::RunningService};

use super::{HostHandler, STDERR_DRAIN, stdio::Health};

/// How long a server gets to close when the host ends a session.
pub const CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// One run of a server: its rmcp client, its process id and stderr reader (stdio), and
/// what broke it.
pub(crate) struct Session {
    pub(super) peer: rmcp::Peer<RoleClient>,
    client: tokio::sync::Mutex<Option<RunningService<RoleClient, HostHandler>>>,
    pub(super) pid: Option<u32>,
    /// Reads the server's stderr; awaited at close so its last lines are not lost.
    stderr_reader: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pub(crate) health: Arc<Health>,
}

impl Session {
    pub(crate) fn new(
        client: RunningService<RoleClient, HostHandler>,
        pid: Option<u32>,
        stderr_reader: Option<tokio::task::JoinHandle<()>>,
        health: Arc<Health>,
    ) -> Session {
        Session {
            peer: client.peer().clone(),
            client: tokio::sync::Mutex::new(Some(client)),
            pid,
            stderr_reader: Mutex::new(stderr_reader),
            health,
        }
    }

    /// Close this run: the server gets [`CLOSE_LIMIT`] to exit, and its last stderr
    /// lines are read. Closing twice does nothing more.
    pub(crate) async fn close(&self) {
        let client = self.client.lock().await.take();
        if let Some(mut client) = client {
            let _ = client.close_with_timeout(CLOSE_LIMIT).await;
        }
        let reader = self
            .stderr_reader
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(STDERR_DRAIN, reader).await;
        }
    }
}
