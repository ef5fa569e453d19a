//! Permissions and resources as Cassandra names and prints them.
//!
//! A resource has two spellings: its *name*, the key in `system_auth.role_permissions`
//! (`data/ks/t`, `roles/alice`), and its *display*, what messages and `LIST PERMISSIONS`
//! print (`<table ks.t>`, `<role alice>`). Both are Cassandra's, so tools reading the tables and
//! users reading messages see what Cassandra shows.

use std::fmt;

/// One permission: the parser's, whose order after `All` is Cassandra's ordinal order (the
/// order `LIST PERMISSIONS` sorts by). `All` stands for every permission.
pub use cql::ast::Permission;

/// Every permission, in Cassandra's order.
pub const EVERY: [Permission; 10] = [
    Permission::Create,
    Permission::Alter,
    Permission::Drop,
    Permission::Select,
    Permission::Modify,
    Permission::Authorize,
    Permission::Describe,
    Permission::Execute,
    Permission::Unmask,
    Permission::SelectMasked,
];

/// Cassandra's name of a permission (`SELECT_MASKED`).
pub fn name(p: Permission) -> &'static str {
    match p {
        Permission::All => "ALL",
        Permission::Create => "CREATE",
        Permission::Alter => "ALTER",
        Permission::Drop => "DROP",
        Permission::Select => "SELECT",
        Permission::Modify => "MODIFY",
        Permission::Authorize => "AUTHORIZE",
        Permission::Describe => "DESCRIBE",
        Permission::Execute => "EXECUTE",
        Permission::Unmask => "UNMASK",
        Permission::SelectMasked => "SELECT_MASKED",
    }
}

fn bits(p: Permission) -> u16 {
    match p {
        Permission::All => (1 << EVERY.len()) - 1,
        p => 1 << (p as u16 - 1),
    }
}

/// A set of permissions (one bit per [`Permission`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PermissionSet(u16);

impl PermissionSet {
    pub const EMPTY: PermissionSet = PermissionSet(0);

    pub fn of(perms: &[Permission]) -> Self {
        PermissionSet(perms.iter().fold(0, |b, p| b | bits(*p)))
    }
    pub fn contains(self, p: Permission) -> bool {
        self.0 & bits(p) == bits(p)
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn union(self, o: PermissionSet) -> Self {
        PermissionSet(self.0 | o.0)
    }
    pub fn intersect(self, o: PermissionSet) -> Self {
        PermissionSet(self.0 & o.0)
    }
    pub fn minus(self, o: PermissionSet) -> Self {
        PermissionSet(self.0 & !o.0)
    }
    pub fn iter(self) -> impl Iterator<Item = Permission> {
        EVERY.into_iter().filter(move |p| self.contains(*p))
    }
    pub fn bits(self) -> u16 {
        self.0
    }
    pub fn from_bits(b: u16) -> Self {
        PermissionSet(b & bits(Permission::All))
    }
}

use Permission as P;

const DATA_TABLE: &[Permission] = &[
    P::Alter,
    P::Drop,
    P::Select,
    P::Modify,
    P::Authorize,
    P::Unmask,
    P::SelectMasked,
];
const ROLE_ROOT: &[Permission] = &[P::Create, P::Alter, P::Drop, P::Authorize, P::Describe];
const ROLE_ONE: &[Permission] = &[P::Alter, P::Drop, P::Authorize, P::Describe];
const FUNCTION_ROOT: &[Permission] = &[P::Create, P::Alter, P::Drop, P::Authorize, P::Execute];
const FUNCTION_ONE: &[Permission] = &[P::Alter, P::Drop, P::Authorize, P::Execute];
const MBEAN: &[Permission] = &[P::Select, P::Modify, P::Authorize, P::Describe, P::Execute];

/// A resource permissions are granted on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    AllKeyspaces,
    Keyspace(String),
    /// `ALL TABLES IN KEYSPACE ks`: every table of a keyspace (what CREATE TABLE and the type
    /// statements need). Between a keyspace and its tables.
    AllTablesIn(String),
    Table(String, String),
    AllRoles,
    Role(String),
    AllFunctions,
    FunctionsIn(String),
    /// Keyspace, name, argument types as CQL prints them.
    Function(String, String, Vec<String>),
    AllMBeans,
    MBean(String),
}

