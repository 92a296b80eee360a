//! `tickets`: the incident-ticket desk. Its one write, `open_ticket`, asks the person first.
//!
//! Like the support desk, it serves organizations: a ticket belongs to the organization its
//! opener acted in, and `list_tickets` shows only the caller's organization's tickets. Every
//! call is checked before its tool runs, against the memberships shared with the support
//! desk ([`crate::membership`]): no membership is JSON-RPC -32003; `list_tickets` needs
//! `incidents:read` (every role) and `open_ticket` `incidents:write` (staff and admin),
//! else a tool error. Both ways of asking the person (below) come after these checks.
//!
//! On revision 2026-07-28 the server never sends requests to the client, so the question
//! travels as a multi-round-trip call: round 1 answers `input_required` with a form and a
//! sealed `requestState`; the client asks the person and sends the same call again with
//! the answer and the state. Only a genuine second round opens a ticket:
//!
//! - the state is sealed (HMAC-SHA256, rmcp's `RequestStateCodec`) and bound to the method,
//!   the tool, a digest of the arguments and the caller of that request (over HTTP, the
//!   user and tenant of its bearer token), with a 10-minute expiry, so it cannot be
//!   minted, edited, moved to other arguments or used by someone else;
//! - it carries a random nonce recorded when used, in the same database transaction that
//!   stores the ticket, so a confirmation opens at most one ticket, across restarts and
//!   across instances sharing the store;
//! - the nonce is recorded with the answer and the ticket it opened, so a second round
//!   sent again (its answer was lost: the server stopped after the ticket was written)
//!   with the same state and the same answer gets that same ticket back, while any other
//!   reuse (another priority, an accept after a decline) is refused as already used. Only
//!   the caller and arguments the state is bound to can present it at all;
//! - the sealing key comes from configuration, so a restart or another instance between
//!   the rounds still accepts an honest answer.
//!
//! Clients on older revisions get the same question as a server-sent `elicitation/create`.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitResult,
        ElicitationAction, ElicitationSchema, InputRequest, InputRequiredResult, ProtocolVersion,
        RequestStateCodec, SealOptions,
    },
    service::RequestContext,
};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::{
    common::{self, Caller},
    desk::{Admission, Call, Desk, Done, Failure, Parts, Profile, Ran},
    membership::{self, Memberships},
    store,
};

/// What the tickets server tells a client about itself at discovery.
pub const INSTRUCTIONS: &str = "Incident tickets. Opening a ticket always asks the user to confirm it and choose its priority first.";
/// How long a confirmation stays valid between round 1 and round 2.
pub const CONFIRMATION_TTL: Duration = Duration::from_secs(600);
/// Environment variable overriding [`CONFIRMATION_TTL`] in milliseconds (for tests).
pub const ENV_CONFIRMATION_TTL_MS: &str = "GATEHOUSE_TICKETS_CONFIRM_TTL_MS";
/// Environment variable holding the sealing key (at least 32 bytes), shared by instances.
pub const ENV_KEY: &str = "GATEHOUSE_TICKETS_KEY";
/// Environment variable naming the ticket store when `--db` is not given.
pub const ENV_DB: &str = "GATEHOUSE_TICKETS_DB";
/// The first ticket number.
pub const FIRST_TICKET: i64 = 4100;
/// The key of the one question in `inputRequests`.
pub const CONFIRM_KEY: &str = "confirm";
/// Longest summary a ticket may have.
pub const MAX_SUMMARY_CHARS: usize = 2_000;
/// The refusal for a confirmation used before with another answer.
pub const ALREADY_USED: &str = "this confirmation was already used: no ticket was opened. Ask the user again if they want another ticket.";
/// The refusal for any state that does not verify, whatever the reason (the reason goes
/// to the server's log only).
pub const INVALID_STATE: &str = "Invalid or expired requestState";

/// Where tickets are kept when nothing says otherwise: [`ENV_DB`], else `tickets.db` in
/// the servers' data folder ([`store::data_dir`]).
pub fn default_db_path() -> PathBuf {
    store::path_from_env(ENV_DB, "tickets.db")
}

