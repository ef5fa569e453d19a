//! Role and permission statements (CassandraRoleManager and CassandraAuthorizer): CREATE /
//! ALTER / DROP ROLE and USER, GRANT / REVOKE of roles and permissions, LIST ROLES / USERS /
//! PERMISSIONS. Each follows Cassandra's order: the access check, then validation, then the
//! change, with Cassandra's messages.

use cql::ast::{self, RoleOptions, Statement};
use proto::error::DbError;
use proto::types::{ColumnType, Value};

use super::check::{no_permission, not_logged_in};
use super::resource::{self, Permission, PermissionSet, Resource};
use super::state::{Effective, RoleRecord};
use super::{hash_password, Auth};
use crate::catalog::Schema;
use crate::listing::ListRows;
use crate::Outcome;

const NOT_ANONYMOUS: &str = "You have to be logged in and not anonymous to perform this request";
const ROLE_MANAGER: &str = "org.apache.cassandra.auth.CassandraRoleManager";
/// The one datacenter of this node (`system.local.data_center`).
const DATACENTER: &str = "datacenter1";

/// What 5.0.9 checks of CREATE / ALTER ROLE (or USER) with authentication off, before it
/// refuses the anonymous user: a superuser status (in its `authorize`), then the options its
/// role manager does not support without PasswordAuthenticator (only LOGIN and SUPERUSER), then
/// the datacenters.
fn anonymous_role_checks(st: &Statement) -> Result<(), DbError> {
    let (o, superuser) = match st {
        Statement::CreateRole(c) => (
            &c.options,
            (c.options.superuser == Some(true))
                .then_some("Only superusers can create a role with superuser status"),
        ),
        Statement::AlterRole(a) => (
            &a.options,
            a.options
                .superuser
                .map(|_| "Only superusers are allowed to alter superuser status"),
        ),
        _ => return Ok(()),
    };
    if let Some(m) = superuser {
        return Err(DbError::unauthorized(m));
    }
    if matches!(st, Statement::AlterRole(_)) && o.datacenters.is_some() {
        return Err(DbError::unauthorized(
            "Only superusers are allowed to alter access to datacenters.",
        ));
    }
    for (set, name) in [
        (o.password.is_some(), "PASSWORD"),
        (o.hashed_password.is_some(), "HASHED_PASSWORD"),
        (o.options.is_some(), "OPTIONS"),
    ] {
        if set {
            return Err(DbError::invalid(format!(
                "{ROLE_MANAGER} doesn't support {name}"
            )));
        }
    }
    check_datacenters(o)
}

/// One node, in one datacenter: any other name in ACCESS TO DATACENTERS is unknown, as in
/// Cassandra.
fn check_datacenters(o: &RoleOptions) -> Result<(), DbError> {
    if let Some(ast::DatacenterAccess::Only(dcs)) = &o.datacenters {
        let unknown: Vec<&str> = dcs
            .iter()
            .map(String::as_str)
            .filter(|dc| *dc != DATACENTER)
            .collect();
        if !unknown.is_empty() {
            return Err(DbError::invalid(format!(
                "Invalid value(s) for DATACENTERS '[{}]',All values must be valid datacenters",
                unknown.join(", ")
            )));
        }
    }
    Ok(())
}

pub(super) fn insufficient(user: &str) -> DbError {
    DbError::unauthorized(format!(
        "User {user} does not have sufficient privileges to perform the requested operation"
    ))
}

