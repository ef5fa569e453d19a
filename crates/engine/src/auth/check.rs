//! Which permission each statement needs, and the check of it (Cassandra's `authorize` of
//! each statement and `ClientState.ensurePermission`).
//!
//! Data statements need one permission on a table, looked up without allocating; schema
//! statements name a keyspace or table. Role and permission statements are checked where
//! they run (`roles.rs`), since their rules mix with their validation.

use crate::ddl::NO_KEYSPACE;
use cql::ast::{ModificationStatement, QualifiedName, Statement};
use proto::error::DbError;

use super::resource::{self, Permission, Resource};
use super::state::Effective;
use super::Auth;

/// Keyspaces only the node itself changes.
const LOCAL_SYSTEM_KEYSPACES: &[&str] = &[
    "system",
    "system_schema",
    "system_virtual_schema",
    "system_views",
];
/// System keyspaces a user may alter (replication) but not otherwise change.
const REPLICATED_SYSTEM_KEYSPACES: &[&str] =
    &["system_auth", "system_distributed", "system_traces"];

/// Tables every logged-in role may read: drivers and tools read them at connect.
fn always_readable(ks: &str, t: &str) -> bool {
    match ks {
        "system" => matches!(t, "local" | "peers" | "peers_v2"),
        "system_schema" | "system_virtual_schema" => true,
        _ => false,
    }
}

pub(crate) fn not_logged_in() -> DbError {
    DbError::unauthorized("You have not logged in")
}

impl Auth {
    /// Checks that `role` may run `st` (with `keyspace` the session's keyspace). Only called
    /// when permissions are checked ([`Auth::authorizing`]).
    pub fn authorize(
        &self,
        role: Option<&str>,
        st: &Statement,
        keyspace: Option<&str>,
    ) -> Result<(), DbError> {
        let role = role.ok_or_else(not_logged_in)?;
        self.with_effective(role, |eff| self.authorize_as(role, eff, st, keyspace))
    }

    /// Checks that `role` has `p` on table `ks.t` (for statements that name the table only
    /// through another object, such as DROP INDEX).
    pub fn authorize_table(
        &self,
        role: Option<&str>,
        ks: &str,
        t: &str,
        p: Permission,
    ) -> Result<(), DbError> {
        let role = role.ok_or_else(not_logged_in)?;
        self.with_effective(role, |eff| self.need_table(role, eff, ks, t, p))
    }

    fn authorize_as(
        &self,
        role: &str,
        eff: &Effective,
        st: &Statement,
        keyspace: Option<&str>,
    ) -> Result<(), DbError> {
        let ks_of = |q: &QualifiedName| -> Result<String, DbError> {
            q.keyspace
                .as_deref()
                .or(keyspace)
                .map(str::to_string)
                .ok_or_else(|| DbError::invalid(NO_KEYSPACE))
        };
        let table = |q: &QualifiedName| -> Result<Resource, DbError> {
            Ok(Resource::Table(ks_of(q)?, q.name.clone()))
        };
        let all_tables = |q: &QualifiedName| -> Result<Resource, DbError> {
            Ok(Resource::AllTablesIn(ks_of(q)?))
        };
        use Permission as P;
        match st {
            Statement::Select(s) => {
                let ks = s.table.keyspace.as_deref().or(keyspace).unwrap_or("");
                if always_readable(ks, &s.table.name) {
                    return Ok(());
                }
                self.need_table(role, eff, ks, &s.table.name, P::Select)
            }
            Statement::Insert(s) => self.need_write(role, eff, &s.table, keyspace, s.if_not_exists),
            Statement::Update(s) => {
                self.need_write(role, eff, &s.table, keyspace, s.condition.is_some())
            }
            Statement::Delete(s) => {
                self.need_write(role, eff, &s.table, keyspace, s.condition.is_some())
            }
            Statement::Batch(b) => {
                for m in &b.statements {
                    let (t, conditional) = match m {
                        ModificationStatement::Insert(s) => (&s.table, s.if_not_exists),
                        ModificationStatement::Update(s) => (&s.table, s.condition.is_some()),
                        ModificationStatement::Delete(s) => (&s.table, s.condition.is_some()),
                    };
                    self.need_write(role, eff, t, keyspace, conditional)?;
                }
                Ok(())
            }
            Statement::Truncate(name) => self.need(role, eff, &table(name)?, P::Modify),
            Statement::CreateKeyspace(_) => {
                self.need(role, eff, &Resource::AllKeyspaces, P::Create)
            }
            Statement::AlterKeyspace(a) => {
                self.need(role, eff, &Resource::Keyspace(a.name.clone()), P::Alter)
            }
            Statement::DropKeyspace { name, .. } => {
                self.need(role, eff, &Resource::Keyspace(name.clone()), P::Drop)
            }
            Statement::CreateTable(c) => self.need(role, eff, &all_tables(&c.name)?, P::Create),
            Statement::AlterTable(a) => self.need(role, eff, &table(&a.name)?, P::Alter),
            Statement::DropTable { name, .. } => self.need(role, eff, &table(name)?, P::Drop),
            Statement::CreateType(c) => self.need(role, eff, &all_tables(&c.name)?, P::Create),
            Statement::AlterType(a) => self.need(role, eff, &all_tables(&a.name)?, P::Alter),
            Statement::DropType { name, .. } => self.need(role, eff, &all_tables(name)?, P::Drop),
            Statement::CreateIndex(c) => self.need(role, eff, &table(&c.table)?, P::Alter),
            // A view is created with ALTER on its base (in the view's keyspace); ALTER and
            // DROP MATERIALIZED VIEW name only the view: checked in Engine::run_other.
            Statement::CreateView(c) => {
                let base = Resource::Table(ks_of(&c.name)?, c.select.table.name.clone());
                self.need(role, eff, &base, P::Alter)
            }
            // USE and DESCRIBE need a login only; DROP INDEX names no table (ALTER on its table
            // is checked where the index is resolved, Engine::run_other); role statements check
            // themselves (roles.rs).
            _ => Ok(()),
        }
    }

