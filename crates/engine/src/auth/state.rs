//! The durable records: roles (`system_auth.roles`), memberships (`role_members`) and
//! permissions (`role_permissions`), and what a role holds through its grants.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use proto::types::Value;
use serde::{Deserialize, Serialize};

use super::resource::{Permission, PermissionSet, Resource};
use crate::catalog::TableDef;

/// One role, as a row of `system_auth.roles`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleRecord {
    pub can_login: bool,
    pub is_superuser: bool,
    /// bcrypt hash; `None`: the role has no password and cannot log in with one.
    pub salted_hash: Option<String>,
    /// Roles granted to this one (directly).
    pub member_of: BTreeSet<String>,
}

/// Every role and permission.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthState {
    pub roles: BTreeMap<String, RoleRecord>,
    /// role -> resource name (`data/ks/t`) -> permission bits ([`PermissionSet::bits`]).
    pub permissions: BTreeMap<String, BTreeMap<String, u16>>,
    /// role -> the visibility authorizations granted to it directly (`authorizations.rs`).
    /// Absent from records that never had any, so older records read unchanged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub authorizations: BTreeMap<String, BTreeSet<String>>,
}

/// What a role holds once its grants are followed: superuser status and the union of the
/// permissions of every role it has. Data permissions are nested by keyspace and table so a
/// check looks them up by `&str` without building a resource name.
#[derive(Debug, Default)]
pub(crate) struct Effective {
    pub superuser: bool,
    /// The role and every role granted to it, directly or not.
    pub roles: BTreeSet<String>,
    pub all_keyspaces: PermissionSet,
    pub keyspaces: HashMap<String, KeyspacePermissions>,
    /// Every other resource, by name.
    pub other: HashMap<String, PermissionSet>,
}

#[derive(Debug, Default)]
pub(crate) struct KeyspacePermissions {
    pub keyspace: PermissionSet,
    /// On `ALL TABLES IN KEYSPACE`.
    pub all_tables: PermissionSet,
    pub tables: HashMap<String, PermissionSet>,
}

impl Effective {
    /// The permissions held on `r` itself (not its parents).
    pub fn on(&self, r: &Resource) -> PermissionSet {
        match r {
            Resource::AllKeyspaces => self.all_keyspaces,
            Resource::Keyspace(ks) => self
                .keyspaces
                .get(ks)
                .map_or_else(Default::default, |k| k.keyspace),
            Resource::AllTablesIn(ks) => self
                .keyspaces
                .get(ks)
                .map_or_else(Default::default, |k| k.all_tables),
            Resource::Table(ks, t) => self.table(ks, t),
            other => self.other.get(&other.name()).copied().unwrap_or_default(),
        }
    }

    /// The permissions held on table `ks.t` itself.
    pub fn table(&self, ks: &str, t: &str) -> PermissionSet {
        self.keyspaces
            .get(ks)
            .and_then(|k| k.tables.get(t))
            .copied()
            .unwrap_or_default()
    }

    /// True if `p` is held on table `ks.t` or one of its parents (no allocation).
    pub fn table_allows(&self, ks: &str, t: &str, p: Permission) -> bool {
        if self.all_keyspaces.contains(p) && !is_system_keyspace(ks) {
            return true;
        }
        match self.keyspaces.get(ks) {
            Some(k) => {
                k.keyspace.union(k.all_tables).contains(p)
                    || k.tables.get(t).is_some_and(|s| s.contains(p))
            }
            None => false,
        }
    }

    /// True if `p` is held on `r` or one of its parents.
    pub fn allows(&self, r: &Resource, p: Permission) -> bool {
        let system = match r {
            Resource::Keyspace(ks) | Resource::AllTablesIn(ks) | Resource::Table(ks, _) => {
                is_system_keyspace(ks)
            }
            _ => false,
        };
        r.chain()
            .iter()
            .filter(|x| !(system && **x == Resource::AllKeyspaces))
            .any(|x| self.on(x).contains(p))
    }
}

/// Keyspaces that permissions on ALL KEYSPACES do not reach (Cassandra grants them only by
/// name: a role given everything on every keyspace still cannot read `system_auth.roles`).
fn is_system_keyspace(ks: &str) -> bool {
    crate::ddl::SYSTEM_KEYSPACES.contains(&ks)
}

impl AuthState {
    /// `role` and every role granted to it; with `recursive == false`, only the direct grants.
    pub fn roles_of(&self, role: &str, recursive: bool) -> BTreeSet<String> {
        let mut out = BTreeSet::from([role.to_string()]);
        let mut todo = vec![role];
        while let Some(r) = todo.pop() {
            let Some(rec) = self.roles.get(r) else {
                continue;
            };
            for m in &rec.member_of {
                if out.insert(m.clone()) && recursive {
                    todo.push(m);
                }
            }
        }
        out
    }

    /// True if `role` or a role granted to it is a superuser (Cassandra's `hasSuperuserStatus`).
    pub fn is_superuser(&self, role: &str) -> bool {
        self.roles_of(role, true)
            .iter()
            .any(|r| self.roles.get(r).is_some_and(|x| x.is_superuser))
    }

