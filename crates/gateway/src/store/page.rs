//! The approval page's state, written once for both stores: its three kinds of row and how a
//! row of either database reads into them, its statements as one SQL text each (spelled
//! in each database's dialect), and its operations over the [`Store`]. The backends
//! (`sqlite/page.rs`, `postgres/page.rs`) only run a statement, find a row, or make a
//! bounded write, each in their database's way.

use super::{Kind, Store, StoreError};
use crate::caller::CallerName;

/// A value bound into one of the page's statements: the three kinds both databases take.
#[derive(Debug, Clone)]
pub(super) enum Value {
    Text(String),
    Int(i64),
    Flag(bool),
}

/// A row of either database, read a column at a time (by its position).
pub(super) trait Cells {
    /// What a column that cannot be read gives.
    type Error;
    fn text(&self, column: usize) -> Result<String, Self::Error>;
    fn int(&self, column: usize) -> Result<i64, Self::Error>;
    /// A yes-or-no column that may be NULL (a page's decision: NULL while undecided,
    /// else approved, `true`, or denied).
    fn flag(&self, column: usize) -> Result<Option<bool>, Self::Error>;
    /// A caller's name, as the store was given it.
    fn caller(&self, column: usize) -> Result<CallerName, Self::Error> {
        self.text(column).map(CallerName::kept)
    }
    /// A caller's name that may be missing (kept empty).
    fn maybe_caller(&self, column: usize) -> Result<Option<CallerName>, Self::Error> {
        let name = self.text(column)?;
        Ok((!name.is_empty()).then(|| CallerName::kept(name)))
    }
}

impl From<&CallerName> for Value {
    fn from(name: &CallerName) -> Value {
        Value::Text(name.as_str().to_owned())
    }
}

impl From<Option<&CallerName>> for Value {
    /// No caller is kept empty: no name is empty ([`CallerName::of`]).
    fn from(name: Option<&CallerName>) -> Value {
        Value::Text(name.map(|n| n.as_str().to_owned()).unwrap_or_default())
    }
}

/// One of the page's kinds of row: the table that keeps it and how a row of it reads.
pub(super) trait Kept: Sized + Send + 'static {
    /// Its table, as a statement names it (`{t}` stands for the database's prefix).
    const TABLE: &'static str;
    /// Its columns, in the order [`Kept::read`] takes them.
    const COLUMNS: &'static str;
    /// The row, from a row of either database selected with [`Kept::COLUMNS`].
    fn read<C: Cells>(row: &C) -> Result<Self, C::Error>;
}

