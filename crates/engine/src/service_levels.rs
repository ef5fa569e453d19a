//! ScyllaDB's service levels (workload prioritization): the durable records, the statements
//! (`CREATE / ALTER / DROP / ATTACH / DETACH / LIST ... SERVICE LEVEL`) and which level a
//! role runs at.
//!
//! **What it is:** the catalog of service levels (name, `shares` 1..=1000, `workload_type`,
//! `timeout`) and of attachments (role -> level), stored under one storage key (`\0service_levels`,
//! JSON, written and synced before a change is visible), with ScyllaDB's statements,
//! checks, messages and result columns. [`ServiceLevels::level_of`] answers the level a
//! logged-in role runs at, as ScyllaDB resolves it: the levels attached to the role and to
//! every role granted to it (directly or not) are merged as ScyllaDB's
//! `service_level_options::merge_with` merges them, in role-name order: the **lowest**
//! `shares` and the **shortest** `timeout` win, and of `workload_type` a specified one beats
//! none and `batch` beats `interactive` (ScyllaDB's docs say "the highest level of service
//! wins"; its code takes the minimum, and the code is what runs). A role with none runs at
//! the `default` level, [`DEFAULT_SHARES`], no timeout. `LIST EFFECTIVE SERVICE LEVEL OF`
//! shows the merge and which level gave each option.
//!
//! **What it is not:** not the scheduler. The engine is synchronous and owns no threads; the
//! share-weighted queue in front of execution is `local`'s (`local::scheduler`), which asks
//! [`Engine::service_level_of`] per request, and only once a service level exists.
//!
//! # Invariants
//! - With no service level defined, [`ServiceLevels::level_of`] is one atomic load.
//! - Every change bumps a generation that drops the per-role cache of resolved levels; a
//!   change of roles (GRANT, REVOKE, DROP ROLE) is seen through the roles' own snapshot.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use cql::ast::{ServiceLevelOptions, ServiceLevelStatement, WorkloadType};
use proto::error::DbError;
use proto::types::ColumnType;
use serde::{Deserialize, Serialize};
use storage::Storage;

use crate::auth::AuthState;
use crate::listing::ListRows;
use crate::{Engine, Outcome};

/// Storage key of the records.
const KEY: &[u8] = b"\x00service_levels";

/// ScyllaDB's default shares (`service_level_controller::default_shares`): of a level created
/// without `shares`, and of the `default` level every unattached role runs at.
pub const DEFAULT_SHARES: u32 = 1000;

/// Name of the level of roles without one (ScyllaDB's `default`).
pub const DEFAULT_LEVEL: &str = "default";

/// Most service levels that can exist: ScyllaDB allows 10 scheduling groups, two of them
/// its own `default` and `driver`.
pub const MAX_LEVELS: usize = 8;

/// One service level's options, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelRecord {
    pub shares: u32,
    #[serde(default)]
    pub workload_type: Option<String>,
    /// Milliseconds (ScyllaDB keeps millisecond granularity); `None`: no timeout of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// Every service level and attachment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Records {
    pub levels: BTreeMap<String, LevelRecord>,
    /// role -> the level attached to it directly.
    pub attached: BTreeMap<String, String>,
}

/// The level a role runs at: its name (the one whose shares won the merge), shares, and
/// the timeout of its requests (the shortest of its levels').
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Level {
    pub name: Arc<str>,
    pub shares: u32,
    /// A request running longer is answered with a read or write timeout (`local`).
    pub timeout: Option<Duration>,
}

impl Level {
    pub fn default_level() -> Level {
        Level {
            name: Arc::from(DEFAULT_LEVEL),
            shares: DEFAULT_SHARES,
            timeout: None,
        }
    }
}

/// The merge of a role's levels, each option with the level it came from (ScyllaDB's
/// `effective_names`); what `LIST EFFECTIVE SERVICE LEVEL OF` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    pub shares: (u32, String),
    pub timeout: (Option<u64>, String),
    pub workload_type: (Option<WorkloadType>, String),
}

