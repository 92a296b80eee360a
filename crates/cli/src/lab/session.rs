//! The lab's session: the host, the model and the conversation, and the turns the page
//! starts (a question for the model, or one call from the manual panel). One turn runs at
//! a time; each is numbered, recorded, and reported as events.

use std::{sync::Arc, time::Instant};

use gatehouse::{
    host::Host,
    model::{Message, Model, ToolCall},
};
use serde_json::{Value, json};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::recordings::Recordings;
use super::{
    events::{Hub, TimedModel},
    person::WebPerson,
};
use crate::record::ms_since;

/// The model and the conversation it has had so far.
pub struct Chat {
    pub model: Option<Box<dyn Model>>,
    pub conversation: Vec<Message>,
}

/// Everything the routes share.
pub struct Lab {
    pub host: Host,
    pub hub: Arc<Hub>,
    pub person: Arc<WebPerson>,
    pub recordings: Arc<Recordings>,
    /// The model's name, or `None` in manual mode.
    pub model_name: Option<String>,
    chat: Arc<Mutex<Chat>>,
    /// The manual panel's calls go on in one turn, so a `read_resource` may follow a link
    /// an earlier manual call gave; a question starts afresh.
    manual: Arc<Mutex<Option<gatehouse::turn::TurnState>>>,
    /// Held for the whole of a turn.
    busy: Arc<Mutex<()>>,
}

/// Why a turn could not start.
#[derive(Debug, PartialEq)]
pub enum StartError {
    Busy,
    NoModel,
}

impl Lab {
    pub fn new(
        host: Host,
        hub: Arc<Hub>,
        person: Arc<WebPerson>,
        recordings: Arc<Recordings>,
        model: Option<Box<dyn Model>>,
    ) -> Self {
        Lab {
            model_name: model.as_ref().map(|m| m.name()),
            host,
            hub,
            person,
            recordings,
            chat: Arc::new(Mutex::new(Chat {
                model,
                conversation: Vec::new(),
            })),
            manual: Arc::new(Mutex::new(None)),
            busy: Arc::new(Mutex::new(())),
        }
    }

    /// Is a turn running?
    pub fn is_busy(&self) -> bool {
        self.busy.try_lock().is_err()
    }

    fn begin(
        &self,
        kind: &str,
        label: &str,
        fields: Value,
    ) -> Result<(OwnedMutexGuard<()>, u64), StartError> {
        let guard = self
            .busy
            .clone()
            .try_lock_owned()
            .map_err(|_| StartError::Busy)?;
        let turn = self.hub.next_turn();
        self.recordings.begin(turn, label);
        let mut fields = fields;
        fields["kind"] = json!(kind);
        self.hub.emit("turn_start", fields);
        Ok((guard, turn))
    }

    /// Ask the model one question, in the background. Returns the turn's number.
    pub fn ask(self: &Arc<Self>, question: String) -> Result<u64, StartError> {
        if self.model_name.is_none() {
            return Err(StartError::NoModel);
        }
        let (guard, turn) = self.begin("ask", &question, json!({"question": question}))?;
        let lab = self.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let mut chat = lab.chat.lock().await;
            let Chat {
                model,
                conversation,
            } = &mut *chat;
            let Some(model) = model.as_mut() else {
                return;
            };
            let before = conversation.len();
            let mut timed = TimedModel {
                inner: model.as_mut(),
                hub: &lab.hub,
            };
            lab.manual.lock().await.take();
            let (answer, usage) = lab.host.ask(&mut timed, conversation, &question).await;
            // What went back to the model for each call, in the order of the calls.
            let sent = conversation[before..].iter().filter_map(|m| match m {
                Message::Tool { content, .. } => Some(content.clone()),
                _ => None,
            });
            for (index, for_model) in sent.enumerate() {
                lab.hub.emit(
                    "call_detail",
                    json!({"index": index, "for_model": for_model}),
                );
            }
            lab.hub.emit(
                "turn_end",
                json!({"answer": answer, "usage": usage, "ms": ms_since(started)}),
            );
            drop(guard);
        });
        Ok(turn)
    }

    /// Run one call from the manual panel in the background: the person's own call, on
    /// the path a model's proposal takes (`Turn::call_by_person`).
    pub fn propose(self: &Arc<Self>, tool: String, arguments: String) -> Result<u64, StartError> {
        let label = format!("manual: {tool}");
        let (guard, turn) = self.begin(
            "manual",
            &label,
            json!({"tool": tool, "arguments": arguments}),
        )?;
        let lab = self.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let call = ToolCall {
                id: format!("manual-{turn}"),
                name: tool,
                arguments,
            };
            let mut state = lab.manual.lock().await;
            let mut turn = match state.take() {
                Some(kept) => lab.host.resume(kept),
                None => lab.host.turn(),
            };
            let shown = turn.call_by_person(&call).await.shown;
            *state = Some(turn.into_state());
            drop(state);
            lab.hub
                .emit("call_detail", json!({"index": 0, "for_model": shown.text}));
            lab.hub.emit(
                "turn_end",
                json!({"for_model": shown.text, "clipped": shown.clipped, "ms": ms_since(started)}),
            );
            drop(guard);
        });
        Ok(turn)
    }

    /// Stop the call in flight. Returns whether there was one.
    pub fn stop(&self) -> bool {
        self.host.stopper().stop()
    }

    /// The catalog as the manual panel shows it: what the model is offered, so not the
    /// tools a deny rule hides (as `gatehouse tools` leaves them out), each with what the
    /// policy does with its calls before their arguments are known (`policy::standing`:
    /// allowed, asked, denied, or it depends on the arguments, and why in the run's words).
    pub async fn tools(&self) -> Vec<Value> {
        let settings = self.host.settings();
        let remembered = self.host.gate().remembered().await;
        self.host
            .catalog()
            .tools()
            .iter()
            .filter(|t| settings.rules.hiding(&t.name).is_none())
            .map(|t| {
                let standing = gatehouse::policy::standing(t, settings, &remembered);
                json!({
                    "name": t.name,
                    "server": t.origin.label(),
                    "description": t.tool.description,
                    "input_schema": Value::Object((*t.tool.input_schema).clone()),
                    "annotations": gatehouse::person::annotations_for_display(t.tool.annotations.as_ref()),
                    "policy": {"standing": standing.kind(), "words": standing.words()},
                })
            })
            .collect()
    }
}
