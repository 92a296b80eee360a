//! The tickets server's confirmation, driven round by round with rmcp's client, so every
//! way a second round can be forged, replayed, moved or late is tried against the real
//! `gatehouse serve tickets` process.

use crate::common::{
    self,
    client::{Asker, accept, answered, can_ask, open_ticket},
};

use std::{path::Path, time::Duration};

use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError, model::*,
    service::RunningService, transport::TokioChildProcess,
};
use serde_json::{Value, json};

async fn start(
    db: &Path,
    user: &str,
    env: &[(&str, &str)],
    mode: ClientLifecycleMode,
    client: Asker,
) -> RunningService<RoleClient, Asker> {
    let mut cmd = std::process::Command::new(common::exe());
    cmd.args(["serve", "tickets", "--db"]).arg(db);
    let mut caller = vec![("MCP_USER", user), ("MCP_TENANT", "larkfield")];
    caller.extend_from_slice(env);
    let cmd = tokio::process::Command::from(common::in_fresh_world(cmd, &caller));
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the tickets server starts");
    client
        .serve_with_lifecycle(transport, mode)
        .await
        .expect("the tickets server answers")
}

fn modern() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

async fn modern_client(db: &Path, user: &str) -> RunningService<RoleClient, Asker> {
    start(db, user, &[], modern(), Asker::new(can_ask(), accept("P1"))).await
}

/// Round 2 with the person's acceptance at `priority`, and the server's answer.
async fn accepted(
    client: &RunningService<RoleClient, Asker>,
    params: CallToolRequestParams,
    priority: &str,
    state: &str,
) -> Result<CallToolResponse, ServiceError> {
    client
        .call_tool_once(answered(params, &accept(priority), state))
        .await
}

/// Round 1: the question and the sealed state.
/// A client asked to confirm a call: the client, the call, and the sealed state.
type Asked = (
    RunningService<RoleClient, Asker>,
    CallToolRequestParams,
    String,
);

/// The summary of the seeds' recorded run.
const SEED_SUMMARY: &str = "brute force then a login from 203.0.113.77";

/// A new folder for a tickets store, and the store's path in it.
fn new_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tickets.db");
    (dir, db)
}

/// Sam's client on a tickets server with a new store (in the folder returned with it).
async fn sam_in_new_store(
    mode: ClientLifecycleMode,
    asker: Asker,
) -> (tempfile::TempDir, RunningService<RoleClient, Asker>) {
    let (dir, db) = new_store();
    let client = start(&db, "usr-sam", &[], mode, asker).await;
    (dir, client)
}

/// Sam's client on the store at `db`, asked to confirm the usual ticket: the client, the
/// call and the sealed state.
async fn sam_asked(db: &Path) -> Asked {
    sam_asked_about(db, "brute force").await
}

/// As [`sam_asked`], for a ticket with this summary.
async fn sam_asked_about(db: &Path, summary: &str) -> Asked {
    let client = modern_client(db, "usr-sam").await;
    let params = open_ticket("jump-prod-02", summary);
    let (_, state) = round1(&client, params.clone()).await;
    (client, params, state)
}

/// The first round of the usual confirmation (a ticket for jump-prod-02): the call and
/// the sealed state the server asked with.
async fn jump_prod_asked(
    client: &RunningService<RoleClient, Asker>,
) -> (CallToolRequestParams, String) {
    let params = open_ticket("jump-prod-02", "brute force");
    let (_, state) = round1(client, params.clone()).await;
    (params, state)
}

async fn round1(
    client: &RunningService<RoleClient, Asker>,
    params: CallToolRequestParams,
) -> (InputRequiredResult, String) {
    match client
        .call_tool_once(params)
        .await
        .expect("round 1 answers")
    {
        CallToolResponse::InputRequired(asked) => {
            let state = asked.request_state.clone().expect("a sealed state");
            (asked, state)
        }
        other => panic!("round 1 must ask first, got {other:?}"),
    }
}

