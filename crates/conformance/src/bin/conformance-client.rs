//! `conformance-client [ARGS...] URL`: the client the MCP conformance harness drives
//! (`conformance client --command "<path>/conformance-client"`), built on the Gatehouse
//! host library: the servers file is parsed by `gatehouse::config`, the connection made by
//! `gatehouse::connect` (2026-07-28 first, then the `initialize` handshake), tool calls go
//! through `gatehouse::dispatch` (its time limit and `input_required` rounds), and the
//! server's questions are answered through a `gatehouse::person::Person`.
//!
//! Contract (set by the harness): the server URL is the last argument; the scenario is in
//! `MCP_CONFORMANCE_SCENARIO`, the revision the mock speaks in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION`, scenario data in `MCP_CONFORMANCE_CONTEXT`. The
//! client does the scenario's exchange and exits; the harness judges the wire. Exit 0 when
//! the exchange went through, 1 when it did not (the reason on stderr).
//!
//! The person here is the harness: it accepts every form with the schema's defaults (and
//! a plain value for any other required field) and declines URL-mode requests. It signs in
//! the way the harness's authorization server expects of a browser: the authorization URL
//! is fetched without following its redirect, and the address it redirects to is handed
//! back as a person would paste it. A real Gatehouse session asks the person at the
//! terminal instead.
//!
//! For `auth/*` scenarios the servers file's entry gets an `oauth` object: the client name
//! and metadata-document URL the harness knows, and the pre-registered client or client
//! credentials of `MCP_CONFORMANCE_CONTEXT` (the secret passed through the environment, as
//! a servers file must). Sign-ins are kept in a fresh folder per run, in a file.

#![warn(clippy::too_many_lines)]

use std::{path::PathBuf, sync::Arc, time::Duration};

use futures::future::BoxFuture;
use gatehouse::{
    catalog::{self, Catalog},
    config::{self, Config, Identity},
    connect::{self, Connection, Negotiation},
    dispatch::{self, Call, CallEnd, CallLimits},
    person::{
        Answered, AnsweredBy, Approval, ApprovalRequest, Person, SignInAnswer, SignInRequest,
        Unattended,
    },
    trace::{Quiet, Trace},
};
use rmcp::model::{
    ElicitRequestParams, GetPromptRequestParams, JsonObject, ProtocolVersion,
    ReadResourceRequestParams,
};
use serde_json::{Map, Value, json};

/// The scenario's name when the harness sets none.
const DEFAULT_SCENARIO: &str = "initialize";
/// The name of the one server in the generated servers file.
const SERVER: &str = "conformance";
/// Limits for each call (the harness's own time limit is 30-60 s per scenario).
const LIMITS: CallLimits = CallLimits {
    round_timeout: Duration::from_secs(20),
    max_round_timeout: Duration::from_secs(40),
    max_input_rounds: config::MAX_INPUT_ROUNDS,
    task_wait: config::HOST_TASK_WAIT,
};

/// The client-id metadata document URL the harness's authorization servers accept.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// The client name registered.
const CLIENT_NAME: &str = "gatehouse-conformance";
/// The variable the pre-registered client's secret is passed in.
const SECRET_VAR: &str = "GATEHOUSE_CONFORMANCE_CLIENT_SECRET";
/// The variable the context's private key (PEM) is passed to the servers file through.
const KEY_VAR: &str = "GATEHOUSE_CONFORMANCE_CLIENT_KEY";
/// The variable the context's ID token (enterprise-managed authorization) is passed in.
const ID_TOKEN_VAR: &str = "GATEHOUSE_CONFORMANCE_ID_TOKEN";
/// How long the harness's authorization endpoint may take to answer.
const AUTHORIZE_TIMEOUT: Duration = Duration::from_secs(10);

/// The harness's answers: yes to calls, forms filled from their defaults, URL-mode
/// requests declined.
const ANSWERS: Unattended = Unattended {
    run: true,
    by: AnsweredBy::Option,
    fill: Some(fill_form),
};

/// The harness as the person: [`ANSWERS`], and sign-ins finished as a browser would.
struct HarnessPerson;

/// Fetch the authorization URL as a browser would, without following the redirect: the
/// harness's authorization endpoint answers 302 straight to the redirect URI.
async fn follow_authorization(url: &str) -> Result<String, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(AUTHORIZE_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    let response = http.get(url).send().await.map_err(|e| e.to_string())?;
    response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "the authorization endpoint answered {} without a redirect",
                response.status()
            )
        })
}

/// A plain value of a schema type, for a required field without a default.
fn stub(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|a| a.first()) {
        return first.clone();
    }
    match schema["type"].as_str() {
        Some("boolean") => Value::Bool(true),
        Some("integer") | Some("number") => json!(0),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => Value::String("conformance".into()),
    }
}

