//! Why the shared store could not do what a replica asked: one type for both databases,
//! said to the person in one place (its `Display`), and mapped to the gateway's own error
//! (`Error::Store`) where a request meets it. Whatever it says is the store's location as
//! shown (never a password) and its database's words, made visible.

use std::{fmt, time::Duration};

use super::version::SCHEMA_VERSION;

/// What a second use of a confirmation (or of any sealed state) is told.
const USED: &str = "this requestState was used already: a state is used once";

/// Why the store could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The database failed, or could not be reached.
    Unavailable {
        /// The store, as shown (a file's path; a database's URL without its password).
        store: String,
        /// The database's words.
        cause: String,
    },
    /// The database did not answer within the limit (another replica's write, a slow or
    /// unreachable database).
    Late {
        /// The store, as shown.
        store: String,
        /// The limit.
        limit: Duration,
    },
    /// The worker that runs the store's statements failed.
    Worker(String),
    /// The ledger's writer stopped before this decision was written.
    WriterStopped,
    /// Too many decisions wait on this replica to be written: try again shortly.
    Busy {
        /// The store, as shown.
        store: String,
        /// How many wait.
        waiting: usize,
    },
    /// The store cannot be opened, made or migrated as it is; the words say why.
    Unusable {
        /// The store, as shown.
        store: String,
        /// Why, in words.
        why: String,
    },
    /// The store's schema is older than this gateway's: `gatehouse gateway migrate` first.
    Older {
        /// The store, as shown.
        store: String,
        /// Its schema version.
        version: i64,
    },
    /// The store's schema was made by a newer gatehouse.
    Newer {
        /// The store, as shown.
        store: String,
        /// Its schema version.
        version: i64,
    },
    /// The ledger the store writes cannot be written; its words.
    Ledger(String),
    /// A row the store keeps cannot be read back as what it holds.
    Unreadable {
        /// Which row, in words.
        what: String,
        /// The reader's words.
        why: String,
    },
    /// The confirmation (a sealed state's nonce) was used already: a state is used once.
    Used,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unavailable { store, cause } => {
                write!(f, "the state store {store} is unavailable: {cause}")
            }
            StoreError::Late { store, limit } => write!(
                f,
                "the state store {store} did not answer within {} s",
                limit.as_secs()
            ),
            StoreError::Worker(why) => write!(f, "the state store's worker failed: {why}"),
            StoreError::WriterStopped => {
                f.write_str("the ledger's writer stopped before this decision was written")
            }
            StoreError::Busy { store, waiting } => write!(
                f,
                "the state store {store} has {waiting} decisions waiting to be written; try again shortly"
            ),
            StoreError::Unusable { store, why } => write!(f, "the state store {store}: {why}"),
            StoreError::Older { store, version } => write!(
                f,
                "the state store {store} is at schema version {version}, older than this \
                 gatehouse's {SCHEMA_VERSION}: stop every replica, back the store up, run \
                 `gatehouse gateway migrate --state {store}` once, then start them all at this version"
            ),
            StoreError::Newer { store, version } => write!(
                f,
                "the state store {store} is at schema version {version}, made by a newer \
                 gatehouse (this one knows up to {SCHEMA_VERSION}): run the newer version"
            ),
            StoreError::Ledger(why) => f.write_str(why),
            StoreError::Unreadable { what, why } => {
                write!(
                    f,
                    "{what}, as the state store keeps it, cannot be read: {why}"
                )
            }
            StoreError::Used => f.write_str(USED),
        }
    }
}

impl std::error::Error for StoreError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_says_which_store_and_why() {
        let store = || "state.db".to_owned();
        let said = [
            StoreError::Unavailable {
                store: store(),
                cause: "disk I/O error".into(),
            },
            StoreError::Late {
                store: store(),
                limit: Duration::from_secs(5),
            },
            StoreError::Unusable {
                store: store(),
                why: "permission denied".into(),
            },
        ]
        .map(|e| e.to_string());
        assert_eq!(
            said,
            [
                "the state store state.db is unavailable: disk I/O error",
                "the state store state.db did not answer within 5 s",
                "the state store state.db: permission denied",
            ]
        );
        assert_eq!(StoreError::Used.to_string(), USED);
    }
}
