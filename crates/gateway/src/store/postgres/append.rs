//! Group commit for the ledger table: decisions a replica makes at the same time share one
//! transaction, so one commit (one sync of PostgreSQL's log) stands for all of them.
//!
//! Each append joins the replica's queue, then waits for either its outcome or the
//! connection. Whoever gets the connection takes the whole queue (at most
//! [`MAX_GROUP_LINES`]) and writes it in one transaction: each confirmation used up under
//! its unique key (an entry whose nonce was used already, by another replica or earlier in
//! the same group, gets [`StoreError::Used`] and no line), then the lines after the head row, read
//! `FOR UPDATE`, in queue order, and the head moved. An append returns only once the
//! transaction holding its line has committed; a group that fails fails each of its
//! appends, so none of their calls is sent. The queue is bounded ([`MAX_WAITING`]): past
//! it, an append is refused at once with an error that says to try again; and the wait for
//! the connection is bounded as every use of the store is.

use std::sync::{
    Mutex as StdMutex, MutexGuard,
    atomic::{AtomicU64, Ordering},
};

use tokio::sync::oneshot;
use tokio_postgres::types::ToSql;

use super::{Postgres, STORE_TIMEOUT};
use crate::store::StoreError;
use gatehouse::ledger::{self, Entry, group::MAX_GROUP_LINES};

/// Most appends one replica lets wait for the database; more are refused, retryably.
pub const MAX_WAITING: usize = 4_096;

/// What one append is told.
type Outcome = Result<(), StoreError>;

/// One append waiting: its ticket (to withdraw it), its entry, and where its outcome goes.
type Queued = (u64, Entry, oneshot::Sender<Outcome>);

/// The appends waiting on one replica.
#[derive(Debug, Default)]
pub(super) struct Waiting {
    queue: StdMutex<Vec<Queued>>,
    /// The next append's ticket.
    next: AtomicU64,
}

impl Waiting {
    fn lock(&self) -> MutexGuard<'_, Vec<Queued>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many appends wait now.
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Take the append of `ticket` out of the queue, if no group has taken it yet.
    fn withdraw(&self, ticket: u64) -> bool {
        let mut queue = self.lock();
        let at = queue.iter().position(|(t, _, _)| *t == ticket);
        at.map(|i| queue.remove(i)).is_some()
    }
}

impl Postgres {
    /// Use the entry's confirmation up (if it names one) and append its line, in one
    /// transaction with whatever other appends are waiting: both are kept, or neither.
    /// Waiting for the connection is bounded by [`STORE_TIMEOUT`], as every use of the
    /// store is: past it, an append no group has taken yet is withdrawn and refused.
    pub async fn append(&self, entry: Entry) -> Result<(), StoreError> {
        let stopped = |_| Err(StoreError::WriterStopped);
        let (tell, mut told) = oneshot::channel();
        let ticket = self.waiting.next.fetch_add(1, Ordering::Relaxed);
        {
            let mut queue = self.waiting.lock();
            if queue.len() >= MAX_WAITING {
                return Err(StoreError::Busy {
                    store: self.db.to_string(),
                    waiting: MAX_WAITING,
                });
            }
            queue.push((ticket, entry, tell));
        }
        let deadline = tokio::time::Instant::now() + STORE_TIMEOUT;
        loop {
            let mut held = tokio::select! {
                biased;
                outcome = &mut told => return outcome.unwrap_or_else(stopped),
                held = tokio::time::timeout_at(deadline, self.client.lock()) => match held {
                    Ok(held) => held,
                    // A group that took it is itself bounded: wait for its outcome.
                    Err(_) if !self.waiting.withdraw(ticket) => {
                        return told.await.unwrap_or_else(stopped);
                    }
                    Err(_) => return Err(self.late(STORE_TIMEOUT)),
                },
            };
            // Another's group may have written this one while we waited for the lock.
            if let Ok(outcome) = told.try_recv() {
                return outcome;
            }
            let (entries, tells): (Vec<Entry>, Vec<oneshot::Sender<Outcome>>) = {
                let mut queue = self.waiting.lock();
                let take = queue.len().min(MAX_GROUP_LINES);
                queue.drain(..take).map(|(_, e, t)| (e, t)).unzip()
            };
            let keep = self.ledger;
            let written = self
                .run_held(&mut held, STORE_TIMEOUT, |c| {
                    Box::pin(write_group(c, entries, keep))
                })
                .await;
            drop(held);
            match written {
                Ok(outcomes) => {
                    for (tell, outcome) in tells.into_iter().zip(outcomes) {
                        let _ = tell.send(outcome);
                    }
                }
                Err(why) => {
                    for tell in tells {
                        let _ = tell.send(Err(why.clone()));
                    }
                }
            }
        }
    }
}