impl Resource {
    /// The key in `system_auth.role_permissions.resource` (Cassandra's `IResource.getName`).
    pub fn name(&self) -> String {
        match self {
            Resource::AllKeyspaces => "data".into(),
            Resource::Keyspace(ks) => format!("data/{ks}"),
            Resource::AllTablesIn(ks) => format!("data/{ks}/*"),
            Resource::Table(ks, t) => format!("data/{ks}/{t}"),
            Resource::AllRoles => "roles".into(),
            Resource::Role(r) => format!("roles/{r}"),
            Resource::AllFunctions => "functions".into(),
            Resource::FunctionsIn(ks) => format!("functions/{ks}"),
            Resource::Function(ks, f, args) => format!("functions/{ks}/{f}[{}]", args.join("^")),
            Resource::AllMBeans => "mbean".into(),
            Resource::MBean(m) => format!("mbean/{m}"),
        }
    }

    /// Parses a name written by [`Resource::name`].
    pub fn from_name(name: &str) -> Option<Resource> {
        let mut parts = name.splitn(3, '/');
        let root = parts.next()?;
        let a = parts.next();
        let b = parts.next();
        Some(match (root, a, b) {
            ("data", None, _) => Resource::AllKeyspaces,
            ("data", Some(ks), None) => Resource::Keyspace(ks.into()),
            ("data", Some(ks), Some("*")) => Resource::AllTablesIn(ks.into()),
            ("data", Some(ks), Some(t)) => Resource::Table(ks.into(), t.into()),
            ("roles", None, _) => Resource::AllRoles,
            ("roles", Some(r), None) => Resource::Role(r.into()),
            ("functions", None, _) => Resource::AllFunctions,
            ("functions", Some(ks), None) => Resource::FunctionsIn(ks.into()),
            ("functions", Some(ks), Some(f)) => {
                let (fname, args) = f.split_once('[')?;
                let args = args.strip_suffix(']')?;
                let args = if args.is_empty() {
                    Vec::new()
                } else {
                    args.split('^').map(str::to_string).collect()
                };
                Resource::Function(ks.into(), fname.into(), args)
            }
            ("mbean", None, _) => Resource::AllMBeans,
            ("mbean", Some(m), rest) => {
                Resource::MBean(rest.map_or_else(|| m.to_string(), |r| format!("{m}/{r}")))
            }
            _ => return None,
        })
    }

    /// The permissions that mean something on this resource.
    pub fn applicable(&self) -> PermissionSet {
        PermissionSet::of(match self {
            Resource::AllKeyspaces | Resource::Keyspace(_) | Resource::AllTablesIn(_) => {
                return PermissionSet::of(DATA_TABLE).union(PermissionSet::of(&[P::Create]))
            }
            Resource::Table(..) => DATA_TABLE,
            Resource::AllRoles => ROLE_ROOT,
            Resource::Role(_) => ROLE_ONE,
            Resource::AllFunctions | Resource::FunctionsIn(_) => FUNCTION_ROOT,
            Resource::Function(..) => FUNCTION_ONE,
            Resource::AllMBeans | Resource::MBean(_) => MBEAN,
        })
    }

