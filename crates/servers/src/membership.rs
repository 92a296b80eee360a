//! Who belongs to which organization, and what each role there may do: one list
//! (`data/memberships.json`) and one check, shared by every server that checks its caller
//! (the support desk and the tickets server on every call, and the HTTP layer before it
//! opens a legacy session for either).
//!
//! A caller with no membership in the organization it acts in is refused with JSON-RPC
//! -32003 before anything runs; the same answer is given for an organization that does not
//! exist, so the refusal reveals nothing. A member whose role lacks the scope a tool needs
//! gets a tool error that names the role and the scope, which the model can read.

use std::{collections::HashMap, sync::OnceLock};

use rmcp::ErrorData;
use serde::Deserialize;

use crate::{
    common::{self, Caller},
    data,
};

/// The refusal for a caller who is no member of the organization (JSON-RPC -32003).
pub use gatehouse_http::members::FORBIDDEN_MESSAGE;
/// Where the list is kept, relative to the crate (embedded at build time).
pub const MEMBERSHIPS_FILE: &str = "data/memberships.json";

/// Read the support desk's policy documents and search them.
pub const POLICIES_READ: &str = "policies:read";
/// Read the support desk's customer tickets (names, messages: personal data).
pub const TICKETS_READ: &str = "tickets:read";
/// List the tickets server's incident tickets.
pub const INCIDENTS_READ: &str = "incidents:read";
/// Open an incident ticket.
pub const INCIDENTS_WRITE: &str = "incidents:write";

/// A member's role in one organization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Everything, including the organization's settings.
    Admin,
    /// Reads and writes the organization's data.
    Staff,
    /// Reads only.
    ReadOnly,
}

impl Role {
    /// The role as the data file and the messages spell it.
    pub fn name(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Staff => "staff",
            Role::ReadOnly => "read_only",
        }
    }

    fn parse(name: &str) -> Option<Role> {
        match name {
            "admin" => Some(Role::Admin),
            "staff" => Some(Role::Staff),
            "read_only" => Some(Role::ReadOnly),
            _ => None,
        }
    }

    /// What the role may do. A scope names one kind of data and one action; the incident
    /// tickets are `incidents:*` so that they never share a name with the support desk's
    /// customer tickets, which a read-only member may not read.
    pub fn scopes(self) -> &'static [&'static str] {
        match self {
            Role::Admin | Role::Staff => {
                &[POLICIES_READ, TICKETS_READ, INCIDENTS_READ, INCIDENTS_WRITE]
            }
            Role::ReadOnly => &[POLICIES_READ, INCIDENTS_READ],
        }
    }

    /// Whether the role grants `scope`.
    pub fn allows(self, scope: &str) -> bool {
        self.scopes().contains(&scope)
    }
}

/// Why a caller may not do what they asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No membership in the organization: refused with JSON-RPC -32003 before anything runs.
    NotMember,
    /// A member whose role does not grant the scope: a tool error.
    Scope {
        /// The member's role.
        role: Role,
        /// The scope the tool needs.
        scope: &'static str,
    },
}

impl Refusal {
    /// The words the caller gets.
    pub fn message(&self) -> String {
        match self {
            Refusal::NotMember => FORBIDDEN_MESSAGE.to_owned(),
            Refusal::Scope { role, scope } => {
                format!(
                    "forbidden: your role ({}) does not allow {scope}",
                    role.name()
                )
            }
        }
    }
}

/// The JSON-RPC error refusing a caller who is no member of the organization.
pub fn not_a_member() -> ErrorData {
    common::forbidden(FORBIDDEN_MESSAGE)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    user: String,
    tenant: String,
    role: String,
}

/// Every membership: organization, then user, to role (looked up by `&str`, no key built).
#[derive(Debug, Default)]
pub struct Memberships {
    roles: HashMap<String, HashMap<String, Role>>,
}

impl Memberships {
    /// The list embedded from [`MEMBERSHIPS_FILE`], read once per process.
    pub fn embedded() -> anyhow::Result<&'static Memberships> {
        static LIST: OnceLock<Result<Memberships, String>> = OnceLock::new();
        LIST.get_or_init(|| {
            let text = data::file(MEMBERSHIPS_FILE)
                .ok_or_else(|| format!("{MEMBERSHIPS_FILE} is not embedded"))?;
            Memberships::from_json(text).map_err(|e| format!("{MEMBERSHIPS_FILE}: {e}"))
        })
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// Parse a memberships list: a JSON array of `{"user", "tenant", "role"}`.
    pub fn from_json(text: &str) -> anyhow::Result<Self> {
        let entries: Vec<Entry> = serde_json::from_str(text)?;
        let mut roles: HashMap<String, HashMap<String, Role>> = HashMap::new();
        for (i, e) in entries.into_iter().enumerate() {
            anyhow::ensure!(
                !e.user.trim().is_empty() && !e.tenant.trim().is_empty(),
                "entry {i}: \"user\" and \"tenant\" must not be empty"
            );
            let role = Role::parse(&e.role).ok_or_else(|| {
                anyhow::anyhow!(
                    "entry {i}: unknown role {:?} (admin, staff or read_only)",
                    e.role
                )
            })?;
            anyhow::ensure!(
                roles
                    .entry(e.tenant)
                    .or_default()
                    .insert(e.user, role)
                    .is_none(),
                "entry {i}: the same user and organization are listed twice"
            );
        }
        Ok(Memberships { roles })
    }

