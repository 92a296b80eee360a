//! The ledger: every decision on a proposed call, one JSON line each, hash-chained and
//! written durably before the call is sent.
//!
//! Each line carries `prev`, the hash of the line before (64 zeros for the first), and
//! ends with `hash`, the SHA-256 of the line's text up to it: an edited, removed or
//! reordered line breaks the chain at that line. A head file beside the ledger
//! (`ledger.jsonl.head`) holds the last line's number and hash, so whole lines cut from
//! the end are found too; it is written before the first line, so a ledger with lines and
//! no head had it removed. Only the last line, or the last group of lines the head names
//! as being written (`pending`), can be past the head (an append interrupted
//! between the two); more is tampering. [`verify`] names the first bad line.
//!
//! Appends take an exclusive lock on the file (several Gatehouse processes may share one
//! ledger: no line is lost, none interleaved), read the last line, write the new one with
//! one write, and sync it to disk before returning; appends made at the same time share
//! that write and sync ([`group`]: group commit), each still returning only once its own
//! line is on disk. An append that fails is an error the caller must act on: a call that
//! needs its line is not sent unrecorded.
//!
//! A gateway's replicas on several machines keep the same lines, by the same rules, in a
//! PostgreSQL table instead (`gateway/store/postgres.rs`): [`line_after`] makes a line
//! and [`Chain`] walks them.
//!
//! The chain shows an edit unless every line after it is rewritten too; anyone who can
//! write the file can do that. Keep the head's hash (`gatehouse ledger verify` prints it)
//! somewhere the ledger's writer cannot reach to make a rewrite visible as well.
//!
//! # A line's format
//!
//! One JSON object a line, its keys in this order ([`Entry`] gives the middle ones):
//!
//! | key | value |
//! | --- | --- |
//! | `seq` | the line's number, from 1 |
//! | `time` | when it was written, RFC 3339 in UTC |
//! | `session` | the host's session (`gateway` for a gateway's calls) |
//! | `trace_id` | the call's trace (32 hex), as its `traceparent` carries it |
//! | `step` | the call's number in the turn, or the gateway's |
//! | `server` | the tool's server, `-` for a tool not in the catalog |
//! | `tool` | the tool as proposed (at most 200 characters) |
//! | `arguments_sha256` | SHA-256 of the arguments' text |
//! | `arguments` | the arguments, secrets replaced, only with `ledger.arguments` |
//! | `fingerprint` | the digest of the tool's definition, or `null` |
//! | `decision` | [`Decision`]: `run`, `asked`, `denied` or `refused` |
//! | `rule` | what decided: `rules[2]`, `allow[0]`, `session`, `project`, `default`, `changed`, `hook`, the check that refused (`too_large`, …), or `null` |
//! | `answer` | [`Answer`] for an ask: `yes` or `no`; else `null` |
//! | `dismissed` | `true` when a no was a dismissal; absent otherwise |
//! | `by` | [`By`], who answered an ask: `person`, `option`, `client` or `nobody`; else `null` |
//! | `reason` | the words of a rule, a hook or a refusal, or `null` |
//! | `caller` | who proposed, when not the host's model: a gateway's caller (`user@tenant`) or `person`; absent otherwise |
//! | `confirmation` | the nonce of the confirmation a gateway's second round used; absent otherwise |
//! | `flows` | where each argument came from, where the host saw it; absent otherwise |
//! | `prev` | the hash of the line before (64 zeros for the first) |
//! | `hash` | SHA-256 of the line's text up to `,"hash"`, closed with `}` |

pub mod group;
mod verify;

use std::{
    fs::File,
    io::{Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    sync::Arc,
};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::caller::CallerName;

pub use verify::{Bad, Chain, Verified, read_entries, verify};

/// The `prev` of the first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Longest line the ledger reads back, in bytes (a line with arguments kept may be long).
pub const MAX_LINE_BYTES: usize = 64 << 20;
/// How much of the file's end is read at a time when looking for its last line.
const TAIL_CHUNK: u64 = 8 << 10;

/// What became of a proposed call: a line's `decision`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Sent without asking anyone (a rule, the allow-list, a remembered approval, a hook).
    #[default]
    Run,
    /// Put to the person, who answered (`answer`, `by`).
    Asked,
    /// Refused by a deny rule or the `beforeCall` hook.
    Denied,
    /// Refused by a check (too large, unknown tool, a changed definition, …).
    Refused,
}

/// The person's answer to an ask: a line's `answer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    /// Run it.
    Yes,
    /// Do not.
    No,
}

/// Who answered an ask: a line's `by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// The person: at the terminal, in the lab's page, or on a gateway's approval page.
    Person,
    /// A command-line option that answers for the person (`--yes`, `--no`).
    Option,
    /// A gateway caller's own client, in the form it was sent (the client, or a model
    /// driving it, may have answered).
    Client,
    /// Nobody could answer: the default, no.
    Nobody,
}