    /// Cassandra's class name for the resource's kind, for the "does not support" error.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Resource::AllKeyspaces
            | Resource::Keyspace(_)
            | Resource::AllTablesIn(_)
            | Resource::Table(..) => "DataResource",
            Resource::AllRoles | Resource::Role(_) => "RoleResource",
            Resource::AllFunctions | Resource::FunctionsIn(_) | Resource::Function(..) => {
                "FunctionResource"
            }
            Resource::AllMBeans | Resource::MBean(_) => "JMXResource",
        }
    }

    /// The resource and its parents, most specific first (Cassandra's `Resources.chain`).
    pub fn chain(&self) -> Vec<Resource> {
        let mut out = vec![self.clone()];
        let mut cur = self.parent();
        while let Some(p) = cur {
            cur = p.parent();
            out.push(p);
        }
        out
    }

    pub fn parent(&self) -> Option<Resource> {
        match self {
            Resource::Keyspace(_) => Some(Resource::AllKeyspaces),
            Resource::Table(ks, _) => Some(Resource::AllTablesIn(ks.clone())),
            Resource::AllTablesIn(ks) => Some(Resource::Keyspace(ks.clone())),
            Resource::Role(_) => Some(Resource::AllRoles),
            Resource::FunctionsIn(_) => Some(Resource::AllFunctions),
            Resource::Function(ks, ..) => Some(Resource::FunctionsIn(ks.clone())),
            Resource::MBean(_) => Some(Resource::AllMBeans),
            Resource::AllKeyspaces
            | Resource::AllRoles
            | Resource::AllFunctions
            | Resource::AllMBeans => None,
        }
    }

    /// True if the resource lies under (or is) `ancestor`.
    pub fn is_under(&self, ancestor: &Resource) -> bool {
        self.chain().iter().any(|r| r == ancestor)
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::AllKeyspaces => f.write_str("<all keyspaces>"),
            Resource::Keyspace(ks) => write!(f, "<keyspace {ks}>"),
            Resource::AllTablesIn(ks) => write!(f, "<all tables in {ks}>"),
            Resource::Table(ks, t) => write!(f, "<table {ks}.{t}>"),
            Resource::AllRoles => f.write_str("<all roles>"),
            Resource::Role(r) => write!(f, "<role {r}>"),
            Resource::AllFunctions => f.write_str("<all functions>"),
            Resource::FunctionsIn(ks) => write!(f, "<all functions in {ks}>"),
            Resource::Function(ks, name, args) => {
                write!(f, "<function {ks}.{name}({})>", args.join(", "))
            }
            Resource::AllMBeans => f.write_str("<all mbeans>"),
            Resource::MBean(m) => write!(f, "<mbean {m}>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_display_as_cassandra() {
        let cases = [
            (Resource::AllKeyspaces, "data", "<all keyspaces>"),
            (Resource::Keyspace("ks".into()), "data/ks", "<keyspace ks>"),
            (
                Resource::Table("ks".into(), "t".into()),
                "data/ks/t",
                "<table ks.t>",
            ),
            (Resource::AllRoles, "roles", "<all roles>"),
            (Resource::Role("bob".into()), "roles/bob", "<role bob>"),
            (Resource::AllFunctions, "functions", "<all functions>"),
            (
                Resource::FunctionsIn("ks".into()),
                "functions/ks",
                "<all functions in ks>",
            ),
            (
                Resource::Function("ks".into(), "f".into(), vec!["int".into(), "text".into()]),
                "functions/ks/f[int^text]",
                "<function ks.f(int, text)>",
            ),
            (Resource::AllMBeans, "mbean", "<all mbeans>"),
        ];
        for (r, name, shown) in cases {
            assert_eq!(r.name(), name);
            assert_eq!(r.to_string(), shown);
            assert_eq!(Resource::from_name(name), Some(r));
        }
        assert_eq!(Resource::from_name("nonsense"), None);
    }

    #[test]
    fn chains_go_from_the_resource_to_its_root() {
        let t = Resource::Table("ks".into(), "t".into());
        assert_eq!(
            t.chain(),
            vec![
                t.clone(),
                Resource::AllTablesIn("ks".into()),
                Resource::Keyspace("ks".into()),
                Resource::AllKeyspaces
            ]
        );
        assert!(t.is_under(&Resource::Keyspace("ks".into())));
        assert!(!t.is_under(&Resource::Keyspace("other".into())));
    }

    #[test]
    fn applicable_permissions_are_cassandras() {
        let t = Resource::Table("ks".into(), "t".into()).applicable();
        assert!(t.contains(Permission::Select) && !t.contains(Permission::Create));
        let r = Resource::Role("r".into()).applicable();
        assert_eq!(
            r.iter().map(name).collect::<Vec<_>>(),
            ["ALTER", "DROP", "AUTHORIZE", "DESCRIBE"]
        );
        let set = PermissionSet::of(&[Permission::Drop, Permission::Create]);
        assert_eq!(PermissionSet::from_bits(set.bits()), set);
        assert_eq!(
            set.minus(PermissionSet::of(&[Permission::Drop]))
                .iter()
                .count(),
            1
        );
    }
}