    /// The caller's role in the organization it acts in, if it is a member.
    pub fn role(&self, caller: &Caller) -> Option<Role> {
        self.roles.get(&caller.tenant)?.get(&caller.user).copied()
    }

    /// The organizations `user` belongs to, in name order (an OAuth token that names no
    /// organization acts in the user's only one, `gatehouse_http::oauth`).
    pub fn organizations_of(&self, user: &str) -> Vec<&str> {
        let mut orgs: Vec<&str> = self
            .roles
            .iter()
            .filter(|(_, users)| users.contains_key(user))
            .map(|(org, _)| org.as_str())
            .collect();
        orgs.sort_unstable();
        orgs
    }

    /// Whether the caller is a member of the organization it acts in.
    pub fn is_member(&self, caller: &Caller) -> bool {
        self.role(caller).is_some()
    }

    /// The caller's role if it grants `scope`, else why not.
    pub fn check(&self, caller: &Caller, scope: &'static str) -> Result<Role, Refusal> {
        let role = self.role(caller).ok_or(Refusal::NotMember)?;
        if role.allows(scope) {
            Ok(role)
        } else {
            Err(Refusal::Scope { role, scope })
        }
    }

    /// How many memberships there are.
    pub fn len(&self) -> usize {
        self.roles.values().map(HashMap::len).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
    }
}

/// The HTTP layer asks the list too: whether an `initialize` may open a session, and which
/// organization an access token that names none acts in.
impl gatehouse_http::Members for Memberships {
    fn is_member(&self, caller: &Caller) -> bool {
        Memberships::is_member(self, caller)
    }

    fn sole_organization(&self, user: &str) -> Option<&str> {
        match self.organizations_of(user).as_slice() {
            [only] => Some(only),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_holds_what_the_documentation_relies_on() {
        let m = Memberships::embedded().unwrap();
        assert!(m.len() >= 6);
        for (user, tenant, role) in [
            ("usr-sam", "larkfield", Some(Role::Staff)),
            ("usr-sam", "bramble", Some(Role::ReadOnly)),
            ("usr-omar", "larkfield", Some(Role::ReadOnly)),
            ("usr-camille", "bramble", Some(Role::Staff)),
            ("usr-camille", "larkfield", None),
        ] {
            let got = m.role(&Caller::new(user, tenant, "test"));
            assert_eq!(got, role, "{user} in {tenant}");
        }
        assert!(!m.is_member(&Caller::new("usr-tomas", "larkfield", "test")));
        assert!(!m.is_member(&Caller::new("usr-tomas", "bramble", "test")));
        assert!(!m.is_member(&Caller::nobody("http")));
        // Everyone listed is a person in users.json.
        let users: Vec<serde_json::Value> =
            serde_json::from_str(data::file("data/users.json").unwrap()).unwrap();
        for user in m.roles.values().flat_map(HashMap::keys) {
            assert!(users.iter().any(|u| u["user"] == *user), "{user}");
        }
    }

    #[test]
    fn roles_grant_scopes() {
        let m = Memberships::embedded().unwrap();
        let omar = Caller::new("usr-omar", "larkfield", "test");
        assert_eq!(m.check(&omar, INCIDENTS_READ), Ok(Role::ReadOnly));
        let refused = m.check(&omar, INCIDENTS_WRITE).unwrap_err();
        assert_eq!(
            refused.message(),
            "forbidden: your role (read_only) does not allow incidents:write"
        );
        assert_eq!(
            m.check(&omar, TICKETS_READ).unwrap_err().message(),
            "forbidden: your role (read_only) does not allow tickets:read"
        );
        assert_eq!(
            m.check(
                &Caller::new("usr-priya", "larkfield", "test"),
                INCIDENTS_WRITE
            ),
            Ok(Role::Admin)
        );
        assert_eq!(
            m.check(
                &Caller::new("usr-tomas", "larkfield", "test"),
                POLICIES_READ
            ),
            Err(Refusal::NotMember)
        );
        assert_eq!(Refusal::NotMember.message(), FORBIDDEN_MESSAGE);
    }

    #[test]
    fn broken_lists_are_refused() {
        let err = |t: &str| Memberships::from_json(t).unwrap_err().to_string();
        assert!(err(r#"[{"user":"u","tenant":"t","role":"owner"}]"#).contains("unknown role"));
        assert!(err(r#"[{"user":"","tenant":"t","role":"staff"}]"#).contains("empty"));
        assert!(
            err(r#"[{"user":"u","tenant":"t","role":"staff"},{"user":"u","tenant":"t","role":"admin"}]"#)
                .contains("twice")
        );
        assert!(
            err(r#"[{"user":"u","tenant":"t","role":"staff","x":1}]"#).contains("unknown field")
        );
    }
}
