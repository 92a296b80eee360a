//! What a gateway passes on besides tool calls: its servers' prompts (list, get) and,
//! with one server and its own names, their resources (list, templates, read) and
//! completions, each through the host's `Connection` and within the call time limit.
//! Policy is about calls: these are read-only, and go to the server with the servers
//! file's credentials, never the caller's. What comes back is bounded (pages and items)
//! and its names checked; its contents go to the client as the server sent them, as a
//! tool's result does.

use std::{future::Future, time::Duration};

use rmcp::{
    ErrorData, ServiceError,
    model::{
        CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, Prompt,
        ReadResourceRequestParams, ReadResourceResponse, Reference,
    },
};

use super::Gateway;
use crate::error::{Error, MAX_RELAYED_ERROR_CHARS};
use gatehouse::{
    connect::{Connection, Paged},
    text,
};

/// Most pages of one server's list read for one request.
pub const MAX_LIST_PAGES: usize = 50;
/// Most items of one kind (prompts, resources, templates) one list passes on.
pub const MAX_LIST_ITEMS: usize = 10_000;
/// A server's answer as the client reads it: its JSON-RPC error, anything else a failure
/// naming the server.
fn relayed(server: &str, e: ServiceError) -> ErrorData {
    match e {
        ServiceError::McpError(e) => Error::Server(e),
        other => Error::Failed(format!(
            "{server}: {}",
            text::clip(&other.to_string(), MAX_RELAYED_ERROR_CHARS)
        )),
    }
    .into()
}

/// `request` to `conn`, within `limit`.
async fn bounded<T>(
    conn: &Connection,
    limit: Duration,
    request: impl Future<Output = Result<T, ServiceError>>,
) -> Result<T, ErrorData> {
    match tokio::time::timeout(limit, request).await {
        Ok(answer) => answer.map_err(|e| relayed(&conn.name, e)),
        Err(_) => Err(Error::TimedOut {
            server: conn.name.to_string(),
            after: limit,
        }
        .into()),
    }
}

/// Every page of one of `conn`'s lists, at most [`MAX_LIST_PAGES`] and `room` items.
async fn all_pages<P: Paged>(
    conn: &Connection,
    limit: Duration,
    room: usize,
) -> Result<Vec<P::Item>, ErrorData> {
    let mut items = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let (got, next) = bounded(conn, limit, async {
            conn.list_page::<P>(cursor.take()).await.map(P::split)
        })
        .await?;
        items.extend(got.into_iter().take(room.saturating_sub(items.len())));
        match next {
            Some(next) if items.len() < room => cursor = Some(next),
            _ => break,
        }
    }
    Ok(items)
}

impl Gateway {
    /// The running servers that say they offer `what`.
    pub(super) fn offering(
        &self,
        what: impl Fn(&rmcp::model::ServerCapabilities) -> bool,
    ) -> Vec<String> {
        self.host()
            .connections()
            .iter()
            .filter(|c| c.is_up() && c.peer().peer_info().is_some_and(|i| what(&i.capabilities)))
            .map(|c| c.name.to_string())
            .collect()
    }

    /// The server of a one-server gateway with its own names, when it is running and
    /// offers `what`: the only server resources and completions are passed on for.
    pub(super) fn sole(
        &self,
        what: impl Fn(&rmcp::model::ServerCapabilities) -> bool,
    ) -> Option<String> {
        if !self.names().unprefixed() {
            return None;
        }
        self.offering(what).into_iter().next()
    }

    fn time_limit(&self) -> Duration {
        self.host().settings().tool_timeout
    }

    /// Every running server's prompts, named as the client sees them.
    pub(crate) async fn prompts(&self) -> Result<ListPromptsResult, ErrorData> {
        let mut prompts: Vec<Prompt> = Vec::new();
        // The names passed on so far: a set, as a server may list thousands.
        let mut seen = std::collections::HashSet::new();
        for server in self.offering(|c| c.prompts.is_some()) {
            let Some(conn) = self.host().connection(&server) else {
                continue;
            };
            let room = MAX_LIST_ITEMS.saturating_sub(prompts.len());
            let listed = all_pages::<ListPromptsResult>(conn, self.time_limit(), room).await?;
            for mut prompt in listed {
                let Some(shown) = self.names().prompt_name(&server, &prompt.name) else {
                    continue;
                };
                if seen.insert(shown.clone()) {
                    prompt.name = shown;
                    prompts.push(prompt);
                }
            }
        }
        Ok(ListPromptsResult::shared(prompts))
    }

    /// One round of a prompt, from the server that offers it; its questions (2026-07-28)
    /// go to the client with the server's state, and the client's answers back.
    pub(crate) async fn prompt(
        &self,
        mut params: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, ErrorData> {
        let servers = self.offering(|c| c.prompts.is_some());
        let refs: Vec<&str> = servers.iter().map(String::as_str).collect();
        let Some((server, own)) = self.names().prompt_of(&refs, &params.name) else {
            return Err(Error::Invalid(format!(
                "unknown prompt: {}",
                text::clip(&text::visible(&params.name), 200)
            ))
            .into());
        };
        let Some(conn) = self.host().connection(server) else {
            return Err(Error::Gone(server.to_owned()).into());
        };
        params.name = own;
        params.meta = None;
        bounded(conn, self.time_limit(), conn.get_prompt(params)).await
    }

    /// The server's resources (one server, its own names).
    pub(crate) async fn resources(&self) -> Result<ListResourcesResult, ErrorData> {
        self.sole_list().await
    }

    /// The server's resource templates (one server, its own names).
    pub(crate) async fn resource_templates(
        &self,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.sole_list().await
    }

    /// One of the resource lists of a one-server gateway with its own names (else empty).
    async fn sole_list<P: Paged>(&self) -> Result<P, ErrorData> {
        let mut items = Vec::new();
        if let Some(server) = self.sole(|c| c.resources.is_some())
            && let Some(conn) = self.host().connection(&server)
        {
            items = all_pages::<P>(conn, self.time_limit(), MAX_LIST_ITEMS).await?;
        }
        Ok(P::shared(items))
    }

    /// One round of reading a resource (one server, its own names).
    pub(crate) async fn read(
        &self,
        mut params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let not_found = || ErrorData::from(Error::NoSuchResource(params.uri.clone()));
        let Some(server) = self.sole(|c| c.resources.is_some()) else {
            return Err(not_found());
        };
        let Some(conn) = self.host().connection(&server) else {
            return Err(not_found());
        };
        params.meta = None;
        bounded(conn, self.time_limit(), conn.read_resource_once(params)).await
    }

    /// Completion of a prompt's or a resource template's argument, from the server
    /// that offers it (resources: one server, its own names).
    pub(crate) async fn completion(
        &self,
        mut params: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let servers = self.offering(|c| c.completions.is_some());
        let server = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let refs: Vec<&str> = servers.iter().map(String::as_str).collect();
                self.names().prompt_of(&refs, &prompt.name).map(|(s, own)| {
                    prompt.name = own;
                    s.to_owned()
                })
            }
            Reference::Resource(_) => self.sole(|c| c.completions.is_some()),
            _ => None,
        };
        let Some(conn) = server.as_deref().and_then(|s| self.host().connection(s)) else {
            return Ok(CompleteResult::default());
        };
        params.meta = None;
        bounded(conn, self.time_limit(), conn.complete(params)).await
    }
}