/// One decision, as the turn gives it; the ledger adds the line's number, time and chain.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Entry {
    /// The host's session.
    pub session: String,
    /// The question's trace id.
    pub trace_id: String,
    /// The call's number in the turn.
    pub step: u64,
    /// The tool's server, or `-` for a tool not in the catalog.
    pub server: String,
    /// The tool, as the model named it.
    pub tool: String,
    /// SHA-256 of the arguments' text as the model wrote it.
    pub arguments_sha256: String,
    /// The arguments themselves, when the settings keep them (`ledger.arguments`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The digest of the tool's definition, for a tool in the catalog.
    pub fingerprint: Option<String>,
    /// What became of the call.
    pub decision: Decision,
    /// What decided: `rules[2]`, `allow[0]`, `session`, `project`, `default`, `changed`,
    /// `hook`; the check that refused (`too_large`, …).
    pub rule: Option<String>,
    /// For an ask: the answer.
    pub answer: Option<Answer>,
    /// For a `no`: `true` when the question was dismissed without an answer (a client's
    /// `cancel` of a gateway's form) rather than declined; absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dismissed: bool,
    /// For an ask: who answered.
    pub by: Option<By>,
    /// The reason given (a rule's, a hook's, a refusal's words).
    pub reason: Option<String>,
    /// Who proposed: a gateway's caller (`user@tenant`), or `person` for a call the person
    /// made themselves (`gatehouse call`, [`crate::caller::PERSON`]); a model's
    /// proposals in a host name none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<CallerName>,
    /// The confirmation a gateway's second round used up, by its nonce: one line each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<String>,
    /// Where each argument came from ([`crate::flow::Traced`]), where the host saw the
    /// flow; the values looked for only when the arguments are kept too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<Value>,
}

/// Where a line went: its number and hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The line's number, from 1.
    pub seq: u64,
    /// Its hash.
    pub hash: String,
}

/// A ledger file. Its clones share one queue of appends ([`group`]).
#[derive(Debug, Clone)]
pub struct Ledger {
    path: PathBuf,
    group: Arc<group::Group>,
}

impl Ledger {
    /// The ledger at `path` (made, private, on the first append).
    pub fn new(path: impl Into<PathBuf>) -> Ledger {
        Ledger {
            path: path.into(),
            group: Arc::default(),
        }
    }

    /// Its file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its head file: the last line's number and hash.
    pub fn head_path(&self) -> PathBuf {
        head_path(&self.path)
    }

    /// Can it be written? Makes the file if it is missing; used when a host starts, so the
    /// person hears at once that calls will be stopped.
    pub fn check(&self) -> Result<(), String> {
        crate::files::create_private_keep(&self.path)
            .map(drop)
            .map_err(|e| self.error(&e))
    }

    /// Append one decision, durably: locked, written in one write, synced to disk, with
    /// whatever other appends of this ledger are waiting at the same time ([`group`]).
    /// Returns once its own line is on disk.
    pub fn append(&self, entry: &Entry) -> Result<Appended, String> {
        self.group
            .append(entry, |entries| self.write_group(entries))
    }

    /// How many appends of this ledger (and its clones) wait to be written now.
    pub fn waiting(&self) -> usize {
        self.group.waiting()
    }

    /// How many groups this ledger (and its clones) has written: each one write and one
    /// sync, for as many appends as were waiting.
    pub fn groups_written(&self) -> u64 {
        self.group.groups()
    }

    /// Write a group of decisions after the file's last line: one write, one sync, then
    /// the head.
    fn write_group(&self, entries: &[Entry]) -> Result<Vec<Appended>, String> {
        let mut file = crate::files::create_private_keep(&self.path).map_err(|e| self.error(&e))?;
        file.lock().map_err(|e| self.error(&e))?;
        let (mut seq, mut prev) =
            last_line(&mut file).map_err(|e| format!("{}: {e}", self.shown()))?;
        // The head says a group is being written before its lines are, so the lines a
        // crash leaves past it are an interrupted append, not lines added later; and it
        // exists before the first line, so a ledger with lines and no head had it removed.
        let before = Appended {
            seq,
            hash: prev.clone(),
        };
        if entries.len() > 1 || (seq == 0 && !self.head_path().exists()) {
            write_head(&self.head_path(), &before, entries.len()).map_err(|e| self.error(&e))?;
        }
        let mut text = String::new();
        let mut appended = Vec::with_capacity(entries.len());
        for entry in entries {
            seq += 1;
            let (line, hash) = compose(seq, &prev, entry);
            text.push_str(&line);
            prev = hash.clone();
            appended.push(Appended { seq, hash });
        }
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|e| self.error(&e))?;
        if let Some(last) = appended.last() {
            write_head(&self.head_path(), last, 0).map_err(|e| self.error(&e))?;
        }
        Ok(appended)
        // The lock goes with the file.
    }

    fn shown(&self) -> String {
        format!("the ledger {}", self.path.display())
    }

    fn error(&self, e: &std::io::Error) -> String {
        format!("{} cannot be written: {e}", self.shown())
    }
}