/// Write one group in one transaction: what each of its entries is told, in order.
///
/// The round trips are as few as the chain allows, whatever the group's size: the
/// confirmations used up in one statement (only when the group names any), the head read,
/// then every line inserted in one statement and the head moved, sent together (the
/// connection pipelines them), then the commit. The lines' hashes need the head, so it is
/// read first.
async fn write_group(
    c: &mut tokio_postgres::Client,
    entries: Vec<Entry>,
    keep: bool,
) -> Result<Vec<Outcome>, tokio_postgres::Error> {
    let tx = c.transaction().await?;
    let nonces: Vec<&str> = entries
        .iter()
        .filter_map(|e| e.confirmation.as_deref())
        .collect();
    // The nonces this group used up: each inserted under its unique key once, a second
    // use (by another replica, earlier, or twice in this group) kept out.
    let mut fresh: std::collections::HashSet<String> = std::collections::HashSet::new();
    if !nonces.is_empty() {
        let used = tx
            .query(
                "INSERT INTO gatehouse_used_confirmations (nonce, used_at)
                 SELECT n, $2 FROM unnest($1::text[]) AS n
                 ON CONFLICT (nonce) DO NOTHING RETURNING nonce",
                &[&nonces, &ledger::now()],
            )
            .await?;
        for row in used {
            fresh.insert(row.try_get(0)?);
        }
    }
    let mut outcomes = Vec::with_capacity(entries.len());
    let mut lines = Vec::with_capacity(entries.len());
    for entry in entries {
        // The first entry naming a fresh nonce has it; any later one finds it used.
        if let Some(nonce) = &entry.confirmation
            && !fresh.remove(nonce)
        {
            outcomes.push(Err(StoreError::Used));
            continue;
        }
        outcomes.push(Ok(()));
        lines.push(entry);
    }
    if keep && !lines.is_empty() {
        let head = tx
            .query_one(
                "SELECT seq, hash FROM gatehouse_ledger_head WHERE id = 1 FOR UPDATE",
                &[],
            )
            .await?;
        let (mut seq, mut prev): (i64, String) = (head.try_get(0)?, head.try_get(1)?);
        let mut seqs = Vec::with_capacity(lines.len());
        let mut texts = Vec::with_capacity(lines.len());
        for entry in &lines {
            seq += 1;
            let (line, hash) = ledger::line_after(seq as u64, &prev, entry);
            seqs.push(seq);
            texts.push(line);
            prev = hash;
        }
        let (inserted, head): ([&(dyn ToSql + Sync); 2], [&(dyn ToSql + Sync); 2]) =
            ([&seqs, &texts], [&seq, &prev]);
        let insert = tx.execute(
            "INSERT INTO gatehouse_ledger (seq, line)
             SELECT * FROM unnest($1::bigint[], $2::text[])",
            &inserted,
        );
        let moved = tx.execute(
            "UPDATE gatehouse_ledger_head SET seq = $1, hash = $2 WHERE id = 1",
            &head,
        );
        futures::future::try_join(insert, moved).await?;
    }
    tx.commit().await?;
    Ok(outcomes)
}
