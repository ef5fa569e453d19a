//! Visibility authorizations of roles (docs/visibility.md): `GRANT AUTHORIZATIONS 'a', ... TO
//! role`, `REVOKE AUTHORIZATIONS ... FROM role`, `LIST AUTHORIZATIONS [OF role]`. They are role
//! data, stored with the roles (`AuthState::authorizations`) and held through granted roles as
//! permissions are.
//!
//! Who may change them: a superuser, or a role with AUTHORIZE on the role (or on ALL ROLES),
//! as for granting that role. Who may list them: the role itself and the roles it was granted,
//! else the same as changing them.

use std::collections::BTreeSet;

use cql::ast::AuthorizationsStatement;
use proto::error::DbError;
use proto::types::ColumnType;

use super::resource::{Permission, Resource};
use super::roles::insufficient;
use super::state::{AuthState, Effective};
use super::Auth;
use crate::listing::ListRows;
use crate::visibility::{check_authorization, Authorizations};
use crate::Outcome;

impl AuthState {
    /// The authorizations `role` holds: its own and those of every role granted to it.
    pub fn authorizations_of(&self, role: &str) -> Authorizations {
        if self.authorizations.is_empty() {
            return Authorizations::default();
        }
        Authorizations::new(
            self.roles_of(role, true)
                .iter()
                .filter_map(|r| self.authorizations.get(r))
                .flatten()
                .cloned(),
        )
    }
}

impl Auth {
    pub(super) fn authorizations(
        &self,
        user: &str,
        eff: &Effective,
        st: &AuthorizationsStatement,
    ) -> Result<Outcome, DbError> {
        let may_authorize = |role: &str| {
            self.holds(
                eff,
                &Resource::Role(role.to_string()),
                Permission::Authorize,
            )
        };
        match st {
            AuthorizationsStatement::Grant { auths, role }
            | AuthorizationsStatement::Revoke { auths, role } => {
                let grant = matches!(st, AuthorizationsStatement::Grant { .. });
                if !self.authorizing() {
                    // As Cassandra answers GRANT under AllowAllAuthorizer.
                    return Err(DbError::invalid(format!(
                        "{} AUTHORIZATIONS operation is not supported by AllowAllAuthorizer",
                        if grant { "GRANT" } else { "REVOKE" }
                    )));
                }
                for a in auths {
                    check_authorization(a).map_err(|e| DbError::invalid(e.to_string()))?;
                }
                if !may_authorize(role) {
                    return Err(insufficient(user));
                }
                self.change(|s| {
                    if !s.roles.contains_key(role) {
                        return Err(DbError::invalid(format!("<role {role}> doesn't exist")));
                    }
                    let held = s.authorizations.entry(role.clone()).or_default();
                    for a in auths {
                        if grant {
                            held.insert(a.clone());
                        } else {
                            held.remove(a);
                        }
                    }
                    if held.is_empty() {
                        s.authorizations.remove(role);
                    }
                    Ok(Outcome::Void)
                })
            }
            AuthorizationsStatement::List { of } => {
                let state = self.state();
                let roles: Vec<String> = match of {
                    Some(of) => {
                        if !state.roles.contains_key(of) {
                            return Err(DbError::invalid(format!("<role {of}> doesn't exist")));
                        }
                        let own = state.roles_of(user, true).contains(of);
                        if !own && !may_authorize(of) {
                            return Err(insufficient(user));
                        }
                        vec![of.clone()]
                    }
                    None if !self.authorizing() || eff.superuser => {
                        state.roles.keys().cloned().collect()
                    }
                    None => vec![user.to_string()],
                };
                Ok(list(&state, &roles))
            }
        }
    }
}

/// `role | authorization` rows: each role's authorizations, held directly or through its
/// granted roles; a role without any shows no row.
fn list(state: &AuthState, roles: &[String]) -> Outcome {
    let mut rows = ListRows::default();
    let seen: BTreeSet<&String> = roles.iter().collect();
    for role in seen {
        for a in state.authorizations_of(role).iter() {
            rows.push(&[Some(role.as_bytes()), Some(a.as_bytes())]);
        }
    }
    rows.into_auth_list(
        "authorizations",
        &[
            ("role", ColumnType::Varchar),
            ("authorization", ColumnType::Varchar),
        ],
    )
}
