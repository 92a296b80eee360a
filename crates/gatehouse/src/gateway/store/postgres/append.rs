//! Group commit for the ledger table: decisions a replica makes at the same time share one
//! transaction, so one commit (one sync of PostgreSQL's log) stands for all of them.
//!
//! Each append joins the replica's queue, then waits for either its outcome or the
//! connection. Whoever gets the connection takes the whole queue (at most
//! [`MAX_GROUP_LINES`]) and writes it in one transaction: each confirmation used up under
//! its unique key (an entry whose nonce was used already, by another replica or earlier in
//! the same group, gets [`USED`] and no line), then the lines after the head row, read
//! `FOR UPDATE`, in queue order, and the head moved. An append returns only once the
//! transaction holding its line has committed; a group that fails fails each of its
//! appends, so none of their calls is sent. The queue is bounded ([`MAX_WAITING`]): past
//! it, an append is refused at once with an error that says to try again.

use std::sync::{Mutex as StdMutex, MutexGuard};

use tokio::sync::oneshot;

use super::{Postgres, STORE_TIMEOUT, USED};
use crate::ledger::{self, Entry, group::MAX_GROUP_LINES};

/// Most appends one replica lets wait for the database; more are refused, retryably.
pub const MAX_WAITING: usize = 4_096;

/// What one append is told.
type Outcome = Result<(), String>;

/// The appends waiting on one replica.
#[derive(Debug, Default)]
pub(super) struct Waiting {
    queue: StdMutex<Vec<(Entry, oneshot::Sender<Outcome>)>>,
}

impl Waiting {
    fn lock(&self) -> MutexGuard<'_, Vec<(Entry, oneshot::Sender<Outcome>)>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Postgres {
    /// Use the entry's confirmation up (if it names one) and append its line, in one
    /// transaction with whatever other appends are waiting: both are kept, or neither.
    pub async fn append(&self, entry: Entry) -> Result<(), String> {
        let (tell, mut told) = oneshot::channel();
        {
            let mut queue = self.waiting.lock();
            if queue.len() >= MAX_WAITING {
                return Err(format!(
                    "the state store {} has {MAX_WAITING} decisions waiting to be written; try again shortly",
                    self.db
                ));
            }
            queue.push((entry, tell));
        }
        let wait = async {
            loop {
                let mut held = tokio::select! {
                    biased;
                    outcome = &mut told => return outcome,
                    held = self.client.lock() => held,
                };
                // Another's group may have written this one while we waited for the lock.
                if let Ok(outcome) = told.try_recv() {
                    return Ok(outcome);
                }
                let group: Vec<(Entry, oneshot::Sender<Outcome>)> = {
                    let mut queue = self.waiting.lock();
                    let take = queue.len().min(MAX_GROUP_LINES);
                    queue.drain(..take).collect()
                };
                let entries: Vec<Entry> = group.iter().map(|(e, _)| e.clone()).collect();
                let keep = self.ledger;
                let written = self
                    .run_held(&mut held, STORE_TIMEOUT, |c| {
                        Box::pin(write_group(c, entries, keep))
                    })
                    .await;
                drop(held);
                match written {
                    Ok(outcomes) => {
                        for ((_, tell), outcome) in group.into_iter().zip(outcomes) {
                            let _ = tell.send(outcome);
                        }
                    }
                    Err(why) => {
                        for (_, tell) in group {
                            let _ = tell.send(Err(why.clone()));
                        }
                    }
                }
            }
        };
        wait.await.unwrap_or_else(|_| {
            Err("the ledger's writer stopped before this decision was written".into())
        })
    }
}

/// Write one group in one transaction: what each of its entries is told, in order.
async fn write_group(
    c: &mut tokio_postgres::Client,
    entries: Vec<Entry>,
    keep: bool,
) -> Result<Vec<Outcome>, tokio_postgres::Error> {
    let tx = c.transaction().await?;
    let mut outcomes = Vec::with_capacity(entries.len());
    let mut lines = Vec::with_capacity(entries.len());
    for entry in entries {
        if let Some(nonce) = &entry.confirmation {
            let used = tx
                .execute(
                    "INSERT INTO gatehouse_used_confirmations (nonce, used_at)
                     VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING",
                    &[nonce, &ledger::now()],
                )
                .await?;
            if used == 0 {
                outcomes.push(Err(USED.to_owned()));
                continue;
            }
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
        let insert = tx
            .prepare("INSERT INTO gatehouse_ledger (seq, line) VALUES ($1, $2)")
            .await?;
        for entry in &lines {
            seq += 1;
            let (line, hash) = ledger::line_after(seq as u64, &prev, entry);
            tx.execute(&insert, &[&seq, &line]).await?;
            prev = hash;
        }
        tx.execute(
            "UPDATE gatehouse_ledger_head SET seq = $1, hash = $2 WHERE id = 1",
            &[&seq, &prev],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(outcomes)
}