fn complete(r: Result<CallToolResponse, ServiceError>) -> CallToolResult {
    match r.expect("the call answers") {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn invalid_state(r: Result<CallToolResponse, ServiceError>) {
    match r {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32602);
            assert_eq!(e.message, "Invalid or expired requestState");
        }
        other => panic!("expected -32602 Invalid or expired requestState, got {other:?}"),
    }
}

async fn ticket_count(client: &RunningService<RoleClient, Asker>) -> i64 {
    let r = complete(
        client
            .call_tool_once(CallToolRequestParams::new("list_tickets"))
            .await,
    );
    r.structured_content.unwrap()["total"].as_i64().unwrap()
}

#[tokio::test]
async fn an_honest_confirmation_opens_one_ticket_and_the_same_answer_again_gets_it_back() {
    let (_dir, db) = new_store();
    let client = modern_client(&db, "usr-sam").await;
    let params = open_ticket("jump-prod-02", SEED_SUMMARY);
    let (asked, state) = round1(&client, params.clone()).await;
    let form = serde_json::to_value(&asked.input_requests.unwrap()["confirm"]).unwrap();
    assert_eq!(form["method"], "elicitation/create");
    assert_eq!(
        form["params"]["requestedSchema"]["properties"]["priority"]["enum"],
        json!(["P1", "P2", "P3"])
    );
    assert!(
        form["params"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Open an incident ticket for jump-prod-02?")
    );

    let round2 = answered(params.clone(), &accept("P1"), &state);
    let opened = complete(client.call_tool_once(round2.clone()).await);
    assert_eq!(opened.is_error, Some(false));
    let ticket = opened.structured_content.unwrap();
    assert_eq!(ticket["id"], "INC-4100");
    assert_eq!(ticket["priority"], "P1");

    // The same round 2 again, as a client sends it when the answer was lost: the ticket
    // it already opened, and no second one.
    let again = complete(client.call_tool_once(round2).await);
    assert_eq!(again.is_error, Some(false), "{}", text(&again));
    assert_eq!(again.structured_content.unwrap(), ticket);
    // The same state with any other answer is refused.
    for other in [accept("P2"), ElicitResult::new(ElicitationAction::Decline)] {
        let replay = complete(
            client
                .call_tool_once(answered(params.clone(), &other, &state))
                .await,
        );
        assert_eq!(replay.is_error, Some(true));
        assert!(text(&replay).contains("already used"), "{}", text(&replay));
    }
    assert_eq!(ticket_count(&client).await, 1);

    // The next honest confirmation gets the next number.
    let params = open_ticket("customer-db-prod-01", "disk at 95%");
    let (_, state) = round1(&client, params.clone()).await;
    let next = complete(accepted(&client, params, "P3", &state).await);
    assert_eq!(next.structured_content.unwrap()["id"], "INC-4101");
}

#[tokio::test]
async fn a_tampered_or_rebound_state_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let client = modern_client(&dir.path().join("tickets.db"), "usr-sam").await;
    let (params, state) = jump_prod_asked(&client).await;

    let mut tampered = state.clone().into_bytes();
    let i = tampered.len() - 5;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    invalid_state(accepted(&client, params.clone(), "P1", &tampered).await);

    // The same state for another host, or another summary.
    let other_host = open_ticket("jump-prod-01", "brute force");
    invalid_state(accepted(&client, other_host, "P1", &state).await);
    let other_summary = open_ticket("jump-prod-02", "something else");
    invalid_state(accepted(&client, other_summary, "P1", &state).await);
    // A state that is not even sealed.
    invalid_state(accepted(&client, params.clone(), "P1", "asked-the-user").await);
    assert_eq!(ticket_count(&client).await, 0);

    // The honest round still works afterwards.
    let ok = complete(accepted(&client, params, "P2", &state).await);
    assert_eq!(ok.structured_content.unwrap()["id"], "INC-4100");
}

