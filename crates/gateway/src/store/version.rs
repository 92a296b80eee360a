//! The shared store's schema version: written when a store is made, checked each time a
//! replica opens one, and changed only by `gatehouse gateway migrate`, run once with the
//! replicas stopped. A replica never changes a schema that other replicas, perhaps of
//! another version, are reading; it refuses to start on one it does not know. The one
//! exception is a store made before versions, which a replica takes to version 1 as every
//! earlier version did at each start ([`check`]).
//!
//! A store is made by the same steps that migrate one: step `i` takes the schema from
//! version `i` to `i + 1` (`sqlite.rs` and `postgres.rs` each list theirs), so a fresh
//! store and a migrated one are the same schema by construction. Version 0 is a store an
//! earlier Gatehouse made before stores had versions.

use super::StoreError;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i64 = 1;

/// The one-row table that holds a store's version.
pub const VERSION_TABLE: &str = "gatehouse_schema";

/// What opening a store found of its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// No table at all: a store to make.
    Empty,
    /// The version it names; 0 for a store made before versions (tables, no version).
    Version(i64),
}

/// What `gatehouse gateway migrate` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// The version found (0: made before versions; `None`: an empty store, made now).
    pub from: Option<i64>,
    /// The version it is at now, [`SCHEMA_VERSION`].
    pub to: i64,
}

impl std::fmt::Display for Migrated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.from {
            None => write!(f, "made the store at schema version {}", self.to),
            Some(v) if v == self.to => write!(f, "the store is at schema version {v} already"),
            Some(v) => write!(
                f,
                "migrated the store from schema version {v} to {}",
                self.to
            ),
        }
    }
}

/// Whether a replica may open a store it found at `found` (`shown` names the store):
/// `Ok(true)` when it takes it to this version itself, `Ok(false)` when it is at this
/// version, else an error saying what to do. A replica makes an empty store, and takes one
/// made before versions to version 1 (step 0 is what every earlier version ran at each
/// start, tables made where missing: nothing an older replica still running would not
/// do itself); any other version is changed only by `gatehouse gateway migrate`.
pub fn check(found: Found, shown: &str) -> Result<bool, StoreError> {
    if opens_itself(found) {
        return Ok(true);
    }
    let Found::Version(v) = found else {
        return Ok(true);
    };
    match v {
        v if v == SCHEMA_VERSION => Ok(false),
        v if v < SCHEMA_VERSION => Err(StoreError::Older {
            store: shown.to_owned(),
            version: v,
        }),
        v => Err(StoreError::Newer {
            store: shown.to_owned(),
            version: v,
        }),
    }
}

/// Does a replica take a store found at `found` to this version as it opens it (an empty
/// one, or one made before versions: [`check`])?
pub fn opens_itself(found: Found) -> bool {
    matches!(found, Found::Empty | Found::Version(0))
}

/// The first of the steps that take a store found at `found` to [`SCHEMA_VERSION`]
/// (step `i` migrates version `i` to `i + 1`): 0 for an empty store, [`SCHEMA_VERSION`]
/// (none to run) for one at this version, an error for one newer than this build.
pub fn first_step(found: Found) -> Result<usize, String> {
    match found {
        Found::Empty => Ok(0),
        Found::Version(v) if (0..=SCHEMA_VERSION).contains(&v) => Ok(v as usize),
        Found::Version(v) => Err(format!(
            "the store is at schema version {v}, made by a newer gatehouse (this one knows \
             up to {SCHEMA_VERSION}): it cannot be migrated back"
        )),
    }
}

/// The statement that records [`SCHEMA_VERSION`] as the store's, its table made if
/// missing; `integer` is the database's name for a 64-bit integer.
pub fn record(integer: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1),
             version {integer} NOT NULL);
         INSERT INTO {VERSION_TABLE} (id, version) VALUES (1, {SCHEMA_VERSION})
             ON CONFLICT (id) DO UPDATE SET version = excluded.version;"
    )
}

/// What migrating from `found` did, once its steps ran.
pub fn migrated(found: Found) -> Migrated {
    Migrated {
        from: match found {
            Found::Empty => None,
            Found::Version(v) => Some(v),
        },
        to: SCHEMA_VERSION,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_opens_only_an_empty_store_one_made_before_versions_or_one_at_its_own() {
        assert_eq!(check(Found::Empty, "s.db"), Ok(true));
        assert_eq!(check(Found::Version(0), "s.db"), Ok(true));
        assert_eq!(check(Found::Version(SCHEMA_VERSION), "s.db"), Ok(false));
        let newer = check(Found::Version(SCHEMA_VERSION + 1), "s.db").unwrap_err();
        let said = newer.to_string();
        assert!(said.contains("newer gatehouse"), "{said}");
        assert!(said.contains("run the newer version"), "{said}");
    }

    #[test]
    fn migrating_runs_the_steps_from_the_version_found() {
        assert_eq!(first_step(Found::Empty), Ok(0));
        assert_eq!(first_step(Found::Version(0)), Ok(0));
        assert_eq!(first_step(Found::Version(1)), Ok(1));
        assert!(first_step(Found::Version(2)).is_err());
        assert!(first_step(Found::Version(-1)).is_err());
        assert_eq!(
            migrated(Found::Version(0)).to_string(),
            "migrated the store from schema version 0 to 1"
        );
        assert_eq!(
            migrated(Found::Empty).to_string(),
            "made the store at schema version 1"
        );
    }
}