/// The sealing key: from [`ENV_KEY`], else a key file beside the store, created with mode
/// 0600 on first start (its folder is the store's, 0700 when the store created it).
pub fn load_key(db_path: &Path) -> anyhow::Result<Vec<u8>> {
    if let Ok(k) = std::env::var(ENV_KEY) {
        anyhow::ensure!(k.len() >= 32, "{ENV_KEY} must be at least 32 bytes long");
        return Ok(k.into_bytes());
    }
    let path = db_path.with_extension("key");
    match std::fs::read_to_string(&path) {
        Ok(k) => {
            let k = k.trim().to_owned();
            anyhow::ensure!(
                k.len() >= 32,
                "the key file {} is too short",
                path.display()
            );
            Ok(k.into_bytes())
        }
        Err(_) => {
            let mut bytes = [0u8; 32];
            rand::fill(&mut bytes);
            let key: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            write_private(&path, &key)?;
            // Another instance may have won the race to create it; use what is there.
            Ok(std::fs::read_to_string(&path)?.trim().as_bytes().to_vec())
        }
    }
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    match store::create_private(path) {
        Ok(Some(mut f)) => Ok(f.write_all(text.as_bytes())?),
        Ok(None) => Ok(()),
        Err(e) => Err(anyhow::anyhow!(
            "cannot create the key file {}: {e}",
            path.display()
        )),
    }
}

/// Open (or create) the ticket store: WAL, so several instances can share it.
///
/// Tickets name hosts and incidents, and the used confirmations sit beside them, so the
/// store is private: a folder it creates is 0700, and the database file is created 0600
/// before SQLite opens it, since SQLite gives its `-wal` and `-shm` files the database
/// file's mode (a file that exists already keeps its mode).
pub fn open_store(path: &Path) -> anyhow::Result<Connection> {
    store::open_with(path, |db| {
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS tickets (
             number INTEGER PRIMARY KEY, host TEXT NOT NULL, summary TEXT NOT NULL,
             priority TEXT NOT NULL, status TEXT NOT NULL, opened_by TEXT NOT NULL,
             opened_at TEXT NOT NULL, tenant TEXT NOT NULL DEFAULT '');
         CREATE TABLE IF NOT EXISTS used_confirmations (
             nonce TEXT PRIMARY KEY, used_at TEXT NOT NULL, outcome TEXT NOT NULL);",
        )?;
        // A store from before organizations: its tickets get no organization, so no one lists
        // them; the ticket numbers go on from where they were.
        store::add_column(db, "tickets", "tenant", "TEXT NOT NULL DEFAULT ''")?;
        // What each confirmation was answered with and the ticket it opened, so that the same
        // answer sent again gets the same ticket.
        store::add_column(db, "used_confirmations", "answer", "TEXT")?;
        store::add_column(db, "used_confirmations", "ticket", "INTEGER")?;
        db.execute_batch(
            "CREATE INDEX IF NOT EXISTS tickets_by_tenant ON tickets (tenant, number)",
        )?;
        Ok(())
    })
}

#[derive(Clone)]
/// The tickets server: its store, its sealing key, and who it was started for.
pub struct TicketsServer {
    db: Arc<Mutex<Connection>>,
    members: &'static Memberships,
    codec: Arc<RequestStateCodec>,
    ttl: Duration,
    parts: Parts,
}

/// What recording a confirmation's use came to.
enum Used {
    /// Its first use: the ticket opened (none for a decline).
    Fresh(Option<Value>),
    /// The same answer to the same confirmation again, as a client sends it when the first
    /// answer was lost: what the first use gave, and nothing new.
    Again(Option<Value>),
    /// Used before with another answer: refused.
    Refused,
}

/// The columns [`ticket_of_row`] reads, in its order.
const TICKET_COLUMNS: &str = "number, host, summary, priority, status";

/// A ticket as the tools show it, from a row of [`TICKET_COLUMNS`].
fn ticket_of_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Value> {
    let number: i64 = r.get(0)?;
    Ok(json!({
        "id": format!("INC-{number}"), "host": r.get::<_, String>(1)?,
        "summary": r.get::<_, String>(2)?, "priority": r.get::<_, String>(3)?,
        "status": r.get::<_, String>(4)?,
    }))
}

