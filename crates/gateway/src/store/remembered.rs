//! Each caller's remembered approvals as this replica last read them from the store, so
//! that a call is decided without a store round trip (with PostgreSQL, a network one on
//! the replica's only connection, which its ledger appends wait on too).
//!
//! Why a cache is safe here: an approval only ever lets a call run unasked, and it names
//! the tool's definition (its fingerprint), so a changed tool is never covered by an old
//! one. An approval is added (on any replica) but never taken back by the gateway. So a
//! stale entry can only lack an approval given elsewhere since: the gate asks the store
//! again before it would ask the person ([`gatehouse::gate::Keeper::remembered_now`]), and
//! the person is never asked about what they approved on another replica. An approval
//! deleted from the store by hand holds on a replica for at most [`APPROVALS_TTL`].

use std::{collections::HashMap, sync::Mutex, time::Duration};

use tokio::time::Instant;

use crate::caller::CallerName;
use gatehouse::approvals::Remembered;

/// How long a caller's approvals, as read, are used before they are read again.
pub const APPROVALS_TTL: Duration = Duration::from_secs(5);
/// Most callers whose approvals a replica keeps: past it, the expired are dropped, then
/// (all of them fresh) the whole cache, so it never grows without bound.
pub const MAX_CACHED_CALLERS: usize = 10_000;

/// The cache of one replica.
#[derive(Default)]
pub struct Cache {
    callers: Mutex<HashMap<CallerName, (Instant, Remembered)>>,
}

impl Cache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CallerName, (Instant, Remembered)>> {
        self.callers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `who`'s approvals, if read less than [`APPROVALS_TTL`] ago.
    pub fn get(&self, who: &CallerName) -> Option<Remembered> {
        let callers = self.lock();
        let (read_at, remembered) = callers.get(who)?;
        (read_at.elapsed() < APPROVALS_TTL).then(|| remembered.clone())
    }

    /// Keep `who`'s approvals as just read.
    pub fn put(&self, who: &CallerName, remembered: Remembered) {
        let mut callers = self.lock();
        if callers.len() >= MAX_CACHED_CALLERS && !callers.contains_key(who) {
            callers.retain(|_, (read_at, _)| read_at.elapsed() < APPROVALS_TTL);
            if callers.len() >= MAX_CACHED_CALLERS {
                callers.clear();
            }
        }
        callers.insert(who.clone(), (Instant::now(), remembered));
    }

    /// `who` approved `tool` at `fingerprint` on this replica: seen here at once.
    pub fn approved(&self, who: &CallerName, tool: &str, fingerprint: &str) {
        if let Some((_, remembered)) = self.lock().get_mut(who) {
            remembered.remember(gatehouse::approvals::Scope::Project, tool, fingerprint);
        }
    }

    /// How many callers are kept now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::who;

    fn approving(tool: &str) -> Remembered {
        let mut r = Remembered::default();
        r.remember(gatehouse::approvals::Scope::Project, tool, "fp");
        r
    }

    #[tokio::test(start_paused = true)]
    async fn approvals_are_used_until_they_are_too_old_then_read_again() {
        let cache = Cache::default();
        assert!(cache.get(&who("sam")).is_none(), "nothing read yet");
        cache.put(&who("sam"), approving("tickets__open"));
        tokio::time::advance(APPROVALS_TTL - Duration::from_millis(1)).await;
        let kept = cache.get(&who("sam")).expect("still fresh");
        assert!(kept.covers("tickets__open", "fp").is_some());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(cache.get(&who("sam")).is_none(), "too old: read again");
        assert!(
            cache.get(&who("kim")).is_none(),
            "another caller's are their own"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_approval_given_here_is_seen_at_once() {
        let cache = Cache::default();
        cache.put(&who("sam"), Remembered::default());
        cache.approved(&who("sam"), "cmdb__get_asset", "fp2");
        let kept = cache.get(&who("sam")).unwrap();
        assert!(kept.covers("cmdb__get_asset", "fp2").is_some());
        assert!(kept.covers("cmdb__get_asset", "fp1").is_none());
        // A caller not read yet is read from the store when next asked for.
        cache.approved(&who("kim"), "cmdb__get_asset", "fp2");
        assert!(cache.get(&who("kim")).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn the_cache_never_holds_more_than_its_bound() {
        let cache = Cache::default();
        for i in 0..MAX_CACHED_CALLERS {
            cache.put(&who(&format!("caller-{i}")), Remembered::default());
        }
        assert_eq!(cache.len(), MAX_CACHED_CALLERS);
        // All fresh: the next caller empties it rather than grow it.
        cache.put(&who("one-more"), Remembered::default());
        assert_eq!(cache.len(), 1);
        for i in 0..10 {
            cache.put(&who(&format!("caller-{i}")), Remembered::default());
        }
        tokio::time::advance(APPROVALS_TTL).await;
        for i in 10..MAX_CACHED_CALLERS {
            cache.put(&who(&format!("caller-{i}")), Remembered::default());
        }
        // The expired go first, the fresh stay.
        cache.put(&who("last"), Remembered::default());
        assert!(cache.len() <= MAX_CACHED_CALLERS);
        assert!(cache.get(&who("last")).is_some());
        assert!(cache.get(&who("caller-10")).is_some());
    }
}