impl Effective {
    fn of(name: &str, rec: &LevelRecord) -> Effective {
        Effective {
            shares: (rec.shares, name.to_string()),
            timeout: (rec.timeout_ms, name.to_string()),
            workload_type: (
                rec.workload_type.as_deref().and_then(WorkloadType::parse),
                name.to_string(),
            ),
        }
    }

    /// ScyllaDB's `merge_with`: an option changes (and takes `other`'s level name) only
    /// when `other` wins it, so ties keep the first level in role-name order.
    fn merge(&mut self, other: Effective) {
        match (self.timeout.0, other.timeout.0) {
            (None, _) => self.timeout = other.timeout,
            (Some(a), Some(b)) if b < a => self.timeout = other.timeout,
            _ => {}
        }
        // ScyllaDB's order: unspecified < batch < interactive; a specified type beats an
        // unspecified one, else the lower wins.
        let rank = |w: Option<WorkloadType>| match w {
            None => 0,
            Some(WorkloadType::Batch) => 1,
            Some(WorkloadType::Interactive) => 2,
        };
        let (a, b) = (rank(self.workload_type.0), rank(other.workload_type.0));
        let merged = if a == 0 || b == 0 { a.max(b) } else { a.min(b) };
        if merged != a {
            self.workload_type = other.workload_type;
        }
        if other.shares.0 < self.shares.0 {
            self.shares = other.shares;
        }
    }
}

/// Resolved levels by role, valid for one records generation and one roles snapshot.
#[derive(Default)]
struct Cache {
    generation: u64,
    roles: Option<Arc<AuthState>>,
    by_role: HashMap<String, Level>,
}

pub struct ServiceLevels {
    storage: Arc<dyn Storage>,
    records: RwLock<Arc<Records>>,
    /// Whether any service level exists (the scheduler's switch).
    any: AtomicBool,
    generation: AtomicU64,
    write: Mutex<()>,
    cache: Mutex<Cache>,
}

impl ServiceLevels {
    pub(crate) fn open(storage: Arc<dyn Storage>) -> Result<Self, DbError> {
        let records: Records = match storage
            .get(KEY)
            .map_err(|e| DbError::server(e.to_string()))?
        {
            Some(b) => serde_json::from_slice(&b).map_err(|e| {
                DbError::server(format!("cannot read the stored service levels: {e}"))
            })?,
            None => Records::default(),
        };
        Ok(ServiceLevels {
            storage,
            any: AtomicBool::new(!records.levels.is_empty()),
            records: RwLock::new(Arc::new(records)),
            generation: AtomicU64::new(1),
            write: Mutex::new(()),
            cache: Mutex::new(Cache::default()),
        })
    }