#[tokio::test]
async fn an_expired_state_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let client = start(
        &dir.path().join("tickets.db"),
        "usr-sam",
        &[("GATEHOUSE_TICKETS_CONFIRM_TTL_MS", "150")],
        modern(),
        Asker::new(can_ask(), accept("P1")),
    )
    .await;
    let (params, state) = jump_prod_asked(&client).await;
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    invalid_state(accepted(&client, params, "P1", &state).await);
    assert_eq!(ticket_count(&client).await, 0);
}

#[tokio::test]
async fn a_restart_between_the_rounds_still_accepts_the_honest_answer_and_keeps_it_single_use() {
    let (dir, db) = new_store();
    let (first, params, state) = sam_asked(&db).await;
    first.cancel().await.unwrap();

    let key = dir.path().join("tickets.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let second = modern_client(&db, "usr-sam").await;
    let round2 = answered(params.clone(), &accept("P1"), &state);
    let ok = complete(second.call_tool_once(round2.clone()).await);
    assert_eq!(ok.structured_content.unwrap()["id"], "INC-4100");
    second.cancel().await.unwrap();

    // Single use holds across a restart too: the same answer gets the same ticket, another
    // answer nothing.
    let third = modern_client(&db, "usr-sam").await;
    let again = complete(third.call_tool_once(round2).await);
    assert_eq!(again.structured_content.unwrap()["id"], "INC-4100");
    let replay = complete(accepted(&third, params, "P3", &state).await);
    assert!(text(&replay).contains("already used"));
    assert_eq!(ticket_count(&third).await, 1);
}

#[tokio::test]
async fn one_users_confirmation_cannot_be_used_by_another() {
    let (_dir, db) = new_store();
    let (sam, params, state) = sam_asked(&db).await;
    // Jun is staff at Larkfield too, so only the binding stands in his way.
    let jun = modern_client(&db, "usr-jun").await;
    invalid_state(accepted(&jun, params, "P1", &state).await);
    assert_eq!(ticket_count(&sam).await, 0);
}

#[tokio::test]
async fn decline_and_cancel_open_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let client = modern_client(&dir.path().join("tickets.db"), "usr-sam").await;
    for (action, said) in [
        (ElicitationAction::Decline, "declined"),
        (ElicitationAction::Cancel, "closed the form"),
    ] {
        let (params, state) = jump_prod_asked(&client).await;
        let round2 = answered(params.clone(), &ElicitResult::new(action), &state);
        // Sent again (its answer lost), the same answer is answered as the first time.
        for _ in 0..2 {
            let r = complete(client.call_tool_once(round2.clone()).await);
            assert_eq!(r.is_error, Some(true));
            let t = text(&r);
            assert!(
                t.contains(said) && t.contains("no ticket was opened") && t.contains("Don't retry"),
                "{t}"
            );
        }
        // An accept with the state of a declined confirmation opens nothing.
        let r = complete(accepted(&client, params, "P1", &state).await);
        assert!(text(&r).contains("already used"), "{}", text(&r));
    }
    // Accepting without a valid priority opens nothing either.
    let (params, state) = jump_prod_asked(&client).await;
    let r = complete(accepted(&client, params, "P9", &state).await);
    assert!(text(&r).contains("without a valid priority"));
    assert_eq!(ticket_count(&client).await, 0);
}

#[tokio::test]
async fn answers_without_the_state_are_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let client = modern_client(&dir.path().join("tickets.db"), "usr-sam").await;
    let mut responses = InputResponses::new();
    responses.insert(
        "confirm".into(),
        serde_json::to_value(accept("P1")).unwrap(),
    );
    let skipped = open_ticket("jump-prod-02", "brute force").with_input_responses(responses);
    assert!(matches!(
        client.call_tool_once(skipped).await.unwrap(),
        CallToolResponse::InputRequired(_)
    ));
    assert_eq!(ticket_count(&client).await, 0);
}