/// SEP-1034: every property with a default gets it; other required ones a plain value.
fn fill_form(schema: &Value) -> Value {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    if let Some(props) = schema["properties"].as_object() {
        for (name, prop) in props {
            if let Some(default) = prop.get("default") {
                content.insert(name.clone(), default.clone());
            } else if required.contains(&name.as_str()) {
                content.insert(name.clone(), stub(prop));
            }
        }
    }
    Value::Object(content)
}

impl Person for HarnessPerson {
    fn can_sign_in(&self) -> bool {
        true
    }

    fn sign_in<'a>(&'a self, request: &'a SignInRequest) -> BoxFuture<'a, SignInAnswer> {
        Box::pin(async move {
            match follow_authorization(&request.url).await {
                Ok(location) => SignInAnswer::Pasted(location),
                Err(e) => {
                    eprintln!("conformance-client: authorization request: {e}");
                    SignInAnswer::Declined
                }
            }
        })
    }

    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        ANSWERS.approve(request)
    }

    fn elicit<'a>(&'a self, server: &'a str, request: &'a ElicitRequestParams) -> Answered<'a> {
        ANSWERS.elicit(server, request)
    }
}
/// Arguments that satisfy a tool's `required` list (for tools the scenario names none for).
fn stub_arguments(schema: &JsonObject) -> JsonObject {
    let schema = Value::Object(schema.clone());
    let mut args = JsonObject::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        if let Some(name) = name.as_str() {
            let prop = &schema["properties"][name];
            let value = match prop["type"].as_str() {
                Some("integer") | Some("number") => json!(0),
                Some("boolean") => json!(false),
                Some("object") => json!({}),
                Some("array") => json!([]),
                Some("null") => Value::Null,
                _ => json!("x"),
            };
            args.insert(name.to_owned(), value);
        }
    }
    args
}

struct Client {
    conn: Connection,
    person: Arc<HarnessPerson>,
    trace: Trace,
}

impl Client {
    async fn start(url: &str, oauth: Option<Value>) -> anyhow::Result<Client> {
        // The host's own servers-file parsing, with the harness's URL as the one server.
        let mut entry = json!({"url": url});
        if let Some(oauth) = oauth {
            entry["oauth"] = oauth;
        }
        let file = json!({"mcpServers": {SERVER: entry}, "gatehouse": {"credentialStore": "file"}})
            .to_string();
        let config = Config::parse(&file, "conformance-client", &Identity::default())?;
        if let Some((name, reason)) = config.broken.first() {
            anyhow::bail!("server {name}: {reason}");
        }
        let spec = config
            .servers
            .first()
            .ok_or_else(|| anyhow::anyhow!("no server in the generated servers file"))?;
        let person = Arc::new(HarnessPerson);
        let trace = Trace::new(Arc::new(Quiet));
        let negotiation = if handshake_era() {
            Negotiation::HandshakeOnly
        } else {
            Negotiation::PreferModern
        };
        let limits = connect::Limits::from_settings(&config.settings);
        let conn = connect::connect_with(spec, person.clone(), &trace, limits, negotiation).await?;
        eprintln!(
            "conformance-client: connected on {} to {}",
            conn.protocol,
            conn.implementation
                .as_ref()
                .map_or("an unnamed server", |i| i.name.as_str())
        );
        Ok(Client {
            conn,
            person,
            trace,
        })
    }

    async fn list_tools(&self) -> anyhow::Result<Vec<rmcp::model::Tool>> {
        let listing = catalog::list_tools(&self.conn, catalog::live::MAX_LIST_PAGES).await?;
        // The host's catalog checks every schema (no network `$ref` is ever fetched).
        let catalog = Catalog::build(vec![(self.conn.name.clone(), listing.tools.clone())]);
        for reason in &catalog.left_out {
            eprintln!("conformance-client: {reason}");
        }
        Ok(listing.tools)
    }

    async fn call(&self, tool: &str, arguments: JsonObject) -> anyhow::Result<Value> {
        // Nobody stops a conformance call; the token is dispatch's Stop button.
        let stop = dispatch::Stopper::default().begin();
        let done = dispatch::call_tool(
            Call {
                conn: &self.conn,
                wire_name: tool,
                arguments,
                meta: None,
                relay: None,
            },
            LIMITS,
            dispatch::Watch {
                person: self.person.as_ref(),
                trace: &self.trace,
                stop: &stop,
            },
        )
        .await;
        match done.end {
            CallEnd::Result(result) => {
                let value = serde_json::to_value(&result).unwrap_or_default();
                eprintln!(
                    "conformance-client: {tool} answered after {} round(s): {value}",
                    done.rounds
                );
                Ok(value)
            }
            CallEnd::ProtocolError(e) => {
                anyhow::bail!("{tool}: JSON-RPC error {} {}", e.code.0, e.message)
            }
            CallEnd::TimedOut(after) => anyhow::bail!("{tool}: no answer within {after:?}"),
            CallEnd::Failed(reason) => anyhow::bail!("{tool}: {reason}"),
            CallEnd::Stopped => anyhow::bail!("{tool}: stopped"),
            CallEnd::Background(left) => {
                anyhow::bail!("{tool}: task {} still running", left.id)
            }
        }
    }