/// The head file of the ledger at `path`.
pub fn head_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".head");
    path.with_file_name(name)
}

/// The now, as the ledger writes it: RFC 3339 in UTC, to the millisecond.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The line (without its newline) for entry `seq` after the line whose hash is `prev`,
/// and its hash: what a ledger kept elsewhere than a file (a gateway's table) stores, by
/// the file's rules.
pub fn line_after(seq: u64, prev: &str, entry: &Entry) -> (String, String) {
    let (mut line, hash) = compose(seq, prev, entry);
    line.pop();
    (line, hash)
}

/// The line for entry `seq` after `prev`, and its hash. The hash is over the line's text
/// up to `,"hash"`, closed with `}`: the body exactly as written, never re-serialised.
fn compose(seq: u64, prev: &str, entry: &Entry) -> (String, String) {
    let mut body = Map::new();
    body.insert("seq".into(), json!(seq));
    body.insert("time".into(), json!(now()));
    if let Ok(Value::Object(fields)) = serde_json::to_value(entry) {
        body.extend(fields);
    }
    body.insert("prev".into(), json!(prev));
    let body = Value::Object(body).to_string();
    let hash = crate::digest::sha256_hex(body.as_bytes());
    let line = format!("{},\"hash\":\"{hash}\"}}\n", &body[..body.len() - 1]);
    (line, hash)
}

/// Split a line (without its newline) into its body and the hash it claims.
pub(crate) fn split_line(line: &str) -> Option<(String, &str)> {
    let at = line.rfind(",\"hash\":\"")?;
    let hash = line[at..]
        .strip_prefix(",\"hash\":\"")?
        .strip_suffix("\"}")?;
    (hash.len() == 64).then(|| (format!("{}}}", &line[..at]), hash))
}

/// The number and hash of the file's last line: `(0, GENESIS)` for an empty file.
fn last_line(file: &mut File) -> Result<(u64, String), String> {
    let len = file.seek(SeekFrom::End(0)).map_err(|e| e.to_string())?;
    if len == 0 {
        return Ok((0, GENESIS.into()));
    }
    let mut tail: Vec<u8> = Vec::new();
    let mut start = len;
    loop {
        let from = start.saturating_sub(TAIL_CHUNK);
        let mut chunk = vec![0; (start - from) as usize];
        file.seek(SeekFrom::Start(from))
            .map_err(|e| e.to_string())?;
        file.read_exact(&mut chunk).map_err(|e| e.to_string())?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        start = from;
        if tail.last() != Some(&b'\n') {
            return Err("its last line is incomplete (cut short, or written by something else); run `gatehouse ledger verify`".into());
        }
        let body = &tail[..tail.len() - 1];
        if let Some(nl) = body.iter().rposition(|&b| b == b'\n') {
            return parse_last(&body[nl + 1..]);
        }
        if start == 0 {
            return parse_last(body);
        }
        if tail.len() > MAX_LINE_BYTES {
            return Err(format!(
                "its last line is longer than {MAX_LINE_BYTES} bytes"
            ));
        }
    }
}

fn parse_last(line: &[u8]) -> Result<(u64, String), String> {
    let bad = || "its last line is not a ledger line; run `gatehouse ledger verify`".to_string();
    let text = std::str::from_utf8(line).map_err(|_| bad())?;
    let (body, hash) = split_line(text).ok_or_else(bad)?;
    let seq = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v["seq"].as_u64())
        .ok_or_else(bad)?;
    Ok((seq, hash.to_owned()))
}

/// Write the head, with the number of lines of a group about to be written after it
/// (`pending`, when more than one). It is not synced: the lines it follows are, and a head
/// left a group behind by a crash is what `verify` tells apart from lines cut from the end
/// (a head ahead of the lines). One sync per group, not two.
fn write_head(path: &Path, head: &Appended, pending: usize) -> std::io::Result<()> {
    let text = if pending > 1 {
        format!(
            "{{\"seq\":{},\"hash\":\"{}\",\"pending\":{pending}}}\n",
            head.seq, head.hash
        )
    } else {
        format!("{{\"seq\":{},\"hash\":\"{}\"}}\n", head.seq, head.hash)
    };
    // Written beside and renamed over, so a crash mid-write leaves the old head or the
    // new one, never an empty or half file (a kill under load found one).
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{}.tmp", std::process::id()));
    let temp = PathBuf::from(temp);
    let written = crate::files::create_private(&temp)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests;