    /// True once any service level exists.
    #[inline]
    pub fn active(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    pub fn records(&self) -> Arc<Records> {
        self.records
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Applies `f` to a copy of the records, persists it (synced), then publishes it.
    fn change<T>(&self, f: impl FnOnce(&mut Records) -> Result<T, DbError>) -> Result<T, DbError> {
        let _g = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = (*self.records()).clone();
        let out = f(&mut next)?;
        let bytes = serde_json::to_vec(&next).map_err(|e| DbError::server(e.to_string()))?;
        let mut b = storage::WriteBatch::new();
        b.put(KEY.to_vec(), bytes);
        self.storage
            .write(b)
            .and_then(|()| self.storage.sync())
            .map_err(|e| DbError::server(format!("writing service levels: {e}")))?;
        self.any.store(!next.levels.is_empty(), Ordering::Relaxed);
        *self.records.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(out)
    }

    /// The level `role` runs at (see the module docs): `None` when no service level exists
    /// (one atomic load), the `default` level for a role with none or no role.
    pub fn level_of(
        &self,
        role: Option<&str>,
        roles: impl FnOnce() -> Arc<AuthState>,
    ) -> Option<Level> {
        if !self.active() {
            return None;
        }
        let Some(role) = role else {
            return Some(Level::default_level());
        };
        let generation = self.generation.load(Ordering::Acquire);
        let auth = roles();
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = cache.generation == generation
            && cache.roles.as_ref().is_some_and(|r| Arc::ptr_eq(r, &auth));
        if !fresh {
            cache.by_role.clear();
            cache.generation = generation;
            cache.roles = Some(auth.clone());
        }
        if let Some(l) = cache.by_role.get(role) {
            return Some(l.clone());
        }
        let level = resolve(&self.records(), &auth, role);
        cache.by_role.insert(role.to_string(), level.clone());
        Some(level)
    }

    /// Forgets the attachment of a dropped role (ScyllaDB drops a role's attributes with it).
    pub(crate) fn role_dropped(&self, role: &str) -> Result<(), DbError> {
        if !self.records().attached.contains_key(role) {
            return Ok(());
        }
        self.change(|r| {
            r.attached.remove(role);
            Ok(())
        })
    }
}

/// ScyllaDB's merge over the levels attached to the role and to every role granted to it,
/// in role-name order (so the answer never depends on hashing); `None`: no level.
fn effective(records: &Records, roles: &AuthState, role: &str) -> Option<Effective> {
    let mut out: Option<Effective> = None;
    for r in roles.roles_of(role, true) {
        let Some((name, rec)) = records
            .attached
            .get(&r)
            .and_then(|l| records.levels.get_key_value(l))
        else {
            continue;
        };
        let next = Effective::of(name, rec);
        match &mut out {
            None => out = Some(next),
            Some(e) => e.merge(next),
        }
    }
    out
}

/// The level `role` runs at: the merge's shares (named after the level that gave them) and
/// timeout.
fn resolve(records: &Records, roles: &AuthState, role: &str) -> Level {
    match effective(records, roles, role) {
        Some(e) => Level {
            name: Arc::from(e.shares.1.as_str()),
            shares: e.shares.0,
            timeout: e.timeout.0.map(Duration::from_millis),
        },
        None => Level::default_level(),
    }
}

/// The permission a statement needs on ScyllaDB's `<all service_levels>` resource.
fn permission_of(st: &ServiceLevelStatement) -> &'static str {
    use ServiceLevelStatement as S;
    match st {
        S::Create { .. } => "CREATE",
        S::Alter { .. } => "ALTER",
        S::Drop { .. } => "DROP",
        S::Attach { .. } | S::Detach { .. } => "AUTHORIZE",
        S::List { .. } | S::ListAttached { .. } | S::ListEffective { .. } => "DESCRIBE",
    }
}

impl Engine {
    /// The level requests of `role` run at; `None` while no service level exists.
    pub fn service_level_of(&self, role: Option<&str>) -> Option<Level> {
        self.service_levels.level_of(role, || self.auth().state())
    }

    pub fn service_levels(&self) -> &ServiceLevels {
        &self.service_levels
    }