    /// INSERT/UPDATE/DELETE: MODIFY, and SELECT too when conditional (it reads).
    fn need_write(
        &self,
        role: &str,
        eff: &Effective,
        q: &QualifiedName,
        keyspace: Option<&str>,
        conditional: bool,
    ) -> Result<(), DbError> {
        let ks = q.keyspace.as_deref().or(keyspace).unwrap_or("");
        self.need_table(role, eff, ks, &q.name, Permission::Modify)?;
        if conditional {
            self.need_table(role, eff, ks, &q.name, Permission::Select)?;
        }
        Ok(())
    }

    /// The data path's check: no allocation unless it fails.
    #[inline]
    fn need_table(
        &self,
        role: &str,
        eff: &Effective,
        ks: &str,
        t: &str,
        p: Permission,
    ) -> Result<(), DbError> {
        if eff.superuser || eff.table_allows(ks, t, p) {
            return Ok(());
        }
        Err(no_permission(
            role,
            p,
            &Resource::Table(ks.into(), t.into()),
        ))
    }

    /// Cassandra's `ensurePermission` on a data resource: system keyspaces are guarded for
    /// everyone, then the permission is looked up on the resource and its parents.
    pub(crate) fn need(
        &self,
        role: &str,
        eff: &Effective,
        r: &Resource,
        p: Permission,
    ) -> Result<(), DbError> {
        guard_system_keyspaces(r, p)?;
        if let Resource::Table(ks, t) = r {
            if p == Permission::Select && always_readable(ks, t) {
                return Ok(());
            }
        }
        if eff.superuser || eff.allows(r, p) {
            return Ok(());
        }
        Err(no_permission(role, p, r))
    }
}

pub(crate) fn no_permission(role: &str, p: Permission, r: &Resource) -> DbError {
    DbError::unauthorized(format!(
        "User {role} has no {} permission on {r} or any of its parents",
        resource::name(p)
    ))
}

/// Schema changes in system keyspaces (Cassandra's `preventSystemKSSchemaModification`).
fn guard_system_keyspaces(r: &Resource, p: Permission) -> Result<(), DbError> {
    if !matches!(p, Permission::Create | Permission::Alter | Permission::Drop) {
        return Ok(());
    }
    let (ks, keyspace_level) = match r {
        Resource::Keyspace(ks) => (ks, true),
        Resource::Table(ks, _) | Resource::AllTablesIn(ks) => (ks, false),
        _ => return Ok(()),
    };
    if LOCAL_SYSTEM_KEYSPACES.contains(&ks.as_str()) {
        return Err(DbError::unauthorized(format!(
            "{ks} keyspace is not user-modifiable."
        )));
    }
    if REPLICATED_SYSTEM_KEYSPACES.contains(&ks.as_str())
        && !(p == Permission::Alter && keyspace_level)
    {
        return Err(DbError::unauthorized(format!(
            "Cannot {} {r}",
            resource::name(p)
        )));
    }
    Ok(())
}