impl Auth {
    /// Runs a role or permission statement for the logged-in `role` (`None`: authentication
    /// is off, everyone is anonymous). `keyspace` completes a keyspace-less table resource.
    pub fn execute(
        &self,
        role: Option<&str>,
        st: &Statement,
        keyspace: Option<&str>,
        schema: &Schema,
    ) -> Result<Outcome, DbError> {
        // Permission statements are checked against the resource type before anything else,
        // as Cassandra's parser does.
        let change = match st {
            Statement::GrantPermissions(c) | Statement::RevokePermissions(c) => {
                Some(permission_change(c, keyspace)?)
            }
            _ => None,
        };
        if !self.settings().password_authenticator {
            anonymous_role_checks(st)?;
            return Err(DbError::unauthorized(NOT_ANONYMOUS));
        }
        let user = role.ok_or_else(not_logged_in)?;
        let eff = self.state().effective(user);
        match st {
            Statement::CreateRole(c) => self.create_role(user, &eff, c),
            Statement::AlterRole(a) => self.alter_role(user, &eff, a),
            Statement::DropRole {
                name, if_exists, ..
            } => self.drop_role(user, &eff, name, *if_exists),
            Statement::GrantRole { role, grantee } => {
                self.grant_role(user, &eff, role, grantee, true)
            }
            Statement::RevokeRole { role, revokee } => {
                self.grant_role(user, &eff, role, revokee, false)
            }
            Statement::GrantPermissions(c) | Statement::RevokePermissions(c) => {
                let (perms, resource) =
                    change.ok_or_else(|| DbError::server("no permission change"))?;
                let grant = matches!(st, Statement::GrantPermissions(_));
                self.change_permissions(user, &eff, perms, &resource, &c.role, grant, schema)
            }
            Statement::ListRoles { of, recursive } => {
                self.list_roles(user, &eff, of.as_deref(), *recursive, false)
            }
            Statement::ListUsers => self.list_roles(user, &eff, None, false, true),
            Statement::Authorizations(a) => self.authorizations(user, &eff, a),
            Statement::ListPermissions {
                permissions,
                resource,
                of,
                recursive,
            } => {
                let resource = resource
                    .as_ref()
                    .map(|r| resource_of(r, keyspace))
                    .transpose()?;
                self.list_permissions(
                    &eff,
                    PermissionSet::of(permissions),
                    resource,
                    of.as_deref(),
                    *recursive,
                    schema,
                )
            }
            _ => Err(DbError::server("not a role statement")),
        }
    }

    /// `p` on `r` or a parent, when permissions are checked; else allowed.
    pub(super) fn holds(&self, eff: &Effective, r: &Resource, p: Permission) -> bool {
        !self.authorizing() || eff.superuser || eff.allows(r, p)
    }

    fn create_role(
        &self,
        user: &str,
        eff: &Effective,
        c: &ast::CreateRole,
    ) -> Result<Outcome, DbError> {
        if !self.holds(eff, &Resource::AllRoles, Permission::Create) {
            return Err(insufficient(user));
        }
        if c.options.superuser == Some(true) && !eff.superuser {
            return Err(DbError::unauthorized(
                "Only superusers can create a role with superuser status",
            ));
        }
        let hash = self.validate_options(&c.options)?;
        if c.name.is_empty() {
            return Err(DbError::invalid("Role name can't be an empty string"));
        }
        let authorizing = self.authorizing();
        self.change(|s| {
            if s.roles.contains_key(&c.name) {
                if c.if_not_exists {
                    return Ok(());
                }
                return Err(DbError::invalid(format!("{} already exists", c.name)));
            }
            s.roles.insert(
                c.name.clone(),
                RoleRecord {
                    can_login: c.options.login.unwrap_or(false),
                    is_superuser: c.options.superuser.unwrap_or(false),
                    salted_hash: hash,
                    member_of: Default::default(),
                },
            );
            if authorizing {
                let r = Resource::Role(c.name.clone());
                s.grant(user, &r, r.applicable());
            }
            Ok(())
        })?;
        Ok(Outcome::Void)
    }

    /// Checks role options as CassandraRoleManager with PasswordAuthenticator supports them,
    /// and returns the hash to store for a PASSWORD or HASHED PASSWORD.
    fn validate_options(&self, o: &RoleOptions) -> Result<Option<String>, DbError> {
        if o.options.is_some() {
            return Err(DbError::invalid(format!(
                "{ROLE_MANAGER} doesn't support OPTIONS"
            )));
        }
        check_datacenters(o)?;
        match (&o.password, &o.hashed_password) {
            (Some(_), Some(_)) => Err(DbError::syntax(
                "Options 'password' and 'hashed password' are mutually exclusive",
            )),
            (Some(p), None) => hash_password(p).map(Some),
            (None, Some(h)) => {
                if bcrypt::verify("", h).is_err() {
                    return Err(DbError::invalid(
                        "Invalid hashed password value. Please use jBcrypt.",
                    ));
                }
                Ok(Some(h.clone()))
            }
            (None, None) => Ok(None),
        }
    }

