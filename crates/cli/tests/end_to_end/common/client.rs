//! The rmcp client the tests drive servers with directly, round by round.

use rmcp::{ErrorData, RoleClient, model::*, service::RequestContext};
use serde_json::{Value, json};

/// A client that declares `caps` and answers every `elicitation/create` with `answer`.
pub struct Asker {
    pub caps: ClientCapabilities,
    pub answer: ElicitResult,
}

impl Asker {
    /// A client that declares elicitation and accepts every form with `content`.
    pub fn accepting(content: Value) -> Asker {
        Asker {
            caps: can_ask(),
            answer: ElicitResult::new(ElicitationAction::Accept).with_content(content),
        }
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

/// A second round: the person's answer to the `confirm` form, with the sealed state.
pub fn with_answer(
    params: CallToolRequestParams,
    priority: &str,
    state: &str,
) -> CallToolRequestParams {
    let mut responses = InputResponses::new();
    responses.insert(
        "confirm".into(),
        json!({"action": "accept", "content": {"priority": priority}}),
    );
    params
        .with_input_responses(responses)
        .with_request_state(state.to_owned())
}
