//! Roles, passwords and permissions as Cassandra's `PasswordAuthenticator`,
//! `CassandraRoleManager` and `CassandraAuthorizer` have them.
//!
//! | module | what it holds |
//! |---|---|
//! | `resource` | permissions and resources, named and printed as Cassandra does |
//! | `state` | the durable role and permission records, and what a role holds through its grants |
//! | `check` | which permissions each statement needs, checked against a role's cached permissions |
//! | `roles` | CREATE/ALTER/DROP ROLE and USER, GRANT/REVOKE, LIST |
//! | `authorizations` | visibility-label authorizations of roles: GRANT/REVOKE/LIST AUTHORIZATIONS (docs/visibility.md) |
//!
//! **What it is not:** not the SASL exchange nor login throttling (the front end's and
//! `local`'s: they are per connection and per client address); this module verifies a name and a
//! password and answers what a role may do.
//!
//! # Invariants
//! - The records live in one storage key (`\0auth`), written and synced before a change is
//!   visible; `system_auth.*` tables are views of them, in Cassandra 5.0's tables and columns.
//! - Password hashes are bcrypt (`$2a$`, 10 rounds) as Cassandra writes them, so a
//!   `salted_hash` moves between the two unchanged (`CREATE ROLE ... WITH HASHED PASSWORD`).
//! - A role's permissions are computed once per thread and cached there; every change of roles
//!   or permissions bumps a generation that drops those caches, so no check ever sees a revoked
//!   permission.
//! - With the AllowAll authorizer (the default) the only cost on a request is one branch.

mod authorizations;
mod check;
pub mod resource;
mod roles;
mod state;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use proto::error::DbError;
use storage::Storage;

pub use resource::{Permission, PermissionSet, Resource};
use state::Effective;
pub use state::{AuthState, RoleRecord};

use crate::catalog::TableDef;

/// Instance numbers of [`Auth`] (see `Auth::id`).
static NEXT_AUTH_ID: AtomicU64 = AtomicU64::new(1);

/// One thread's cache of what roles hold: the [`Auth`] instance and generation it is valid for.
#[derive(Default)]
struct LocalPermissions {
    owner: u64,
    generation: u64,
    roles: HashMap<String, Effective>,
}

thread_local! {
    static LOCAL_PERMISSIONS: std::cell::RefCell<LocalPermissions> =
        std::cell::RefCell::new(LocalPermissions::default());
}

/// Storage key of the role and permission records.
const AUTH_KEY: &[u8] = b"\x00auth";

/// bcrypt rounds (log2) of new hashes: Cassandra's default (`auth_bcrypt_gensalt_log2_rounds`).
const BCRYPT_COST: u32 = 10;

/// The superuser Cassandra creates on first start with PasswordAuthenticator.
pub const DEFAULT_SUPERUSER: &str = "cassandra";
pub const DEFAULT_SUPERUSER_PASSWORD: &str = "cassandra";

/// A bcrypt hash of the same cost, verified against (result ignored) when the role is unknown.
const TIMING_HASH: &str = "$2a$10$SLEs4Jgz8Z4tYzqlm29ruOlqz1fbENt1tQlD8.u1aXO3vu1GKsXrO";

/// Longest role name or password accepted at login (anything longer is refused before hashing).
pub const MAX_CREDENTIAL_BYTES: usize = 4096;

/// Which of Cassandra's auth classes are configured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuthSettings {
    /// `authenticator: PasswordAuthenticator` (else AllowAllAuthenticator: everyone is anonymous).
    pub password_authenticator: bool,
    /// `authorizer: CassandraAuthorizer` (else AllowAllAuthorizer: nothing is checked).
    pub cassandra_authorizer: bool,
}

/// Roles, credentials and permissions of one engine.
pub struct Auth {
    storage: Arc<dyn Storage>,
    password_authenticator: AtomicBool,
    cassandra_authorizer: AtomicBool,
    state: RwLock<Arc<AuthState>>,
    /// Serializes changes (read, modify, persist, publish).
    write: Mutex<()>,
    /// Bumped by every change: each thread's cache of what roles hold (`LOCAL_PERMISSIONS`)
    /// is dropped when it sees a new value.
    generation: AtomicU64,
    /// Tells this instance's entries in the thread-local caches from another engine's.
    id: u64,
    /// Logins verified by bcrypt: role -> (the hash it was verified against, a digest of the
    /// password). A later login with the same password skips bcrypt; a changed hash misses.
    verified: Mutex<HashMap<String, (String, [u8; 32])>>,
    /// Random key of the digests above, so they are useless outside this process.
    digest_key: [u8; 32],
    /// bcrypt verifications done by logins (the slow path), for tests and metrics.
    bcrypt_checks: AtomicU64,
}

