//! Resource subscriptions through the gateway, with one server and its own names: an
//! older client's (`resources/subscribe`, `unsubscribe`) and a 2026-07-28 client's
//! (`subscriptions/listen` with `resourceSubscriptions`). Each is a
//! `subscriptions/listen` stream of the server's (2026-07-28) for those resources, whose
//! updates go to the client that subscribed, and which ends with the client's session,
//! stream or unsubscribe. Bounded per session and in all. A server on an older revision
//! is not subscribed through the gateway: its updates name no session (the request is
//! refused, saying so). No list-changed notifications are offered: the lists say
//! `ttlMs: 0`.

use std::{collections::HashMap, sync::Arc};

use rmcp::{
    ErrorData, RoleServer,
    model::{ResourceUpdatedNotificationParam, ServerNotification, SubscriptionFilter},
    service::{Peer, RequestContext, Subscription, SubscriptionContext},
};
use tokio::sync::OwnedSemaphorePermit;

use super::Gateway;
use crate::error::Error;
use gatehouse::text;

/// Most resources one session may be subscribed to at once.
pub const MAX_SUBSCRIPTIONS_PER_SESSION: usize = 16;
/// Most subscriptions the gateway holds open at once, every session's together.
pub const MAX_SUBSCRIPTIONS: usize = 256;
/// Longest resource URI a subscription takes.
pub const MAX_SUBSCRIBED_URI_CHARS: usize = 2_048;

/// One session's subscriptions, by URI; each stream is stopped when dropped.
#[derive(Default)]
pub(crate) struct Subscriptions(std::sync::Mutex<HashMap<String, Relaying>>);

/// The task relaying one subscription's updates; stopped (and its stream closed) when
/// dropped.
pub(crate) struct Relaying(tokio::task::JoinHandle<()>);

impl Drop for Relaying {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Relaying>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The whole gateway's bound on open subscriptions.
pub(crate) fn limit() -> Arc<tokio::sync::Semaphore> {
    Arc::new(tokio::sync::Semaphore::new(MAX_SUBSCRIPTIONS))
}

/// Does the one server take subscriptions the gateway can pass on?
pub(crate) fn offered(gw: &Gateway) -> bool {
    gw.sole(|c| c.resources.as_ref().and_then(|r| r.subscribe) == Some(true))
        .and_then(|s| gw.host().connection(&s))
        .is_some_and(|c| c.protocol.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

fn refused(why: String) -> ErrorData {
    Error::Invalid(why).into()
}

impl Gateway {
    /// A place under the gateway's limit, and the server's stream for `uris` if it takes
    /// one within the tool time limit (`None` when it does not, or no server offers them).
    async fn listen_upstream(
        &self,
        uris: &[String],
    ) -> Result<(OwnedSemaphorePermit, Option<Subscription>), ErrorData> {
        let Ok(permit) = self.inner.subscription_limit.clone().try_acquire_owned() else {
            return Err(refused(format!(
                "the gateway holds {MAX_SUBSCRIPTIONS} subscriptions already"
            )));
        };
        let conn = self
            .sole(|c| c.resources.is_some())
            .and_then(|s| self.host().connection(&s));
        let Some(conn) = conn else {
            return Ok((permit, None));
        };
        let limit = self.host().settings().tool_timeout;
        let listened = tokio::time::timeout(limit, conn.listen_for_resources(uris)).await;
        Ok((permit, listened.ok().flatten()))
    }

    /// Subscribe this session to `uri`: a stream of the server's for it, its updates
    /// sent to this session's client. Subscribing again to the same URI keeps the one.
    pub(crate) async fn subscribe_to(
        &self,
        uri: String,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if uri.chars().count() > MAX_SUBSCRIBED_URI_CHARS {
            return Err(refused(format!(
                "the resource URI is longer than {MAX_SUBSCRIBED_URI_CHARS} characters"
            )));
        }
        if !offered(self) {
            return Err(refused(
                "subscriptions are not passed on by this gateway (one server on 2026-07-28 that offers them is needed)".into(),
            ));
        }
        let (already, held) = {
            let held = self.session.subscriptions.lock();
            (held.contains_key(&uri), held.len())
        };
        if already {
            return Ok(());
        }
        if held >= MAX_SUBSCRIPTIONS_PER_SESSION {
            return Err(refused(format!(
                "this session holds {MAX_SUBSCRIPTIONS_PER_SESSION} subscriptions already"
            )));
        }
        let (permit, listened) = self.listen_upstream(std::slice::from_ref(&uri)).await?;
        let Some(mut subscription) = listened else {
            return Err(refused(format!(
                "the server did not take a subscription to {}",
                text::clip(&text::visible(&uri), 200)
            )));
        };
        let peer: Peer<RoleServer> = context.peer.clone();
        let watched = uri.clone();
        let task = tokio::spawn(async move {
            let _permit = permit;
            while let Ok(Some(notification)) = subscription.next().await {
                if let ServerNotification::ResourceUpdatedNotification(n) = notification
                    && n.params.uri == watched
                {
                    let update = ResourceUpdatedNotificationParam::new(watched.clone());
                    if peer.notify_resource_updated(update).await.is_err() {
                        break;
                    }
                }
            }
        });
        self.session
            .subscriptions
            .lock()
            .insert(uri, Relaying(task));
        Ok(())
    }

    /// What of a 2026-07-28 client's `subscriptions/listen` filter the gateway takes:
    /// resource subscriptions (at most [`MAX_SUBSCRIPTIONS_PER_SESSION`], URIs not too
    /// long), when the one server takes them.
    pub(crate) fn listen_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        if !offered(self) {
            return None;
        }
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|u| u.chars().count() <= MAX_SUBSCRIBED_URI_CHARS)
            .take(MAX_SUBSCRIPTIONS_PER_SESSION)
            .cloned()
            .collect();
        Some(
            SubscriptionFilter::builder()
                .resource_subscriptions(uris)
                .build(),
        )
    }

    /// A 2026-07-28 client's `subscriptions/listen` stream, acknowledged already: the
    /// server's updates of the resources it took, until the client or the server ends it.
    pub(crate) async fn relay_listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        if uris.is_empty() {
            context.cancelled().await;
            return Ok(());
        }
        let (_permit, listened) = self.listen_upstream(&uris).await?;
        let Some(mut subscription) = listened else {
            return Err(refused("the server did not take the subscription".into()));
        };
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                next = subscription.next() => match next {
                    Ok(Some(ServerNotification::ResourceUpdatedNotification(n)))
                        if uris.contains(&n.params.uri) =>
                    {
                        let update = ResourceUpdatedNotificationParam::new(n.params.uri.clone());
                        let sent = context
                            .sink()
                            .send(ServerNotification::ResourceUpdatedNotification(
                                rmcp::model::ResourceUpdatedNotification::new(update),
                            ))
                            .await;
                        if sent.is_err() {
                            return Ok(());
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => return Ok(()),
                },
            }
        }
    }

    /// End this session's subscription to `uri`, if it holds one.
    pub(crate) fn unsubscribe_from(&self, uri: &str) {
        self.session.subscriptions.lock().remove(uri);
    }
}
