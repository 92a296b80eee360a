//! The rmcp client the tests drive servers with directly, round by round.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use rmcp::{ErrorData, RoleClient, model::*, service::RequestContext};
use serde_json::{Value, json};

/// A client that declares `caps` and answers every `elicitation/create` with `answer`,
/// counting the questions it was asked.
pub struct Asker {
    pub caps: ClientCapabilities,
    pub answer: ElicitResult,
    asked: Arc<AtomicUsize>,
}

impl Asker {
    /// A client that declares `caps` and gives `answer` to every question.
    pub fn new(caps: ClientCapabilities, answer: ElicitResult) -> Asker {
        Asker {
            caps,
            answer,
            asked: Arc::default(),
        }
    }

    /// A client that declares elicitation and accepts every form with `content`.
    pub fn accepting(content: Value) -> Asker {
        Asker::new(
            can_ask(),
            ElicitResult::new(ElicitationAction::Accept).with_content(content),
        )
    }

    /// How many `elicitation/create` questions this client has been asked.
    pub fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

impl rmcp::ClientHandler for Asker {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            self.caps.clone(),
            Implementation::new("gatehouse-test", "0.1.0"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Ok(self.answer.clone())
    }
}

/// The capabilities of a client that can ask its person: elicitation.
pub fn can_ask() -> ClientCapabilities {
    ClientCapabilities::builder().enable_elicitation().build()
}

/// `open_ticket` for `host` with `summary`.
pub fn open_ticket(host: &str, summary: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("open_ticket").with_arguments(
        json!({"host": host, "summary": summary})
            .as_object()
            .unwrap()
            .clone(),
    )
}

/// The person's acceptance of the `confirm` form with `priority`.
pub fn accept(priority: &str) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(json!({"priority": priority}))
}

/// A second round: the person's acceptance of the `confirm` form with `priority`, with the
/// sealed state.
pub fn with_answer(
    params: CallToolRequestParams,
    priority: &str,
    state: &str,
) -> CallToolRequestParams {
    answered(params, &accept(priority), state)
}

/// A second round: `answer` to the `confirm` form, with the sealed state.
pub fn answered(
    params: CallToolRequestParams,
    answer: &ElicitResult,
    state: &str,
) -> CallToolRequestParams {
    let mut responses = InputResponses::new();
    responses.insert("confirm".into(), serde_json::to_value(answer).unwrap());
    params
        .with_input_responses(responses)
        .with_request_state(state.to_owned())
}