#[tokio::test]
async fn a_client_that_cannot_ask_is_refused_and_nothing_opens() {
    let (_dir, client) = sam_in_new_store(
        modern(),
        Asker::new(ClientCapabilities::default(), accept("P1")),
    )
    .await;
    let r = complete(
        client
            .call_tool_once(open_ticket("jump-prod-02", "brute force"))
            .await,
    );
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("needs a host that can ask the user"),
        "{}",
        text(&r)
    );
    assert_eq!(ticket_count(&client).await, 0);
}

#[tokio::test]
async fn an_older_client_is_asked_with_elicitation_create() {
    let (_dir, client) = sam_in_new_store(
        ClientLifecycleMode::Initialize,
        Asker::new(can_ask(), accept("P2")),
    )
    .await;
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
    let r = complete(
        client
            .call_tool_once(open_ticket("jump-prod-02", "brute force"))
            .await,
    );
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let ticket: Value = r.structured_content.unwrap();
    assert_eq!(ticket["id"], "INC-4100");
    assert_eq!(ticket["priority"], "P2");
}

// ---------------------------------------------------------------------------------------
// Who may do what: membership, role and organization, checked before any tool runs.
// ---------------------------------------------------------------------------------------

/// A client of either era acting as `user` in `tenant`, answering every question with P1.
async fn client_as(
    db: &Path,
    user: &str,
    tenant: &str,
    mode: ClientLifecycleMode,
) -> RunningService<RoleClient, Asker> {
    start(
        db,
        user,
        &[("MCP_TENANT", tenant)],
        mode,
        Asker::new(can_ask(), accept("P1")),
    )
    .await
}

fn forbidden(r: Result<CallToolResponse, ServiceError>) {
    match r {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32003);
            assert_eq!(
                e.message,
                "forbidden: you have no access to this organization"
            );
        }
        other => panic!("expected -32003 forbidden, got {other:?}"),
    }
}

/// The (id, host) of every ticket `client`'s caller may list.
async fn listed(client: &RunningService<RoleClient, Asker>) -> Vec<(String, String)> {
    let r = complete(
        client
            .call_tool_once(CallToolRequestParams::new("list_tickets"))
            .await,
    );
    common::ids_and_hosts(&r.structured_content.unwrap())
}

#[tokio::test]
async fn a_caller_with_no_membership_is_refused_before_anything_and_nothing_opens() {
    let (_dir, db) = new_store();
    // Tomás exists but belongs to no organization; Camille belongs to Bramble, not Larkfield.
    for (user, tenant) in [("usr-tomas", "larkfield"), ("usr-camille", "larkfield")] {
        for mode in [modern(), ClientLifecycleMode::Initialize] {
            let client = client_as(&db, user, tenant, mode).await;
            forbidden(
                client
                    .call_tool_once(open_ticket("jump-prod-02", "brute force"))
                    .await,
            );
            forbidden(
                client
                    .call_tool_once(CallToolRequestParams::new("list_tickets"))
                    .await,
            );
            // Not even an unknown tool's name is looked at.
            forbidden(
                client
                    .call_tool_once(CallToolRequestParams::new("close_ticket"))
                    .await,
            );
            assert_eq!(client.service().asked(), 0, "{user} was asked to confirm");
            client.cancel().await.unwrap();
        }
    }
    let sam = modern_client(&db, "usr-sam").await;
    assert_eq!(ticket_count(&sam).await, 0);
}

