//! One server's tool list, read to its last page (at most a bound of pages), with how
//! long the server said it stays fresh.

use rmcp::model::Tool;

use crate::{config::ServerName, connect::Connection};

/// Why a server's tool list could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("tools/list failed: {0}")]
    /// The request failed (transport, protocol).
    Request(String),
    #[error("tools/list did not end after {0} pages")]
    /// The server kept giving a next page.
    TooManyPages(usize),
}

/// One server's tool list as the host last read it.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The server, by its name in the servers file.
    pub server: ServerName,
    /// Every tool of every page, in the server's order.
    pub tools: Vec<Tool>,
    /// When the list was read.
    pub listed_at: std::time::Instant,
    /// How long the server said the list stays fresh (`ttlMs`; absent means 0).
    pub ttl: std::time::Duration,
}

impl Listing {
    /// Is the list older than the server said it stays fresh?
    pub fn stale(&self) -> bool {
        self.listed_at.elapsed() >= self.ttl
    }
}

/// Read every page of a server's tool list, at most `max_pages` of them. An empty-string
/// cursor is a cursor like any other; only an absent one ends the list.
pub async fn list_tools(conn: &Connection, max_pages: usize) -> Result<Listing, ListError> {
    let mut tools = Vec::new();
    let mut ttl_ms: Option<u64> = None;
    let mut cursor: Option<String> = None;
    for _ in 0..max_pages {
        let page = conn
            .list_page::<rmcp::model::ListToolsResult>(cursor.take())
            .await
            .map_err(|e| ListError::Request(e.to_string()))?;
        tools.extend(page.tools);
        // Pages cache on their own; the list is as fresh as its stalest page.
        ttl_ms = Some(ttl_ms.unwrap_or(u64::MAX).min(page.ttl_ms.unwrap_or(0)));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => {
                return Ok(Listing {
                    server: conn.name.clone(),
                    tools,
                    listed_at: std::time::Instant::now(),
                    ttl: std::time::Duration::from_millis(ttl_ms.unwrap_or(0)),
                });
            }
        }
    }
    Err(ListError::TooManyPages(max_pages))
}