    /// Runs a service level statement for the logged-in `role` (`None`: logins are off).
    pub(crate) fn service_level_statement(
        &self,
        role: Option<&str>,
        st: &ServiceLevelStatement,
    ) -> Result<Outcome, DbError> {
        use ServiceLevelStatement as S;
        // ScyllaDB checks no permission for LIST EFFECTIVE (any logged-in role may ask).
        if !matches!(st, S::ListEffective { .. }) {
            self.check_service_level_access(role, st)?;
        }
        let sl = &self.service_levels;
        match st {
            S::Create {
                name,
                if_not_exists,
                options,
            } => {
                if name.starts_with('$') {
                    return Err(DbError::invalid(
                        "Names starting with '$' are reserved for internal tenants. Use a different name.",
                    ));
                }
                sl.change(|r| {
                    if r.levels.contains_key(name) {
                        if *if_not_exists {
                            return Ok(());
                        }
                        return Err(DbError::invalid(format!(
                            "The service level '{name}' already exists."
                        )));
                    }
                    if r.levels.len() >= MAX_LEVELS {
                        return Err(DbError::invalid(
                            "Can't create service level - no more scheduling groups exist",
                        ));
                    }
                    let mut rec = LevelRecord {
                        shares: DEFAULT_SHARES,
                        workload_type: None,
                        timeout_ms: None,
                    };
                    apply(&mut rec, options)?;
                    r.levels.insert(name.clone(), rec);
                    Ok(())
                })?;
                Ok(Outcome::Void)
            }
            S::Alter { name, options } => {
                sl.change(|r| match r.levels.get_mut(name) {
                    Some(rec) => apply(rec, options),
                    None => Err(DbError::invalid(format!(
                        "The service level '{name}' doesn't exist."
                    ))),
                })?;
                Ok(Outcome::Void)
            }
            S::Drop { name, if_exists } => {
                if !sl.records().levels.contains_key(name) {
                    return if *if_exists {
                        Ok(Outcome::Void)
                    } else {
                        Err(nonexistent(name))
                    };
                }
                sl.change(|r| {
                    r.levels.remove(name);
                    // Roles attached to it fall back to what they inherit, or `default`.
                    r.attached.retain(|_, l| l != name);
                    Ok(())
                })?;
                Ok(Outcome::Void)
            }
            S::Attach { level, role: to } => {
                if !sl.records().levels.contains_key(level) {
                    return Err(nonexistent(level));
                }
                self.role_must_exist(to)?;
                sl.change(|r| {
                    r.attached.insert(to.clone(), level.clone());
                    Ok(())
                })?;
                Ok(Outcome::Void)
            }
            S::Detach { role: from } => {
                self.role_must_exist(from)?;
                if sl.records().attached.contains_key(from) {
                    sl.change(|r| {
                        r.attached.remove(from);
                        Ok(())
                    })?;
                }
                Ok(Outcome::Void)
            }
            S::List { name } => Ok(list_levels(&sl.records(), name.as_deref())),
            S::ListAttached { role: of } => Ok(list_attached(&sl.records(), of.as_deref())),
            S::ListEffective { role: of } => {
                self.role_must_exist(of)?;
                let e = effective(&sl.records(), &self.auth().state(), of).ok_or_else(|| {
                    DbError::invalid(format!("Role {of} doesn't have assigned any service level"))
                })?;
                Ok(list_effective(&e))
            }
        }
    }

    /// ScyllaDB checks every service level statement against `<all service_levels>`:
    /// anything goes without an authorizer; with one, a superuser may do all of them.
    fn check_service_level_access(
        &self,
        role: Option<&str>,
        st: &ServiceLevelStatement,
    ) -> Result<(), DbError> {
        if !self.auth().authorizing() {
            return Ok(());
        }
        let Some(user) = role else {
            return Err(DbError::unauthorized("You have not logged in"));
        };
        if self.auth().state().is_superuser(user) {
            return Ok(());
        }
        Err(DbError::unauthorized(format!(
            "User {user} has no {} permission on <all service_levels> or any of its parents",
            permission_of(st)
        )))
    }