    async fn shutdown(self) {
        self.conn.close().await;
    }
}

/// Whether the harness runs this scenario at a handshake revision (2025-11-25 or older).
/// Its mocks of those revisions answer `server/discover` with an empty result instead of
/// an error, which rmcp's probe (and so the host's connect) does not fall back from: the
/// client goes straight to `initialize`, as the harness asks (the Python SDK's client
/// does the same).
fn handshake_era() -> bool {
    std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .is_ok_and(|v| v.as_str() < ProtocolVersion::V_2026_07_28.as_str())
}

fn object(value: &Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null)
}

/// The `oauth` entry of an `auth/*` scenario: the names the harness knows, and the
/// context's client (pre-registered, client credentials, a workload's token or an
/// identity provider's ID token), its secrets through the environment and the workload's
/// token through a file in `dir`, as its platform would mount it.
fn oauth_entry(scenario: &str, dir: &std::path::Path) -> anyhow::Result<Value> {
    let context = context();
    let mut oauth = json!({"clientName": CLIENT_NAME, "clientMetadataUrl": CLIENT_METADATA_URL});
    if let Some(id) = context["client_id"].as_str() {
        oauth["clientId"] = json!(id);
        if let Some(secret) = context["client_secret"].as_str() {
            // SAFETY: set once, before any thread of this process reads the environment.
            unsafe { std::env::set_var(SECRET_VAR, secret) };
            oauth["clientSecret"] = json!(format!("${{{SECRET_VAR}}}"));
        }
        if let Some(key) = context["private_key_pem"].as_str() {
            // SAFETY: set once, before any thread of this process reads the environment.
            unsafe { std::env::set_var(KEY_VAR, key) };
            oauth["privateKey"] = json!(format!("${{{KEY_VAR}}}"));
            oauth["signingAlgorithm"] = context["signing_algorithm"].clone();
        }
        if let Some(issuer) = context["issuer"].as_str() {
            oauth["issuer"] = json!(issuer);
        }
        if scenario.starts_with("auth/client-credentials") {
            oauth["grant"] = json!("client_credentials");
        }
        if let Some(jwt) = context["valid_jwt"].as_str() {
            let file = dir.join("workload-token");
            write_private(&file, jwt)?;
            oauth["grant"] = json!("jwt_bearer");
            oauth["tokenFile"] = json!(file);
        }
        if let Some(id_token) = context["idp_id_token"].as_str() {
            // SAFETY: set once, before any thread of this process reads the environment.
            unsafe { std::env::set_var(ID_TOKEN_VAR, id_token) };
            oauth["grant"] = json!("enterprise_managed");
            oauth["idp"] = json!({
                "issuer": context["idp_issuer"], "tokenEndpoint": context["idp_token_endpoint"],
                "clientId": context["idp_client_id"], "idToken": format!("${{{ID_TOKEN_VAR}}}")});
        }
    }
    Ok(oauth)
}

