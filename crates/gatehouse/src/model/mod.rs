//! The model's side: it reads the conversation and the catalog, and proposes. A
//! [`Decision`] is text — tool calls the host may or may not run, or a final answer —
//! never an action.

pub mod openai;
pub mod playback;
pub mod scripted;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::catalog::ToolSpec;

/// One proposed call, as the model wrote it. `arguments` is the model's raw text: it may
/// not even be JSON, and the host checks it before anything else.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// The call's id, which its answer goes back with.
    pub id: String,
    /// The tool, as the model named it.
    pub name: String,
    /// The arguments, as the model wrote them.
    pub arguments: String,
}

/// The conversation, in the shape chat-completion APIs use.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The host's instructions to the model.
    System(String),
    /// The person's question.
    User(String),
    /// What the model said: optional text beside its tool calls.
    Assistant {
        /// Words beside the calls (or the answer, with no calls).
        text: Option<String>,
        /// The calls it proposed.
        tool_calls: Vec<ToolCall>,
    },
    /// The host's answer to one tool call, matched by the call's id.
    Tool {
        /// The id of the call this answers.
        call_id: String,
        /// The tool, as the model named it.
        name: String,
        /// What the model reads (bounded).
        content: String,
        /// Images and audio from the result, for models that take them as input
        /// (`modelAcceptsMedia` in the settings); otherwise `content` describes them.
        media: Vec<Media>,
    },
}

/// What kind of media a block carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// An image (`image` block).
    Image,
    /// A sound (`audio` block).
    Audio,
}

impl MediaKind {
    /// The content block type it comes from: `image` or `audio`.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Audio => "audio",
        }
    }
}

/// An image or audio block passed to the model as input.
#[derive(Debug, Clone, PartialEq)]
pub struct Media {
    /// Image or audio.
    pub kind: MediaKind,
    /// Its MIME type.
    pub mime: String,
    /// Base64, as the server sent it.
    pub data: String,
}

/// Tokens a model reported, added up over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Tokens of the prompts.
    pub prompt_tokens: u64,
    /// Tokens the model wrote.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
    /// How many model calls they came from.
    pub model_calls: u64,
}

impl Usage {
    /// Add another's counts to these.
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
        self.model_calls += other.model_calls;
    }
}

/// What the model proposes: tool calls, or (with none) a final answer in `text`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    /// The final answer, or words beside the calls.
    pub text: Option<String>,
    /// The proposed calls; none means the model answered.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens this decision cost, when the model reports them.
    pub usage: Option<Usage>,
}

impl Decision {
    /// A final answer.
    pub fn answer(text: impl Into<String>) -> Self {
        Decision {
            text: Some(text.into()),
            ..Decision::default()
        }
    }

    /// One tool call with JSON arguments.
    pub fn call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: &serde_json::Value,
    ) -> Self {
        Decision {
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: arguments.to_string(),
            }],
            ..Decision::default()
        }
    }
}

/// Why the model gave no decision. The turn ends with this reason.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ModelError(pub String);

/// What deciding gives: the model's next step, or why there is none.
pub type Decided<'a> = BoxFuture<'a, Result<Decision, ModelError>>;

/// Anything that can propose.
pub trait Model: Send {
    /// How the model is named in the run.
    fn name(&self) -> String;
    /// Propose the next step of the conversation, given the tools on offer.
    fn decide<'a>(&'a mut self, messages: &'a [Message], tools: &'a [ToolSpec]) -> Decided<'a>;
    /// Check, before the first question, that the model can be used at all (endpoint
    /// reachable, key accepted), so a person learns it at once, not after a question.
    /// Models with nothing to check keep this default.
    fn preflight<'a>(&'a mut self) -> BoxFuture<'a, Result<(), ModelError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Make a model from its name: `scripted`, `playback:FILE`, or `openai:MODEL` (an
/// OpenAI-compatible endpoint from `OPENAI_BASE_URL`, key from `OPENAI_API_KEY`).
pub fn from_spec(spec: &str) -> Result<Box<dyn Model>, String> {
    from_spec_with(spec, &|name| std::env::var(name).ok())
}

/// [`from_spec`], the variables it reads (`OPENAI_BASE_URL`, `OPENAI_API_KEY`) looked up
/// with `variable` rather than in the environment: a binary that took its secrets out of
/// its environment hands them over from memory.
pub fn from_spec_with(
    spec: &str,
    variable: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn Model>, String> {
    match spec.split_once(':') {
        None if spec == "scripted" => Ok(Box::new(scripted::Scripted)),
        Some(("playback", path)) => Ok(Box::new(playback::Playback::load(std::path::Path::new(
            path,
        ))?)),
        Some(("openai", name)) => Ok(Box::new(
            openai::OpenAi::from_variables(name, variable)
                .map_err(|e| format!("model {spec:?}: {e}"))?,
        )),
        _ => Err(format!(
            "unknown model {spec:?}: use scripted, playback:FILE or openai:MODEL"
        )),
    }
}