#[tokio::test]
async fn a_read_only_member_may_list_but_not_open() {
    let (_dir, db) = new_store();
    let (sam, params, state) = sam_asked(&db).await;
    complete(accepted(&sam, params.clone(), "P2", &state).await);

    for mode in [modern(), ClientLifecycleMode::Initialize] {
        let omar = client_as(&db, "usr-omar", "larkfield", mode).await;
        assert_eq!(
            listed(&omar).await,
            vec![("INC-4100".to_owned(), "jump-prod-02".to_owned())]
        );
        let refused = complete(
            omar.call_tool_once(open_ticket("jump-prod-01", "disk full"))
                .await,
        );
        assert_eq!(refused.is_error, Some(true));
        assert!(
            text(&refused)
                .contains("forbidden: your role (read_only) does not allow incidents:write"),
            "{}",
            text(&refused)
        );
        // Not with Sam's confirmation either (the role is checked before the state).
        let stolen = complete(accepted(&omar, params.clone(), "P1", &state).await);
        assert!(text(&stolen).contains("does not allow incidents:write"));
        assert_eq!(omar.service().asked(), 0);
        omar.cancel().await.unwrap();
    }
    // Sam is read-only at Bramble: there he may list, not open.
    let sam_at_bramble = client_as(&db, "usr-sam", "bramble", modern()).await;
    let refused = complete(
        sam_at_bramble
            .call_tool_once(open_ticket("jump-prod-02", "brute force"))
            .await,
    );
    assert!(text(&refused).contains("your role (read_only)"));
    assert_eq!(ticket_count(&sam).await, 1);
}

#[tokio::test]
async fn each_organization_lists_only_its_own_tickets() {
    let (_dir, db) = new_store();
    let (sam, params, state) = sam_asked_about(&db, SEED_SUMMARY).await;
    let opened = complete(accepted(&sam, params, "P1", &state).await);
    assert_eq!(opened.structured_content.unwrap()["id"], "INC-4100");

    // Camille, staff at Bramble, on the same store: none of Larkfield's tickets.
    let camille = client_as(&db, "usr-camille", "bramble", modern()).await;
    assert_eq!(listed(&camille).await, vec![]);
    let params = open_ticket("search-index-prod-01", "the policy index stopped updating");
    let (_, state) = round1(&camille, params.clone()).await;
    let opened = complete(accepted(&camille, params, "P2", &state).await);
    assert_eq!(opened.structured_content.unwrap()["id"], "INC-4101");
    assert_eq!(
        listed(&camille).await,
        vec![("INC-4101".to_owned(), "search-index-prod-01".to_owned())]
    );
    // Filtering by host does not reach across either.
    let r = complete(
        camille
            .call_tool_once(
                CallToolRequestParams::new("list_tickets")
                    .with_arguments(json!({"host": "jump-prod-02"}).as_object().unwrap().clone()),
            )
            .await,
    );
    assert_eq!(r.structured_content.unwrap()["total"], 0);

    assert_eq!(
        listed(&sam).await,
        vec![("INC-4100".to_owned(), "jump-prod-02".to_owned())]
    );
    // The organization a caller acts in decides, not the user: Sam at Bramble sees Bramble's.
    let sam_at_bramble =
        client_as(&db, "usr-sam", "bramble", ClientLifecycleMode::Initialize).await;
    assert_eq!(
        listed(&sam_at_bramble).await,
        vec![("INC-4101".to_owned(), "search-index-prod-01".to_owned())]
    );
}

#[cfg(unix)]
#[tokio::test]
async fn the_store_its_files_and_its_folder_are_the_users_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("gatehouse").join("store");
    let db = store.join("tickets.db");
    let (client, params, state) = sam_asked(&db).await;
    complete(accepted(&client, params, "P1", &state).await);
    // While the server runs, with a ticket written: the WAL files exist.
    let mode = |p: &Path| {
        std::fs::metadata(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .permissions()
            .mode()
            & 0o777
    };
    for folder in [dir.path().join("gatehouse"), store.clone()] {
        assert_eq!(mode(&folder), 0o700, "{}", folder.display());
    }
    for file in [
        "tickets.db",
        "tickets.db-wal",
        "tickets.db-shm",
        "tickets.key",
    ] {
        assert_eq!(mode(&store.join(file)), 0o600, "{file}");
    }
    assert_eq!(ticket_count(&client).await, 1);
}