    fn role_must_exist(&self, role: &str) -> Result<(), DbError> {
        if self.auth().state().roles.contains_key(role) {
            Ok(())
        } else {
            Err(DbError::invalid(format!("Role {role} doesn't exist.")))
        }
    }
}

fn nonexistent(name: &str) -> DbError {
    DbError::invalid(format!("Service Level {name} doesn't exists."))
}

/// Sets the options given; the timeout is checked first, so a bad one changes nothing.
fn apply(rec: &mut LevelRecord, o: &ServiceLevelOptions) -> Result<(), DbError> {
    let timeout = match &o.timeout {
        Some(Some(text)) => Some(Some(timeout_ms(text)?)),
        Some(None) => Some(None),
        None => None,
    };
    if let Some(s) = o.shares {
        rec.shares = s;
    }
    if let Some(w) = o.workload_type {
        rec.workload_type = w.map(|w: WorkloadType| w.as_str().to_string());
    }
    if let Some(t) = timeout {
        rec.timeout_ms = t;
    }
    Ok(())
}

/// A `timeout` value as ScyllaDB's `sl_prop_defs::validate` takes it: a duration of whole
/// milliseconds, no days or months, not negative.
fn timeout_ms(text: &str) -> Result<u64, DbError> {
    let (months, days, nanos) = crate::temporal::parse_duration(text).map_err(DbError::invalid)?;
    if months != 0 || days != 0 {
        return Err(DbError::invalid(
            "Timeout values cannot be expressed in days/months",
        ));
    }
    if nanos % 1_000_000 != 0 {
        return Err(DbError::invalid(
            "Timeout values must be expressed in millisecond granularity",
        ));
    }
    if nanos < 0 {
        return Err(DbError::invalid("Timeout values must be nonnegative"));
    }
    Ok((nanos / 1_000_000) as u64)
}

/// A timeout as the duration `LIST SERVICE LEVEL` shows (the protocol's duration bytes).
fn timeout_cell(ms: u64) -> Vec<u8> {
    proto::value::to_bytes(&proto::types::Value::Duration {
        months: 0,
        days: 0,
        nanos: ms as i64 * 1_000_000,
    })
}

/// `LIST SERVICE LEVEL name` (`Some`) / `LIST ALL SERVICE LEVELS`: ScyllaDB's columns, by
/// name; the second adds each level's percentage of all the listed levels' shares.
fn list_levels(records: &Records, name: Option<&str>) -> Outcome {
    let mut columns = vec![
        ("service_level", ColumnType::Varchar),
        ("timeout", ColumnType::Duration),
        ("workload_type", ColumnType::Varchar),
        ("shares", ColumnType::Int),
    ];
    if name.is_none() {
        columns.push((
            "percentage of all service level shares",
            ColumnType::Varchar,
        ));
    }
    let total: u64 = records.levels.values().map(|l| u64::from(l.shares)).sum();
    let mut rows = ListRows::default();
    for (n, l) in &records.levels {
        if name.is_some_and(|x| x != n) {
            continue;
        }
        let shares = (l.shares as i32).to_be_bytes();
        let pct = format!("{:.2}%", 100.0 * f64::from(l.shares) / total.max(1) as f64);
        let timeout = l.timeout_ms.map(timeout_cell);
        let mut cells = vec![
            Some(n.as_bytes()),
            timeout.as_deref(),
            l.workload_type.as_deref().map(str::as_bytes),
            Some(&shares[..]),
        ];
        if name.is_none() {
            cells.push(Some(pct.as_bytes()));
        }
        rows.push(&cells);
    }
    // ScyllaDB's result: keyspace `QOS`, its columns even with no rows.
    rows.into_rows("QOS", "service_levels", &columns)
}

/// `LIST ATTACHED SERVICE LEVEL OF role` / `LIST ALL ATTACHED SERVICE LEVELS`: the levels
/// attached directly (not inherited), by role name.
fn list_attached(records: &Records, role: Option<&str>) -> Outcome {
    let mut rows = ListRows::default();
    for (r, l) in &records.attached {
        if role.is_some_and(|x| x != r) {
            continue;
        }
        rows.push(&[Some(r.as_bytes()), Some(l.as_bytes())]);
    }
    rows.into_rows(
        "QOS",
        "service_levels_attachments",
        &[
            ("role", ColumnType::Varchar),
            ("service_level", ColumnType::Varchar),
        ],
    )
}

/// `LIST EFFECTIVE SERVICE LEVEL OF role`: ScyllaDB's three rows (`workload_type`,
/// `timeout`, `shares`), each with the level that gave it and its value as text.
fn list_effective(e: &Effective) -> Outcome {
    let workload = e
        .workload_type
        .0
        .map_or("unspecified", WorkloadType::as_str);
    let timeout = e
        .timeout
        .0
        .map(|ms| crate::javafmt::format_duration(0, 0, ms as i64 * 1_000_000));
    let shares = e.shares.0.to_string();
    let mut rows = ListRows::default();
    rows.push(&[
        Some(&b"workload_type"[..]),
        Some(e.workload_type.1.as_bytes()),
        Some(workload.as_bytes()),
    ]);
    rows.push(&[
        Some(&b"timeout"[..]),
        Some(e.timeout.1.as_bytes()),
        timeout.as_deref().map(str::as_bytes),
    ]);
    rows.push(&[
        Some(&b"shares"[..]),
        Some(e.shares.1.as_bytes()),
        Some(shares.as_bytes()),
    ]);
    rows.into_rows(
        "QOS",
        "effective_service_level",
        &[
            ("service_level_option", ColumnType::Varchar),
            ("effective_service_level", ColumnType::Varchar),
            ("value", ColumnType::Varchar),
        ],
    )
}

#[cfg(test)]
mod tests;