/// Why a login failed (each maps to Cassandra's AuthenticationException message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginError {
    /// Unknown role, no password, or a wrong one.
    BadCredentials(String),
    /// Right password, but the role has `LOGIN = false`.
    NotPermitted(String),
}

impl LoginError {
    pub fn into_db(self) -> DbError {
        match self {
            LoginError::BadCredentials(user) => DbError::BadCredentials {
                message: format!("Provided username {user} and/or password are incorrect"),
            },
            LoginError::NotPermitted(user) => DbError::BadCredentials {
                message: format!("{user} is not permitted to log in"),
            },
        }
    }
}

impl Auth {
    /// Loads the records stored in `storage` (none yet: empty).
    pub fn open(storage: Arc<dyn Storage>) -> Result<Auth, DbError> {
        let state = match storage
            .get(AUTH_KEY)
            .map_err(|e| DbError::server(e.to_string()))?
        {
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                DbError::server(format!("cannot read the stored roles and permissions: {e}"))
            })?,
            None => AuthState::default(),
        };
        let mut digest_key = [0u8; 32];
        for chunk in digest_key.chunks_mut(16) {
            chunk.copy_from_slice(&crate::scalar::random_uuid(0));
        }
        Ok(Auth {
            storage,
            password_authenticator: AtomicBool::new(false),
            cassandra_authorizer: AtomicBool::new(false),
            state: RwLock::new(Arc::new(state)),
            write: Mutex::new(()),
            generation: AtomicU64::new(0),
            id: NEXT_AUTH_ID.fetch_add(1, Ordering::Relaxed),
            verified: Mutex::new(HashMap::new()),
            digest_key,
            bcrypt_checks: AtomicU64::new(0),
        })
    }

    pub fn configure(&self, settings: AuthSettings) {
        self.password_authenticator
            .store(settings.password_authenticator, Ordering::Release);
        self.cassandra_authorizer
            .store(settings.cassandra_authorizer, Ordering::Release);
    }

    pub fn settings(&self) -> AuthSettings {
        AuthSettings {
            password_authenticator: self.password_authenticator.load(Ordering::Acquire),
            cassandra_authorizer: self.cassandra_authorizer.load(Ordering::Acquire),
        }
    }

    /// True when statements are checked against permissions (CassandraAuthorizer).
    #[inline]
    pub fn authorizing(&self) -> bool {
        self.cassandra_authorizer.load(Ordering::Relaxed)
    }

    /// The current records (a snapshot).
    pub fn state(&self) -> Arc<AuthState> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Creates the default superuser `cassandra` with `password` if no role exists, as
    /// Cassandra does on its first start with PasswordAuthenticator. Returns true if it did.
    pub fn setup_default_superuser(&self, password: &str) -> Result<bool, DbError> {
        self.change(|s| {
            if !s.roles.is_empty() {
                return Ok(false);
            }
            s.roles.insert(
                DEFAULT_SUPERUSER.to_string(),
                RoleRecord {
                    can_login: true,
                    is_superuser: true,
                    salted_hash: Some(hash_password(password)?),
                    member_of: Default::default(),
                },
            );
            Ok(true)
        })
    }

    /// True if the default superuser still has the default password (worth a loud warning).
    pub fn default_superuser_has_default_password(&self) -> bool {
        let state = self.state();
        state
            .roles
            .get(DEFAULT_SUPERUSER)
            .and_then(|r| r.salted_hash.as_deref())
            .is_some_and(|h| bcrypt::verify(DEFAULT_SUPERUSER_PASSWORD, h).unwrap_or(false))
    }

    /// Checks a name and password (PasswordAuthenticator). The first success for a role costs
    /// a bcrypt verification (tens of milliseconds, by design); later ones with the same
    /// password and an unchanged hash cost a keyed digest.
    pub fn authenticate(&self, user: &str, password: &str) -> Result<(), LoginError> {
        let bad = || LoginError::BadCredentials(user.to_string());
        let state = self.state();
        let Some((record, hash)) = state
            .roles
            .get(user)
            .and_then(|r| Some((r, r.salted_hash.as_deref()?)))
        else {
            // As slow as a wrong password, so the answer's timing does not tell which roles
            // exist.
            let _ = bcrypt::verify(password, TIMING_HASH);
            return Err(bad());
        };
        let digest = self.digest(user, password);
        let cached = self
            .verified
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(user)
            .is_some_and(|(h, d)| h == hash && constant_time_eq(d, &digest));
        if !cached {
            self.bcrypt_checks.fetch_add(1, Ordering::Relaxed);
            if !bcrypt::verify(password, hash).unwrap_or(false) {
                return Err(bad());
            }
            self.verified
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(user.to_string(), (hash.to_string(), digest));
        }
        if !record.can_login {
            return Err(LoginError::NotPermitted(user.to_string()));
        }
        Ok(())
    }

    /// How many logins needed a bcrypt verification (the others were answered from the cache).
    pub fn bcrypt_checks(&self) -> u64 {
        self.bcrypt_checks.load(Ordering::Relaxed)
    }

    /// A keyed digest of (role, password) for the verified-credentials cache. Not a password
    /// hash: it only ever compares two passwords presented to this process.
    fn digest(&self, user: &str, password: &str) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(self.digest_key);
        h.update((user.len() as u64).to_be_bytes());
        h.update(user.as_bytes());
        h.update(password.as_bytes());
        h.finalize().into()
    }

    /// Calls `f` with what `role` holds through its grants: from this thread's cache, or
    /// computed now. Per thread, so the check of a request touches no memory that other cores
    /// write (a shared map's lock and reference counts cost a few percent of a point read).
    /// `f` must not call back into this.
    fn with_effective<T>(&self, role: &str, f: impl FnOnce(&Effective) -> T) -> T {
        // Read before the state: `change` publishes the state before the generation, so an
        // entry computed now is never older than the generation it is filed under.
        let generation = self.generation.load(Ordering::Acquire);
        LOCAL_PERMISSIONS.with(|cell| {
            let mut cache = cell.borrow_mut();
            if cache.owner != self.id || cache.generation != generation {
                cache.roles.clear();
                cache.owner = self.id;
                cache.generation = generation;
            }
            if let Some(e) = cache.roles.get(role) {
                return f(e);
            }
            let e = self.state().effective(role);
            f(cache.roles.entry(role.to_string()).or_insert(e))
        })
    }

    /// Applies `f` to a copy of the records, persists the result (synced) and publishes it,
    /// dropping every cached permission set. `f`'s error leaves everything as it was.
    fn change<T>(
        &self,
        f: impl FnOnce(&mut AuthState) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let _g = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = (*self.state()).clone();
        let out = f(&mut next)?;
        let bytes = serde_json::to_vec(&next).map_err(|e| DbError::server(e.to_string()))?;
        let mut b = storage::WriteBatch::new();
        b.put(AUTH_KEY.to_vec(), bytes);
        self.storage
            .write(b)
            .and_then(|()| self.storage.sync())
            .map_err(|e| DbError::server(format!("writing roles and permissions: {e}")))?;
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(out)
    }

    /// Rows of a `system_auth` table, in its column order (see `system::AUTH_TABLES`).
    pub fn rows_of(&self, t: &TableDef) -> Vec<Vec<Option<Vec<u8>>>> {
        self.state().rows_of(t)
    }

    /// After a successful schema change by `role`: the creator of a keyspace or table gets
    /// every permission on it (when permissions are checked), and a dropped keyspace or table
    /// takes its permissions with it, as in Cassandra.
    pub fn after_schema_change(
        &self,
        role: Option<&str>,
        change: &crate::SchemaChange,
    ) -> Result<(), DbError> {
        use crate::{SchemaChangeTarget as Target, SchemaChangeType as Change};
        let resources: Vec<Resource> = match &change.target {
            Target::Keyspace(ks) => vec![
                Resource::Keyspace(ks.clone()),
                Resource::FunctionsIn(ks.clone()),
            ],
            Target::Table { keyspace, name } => {
                vec![Resource::Table(keyspace.clone(), name.clone())]
            }
            _ => return Ok(()),
        };
        match change.change {
            Change::Created => match role {
                Some(role) if self.authorizing() => self.change(|s| {
                    for r in &resources {
                        s.grant(role, r, r.applicable());
                    }
                    Ok(())
                }),
                _ => Ok(()),
            },
            Change::Dropped => {
                let state = self.state();
                let dropped = |name: &str| {
                    Resource::from_name(name)
                        .is_some_and(|r| resources.iter().any(|d| r.is_under(d)))
                };
                if !state
                    .permissions
                    .values()
                    .any(|m| m.keys().any(|n| dropped(n)))
                {
                    return Ok(());
                }
                self.change(|s| {
                    s.revoke_all_on(dropped);
                    Ok(())
                })
            }
            Change::Updated => Ok(()),
        }
    }
}

/// A new bcrypt hash as Cassandra writes them (`$2a$10$...`).
fn hash_password(password: &str) -> Result<String, DbError> {
    bcrypt::hash_with_result(password, BCRYPT_COST)
        .map(|h| h.format_for_version(bcrypt::Version::TwoA))
        .map_err(|e| DbError::server(format!("hashing a password failed: {e}")))
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests;