/// What a second round may carry.
enum Round2 {
    /// No usable answer: ask (again).
    Ask,
    /// A verified state with this nonce, and the person's answer.
    Answered { nonce: String, answer: ElicitResult },
}

impl TicketsServer {
    /// A tickets server on the store at `db_path` (created if missing, with its key beside it).
    pub fn new(caller: Caller, db_path: &Path) -> anyhow::Result<Self> {
        // The store first: it creates the folder the key file lives in.
        let db = open_store(db_path)?;
        let key = load_key(db_path)?;
        let codec = RequestStateCodec::try_new(key).map_err(|e| anyhow::anyhow!("{e}"))?;
        let ttl = std::env::var(ENV_CONFIRMATION_TTL_MS)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(CONFIRMATION_TTL);
        Ok(TicketsServer {
            db: Arc::new(Mutex::new(db)),
            members: Memberships::embedded()?,
            codec: Arc::new(codec),
            ttl,
            parts: Parts::new(
                "tickets",
                "tickets",
                "1.0.0",
                &["open_ticket", "list_tickets"],
                caller,
            ),
        })
    }

    /// What a sealed state is bound to: method, tool, a digest of the arguments, and who
    /// asked. Built from the validated values in a fixed order, so it is canonical.
    fn binding(caller: &Caller, host: &str, summary: &str) -> Vec<u8> {
        let args = json!({"host": host, "summary": summary}).to_string();
        let mut ad = b"tools/call|open_ticket|".to_vec();
        ad.extend_from_slice(&Sha256::digest(args.as_bytes()));
        // Each part is JSON-quoted, so no user or tenant name can imitate another pair.
        ad.extend_from_slice(
            format!("|{}|{}", json!(caller.user), json!(caller.tenant)).as_bytes(),
        );
        ad
    }

