//! One way for long work to report how far it is and to learn that it must stop, whether
//! it runs as an ordinary call (progress notifications, the request's cancellation) or as
//! a task (the task's status message and checkpoint, the task's cancellation).

use rmcp::{RoleServer, model::ProgressNotificationParam, service::RequestContext};
use serde_json::Value;

use super::Control;

/// Who hears how far the work is, and may stop it.
pub enum Watch<'a> {
    /// An ordinary call.
    Call(&'a RequestContext<RoleServer>),
    /// A task.
    Task(&'a Control),
}

impl Watch<'_> {
    /// Resolves when the work must stop.
    pub async fn cancelled(&self) {
        match self {
            Watch::Call(context) => context.ct.cancelled().await,
            Watch::Task(control) => control.cancelled().await,
        }
    }

    /// The work is `done` of `total`, as `message` says; a task also saves `checkpoint`
    /// (where to go on from), a call sends progress when the request asked for it.
    pub async fn report(&self, done: f64, total: f64, message: &str, checkpoint: Option<Value>) {
        match self {
            Watch::Call(context) => {
                if let Some(token) = context.meta.get_progress_token() {
                    let _ = context
                        .peer
                        .notify_progress(
                            ProgressNotificationParam::new(token, done)
                                .with_total(total)
                                .with_message(message.to_owned()),
                        )
                        .await;
                }
            }
            Watch::Task(control) => {
                control.say(message);
                if let Some(checkpoint) = checkpoint {
                    control.save(checkpoint);
                }
            }
        }
    }
}