    pub(crate) fn effective(&self, role: &str) -> Effective {
        let roles = self.roles_of(role, true);
        let mut e = Effective {
            superuser: roles
                .iter()
                .any(|r| self.roles.get(r).is_some_and(|x| x.is_superuser)),
            ..Effective::default()
        };
        for r in &roles {
            let Some(perms) = self.permissions.get(r) else {
                continue;
            };
            for (name, bits) in perms {
                let set = PermissionSet::from_bits(*bits);
                match Resource::from_name(name) {
                    Some(Resource::AllKeyspaces) => e.all_keyspaces = e.all_keyspaces.union(set),
                    Some(Resource::Keyspace(ks)) => {
                        let k = e.keyspaces.entry(ks).or_default();
                        k.keyspace = k.keyspace.union(set);
                    }
                    Some(Resource::AllTablesIn(ks)) => {
                        let k = e.keyspaces.entry(ks).or_default();
                        k.all_tables = k.all_tables.union(set);
                    }
                    Some(Resource::Table(ks, t)) => {
                        let k = e
                            .keyspaces
                            .entry(ks)
                            .or_default()
                            .tables
                            .entry(t)
                            .or_default();
                        *k = k.union(set);
                    }
                    _ => {
                        let k = e.other.entry(name.clone()).or_default();
                        *k = k.union(set);
                    }
                }
            }
        }
        e.roles = roles;
        e
    }

    /// Permissions granted to `role` directly on `r`.
    pub fn granted(&self, role: &str, r: &Resource) -> PermissionSet {
        self.permissions
            .get(role)
            .and_then(|m| m.get(&r.name()))
            .map_or_else(PermissionSet::default, |b| PermissionSet::from_bits(*b))
    }

    pub fn grant(&mut self, role: &str, r: &Resource, perms: PermissionSet) {
        let entry = self
            .permissions
            .entry(role.to_string())
            .or_default()
            .entry(r.name())
            .or_default();
        *entry = PermissionSet::from_bits(*entry).union(perms).bits();
    }

    pub fn revoke(&mut self, role: &str, r: &Resource, perms: PermissionSet) {
        let Some(m) = self.permissions.get_mut(role) else {
            return;
        };
        let name = r.name();
        if let Some(bits) = m.get_mut(&name) {
            let left = PermissionSet::from_bits(*bits).minus(perms);
            if left.is_empty() {
                m.remove(&name);
            } else {
                *bits = left.bits();
            }
        }
        if m.is_empty() {
            self.permissions.remove(role);
        }
    }

    /// Removes every permission on a resource whose name `dropped` accepts.
    pub fn revoke_all_on(&mut self, dropped: impl Fn(&str) -> bool) {
        for m in self.permissions.values_mut() {
            m.retain(|name, _| !dropped(name));
        }
        self.permissions.retain(|_, m| !m.is_empty());
    }

    /// Removes a role with its memberships, the permissions granted to it and those on it.
    pub fn drop_role(&mut self, role: &str) {
        self.roles.remove(role);
        for r in self.roles.values_mut() {
            r.member_of.remove(role);
        }
        self.permissions.remove(role);
        self.authorizations.remove(role);
        let on = Resource::Role(role.to_string()).name();
        self.revoke_all_on(|n| n == on);
    }

    /// Rows of the `system_auth` table `t`, each a value per column in `t`'s column order.
    pub fn rows_of(&self, t: &TableDef) -> Vec<Vec<Option<Vec<u8>>>> {
        let mut out = Vec::new();
        let mut push =
            |pairs: Vec<(&str, Option<Vec<u8>>)>| out.push(crate::system::row_by_names(t, pairs));
        let text = |s: &str| Some(s.as_bytes().to_vec());
        let set = |items: Vec<&str>| {
            let v = Value::Set(
                items
                    .into_iter()
                    .map(|s| Value::Varchar(s.to_string()))
                    .collect(),
            );
            Some(proto::value::to_bytes(&v))
        };
        match t.name.as_str() {
            "roles" => {
                for (name, r) in &self.roles {
                    push(vec![
                        ("role", text(name)),
                        ("can_login", Some(vec![r.can_login as u8])),
                        ("is_superuser", Some(vec![r.is_superuser as u8])),
                        (
                            "member_of",
                            (!r.member_of.is_empty())
                                .then(|| set(r.member_of.iter().map(String::as_str).collect()))
                                .flatten(),
                        ),
                        ("salted_hash", r.salted_hash.as_deref().and_then(text)),
                    ]);
                }
            }
            "role_members" => {
                for (member, r) in &self.roles {
                    for role in &r.member_of {
                        push(vec![("role", text(role)), ("member", text(member))]);
                    }
                }
            }
            "role_permissions" => {
                for (role, m) in &self.permissions {
                    for (resource, bits) in m {
                        let names: Vec<&str> = PermissionSet::from_bits(*bits)
                            .iter()
                            .map(super::resource::name)
                            .collect();
                        push(vec![
                            ("role", text(role)),
                            ("resource", text(resource)),
                            ("permissions", set(names)),
                        ]);
                    }
                }
            }
            "resource_role_permissons_index" => {
                for (role, m) in &self.permissions {
                    for resource in m.keys() {
                        push(vec![("resource", text(resource)), ("role", text(role))]);
                    }
                }
            }
            _ => {}
        }
        out
    }
}