    fn question(host: &str, summary: &str) -> ElicitRequestParams {
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {"priority": {
                "type": "string", "enum": ["P1", "P2", "P3"],
                "description": "P1 = drop everything, P3 = next business day"}},
            "required": ["priority"]
        }))
        .expect("the form schema is valid");
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!("Open an incident ticket for {host}?\n\n{summary}"),
            requested_schema: schema,
        }
    }

    fn ask(&self, caller: &Caller, host: &str, summary: &str) -> CallToolResponse {
        let mut nonce = [0u8; 16];
        rand::fill(&mut nonce);
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let ad = Self::binding(caller, host, summary);
        let sealed = self.codec.seal_with(
            nonce.as_bytes(),
            &SealOptions::new().associated_data(&ad).ttl(self.ttl),
        );
        let mut requests = rmcp::model::InputRequests::new();
        requests.insert(
            CONFIRM_KEY.into(),
            InputRequest::Elicitation(ElicitRequest::new(Self::question(host, summary))),
        );
        InputRequiredResult::new(Some(requests), Some(sealed)).into()
    }

    /// Read round 2, if this is one. A state that does not verify is refused outright.
    fn round2(
        &self,
        caller: &Caller,
        host: &str,
        summary: &str,
        request: &CallToolRequestParams,
    ) -> Result<Round2, ErrorData> {
        let Some(state) = request.request_state.as_deref() else {
            // Answers without our state prove nothing: ask.
            return Ok(Round2::Ask);
        };
        let nonce = match self
            .codec
            .open_with(state, &Self::binding(caller, host, summary))
        {
            Ok(n) => String::from_utf8(n).unwrap_or_default(),
            Err(e) => {
                common::log_line(
                    json!({"ts": common::timestamp(), "event": "request_state_rejected",
                    "user": caller.user, "reason": e.to_string()}),
                );
                return Err(ErrorData::invalid_params(
                    INVALID_STATE,
                    Some(json!({"reason": "invalid_request_state"})),
                ));
            }
        };
        let answer = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(CONFIRM_KEY))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
        Ok(match answer {
            Some(answer) => Round2::Answered { nonce, answer },
            None => Round2::Ask,
        })
    }

    /// Record the confirmation as used with `answer` and, if `ticket` is given, open it, in
    /// one transaction. A confirmation used before is refused unless this is the same answer
    /// again, which gets what the first use gave.
    fn consume(
        &self,
        caller: &Caller,
        nonce: &str,
        answer: &str,
        ticket: Option<(&str, &str, &str)>,
    ) -> Result<Used, Failure> {
        let unavailable = |e: rusqlite::Error| {
            Failure::Unavailable(format!("the ticket store is unavailable: {e}"))
        };
        let mut db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        let tx = db
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(unavailable)?;
        let number = match ticket {
            None => None,
            Some(_) => Some(
                tx.query_row("SELECT max(number) FROM tickets", [], |r| {
                    r.get::<_, Option<i64>>(0)
                })
                .map_err(unavailable)?
                .map_or(FIRST_TICKET, |n| n + 1),
            ),
        };
        let outcome = if ticket.is_some() {
            "opened"
        } else {
            "declined"
        };
        let fresh = tx
            .execute(
                "INSERT OR IGNORE INTO used_confirmations (nonce, used_at, outcome, answer, ticket)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![nonce, common::timestamp(), outcome, answer, number],
            )
            .map_err(unavailable)?;
        if fresh == 0 {
            // Used before. Only the same answer again (its first answer was lost on the
            // way back) gets what the first use gave; a store from before answers were
            // kept has none, so its confirmations stay refused.
            let (first_answer, first_ticket): (Option<String>, Option<i64>) = tx
                .query_row(
                    "SELECT answer, ticket FROM used_confirmations WHERE nonce = ?1",
                    params![nonce],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(unavailable)?;
            if first_answer.as_deref() != Some(answer) {
                return Ok(Used::Refused);
            }
            let Some(first_ticket) = first_ticket else {
                return Ok(Used::Again(None));
            };
            let opened = tx
                .query_row(
                    &format!(
                        "SELECT {TICKET_COLUMNS} FROM tickets WHERE number = ?1 AND tenant = ?2"
                    ),
                    params![first_ticket, caller.tenant],
                    ticket_of_row,
                )
                .optional()
                .map_err(unavailable)?;
            return Ok(opened.map_or(Used::Refused, |t| Used::Again(Some(t))));
        }
        let mut opened = None;
        if let (Some((host, summary, priority)), Some(number)) = (ticket, number) {
            tx.execute(
                "INSERT INTO tickets (number, host, summary, priority, status, opened_by,
                                      opened_at, tenant)
                 VALUES (?1, ?2, ?3, ?4, 'open', ?5, ?6, ?7)",
                params![
                    number,
                    host,
                    summary,
                    priority,
                    caller.user,
                    common::timestamp(),
                    caller.tenant
                ],
            )
            .map_err(unavailable)?;
            opened = Some(json!({
                "id": format!("INC-{number}"), "host": host, "summary": summary,
                "priority": priority, "status": "open",
            }));
        }
        tx.commit().map_err(unavailable)?;
        Ok(Used::Fresh(opened))
    }

    /// The person's answer, as the ticket opened or why none was.
    fn decide(
        &self,
        caller: &Caller,
        host: &str,
        summary: &str,
        nonce: &str,
        answer: &ElicitResult,
    ) -> Result<Value, Failure> {
        let used = || Failure::InvalidArguments(ALREADY_USED.into());
        if answer.action != ElicitationAction::Accept {
            let (said, word) = if answer.action == ElicitationAction::Decline {
                ("declined", "decline")
            } else {
                ("closed the form", "cancel")
            };
            return match self.consume(caller, nonce, word, None)? {
                Used::Refused => Err(used()),
                _ => Err(Failure::Declined(format!(
                    "the user {said}: no ticket was opened. Don't retry unless they ask again."
                ))),
            };
        }
        let priority = answer
            .content
            .as_ref()
            .and_then(|c| c.get("priority"))
            .and_then(Value::as_str)
            .filter(|p| ["P1", "P2", "P3"].contains(p));
        let Some(priority) = priority else {
            return Err(Failure::InvalidArguments("the confirmation came back without a valid priority (P1, P2 or P3); no ticket was opened.".into()));
        };
        let answer = format!("accept:{priority}");
        match self.consume(caller, nonce, &answer, Some((host, summary, priority)))? {
            Used::Fresh(Some(ticket)) => Ok(ticket),
            Used::Again(Some(ticket)) => {
                common::log_line(json!({
                    "ts": common::timestamp(), "event": "confirmation_answered_again",
                    "user": caller.user, "tenant": caller.tenant, "ticket": ticket["id"],
                }));
                Ok(ticket)
            }
            _ => Err(used()),
        }
    }

    async fn open_ticket(&self, call: &Call<'_>) -> Result<Done, Failure> {
        let (caller, args, context) = (call.caller, &call.args, call.context);
        common::no_unknown_args(args, &["host", "summary"])?;
        let host = common::string_arg(args, "host", 1, 253)?;
        let summary = common::string_arg(args, "summary", 1, MAX_SUMMARY_CHARS)?;
        let can_ask = context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if !can_ask {
            return Err(Failure::Unavailable(
                "opening a ticket needs a host that can ask the user to confirm it, and this one can't. \
                 No ticket was opened; tell the user to open it by hand."
                    .into(),
            ));
        }
        let modern = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let ticket = if modern {
            match self
                .round2(caller, &host, &summary, call.request)
                .map_err(Failure::Protocol)?
            {
                Round2::Ask => {
                    return Ok(Done {
                        ran: Ran::Asking(self.ask(caller, &host, &summary)),
                        extra: json!({}),
                    });
                }
                Round2::Answered { nonce, answer } => {
                    self.decide(caller, &host, &summary, &nonce, &answer)?
                }
            }
        } else {
            self.open_ticket_legacy(caller, &host, &summary, context)
                .await?
        };
        Ok(Done::value(ticket))
    }

    /// Older revisions: ask with a server-sent `elicitation/create` inside the call.
    async fn open_ticket_legacy(
        &self,
        caller: &Caller,
        host: &str,
        summary: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, Failure> {
        let answer = context
            .peer
            .create_elicitation(Self::question(host, summary))
            .await
            .map_err(|e| {
                Failure::Unavailable(format!(
                    "the user could not be asked ({e}); no ticket was opened."
                ))
            })?;
        let mut nonce = [0u8; 16];
        rand::fill(&mut nonce);
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        self.decide(caller, host, summary, &nonce, &answer)
    }

    fn list_tickets(&self, caller: &Caller, args: &Map<String, Value>) -> Result<Value, Failure> {
        common::no_unknown_args(args, &["host"])?;
        let host = match args.get("host") {
            None | Some(Value::Null) => None,
            Some(_) => Some(common::string_arg(args, "host", 1, 253)?),
        };
        let unavailable = |e: rusqlite::Error| {
            Failure::Unavailable(format!("the ticket store is unavailable: {e}"))
        };
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        let mut stmt = db
            .prepare_cached(&format!(
                "SELECT {TICKET_COLUMNS} FROM tickets
                 WHERE tenant = ?1 AND (?2 IS NULL OR host = ?2) ORDER BY number"
            ))
            .map_err(unavailable)?;
        let tickets: Vec<Value> = stmt
            .query_map(params![caller.tenant, host], ticket_of_row)
            .map_err(unavailable)?
            .collect::<Result<_, _>>()
            .map_err(unavailable)?;
        Ok(json!({"total": tickets.len(), "tickets": tickets}))
    }
}

impl Desk for TicketsServer {
    const PROFILE: Profile = Profile::new("tickets", INSTRUCTIONS);

    fn parts(&self) -> &Parts {
        &self.parts
    }

    /// No membership is -32003 before anything else (even an unknown tool's name is not
    /// looked at); a role without the tool's scope, a tool error.
    fn admit(&self, caller: &Caller, tool: &str) -> Admission {
        let scope = match tool {
            "open_ticket" => membership::INCIDENTS_WRITE,
            _ => membership::INCIDENTS_READ,
        };
        Admission::of(self.members.check(caller, scope))
    }

    async fn run(&self, call: Call<'_>) -> Result<Done, Failure> {
        match call.name {
            "open_ticket" => self.open_ticket(&call).await,
            _ => Ok(Done::value(self.list_tickets(call.caller, &call.args)?)),
        }
    }
}

#[cfg(test)]
mod tests;