    fn alter_role(
        &self,
        user: &str,
        eff: &Effective,
        a: &ast::AlterRole,
    ) -> Result<Outcome, DbError> {
        let o = &a.options;
        if o.superuser.is_some() && eff.roles.contains(&a.name) {
            return Err(DbError::unauthorized(
                "You aren't allowed to alter your own superuser status or that of a role granted to you",
            ));
        }
        if o.superuser.is_some() && !eff.superuser {
            return Err(DbError::unauthorized(
                "Only superusers are allowed to alter superuser status",
            ));
        }
        if !eff.superuser {
            if user == a.name {
                // A role may change only its own password.
                let set = [
                    ("SUPERUSER", o.superuser.is_some()),
                    ("LOGIN", o.login.is_some()),
                    ("OPTIONS", o.options.is_some()),
                ];
                if let Some((name, _)) = set.iter().find(|(_, on)| *on) {
                    return Err(DbError::unauthorized(format!(
                        "You aren't allowed to alter {name}"
                    )));
                }
            } else if !self.holds(eff, &Resource::Role(a.name.clone()), Permission::Alter) {
                return Err(insufficient(user));
            }
        }
        let hash = self.validate_options(o)?;
        if o.password.is_none()
            && o.hashed_password.is_none()
            && o.login.is_none()
            && o.superuser.is_none()
        {
            return Err(DbError::invalid("ALTER [ROLE|USER] can't be empty"));
        }
        self.change(|s| {
            let Some(r) = s.roles.get_mut(&a.name) else {
                if a.if_exists {
                    return Ok(());
                }
                return Err(DbError::invalid(format!("Role {} doesn't exist", a.name)));
            };
            if let Some(login) = o.login {
                r.can_login = login;
            }
            if let Some(su) = o.superuser {
                r.is_superuser = su;
            }
            if hash.is_some() {
                r.salted_hash = hash;
            }
            Ok(())
        })?;
        Ok(Outcome::Void)
    }

    fn drop_role(
        &self,
        user: &str,
        eff: &Effective,
        name: &str,
        if_exists: bool,
    ) -> Result<Outcome, DbError> {
        if !self.holds(eff, &Resource::Role(name.to_string()), Permission::Drop) {
            return Err(insufficient(user));
        }
        let state = self.state();
        let exists = state.roles.contains_key(name);
        if exists && state.is_superuser(name) && !eff.superuser {
            return Err(DbError::unauthorized(
                "Only superusers can drop a role with superuser status",
            ));
        }
        if !if_exists && !exists {
            return Err(DbError::invalid(format!("{name} doesn't exist")));
        }
        if user == name {
            return Err(DbError::invalid(
                "Cannot DROP primary role for current login",
            ));
        }
        if exists {
            self.change(|s| {
                s.drop_role(name);
                Ok(())
            })?;
        }
        Ok(Outcome::Void)
    }

    /// GRANT role TO grantee (`grant`) or REVOKE role FROM grantee.
    fn grant_role(
        &self,
        user: &str,
        eff: &Effective,
        role: &str,
        grantee: &str,
        grant: bool,
    ) -> Result<Outcome, DbError> {
        if !self.holds(
            eff,
            &Resource::Role(role.to_string()),
            Permission::Authorize,
        ) {
            return Err(insufficient(user));
        }
        self.change(|s| {
            for r in [role, grantee] {
                if !s.roles.contains_key(r) {
                    return Err(DbError::invalid(format!("{r} doesn't exist")));
                }
            }
            if grant {
                if s.roles_of(grantee, true).contains(role) {
                    return Err(DbError::invalid(format!("{grantee} is a member of {role}")));
                }
                if s.roles_of(role, true).contains(grantee) {
                    return Err(DbError::invalid(format!("{role} is a member of {grantee}")));
                }
            } else if !s.roles_of(grantee, false).contains(role) {
                return Err(DbError::invalid(format!(
                    "{grantee} is not a member of {role}"
                )));
            }
            if let Some(r) = s.roles.get_mut(grantee) {
                if grant {
                    r.member_of.insert(role.to_string());
                } else {
                    r.member_of.remove(role);
                }
            }
            Ok(())
        })?;
        Ok(Outcome::Void)
    }

    #[allow(clippy::too_many_arguments)]
    fn change_permissions(
        &self,
        user: &str,
        eff: &Effective,
        perms: PermissionSet,
        resource: &Resource,
        grantee: &str,
        grant: bool,
        schema: &Schema,
    ) -> Result<Outcome, DbError> {
        if self.authorizing() && !eff.superuser {
            for p in std::iter::once(Permission::Authorize).chain(perms.iter()) {
                if !eff.allows(resource, p) {
                    return Err(no_permission(user, p, resource));
                }
            }
        }
        let state = self.state();
        if !state.roles.contains_key(grantee) {
            return Err(DbError::invalid(format!("Role {grantee} doesn't exist")));
        }
        if let Resource::Function(ks, ..) | Resource::FunctionsIn(ks) = resource {
            if ks == "system" {
                return Err(DbError::invalid(
                    "Altering permissions on builtin functions is not supported",
                ));
            }
        }
        if let Resource::Function(ks, ..) = resource {
            if !schema.keyspaces.contains_key(ks) {
                return Err(DbError::config(format!("Keyspace {ks} doesn't exist")));
            }
        }
        if !exists(resource, schema, &state) {
            return Err(DbError::invalid(format!(
                "Resource {resource} doesn't exist"
            )));
        }
        if !self.authorizing() {
            let op = if grant { "GRANT" } else { "REVOKE" };
            return Err(DbError::invalid(format!(
                "{op} operation is not supported by AllowAllAuthorizer"
            )));
        }
        self.change(|s| {
            if grant {
                s.grant(grantee, resource, perms);
            } else {
                s.revoke(grantee, resource, perms);
            }
            Ok(())
        })?;
        Ok(Outcome::Void)
    }

