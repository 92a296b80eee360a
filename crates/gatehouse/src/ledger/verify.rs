//! Reading a ledger back: `verify` walks the chain and names the first bad line (edited,
//! removed, reordered, cut short); `read_entries` gives the lines for `ledger show`.

use std::{
    fs::File,
    io::{BufRead, BufReader, Read},
    path::Path,
};

use serde_json::Value;

use super::{GENESIS, MAX_LINE_BYTES, head_path, split_line};

/// A ledger whose chain holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// How many lines.
    pub lines: u64,
    /// The last line's hash ([`GENESIS`] for an empty ledger): keep it elsewhere to make a
    /// rewrite of the whole chain visible too.
    pub head: String,
    /// Something worth saying that is not a break (a head one line behind, as after a
    /// crash between the line and its head).
    pub note: Option<String>,
}

/// The first bad line, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad {
    /// The line's number, from 1.
    pub line: u64,
    /// What is wrong, in words.
    pub problem: String,
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.problem)
    }
}

/// Each line of the file, as text, at most [`MAX_LINE_BYTES`] long; `Err` names the line.
fn lines(path: &Path) -> Result<Vec<(String, bool)>, Bad> {
    let file = File::open(path).map_err(|e| Bad {
        line: 0,
        problem: format!("cannot read {}: {e}", path.display()),
    })?;
    let mut reader = BufReader::new(file);
    let mut out = Vec::new();
    loop {
        let mut bytes = Vec::new();
        let n = reader
            .by_ref()
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut bytes)
            .map_err(|e| Bad {
                line: out.len() as u64 + 1,
                problem: format!("cannot be read: {e}"),
            })?;
        if n == 0 {
            return Ok(out);
        }
        let line = out.len() as u64 + 1;
        let complete = bytes.last() == Some(&b'\n');
        if !complete && bytes.len() > MAX_LINE_BYTES {
            return Err(Bad {
                line,
                problem: format!("is longer than {MAX_LINE_BYTES} bytes"),
            });
        }
        if complete {
            bytes.pop();
        }
        let text = String::from_utf8(bytes).map_err(|_| Bad {
            line,
            problem: "is not UTF-8 text".into(),
        })?;
        out.push((text, complete));
    }
}

/// Walk the chain of the ledger at `path`. An empty or missing ledger verifies.
pub fn verify(path: &Path) -> Result<Verified, Bad> {
    if !path.exists() {
        return Ok(Verified {
            lines: 0,
            head: GENESIS.into(),
            note: Some("there is no ledger yet".into()),
        });
    }
    // Appends hold the lock exclusively while they write a line and its head: a shared
    // lock reads the two as one.
    let guard = File::open(path).map_err(|e| Bad {
        line: 0,
        problem: format!("cannot read {}: {e}", path.display()),
    })?;
    guard.lock_shared().map_err(|e| Bad {
        line: 0,
        problem: format!("cannot lock {}: {e}", path.display()),
    })?;
    let mut chain = Chain::default();
    for (i, (text, complete)) in lines(path)?.into_iter().enumerate() {
        if !complete {
            return Err(Bad {
                line: i as u64 + 1,
                problem: "is incomplete: the ledger was cut short here".into(),
            });
        }
        chain.next(&text)?;
    }
    let note = check_head(path, &chain)?;
    Ok(chain.verified(note))
}

/// How many lines an interrupted append can leave past a head that names no group being
/// written: one (a single append, or a head of an earlier version). A head written before a
/// group's lines names how many it holds (`pending`), and that many may be past it.
const INTERRUPTED_APPEND: u64 = 1;

/// The chain's rules, line by line, for a ledger file and a ledger table alike: each
/// line's hash is over its text, its `seq` is its place, its `prev` the line before's
/// hash.
#[derive(Debug, Default)]
pub struct Chain {
    hashes: Vec<String>,
}

impl Chain {
    /// The next line (its text, without a newline).
    pub fn next(&mut self, text: &str) -> Result<(), Bad> {
        let line = self.hashes.len() as u64 + 1;
        let bad = |problem: String| Bad { line, problem };
        let (body, hash) = split_line(text)
            .ok_or_else(|| bad("is not a ledger line (no hash at its end)".into()))?;
        if crate::digest::sha256_hex(body.as_bytes()) != hash {
            return Err(bad("was edited: its hash does not match its text".into()));
        }
        let value: Value =
            serde_json::from_str(&body).map_err(|e| bad(format!("is not JSON: {e}")))?;
        if value["seq"].as_u64() != Some(line) {
            return Err(bad(format!(
                "is numbered {} where {line} was due: a line was removed, added or moved",
                value["seq"]
            )));
        }
        if value["prev"].as_str() != Some(self.head()) {
            return Err(bad(
                "does not follow the line before it (its prev is another line's hash)".into(),
            ));
        }
        self.hashes.push(hash.to_owned());
        Ok(())
    }