/// Write `text` to a new file only its owner may read.
fn write_private(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

/// A fresh folder for this run's sign-ins (the harness runs scenarios side by side).
fn fresh_store() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "gatehouse-conformance-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir)?;
    // SAFETY: set once, before any thread of this process reads the environment.
    unsafe { std::env::set_var("XDG_DATA_HOME", &dir) };
    Ok(dir)
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

async fn run(scenario: &str, url: &str) -> anyhow::Result<()> {
    if scenario.starts_with("auth/") {
        let store = fresh_store()?;
        let outcome = auth_exchange(scenario, url, &store).await;
        let _ = std::fs::remove_dir_all(store);
        return outcome;
    }
    let client = Client::start(url, None).await?;
    let outcome = scenario_exchange(&client, scenario).await;
    client.shutdown().await;
    outcome
}

/// An `auth/*` scenario: connect (signing in when the server asks), list the tools, and
/// call each with plain arguments.
async fn auth_exchange(scenario: &str, url: &str, store: &std::path::Path) -> anyhow::Result<()> {
    let client = Client::start(url, Some(oauth_entry(scenario, store)?)).await?;
    let outcome = async {
        for tool in client.list_tools().await? {
            client
                .call(&tool.name, stub_arguments(&tool.input_schema))
                .await?;
        }
        Ok(())
    }
    .await;
    client.shutdown().await;
    outcome
}

async fn scenario_exchange(client: &Client, scenario: &str) -> anyhow::Result<()> {
    match scenario {
        "initialize" | "json-schema-ref-no-deref" => {
            client.list_tools().await?;
        }
        "tools_call" | "request-metadata" => {
            client.list_tools().await?;
            client
                .call("add_numbers", object(&json!({"a": 5, "b": 3})))
                .await?;
        }
        "sse-retry" => {
            client.list_tools().await?;
            client.call("test_reconnection", JsonObject::new()).await?;
        }
        "elicitation-sep1034-client-defaults" => {
            client.list_tools().await?;
            client
                .call("test_client_elicitation_defaults", JsonObject::new())
                .await?;
        }
        "sep-2322-client-request-state" => {
            client.list_tools().await?;
            for tool in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                client.call(tool, JsonObject::new()).await?;
            }
        }
        "json-schema-2020-12-preservation" => {
            let tools = client.list_tools().await?;
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .ok_or_else(|| anyhow::anyhow!("no json_schema_2020_12_tool listed"))?;
            let schema = Value::Object(focal.input_schema.as_ref().clone());
            client
                .call("json_schema_echo", object(&json!({"schema": schema})))
                .await?;
        }
        "http-standard-headers" | "http-invalid-tool-headers" | "http-custom-headers" => {
            headers_exchange(client, scenario).await?;
        }
        other => {
            // An unknown scenario: do the common exchange, so the harness sees something.
            eprintln!("conformance-client: unknown scenario {other:?}; listing tools");
            client.list_tools().await?;
        }
    }
    Ok(())
}

/// The HTTP header scenarios: every kind of request once, every tool whatever its
/// headers, and the calls the harness's context names.
async fn headers_exchange(client: &Client, scenario: &str) -> anyhow::Result<()> {
    match scenario {
        "http-standard-headers" => {
            let tools = client.list_tools().await?;
            if let Some(tool) = tools.first() {
                client
                    .call(&tool.name, stub_arguments(&tool.input_schema))
                    .await?;
            }
            let peer = client.conn.peer();
            let resources = peer.list_resources(None).await?;
            if let Some(resource) = resources.resources.first() {
                peer.read_resource(ReadResourceRequestParams::new(resource.uri.clone()))
                    .await?;
            }
            let prompts = peer.list_prompts(None).await?;
            if let Some(prompt) = prompts.prompts.first() {
                peer.get_prompt(GetPromptRequestParams::new(prompt.name.clone()))
                    .await?;
            }
        }
        "http-invalid-tool-headers" => {
            // rmcp leaves out tools whose `x-mcp-header` annotations are invalid; the
            // rest are called, and a failing call does not stop the others.
            for tool in client.list_tools().await? {
                if let Err(e) = client
                    .call(&tool.name, stub_arguments(&tool.input_schema))
                    .await
                {
                    eprintln!("conformance-client: {e:#}");
                }
            }
        }
        "http-custom-headers" => {
            let listed: Vec<String> = client
                .list_tools()
                .await?
                .into_iter()
                .map(|t| t.name.to_string())
                .collect();
            let context = context();
            for call in context["toolCalls"].as_array().into_iter().flatten() {
                let Some(name) = call["name"].as_str() else {
                    continue;
                };
                if !listed.iter().any(|n| n == name) {
                    eprintln!("conformance-client: {name} was not listed; skipped");
                    continue;
                }
                if let Err(e) = client.call(name, object(&call["arguments"])).await {
                    eprintln!("conformance-client: {e:#}");
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[tokio::main]
async fn main() {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance-client URL   (the harness appends the URL)");
        std::process::exit(2);
    };
    let scenario =
        std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_else(|_| DEFAULT_SCENARIO.to_owned());
    eprintln!(
        "conformance-client: scenario {scenario} at {} against {url}",
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
            .unwrap_or_else(|_| "(no revision given)".into())
    );
    if let Err(e) = run(&scenario, &url).await {
        eprintln!("conformance-client: {scenario}: {e:#}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_take_their_defaults_and_plain_values_for_required_fields() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "confirmed": {"type": "boolean"},
            "size": {"type": "string", "enum": ["s", "m"]},
            "note": {"type": "string"}
        }, "required": ["confirmed", "size"]});
        assert_eq!(
            fill_form(&schema),
            json!({"name": "John Doe", "age": 30, "confirmed": true, "size": "s"})
        );
    }

    #[test]
    fn stub_arguments_cover_the_required_list() {
        let schema = object(&json!({"type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
            "required": ["a", "b"]}));
        assert_eq!(
            Value::Object(stub_arguments(&schema)),
            json!({"a": 0, "b": "x"})
        );
    }
}