    fn list_roles(
        &self,
        user: &str,
        eff: &Effective,
        of: Option<&str>,
        recursive: bool,
        users: bool,
    ) -> Result<Outcome, DbError> {
        let state = self.state();
        if let Some(of) = of {
            if !state.roles.contains_key(of) {
                return Err(DbError::invalid(format!("<role {of}> doesn't exist")));
            }
        }
        let describe_all = !self.authorizing()
            || eff.superuser
            || eff.on(&Resource::AllRoles).contains(Permission::Describe);
        let roles: Vec<String> = match (describe_all, of) {
            (true, None) => state.roles.keys().cloned().collect(),
            (true, Some(of)) => state.roles_of(of, recursive).into_iter().collect(),
            (false, None) => state.roles_of(user, recursive).into_iter().collect(),
            (false, Some(of)) => {
                if !state.roles_of(user, true).contains(of) {
                    return Err(DbError::unauthorized(format!(
                        "You are not authorized to view roles granted to {of} "
                    )));
                }
                state.roles_of(of, recursive).into_iter().collect()
            }
        };
        let mut rows = ListRows::default();
        for name in roles {
            let Some(r) = state.roles.get(&name) else {
                continue;
            };
            // LIST ROLES shows a role's own status, LIST USERS the one it holds through grants.
            let superuser = if users {
                state.is_superuser(&name)
            } else {
                r.is_superuser
            };
            let superuser = Some(&[superuser as u8][..]);
            let all = Some(&b"ALL"[..]);
            if users {
                if r.can_login {
                    rows.push(&[Some(name.as_bytes()), superuser, all]);
                }
            } else {
                let options = proto::value::to_bytes(&Value::Map(Vec::new()));
                let login = [r.can_login as u8];
                rows.push(&[
                    Some(name.as_bytes()),
                    superuser,
                    Some(&login),
                    Some(&options),
                    all,
                ]);
            }
        }
        let columns: &[(&str, ColumnType)] = if users {
            &[
                ("name", ColumnType::Varchar),
                ("super", ColumnType::Boolean),
                ("datacenters", ColumnType::Varchar),
            ]
        } else {
            &[
                ("role", ColumnType::Varchar),
                ("super", ColumnType::Boolean),
                ("login", ColumnType::Boolean),
                (
                    "options",
                    ColumnType::Map(Box::new(ColumnType::Varchar), Box::new(ColumnType::Varchar)),
                ),
                ("datacenters", ColumnType::Varchar),
            ]
        };
        Ok(rows.into_auth_list(if users { "users" } else { "roles" }, columns))
    }