/// Declares the page's kinds of row: each one's struct, its table, and each column with
/// the [`Cells`] method that reads it. The columns a statement selects
/// ([`Kept::COLUMNS`]) are the struct's fields in order, so a column's position, its name
/// and its field are written once and cannot drift apart.
macro_rules! kept {
    ($(
        $(#[$meta:meta])*
        pub struct $name:ident in $table:literal {
            $($(#[$doc:meta])* pub $field:ident: $ty:ty = $cell:ident,)+
        }
    )+) => {$(
        $(#[$meta])*
        pub struct $name {
            $($(#[$doc])* pub $field: $ty,)+
        }

        impl Kept for $name {
            const TABLE: &'static str = $table;
            const COLUMNS: &'static str = kept!(@list $($field)+);
            fn read<C: Cells>(row: &C) -> Result<Self, C::Error> {
                let mut column = 0;
                Ok($name {
                    $($field: {
                        column += 1;
                        row.$cell(column - 1)?
                    },)+
                })
            }
        }
    )+};
    (@list $first:ident $($rest:ident)*) => {
        concat!(stringify!($first) $(, ", ", stringify!($rest))*)
    };
}
// The other kinds of row of the store (`sessions.rs`) are declared the same way.
pub(super) use kept;

kept! {
    /// A confirmation waiting on the approval page, as the store keeps it.
    #[derive(Debug, Clone, PartialEq)]
    pub struct PageRow in "{t}page_confirmations" {
        /// Its unguessable id (the page's URL names it).
        pub id: String = text,
        /// Whose it is (`user@tenant`): only they see it and decide it.
        pub caller: CallerName = caller,
        /// The call as the page shows it, as JSON.
        pub call: String = text,
        /// The person's decision, once made: `Some(true)` approved.
        pub decision: Option<bool> = flag,
        /// When it expires, in seconds since the Unix epoch.
        pub expires_at: i64 = int,
    }

    /// A sign-in session of the approval page, as the store keeps it.
    #[derive(Debug, Clone, PartialEq)]
    pub struct PageSessionRow in "{t}page_sessions" {
        /// The digest of the session cookie (the cookie itself is never kept).
        pub id: String = text,
        /// Who signed in (`user@tenant`).
        pub caller: CallerName = caller,
        /// The session's token against cross-site requests, sent back with every form.
        pub csrf: String = text,
        /// When it was made, in microseconds since the Unix epoch (the oldest make room).
        pub created_at: i64 = int,
        /// When it expires, in seconds since the Unix epoch.
        pub expires_at: i64 = int,
    }

    /// An OAuth sign-in to the approval page, sent to the authorization server and not
    /// back yet, as the store keeps it. (Only what the store needs: the rest is its
    /// `state`'s, or the browser's.)
    pub struct PageSignInRow in "{t}page_sign_ins" {
        /// The digest of its `state` and the browser's sign-in cookie (neither is kept):
        /// only that browser, coming back with that state, finds it.
        pub id: String = text,
        /// Whose confirmation it began at (none for an id that names none): the bound
        /// per caller is theirs.
        pub caller: Option<CallerName> = maybe_caller,
        /// When it began, in microseconds since the Unix epoch (the oldest make room).
        pub created_at: i64 = int,
        /// When it expires, in seconds since the Unix epoch.
        pub expires_at: i64 = int,
    }
}

/// How a database spells the page's statements, which are written once with `{t}` before
/// each table's name and `$N` for the N-th value. Plain text replacement is enough because
/// the templates are this module's constants and hold no other `$` or `{t}` (a unit test
/// checks each spelling); no value is ever put into the text.
#[derive(Clone, Copy)]
pub(super) struct Dialect {
    /// What `{t}` becomes (PostgreSQL's tables share a database with others').
    prefix: &'static str,
    /// What the `$` of `$N` becomes (SQLite numbers its values `?N`).
    mark: &'static str,
}

/// The SQLite store's spelling.
pub(super) const SQLITE: Dialect = Dialect {
    prefix: "",
    mark: "?",
};
/// The PostgreSQL store's spelling.
// Text only: the tests check its spelling in every build.
#[cfg(any(test, feature = "postgres"))]
pub(super) const POSTGRES: Dialect = Dialect {
    prefix: "gatehouse_",
    mark: "$",
};

impl Dialect {
    /// `template` in this dialect.
    pub(super) fn sql(self, template: &str) -> String {
        template.replace("{t}", self.prefix).replace('$', self.mark)
    }

    /// Drops `R`'s rows that expired by `$1`.
    pub(super) fn prune<R: Kept>(self) -> String {
        self.sql(&format!("DELETE FROM {} WHERE expires_at <= $1", R::TABLE))
    }

    /// Finds the `R` with id `$1` unless it expired by `$2`; [`Pick::Take`] deletes it
    /// in the same statement, so only one finder gets it.
    pub(super) fn pick<R: Kept>(self, how: Pick) -> String {
        let (table, columns) = (R::TABLE, R::COLUMNS);
        self.sql(&match how {
            Pick::Find => {
                format!("SELECT {columns} FROM {table} WHERE id = $1 AND expires_at > $2")
            }
            Pick::Take => {
                format!("DELETE FROM {table} WHERE id = $1 AND expires_at > $2 RETURNING {columns}")
            }
        })
    }
}

/// How a row is looked up by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pick {
    /// Read, and left in place.
    Find,
    /// Read and deleted at once: used once, across every replica.
    Take,
}

const COUNT_PENDING: &str = "SELECT COUNT(*) FROM {t}page_confirmations WHERE caller = $1";
const INSERT_PENDING: &str = "INSERT INTO {t}page_confirmations
    (id, caller, call, decision, expires_at) VALUES ($1, $2, $3, NULL, $4)";
const DECIDE: &str = "UPDATE {t}page_confirmations SET decision = $1
    WHERE id = $2 AND caller = $3 AND decision IS NULL AND expires_at > $4";
const TRIM_SESSIONS: &str = "DELETE FROM {t}page_sessions WHERE caller = $1 AND id NOT IN
    (SELECT id FROM {t}page_sessions WHERE caller = $1
     ORDER BY created_at DESC, id DESC LIMIT $2)";
const INSERT_SESSION: &str = "INSERT INTO {t}page_sessions
    (id, caller, csrf, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)";
const TRIM_SIGN_INS: &str = "DELETE FROM {t}page_sign_ins WHERE caller = $1 AND id NOT IN
    (SELECT id FROM {t}page_sign_ins WHERE caller = $1
     ORDER BY created_at DESC, id DESC LIMIT $2)";
const COUNT_SIGN_INS: &str = "SELECT COUNT(*) FROM {t}page_sign_ins";
const INSERT_SIGN_IN: &str = "INSERT INTO {t}page_sign_ins
    (id, caller, created_at, expires_at) VALUES ($1, $2, $3, $4)";
/// What every sign-in's write takes turns on (in PostgreSQL an advisory lock, named like
/// a caller's, but no caller's: those hold an `@`, or are `local`), so that the bound on
/// all of them holds across replicas.
const SIGN_INS_TURN: &str = "every page sign-in";

/// A statement of the page's (a template for [`Dialect::sql`]) and its values.
pub(super) struct Statement {
    pub sql: &'static str,
    pub values: Vec<Value>,
}

/// What a bounded write does before its insert, once the expired rows are gone.
pub(super) enum Bound {
    /// Refuse (write nothing) when `count` finds `max` or more.
    Refuse { count: Statement, max: i64 },
    /// Run `trim` first, which makes room.
    Trim(Statement),
    /// Run `trim`, then refuse when `count` still finds `max` or more (a bound per caller
    /// that makes room, under one on all that cannot).
    TrimThenRefuse {
        trim: Statement,
        count: Statement,
        max: i64,
    },
}

impl Bound {
    /// What to run first, and then what to count against which most.
    pub(super) fn parts(&self) -> (Option<&Statement>, Option<(&Statement, i64)>) {
        match self {
            Bound::Refuse { count, max } => (None, Some((count, *max))),
            Bound::Trim(trim) => (Some(trim), None),
            Bound::TrimThenRefuse { trim, count, max } => (Some(trim), Some((count, *max))),
        }
    }
}

/// A write that keeps a caller's rows bounded: `R`'s expired rows dropped at `now`, then
/// (one caller's writes taking turns) the bound, then the insert; all of it or nothing
/// where the database can.
pub(super) struct Bounded {
    pub now: i64,
    // The key PostgreSQL's writes lock on (an advisory lock per caller, per session, or
    // one for all sign-ins); SQLite's one writer takes turns anyway.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub turn: String,
    pub bound: Bound,
    pub insert: Statement,
}

impl Bounded {
    /// A write of `insert` refused when `count` (its statement and values) finds `max` rows
    /// or more, one `key`'s writes (a caller's, a session's) taking turns.
    pub fn refusing(
        now: i64,
        key: String,
        (sql, values): (&'static str, Vec<Value>),
        max: usize,
        insert: Statement,
    ) -> Bounded {
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let count = Statement { sql, values };
        Bounded {
            now,
            turn: key,
            bound: Bound::Refuse { count, max },
            insert,
        }
    }
}

/// The approval page's state, in whichever store: every replica sees the same
/// confirmations, decisions and sessions.
impl Store {
    /// Keep a pending confirmation, unless its caller has `max` already (`Ok(false)`);
    /// expired ones are dropped first.
    pub async fn page_open(&self, row: PageRow, now: i64, max: usize) -> Result<bool, StoreError> {
        let PageRow {
            id,
            caller,
            call,
            expires_at,
            ..
        } = row;
        let count = vec![Value::from(&caller)];
        let insert = Statement {
            sql: INSERT_PENDING,
            values: vec![
                Value::Text(id),
                Value::from(&caller),
                Value::Text(call),
                Value::Int(expires_at),
            ],
        };
        let write = Bounded::refusing(now, caller.to_string(), (COUNT_PENDING, count), max, insert);
        self.write::<PageRow>(write).await
    }

    /// A pending confirmation by its id, unless it expired.
    pub async fn page_row(&self, id: &str, now: i64) -> Result<Option<PageRow>, StoreError> {
        self.find(id, now).await
    }

    /// Record `caller`'s decision on their pending confirmation, once: `Ok(false)` when
    /// it was decided already, expired, or is not theirs.
    pub async fn page_decide(
        &self,
        id: &str,
        caller: &CallerName,
        yes: bool,
        now: i64,
    ) -> Result<bool, StoreError> {
        let values = vec![
            Value::Flag(yes),
            Value::Text(id.to_owned()),
            Value::from(caller),
            Value::Int(now),
        ];
        let decided = Statement {
            sql: DECIDE,
            values,
        };
        Ok(self.execute(decided).await? == 1)
    }

    /// Keep a sign-in session; the caller's oldest are dropped beyond `max`, expired
    /// ones first.
    pub async fn session_open(
        &self,
        row: PageSessionRow,
        now: i64,
        max: usize,
    ) -> Result<(), StoreError> {
        let keep = i64::try_from(max.saturating_sub(1)).unwrap_or(i64::MAX);
        let trim = Statement {
            sql: TRIM_SESSIONS,
            values: vec![Value::from(&row.caller), Value::Int(keep)],
        };
        let insert = Statement {
            sql: INSERT_SESSION,
            values: vec![
                Value::Text(row.id),
                Value::from(&row.caller),
                Value::Text(row.csrf),
                Value::Int(row.created_at),
                Value::Int(row.expires_at),
            ],
        };
        let write = Bounded {
            now,
            turn: row.caller.to_string(),
            bound: Bound::Trim(trim),
            insert,
        };
        self.write::<PageSessionRow>(write).await.map(drop)
    }

    /// A sign-in session by its id (the cookie's digest), unless it expired.
    pub async fn session_row(
        &self,
        id: &str,
        now: i64,
    ) -> Result<Option<PageSessionRow>, StoreError> {
        self.find(id, now).await
    }

    /// Keep an OAuth sign-in in flight: its caller's oldest are dropped beyond
    /// `per_caller`, expired ones first, and none is kept while `in_all` are (`Ok(false)`).
    pub async fn sign_in_open(
        &self,
        row: PageSignInRow,
        now: i64,
        (per_caller, in_all): (usize, usize),
    ) -> Result<bool, StoreError> {
        let keep = i64::try_from(per_caller.saturating_sub(1)).unwrap_or(i64::MAX);
        let bound = Bound::TrimThenRefuse {
            trim: Statement {
                sql: TRIM_SIGN_INS,
                values: vec![Value::from(row.caller.as_ref()), Value::Int(keep)],
            },
            count: Statement {
                sql: COUNT_SIGN_INS,
                values: Vec::new(),
            },
            max: i64::try_from(in_all).unwrap_or(i64::MAX),
        };
        let insert = Statement {
            sql: INSERT_SIGN_IN,
            values: vec![
                Value::Text(row.id),
                Value::from(row.caller.as_ref()),
                Value::Int(row.created_at),
                Value::Int(row.expires_at),
            ],
        };
        let write = Bounded {
            now,
            turn: SIGN_INS_TURN.to_owned(),
            bound,
            insert,
        };
        self.write::<PageSignInRow>(write).await
    }

    /// The OAuth sign-in in flight with this id (its state's digest), taken: a second
    /// taker, on any replica, finds none. None when it expired.
    pub async fn sign_in_take(
        &self,
        id: &str,
        now: i64,
    ) -> Result<Option<PageSignInRow>, StoreError> {
        self.pick(Pick::Take, id, now).await
    }

    /// The `R` with this id, unless it expired by `now`.
    pub(super) async fn find<R: Kept>(&self, id: &str, now: i64) -> Result<Option<R>, StoreError> {
        self.pick(Pick::Find, id, now).await
    }

    /// The `R` with this id, unless it expired by `now`, found or taken.
    async fn pick<R: Kept>(&self, how: Pick, id: &str, now: i64) -> Result<Option<R>, StoreError> {
        let values = vec![Value::Text(id.to_owned()), Value::Int(now)];
        match &self.kind {
            Kind::Sqlite(s) => s.pick::<R>((how, values)).await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(p) => p.pick::<R>((how, values)).await,
        }
    }

    /// Run `statement`: how many rows it changed.
    pub(super) async fn execute(&self, statement: Statement) -> Result<u64, StoreError> {
        match &self.kind {
            Kind::Sqlite(s) => s.execute(statement).await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(p) => p.execute(statement).await,
        }
    }

    /// Run the statement `sql` with `values`: did it change exactly one row?
    pub(super) async fn changed(
        &self,
        sql: &'static str,
        values: Vec<Value>,
    ) -> Result<bool, StoreError> {
        Ok(self.execute(Statement { sql, values }).await? == 1)
    }

    /// Make a bounded write of an `R`: `Ok(false)` when its bound refused it.
    pub(super) async fn write<R: Kept>(&self, write: Bounded) -> Result<bool, StoreError> {
        match &self.kind {
            Kind::Sqlite(s) => s.write::<R>(write).await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(p) => p.write::<R>(write).await,
        }
    }
}

/// Each of `templates` is spelled in each database's dialect: no other database's marks
/// left, PostgreSQL's tables named with `table` (their prefix and more), and the two the
/// same but for the marks and the prefix.
#[cfg(test)]
pub(super) fn assert_spelled(templates: &[&str], table: &str) {
    for template in templates {
        let (lite, pg) = (SQLITE.sql(template), POSTGRES.sql(template));
        assert!(!lite.contains('$') && !lite.contains("{t}"), "{lite}");
        assert!(!pg.contains('?') && !pg.contains("{t}"), "{pg}");
        assert!(pg.contains(table) && !lite.contains("gatehouse_"), "{pg}");
        assert_eq!(lite.replace('?', "$"), pg.replace("gatehouse_", ""));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_statement_is_spelled_in_each_databases_dialect_with_the_rows_columns() {
        assert_eq!(PageRow::COLUMNS, "id, caller, call, decision, expires_at");
        assert_eq!(
            PageSessionRow::COLUMNS,
            "id, caller, csrf, created_at, expires_at"
        );
        assert_eq!(
            SQLITE.pick::<PageRow>(Pick::Find),
            "SELECT id, caller, call, decision, expires_at FROM page_confirmations \
             WHERE id = ?1 AND expires_at > ?2"
        );
        assert_eq!(
            POSTGRES.pick::<PageSignInRow>(Pick::Take),
            "DELETE FROM gatehouse_page_sign_ins WHERE id = $1 AND expires_at > $2 \
             RETURNING id, caller, created_at, expires_at"
        );
        assert_eq!(
            POSTGRES.prune::<PageSessionRow>(),
            "DELETE FROM gatehouse_page_sessions WHERE expires_at <= $1"
        );
        let templates = [
            COUNT_PENDING,
            INSERT_PENDING,
            DECIDE,
            TRIM_SESSIONS,
            INSERT_SESSION,
            TRIM_SIGN_INS,
            COUNT_SIGN_INS,
            INSERT_SIGN_IN,
        ];
        assert_spelled(&templates, " gatehouse_page_");
        let trim = SQLITE.sql(TRIM_SESSIONS);
        assert_eq!(trim.matches("caller = ?1").count(), 2, "{trim}");
        assert!(trim.contains("LIMIT ?2"), "{trim}");
    }
}
