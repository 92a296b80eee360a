//! The gateway's call where it lives: a gateway on servers in this process
//! (`gatehouse::testing`), its store a SQLite file of the test's, and a client of the
//! host library's over a pipe, sending each round by hand.

use std::sync::Arc;

use gatehouse::{
    connect::Connection,
    testing::{self, Scripted, Server, Serving, text, within},
};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ElicitResult, ElicitationAction,
    InputRequest, InputRequiredResult, InputResponses, ServerResult,
};
use serde_json::{Value, json};

use crate::{Gateway, Store, confirm::APPROVE_KEY, store::Location};

/// A gateway on a desk whose `close` the policy asks about, its client, and the desk.
struct Front {
    gateway: Gateway,
    client: Connection,
    desk: Serving,
    seen: Arc<testing::Seen>,
    _dir: tempfile::TempDir,
}

async fn front(settings: Value) -> Front {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store = Store::open(&Location::File(dir.path().join("state.db")), None)
        .await
        .expect("the store opens");
    let desk = Server::new("desk").tool("close", |_| async { text("closed") });
    let keeper = Arc::new(store.clone());
    let (host, seen, mut serving) = testing::host_on(
        vec![("desk", desk)],
        settings,
        json!({}),
        crate::unreachable(),
        keeper,
    )
    .await;
    let ana = crate::Callers::One(gatehouse_http::Caller::new("usr-ana", "larkfield", "test"));
    let gateway = Gateway::on_host(host, (store, vec![7; 32]), ana, None).expect("a key");
    let client = testing::client_of("gateway", gateway.clone(), Arc::new(Scripted::new()))
        .await
        .expect("the client connects");
    Front {
        gateway,
        client,
        desk: serving.remove(0),
        seen,
        _dir: dir,
    }
}

/// One round of `tools/call` as the client sends it: a result, or the gateway's error.
async fn round(client: &Connection, params: CallToolRequestParams) -> ServerResult {
    match try_round(client, params).await {
        Ok(result) => result,
        Err(e) => panic!("a JSON-RPC error where a result was expected: {e}"),
    }
}

async fn try_round(
    client: &Connection,
    params: CallToolRequestParams,
) -> Result<ServerResult, rmcp::ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    client.send(request).await?.await_response().await
}

/// The gateway's refusal of a state it did not issue for this call: -32602.
fn refused_as_invalid_state(answer: Result<ServerResult, rmcp::ServiceError>) {
    match answer {
        Err(rmcp::ServiceError::McpError(e)) => {
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{e:?}");
        }
        other => panic!("not refused as an invalid state: {other:?}"),
    }
}

fn close() -> CallToolRequestParams {
    let arguments = json!({"ticket": "T-1"});
    CallToolRequestParams::new("desk__close")
        .with_arguments(arguments.as_object().cloned().unwrap_or_default())
}

/// The answer to the gateway's approval form: yes.
fn yes_to(asked: &InputRequiredResult) -> InputResponses {
    let asks = |(key, request): (&String, &InputRequest)| {
        key == APPROVE_KEY && matches!(request, InputRequest::Elicitation(_))
    };
    let by_form = asked.input_requests.iter().flatten().any(asks);
    assert!(by_form, "the gateway asks with its form: {asked:?}");
    let yes = ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true}));
    InputResponses::from([(
        APPROVE_KEY.to_owned(),
        serde_json::to_value(yes).unwrap_or_default(),
    )])
}

fn is_error(result: &ServerResult) -> bool {
    match result {
        ServerResult::CallToolResult(r) => r.is_error == Some(true),
        _ => false,
    }
}

#[tokio::test]
async fn a_confirmation_is_used_once() {
    let f = front(json!({})).await;
    let ServerResult::InputRequiredResult(asked) = round(&f.client, close()).await else {
        panic!("the gateway runs an ask without asking");
    };
    assert!(f.desk.received().is_empty());
    let state = asked
        .request_state
        .clone()
        .expect("a state to come back with");
    let answered = close()
        .with_input_responses(yes_to(&asked))
        .with_request_state(state);
    let ran = round(&f.client, answered.clone()).await;
    assert!(!is_error(&ran), "{ran:?}");
    assert_eq!(f.desk.received().len(), 1);
    // The same answer again, as a replay would send it: refused, and not sent.
    let again = round(&f.client, answered).await;
    assert!(is_error(&again), "{again:?}");
    assert!(format!("{again:?}").contains("used already"), "{again:?}");
    assert_eq!(f.desk.received().len(), 1);
}

#[tokio::test]
async fn a_confirmation_is_bound_to_its_arguments() {
    let f = front(json!({})).await;
    let ServerResult::InputRequiredResult(asked) = round(&f.client, close()).await else {
        panic!("the gateway runs an ask without asking");
    };
    let state = asked.request_state.clone().expect("a state");
    let other = json!({"ticket": "T-2"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let swapped = close()
        .with_arguments(other)
        .with_input_responses(yes_to(&asked))
        .with_request_state(state);
    refused_as_invalid_state(try_round(&f.client, swapped).await);
    assert!(f.desk.received().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_server_down_offers_nothing_until_it_is_back() {
    let f = front(json!({"allow": ["desk__close"]})).await;
    assert_eq!(f.gateway.tools().len(), 1);
    f.desk.kill();
    within("the server down", f.seen.until("starting it again", 1)).await;
    assert!(f.gateway.tools().is_empty());
    within("the restart", f.seen.until("is running again", 1)).await;
    assert_eq!(f.gateway.tools().len(), 1);
    let ran = round(&f.client, close()).await;
    assert!(!is_error(&ran), "{ran:?}");
}

#[tokio::test(start_paused = true)]
async fn shutting_down_closes_the_servers_while_a_session_still_holds_the_gateway() {
    let f = front(json!({})).await;
    let session = f.gateway.clone();
    f.gateway.shutdown().await;
    within("the server's close", f.desk.closed(1)).await;
    drop(session);
}