    #[allow(clippy::too_many_arguments)]
    fn list_permissions(
        &self,
        eff: &Effective,
        wanted: PermissionSet,
        resource: Option<Resource>,
        of: Option<&str>,
        recursive: bool,
        schema: &Schema,
    ) -> Result<Outcome, DbError> {
        let state = self.state();
        if let Some(r) = &resource {
            if !exists(r, schema, &state) {
                return Err(DbError::invalid(format!("{r} doesn't exist")));
            }
        }
        if let Some(of) = of {
            if !state.roles.contains_key(of) {
                return Err(DbError::invalid(format!("<role {of}> doesn't exist")));
            }
        }
        if !self.authorizing() {
            return Err(DbError::invalid(
                "LIST PERMISSIONS operation is not supported by AllowAllAuthorizer",
            ));
        }
        let may = eff.superuser
            || of.is_some_and(|o| eff.roles.contains(o))
            || eff.on(&Resource::AllRoles).contains(Permission::Describe);
        if !may {
            return Err(DbError::unauthorized(format!(
                "You are not authorized to view {}'s permissions",
                of.unwrap_or("everyone")
            )));
        }
        let grantees: Vec<String> = match of {
            Some(of) => state.roles_of(of, true).into_iter().collect(),
            None => state.permissions.keys().cloned().collect(),
        };
        let on: Option<Vec<String>> = resource.map(|r| {
            if recursive {
                r.chain().iter().map(Resource::name).collect()
            } else {
                vec![r.name()]
            }
        });
        let mut found: Vec<(&str, &str, Permission)> = Vec::new();
        for g in &grantees {
            let Some(m) = state.permissions.get(g) else {
                continue;
            };
            for (name, bits) in m {
                if on.as_ref().is_some_and(|on| !on.contains(name)) {
                    continue;
                }
                for p in PermissionSet::from_bits(*bits).intersect(wanted).iter() {
                    found.push((g, name, p));
                }
            }
        }
        found.sort_by_key(|(g, name, p)| (*g, *name, *p as u8));
        let mut rows = ListRows::default();
        for (g, name, p) in found {
            let shown =
                Resource::from_name(name).map_or_else(|| name.to_string(), |r| r.to_string());
            rows.push(&[
                Some(g.as_bytes()),
                Some(g.as_bytes()),
                Some(shown.as_bytes()),
                Some(resource::name(p).as_bytes()),
            ]);
        }
        Ok(rows.into_auth_list(
            "permissions",
            &[
                ("role", ColumnType::Varchar),
                ("username", ColumnType::Varchar),
                ("resource", ColumnType::Varchar),
                ("permission", ColumnType::Varchar),
            ],
        ))
    }
}

/// The resource of a GRANT/REVOKE/LIST; a table without keyspace is in the session's.
fn resource_of(r: &ast::Resource, keyspace: Option<&str>) -> Result<Resource, DbError> {
    use ast::Resource as A;
    Ok(match r {
        A::AllKeyspaces => Resource::AllKeyspaces,
        A::Keyspace(ks) => Resource::Keyspace(ks.clone()),
        A::AllTables(ks) => Resource::AllTablesIn(ks.clone()),
        A::Table(q) => {
            let ks = q
                .keyspace
                .as_deref()
                .or(keyspace)
                .ok_or_else(|| DbError::invalid(crate::ddl::NO_KEYSPACE))?;
            Resource::Table(ks.to_string(), q.name.clone())
        }
        A::AllRoles => Resource::AllRoles,
        A::Role(r) => Resource::Role(r.clone()),
        A::AllFunctions { keyspace: None } => Resource::AllFunctions,
        A::AllFunctions { keyspace: Some(ks) } => Resource::FunctionsIn(ks.clone()),
        A::Function { name, arg_types } => Resource::Function(
            name.keyspace
                .as_deref()
                .or(keyspace)
                .unwrap_or("system")
                .to_string(),
            name.name.clone(),
            arg_types.iter().map(|t| t.to_string()).collect(),
        ),
        A::AllMBeans => Resource::AllMBeans,
        A::MBean(m) => {
            // A JMX object name is `domain:key=value[,key=value...]`.
            let valid = m.split_once(':').is_some_and(|(_, props)| {
                !props.is_empty() && props.split(',').all(|p| p.contains('='))
            });
            if !valid {
                return Err(DbError::syntax(format!(
                    "{m} is not a valid JMX object name"
                )));
            }
            Resource::MBean(m.clone())
        }
    })
}

/// A GRANT/REVOKE's permissions, narrowed to those the resource has (a Syntax error when
/// none is left, as Cassandra's parser answers).
fn permission_change(
    c: &ast::PermissionChange,
    keyspace: Option<&str>,
) -> Result<(PermissionSet, Resource), DbError> {
    let resource = resource_of(&c.resource, keyspace)?;
    let perms = PermissionSet::of(&c.permissions).intersect(resource.applicable());
    if perms.is_empty() {
        return Err(DbError::syntax(format!(
            "Resource type {} does not support any of the requested permissions",
            resource.kind_name()
        )));
    }
    Ok((perms, resource))
}

/// True if the resource exists (Cassandra's `IResource.exists`).
fn exists(r: &Resource, schema: &Schema, state: &super::AuthState) -> bool {
    match r {
        Resource::AllKeyspaces
        | Resource::AllRoles
        | Resource::AllFunctions
        | Resource::AllMBeans => true,
        Resource::Keyspace(ks) | Resource::FunctionsIn(ks) | Resource::AllTablesIn(ks) => {
            schema.keyspaces.contains_key(ks)
        }
        Resource::Table(ks, t) => schema.tables.contains_key(&(ks.clone(), t.clone())),
        Resource::Role(name) => state.roles.contains_key(name),
        // No user-defined functions nor MBeans exist here.
        Resource::Function(..) | Resource::MBean(_) => false,
    }
}