    /// The last line's hash so far ([`GENESIS`] before any).
    pub fn head(&self) -> &str {
        self.hashes.last().map_or(GENESIS, String::as_str)
    }

    /// Check a recorded head (`seq` lines ending in `hash`) against the lines walked:
    /// lines cut from the end are found here, and lines added past it. `Ok` with a note
    /// when the head is one line behind (an interrupted append); more is an error.
    pub fn against_head(&self, seq: u64, hash: &str) -> Result<Option<String>, Bad> {
        self.against_head_pending(seq, hash, INTERRUPTED_APPEND)
    }

    /// [`Chain::against_head`] for a head that says a group of `pending` lines was being
    /// written after it: up to that many lines past it are an interrupted append.
    pub fn against_head_pending(
        &self,
        seq: u64,
        hash: &str,
        pending: u64,
    ) -> Result<Option<String>, Bad> {
        let pending = pending.max(INTERRUPTED_APPEND);
        let count = self.hashes.len() as u64;
        if seq > count {
            return Err(Bad {
                line: count + 1,
                problem: format!(
                    "is missing: the head records {seq} lines and the ledger has {count}; lines were cut from the end"
                ),
            });
        }
        let at = match seq {
            0 => GENESIS,
            n => self.hashes[n as usize - 1].as_str(),
        };
        if at != hash {
            return Err(Bad {
                line: seq.max(1),
                problem: "does not match the head's hash".into(),
            });
        }
        match count - seq {
            0 => Ok(None),
            past if past <= pending => Ok(Some(format!(
                "the head records {seq} of {count} lines (an append was interrupted before its head was written)"
            ))),
            past => Err(Bad {
                line: seq + pending + 1,
                problem: format!(
                    "is past the head: the head records {seq} lines and the ledger has {count}; an interrupted append leaves at most {pending} past it, not {past}: lines were added after the last recorded append (or the head's last writes were lost in a power failure)"
                ),
            }),
        }
    }

    /// The walk's outcome.
    pub fn verified(self, note: Option<String>) -> Verified {
        Verified {
            lines: self.hashes.len() as u64,
            head: self.head().to_owned(),
            note,
        }
    }
}

/// The head file against the lines: whole lines cut from the end are found here.
fn check_head(path: &Path, chain: &Chain) -> Result<Option<String>, Bad> {
    let count = chain.hashes.len() as u64;
    let head = match std::fs::read_to_string(head_path(path)) {
        // A brand-new ledger: no line was ever appended, so no head was ever written.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && count == 0 => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Bad {
                line: count + 1,
                problem: format!(
                    "cannot be checked: the head file {} is missing, though an append writes it before the ledger's first line; it was removed, and lines cut from the end cannot be told",
                    head_path(path).display()
                ),
            });
        }
        Err(e) => {
            return Err(Bad {
                line: count + 1,
                problem: format!(
                    "cannot be checked: the head file {} cannot be read: {e}",
                    head_path(path).display()
                ),
            });
        }
        Ok(text) => serde_json::from_str::<Value>(&text).ok(),
    };
    let Some((seq, hash, pending)) = head.as_ref().and_then(|h| {
        let pending = h["pending"].as_u64().unwrap_or(INTERRUPTED_APPEND);
        Some((h["seq"].as_u64()?, h["hash"].as_str()?, pending))
    }) else {
        return Err(Bad {
            line: count + 1,
            problem: "the head file is not readable, so the ledger's end cannot be checked".into(),
        });
    };
    chain.against_head_pending(seq, hash, pending.min(super::group::MAX_GROUP_LINES as u64))
}

/// Every line that is JSON, in order, for showing; lines that are not are skipped (verify
/// says which).
pub fn read_entries(path: &Path) -> Result<Vec<Value>, String> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let lines = lines(path).map_err(|b| b.to_string())?;
    Ok(lines
        .into_iter()
        .filter_map(|(text, _)| serde_json::from_str(&text).ok())
        .collect())
}
