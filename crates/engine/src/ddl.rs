//! Schema changes: CREATE/ALTER/DROP KEYSPACE and TABLE, TRUNCATE. Each produces a new
//! immutable [`Schema`] that is persisted before it becomes visible; `Engine::ddl` runs the
//! statement (its checks and locks), `Engine::install` persists and publishes the result.

use crate::catalog::*;
use crate::{auth, catalog, index, scalar, system, view};
use crate::{
    statement_kind, EngineError, Now, Outcome, Prepared, QueryOptions, SchemaChange,
    SchemaChangeType, SCHEMA_KEY,
};
use cql::ast::{self, CqlType, Property};
use proto::types::ColumnType;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

mod compaction;
mod compression;
mod keyspace;
mod options;
mod readd;
mod retry;
pub(crate) mod table_id;

pub const SYSTEM_KEYSPACES: &[&str] = &[
    "system",
    "system_schema",
    "system_auth",
    "system_distributed",
    "system_traces",
    "system_views",
    "system_virtual_schema",
];

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 48
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The `replication` map of keyspace `ks` from `props` (or its `existing` one), checked as
/// Cassandra 5.0.9 checks it (`keyspace`).
pub fn replication(
    props: &[Property],
    existing: Option<&BTreeMap<String, String>>,
    ks: &str,
) -> Result<BTreeMap<String, String>, EngineError> {
    keyspace::replication(props, existing, ks)
}

/// A column's type as Cassandra spells it in DESCRIBE and `system_schema.columns`: a tuple is
/// always frozen, and says so.
fn column_type_text(ty: &CqlType) -> String {
    match ty {
        CqlType::Tuple(_) => format!("frozen<{ty}>"),
        _ => ty.to_string(),
    }
}

/// Applies `WITH` properties of an ALTER (TABLE or MATERIALIZED VIEW) to table options, with
/// Cassandra's checks (`options`); a table id, read last, cannot be altered.
pub fn apply_table_properties(
    opts: &mut TableOptions,
    props: &[Property],
) -> Result<(), EngineError> {
    match options::apply(opts, props, false)? {
        Some(_) => Err(EngineError::config("Cannot alter table id.")),
        None => Ok(()),
    }
}

/// Cassandra's answer to a name without a keyspace in a session without one.
pub(crate) const NO_KEYSPACE: &str =
    "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename";

/// The keyspace `name` is in: its own, or the session's (`ks_default`), else Cassandra's error.
pub(crate) fn keyspace_of(
    name: &ast::QualifiedName,
    ks_default: Option<&str>,
) -> Result<String, EngineError> {
    name.keyspace
        .as_deref()
        .or(ks_default)
        .map(str::to_string)
        .ok_or_else(|| EngineError::invalid(NO_KEYSPACE))
}

/// The protocol type of a CQL type, with user types resolved in `schema`.
pub fn resolve_type(schema: &Schema, ks: &str, ty: &CqlType) -> Result<ColumnType, EngineError> {
    resolve_depth(schema, ks, ty, 0)
}

fn resolve_depth(
    schema: &Schema,
    ks: &str,
    ty: &CqlType,
    depth: usize,
) -> Result<ColumnType, EngineError> {
    if depth > 16 {
        return Err(EngineError::invalid(format!(
            "Type {ty} nests user types too deeply"
        )));
    }
    let mut missing: Option<String> = None;
    let mut err: Option<EngineError> = None;
    let out = ty.to_column_type(&mut |name| {
        // A user type lives in the statement's keyspace only (`int.x` names keyspace `int`).
        if let Some(other) = name.keyspace.as_deref().filter(|k| *k != ks) {
            err = Some(EngineError::invalid(format!(
                "Statement on keyspace {ks} cannot refer to a user type in keyspace {other}; user types can only be used in the keyspace they are defined in"
            )));
            return None;
        }
        let k = name.keyspace.clone().unwrap_or_else(|| ks.to_string());
        let Some(u) = schema.types.get(&(k.clone(), name.name.clone())) else {
            missing = Some(name.name.clone());
            return None;
        };
        let mut fields = Vec::new();
        for (f, t) in &u.fields {
            let parsed = match cql::parse_type(t) {
                Ok(p) => p,
                Err(e) => {
                    err = Some(EngineError::server(format!("stored type {t}: {e}")));
                    return None;
                }
            };
            match resolve_depth(schema, &k, &parsed, depth + 1) {
                Ok(ct) => fields.push((f.clone(), ct)),
                Err(e) => {
                    err = Some(e);
                    return None;
                }
            }
        }
        Some(ColumnType::Udt {
            keyspace: k,
            name: u.name.clone(),
            fields,
        })
    });
    if let Some(e) = err {
        return Err(e);
    }
    out.ok_or_else(|| match missing {
        Some(name) => EngineError::invalid(format!("Unknown type {ks}.{name}")),
        None => EngineError::invalid(format!("Unknown type {ty}")),
    })
}

/// Cassandra's refusal of a user type field of a non-frozen user type.
const NON_FROZEN_UDT_FIELD: &str = "A user type cannot contain non-frozen UDTs";

/// 5.0.9's checks of a user type's field, field by field before any is prepared.
fn check_field_type(t: &CqlType) -> Result<(), EngineError> {
    match t {
        CqlType::Native(ColumnType::Counter) => {
            Err(EngineError::invalid("A user type cannot contain counters"))
        }
        CqlType::UserDefined(_) => Err(EngineError::invalid(NON_FROZEN_UDT_FIELD)),
        _ => Ok(()),
    }
}

pub fn create_type(
    schema: &Schema,
    ks_default: Option<&str>,
    ct: &ast::CreateType,
) -> Result<Option<(Schema, SchemaChange)>, EngineError> {
    let ks = ct.name.keyspace.as_deref().or(ks_default).ok_or_else(|| EngineError::invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.typename"))?.to_string();
    if !schema.keyspaces.contains_key(&ks) {
        return Err(EngineError::invalid(format!(
            "Keyspace '{ks}' doesn't exist"
        )));
    }
    let name = ct.name.name.clone();
    if schema.types.contains_key(&(ks.clone(), name.clone())) {
        if ct.if_not_exists {
            return Ok(None);
        }
        return Err(EngineError::invalid(format!(
            "A user type with name '{name}' already exists"
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for (f, _) in &ct.fields {
        if !seen.insert(f.clone()) {
            return Err(EngineError::invalid(format!(
                "Duplicate field name '{f}' in type '{name}'"
            )));
        }
    }
    for (_, t) in &ct.fields {
        check_field_type(t)?;
    }
    let mut fields = Vec::new();
    for (f, t) in &ct.fields {
        check_type_allowed(t)?;
        resolve_type(schema, &ks, t)?;
        fields.push((f.clone(), t.to_string()));
    }
    let mut next = schema.clone();
    next.types.insert(
        (ks.clone(), name.clone()),
        Arc::new(UdtDef {
            keyspace: ks.clone(),
            name: name.clone(),
            fields,
        }),
    );
    Ok(Some((
        next,
        crate::type_change(SchemaChangeType::Created, ks, name),
    )))
}

pub fn alter_type(
    schema: &Schema,
    ks_default: Option<&str>,
    at: &ast::AlterType,
) -> Result<Option<(Schema, SchemaChange)>, EngineError> {
    let ks = at
        .name
        .keyspace
        .as_deref()
        .or(ks_default)
        .ok_or_else(|| EngineError::invalid("No keyspace has been specified"))?
        .to_string();
    let Some(u) = schema.types.get(&(ks.clone(), at.name.name.clone())) else {
        if at.if_exists {
            return Ok(None);
        }
        return Err(EngineError::invalid(format!(
            "Type {ks}.{} doesn't exist",
            at.name.name
        )));
    };
    let mut u = (**u).clone();
    match &at.action {
        ast::AlterTypeAction::Add {
            if_not_exists,
            field,
            ty,
        } => {
            if u.fields.iter().any(|(f, _)| f == field) {
                if *if_not_exists {
                    return Ok(None);
                }
                return Err(EngineError::invalid(format!("Cannot add field {field} to type {ks}.{}: a field with name {field} already exists", u.name)));
            }
            check_field_type(ty)?;
            check_type_allowed(ty)?;
            resolve_type(schema, &ks, ty)?;
            u.fields.push((field.clone(), ty.to_string()));
        }
        ast::AlterTypeAction::Rename { if_exists, renames } => {
            // Each field found by its name before the renames (`a TO b AND b TO a` swaps them).
            let before: Vec<String> = u.fields.iter().map(|(f, _)| f.clone()).collect();
            for (from, to) in renames {
                match before.iter().position(|f| f == from) {
                    Some(i) => u.fields[i].0 = to.clone(),
                    None if *if_exists => {}
                    None => {
                        return Err(EngineError::invalid(format!(
                            "Unkown field {from} in user type {ks}.{}",
                            u.name
                        )))
                    }
                }
            }
            // Cassandra 5.0.9's message names the keyspace where it means the type.
            for (i, (f, _)) in u.fields.iter().enumerate() {
                if u.fields[..i].iter().any(|(g, _)| g == f) {
                    return Err(EngineError::invalid(format!(
                        "Duplicate field name {f} in type {ks}"
                    )));
                }
            }
        }
        ast::AlterTypeAction::AlterFieldType { .. } => {
            return Err(EngineError::invalid(
                "Altering field types is no longer supported",
            ))
        }
    }
    let mut next = schema.clone();
    let name = u.name.clone();
    next.types.insert((ks.clone(), name.clone()), Arc::new(u));
    // Tables using the type see the new fields.
    let tables: Vec<_> = next.tables.values().cloned().collect();
    for t in tables {
        let mut t2 = (*t).clone();
        let mut changed = false;
        for c in &mut t2.columns {
            if c.cql_type.contains(&name) {
                if let Ok(parsed) = cql::parse_type(&c.cql_type) {
                    c.ty = resolve_type(&next, &t2.keyspace, &parsed)?;
                    changed = true;
                }
            }
        }
        if changed {
            next.tables
                .insert((t2.keyspace.clone(), t2.name.clone()), Arc::new(t2));
        }
    }
    Ok(Some((
        next,
        crate::type_change(SchemaChangeType::Updated, ks, name),
    )))
}

pub fn drop_type(
    schema: &Schema,
    ks_default: Option<&str>,
    name: &ast::QualifiedName,
    if_exists: bool,
) -> Result<Option<(Schema, SchemaChange)>, EngineError> {
    let ks = name
        .keyspace
        .as_deref()
        .or(ks_default)
        .ok_or_else(|| EngineError::invalid("No keyspace has been specified"))?
        .to_string();
    if !schema.types.contains_key(&(ks.clone(), name.name.clone())) {
        if if_exists {
            return Ok(None);
        }
        return Err(EngineError::invalid(format!(
            "Type '{ks}.{}' doesn't exist",
            name.name
        )));
    }
    // Cassandra's DropTypeStatement: the user types that nest it, then the tables that use it
    // (all of them named, by name).
    let uses = |text: &str| matches!(cql::parse_type(text), Ok(ref p) if uses_type(p, &name.name));
    let nesting: Vec<&str> = schema
        .types
        .iter()
        .filter(|((k, n), u)| *k == ks && *n != name.name && u.fields.iter().any(|(_, f)| uses(f)))
        .map(|((_, n), _)| n.as_str())
        .collect();
    let using: Vec<&str> = schema
        .tables_of(&ks)
        .filter(|t| t.view.is_none() && t.columns.iter().any(|c| uses(&c.cql_type)))
        .map(|t| t.name.as_str())
        .collect();
    for (what, names) in [("user types", nesting), ("tables", using)] {
        if !names.is_empty() {
            return Err(EngineError::invalid(format!(
                "Cannot drop user type '{ks}.{}' as it is still used by {what} {}",
                name.name,
                names.join(", ")
            )));
        }
    }
    let mut next = schema.clone();
    next.types.remove(&(ks.clone(), name.name.clone()));
    Ok(Some((
        next,
        crate::type_change(SchemaChangeType::Dropped, ks, name.name.clone()),
    )))
}

fn uses_type(t: &CqlType, name: &str) -> bool {
    match t {
        CqlType::UserDefined(q) => q.name == name,
        CqlType::List(e) | CqlType::Set(e) | CqlType::Frozen(e) | CqlType::Vector(e, _) => {
            uses_type(e, name)
        }
        CqlType::Map(k, v) => uses_type(k, name) || uses_type(v, name),
        CqlType::Tuple(ts) => ts.iter().any(|t| uses_type(t, name)),
        _ => false,
    }
}

/// What 5.0.9 refuses as it prepares a declared type (`CQL3Type.Raw.prepare`): a non-frozen
/// collection or user type inside a collection, a counter inside a collection or a tuple, each
/// naming the collection as written (a map's value checked before its key); what `frozen<..>`
/// or a tuple holds is frozen. Collections are checked outside in.
fn check_type_allowed(ty: &CqlType) -> Result<(), EngineError> {
    check_raw_type(ty, false)
}

fn check_raw_type(ty: &CqlType, frozen: bool) -> Result<(), EngineError> {
    let counter = |t: &CqlType| matches!(t, CqlType::Native(ColumnType::Counter));
    let (key, value) = match ty {
        CqlType::Frozen(inner) => return check_raw_type(inner, true),
        CqlType::Tuple(items) => {
            for t in items {
                if counter(t) {
                    return Err(EngineError::invalid(
                        "Counters are not allowed inside tuples",
                    ));
                }
                check_raw_type(t, true)?;
            }
            return Ok(());
        }
        CqlType::Map(k, v) => (Some(&**k), &**v),
        CqlType::List(e) | CqlType::Set(e) => (None, &**e),
        _ => return Ok(()),
    };
    let shown = || match frozen {
        true => format!("frozen<{}>", as_written(ty)),
        false => as_written(ty),
    };
    let nested = |e: &CqlType| {
        let what = match e {
            CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..) => "collections",
            CqlType::UserDefined(_) => "UDTs",
            _ => return Ok(()),
        };
        match frozen {
            true => Ok(()),
            false => Err(EngineError::invalid(format!(
                "Non-frozen {what} are not allowed inside collections: {}",
                shown()
            ))),
        }
    };
    nested(value)?;
    if counter(value) || key.is_some_and(counter) {
        return Err(EngineError::invalid(format!(
            "Counters are not allowed inside collections: {}",
            shown()
        )));
    }
    if let Some(k) = key {
        nested(k)?;
    }
    check_raw_type(value, frozen)?;
    match key {
        Some(k) => check_raw_type(k, frozen),
        None => Ok(()),
    }
}

/// A type as Cassandra prints a raw (unresolved) type: user types named as written, unquoted
/// (`list<int.x>`).
fn as_written(ty: &CqlType) -> String {
    match ty {
        CqlType::UserDefined(n) => match &n.keyspace {
            Some(ks) => format!("{ks}.{}", n.name),
            None => n.name.clone(),
        },
        CqlType::List(e) => format!("list<{}>", as_written(e)),
        CqlType::Set(e) => format!("set<{}>", as_written(e)),
        CqlType::Map(k, v) => format!("map<{}, {}>", as_written(k), as_written(v)),
        CqlType::Frozen(e) if !matches!(**e, CqlType::Vector(..)) => {
            format!("frozen<{}>", as_written(e))
        }
        CqlType::Tuple(items) => format!(
            "tuple<{}>",
            items.iter().map(as_written).collect::<Vec<_>>().join(", ")
        ),
        CqlType::Vector(e, n) => format!("vector<{}, {n}>", as_written(e)),
        other => other.to_string(),
    }
}

pub fn create_table(
    schema: &Schema,
    ks_default: Option<&str>,
    ct: &ast::CreateTable,
    now_micros: i64,
) -> Result<Option<(Schema, SchemaChange)>, EngineError> {
    let ks = keyspace_of(&ct.name, ks_default)?;
    if !schema.keyspaces.contains_key(&ks) {
        return Err(EngineError::invalid(format!(
            "Keyspace '{ks}' doesn't exist"
        )));
    }
    let name = ct.name.name.clone();
    if schema.table(&ks, &name).is_some() {
        if ct.if_not_exists {
            return Ok(None);
        }
        return Err(EngineError::already_exists(&ks, Some(&name)));
    }
    if !valid_name(&name) {
        return Err(EngineError::invalid(format!("Table name must not be empty, more than 48 characters long, or contain non-alphanumeric-underscore characters (got \"{name}\")")));
    }
    if ct.partition_key.is_empty() {
        return Err(EngineError::invalid(
            "No PRIMARY KEY specifed for table (exactly one required)",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for c in &ct.columns {
        if !seen.insert(c.name.clone()) {
            return Err(EngineError::invalid(format!(
                "Duplicate column '{}' declaration for table '{ks}.{name}'",
                c.name
            )));
        }
    }
    // Cassandra prepares the column types in the order of the columns' names: the first
    // refusal (a non-frozen type in a collection, a user type unknown or of another
    // keyspace) is that of the first name.
    let mut by_name: Vec<&ast::ColumnDef> = ct.columns.iter().collect();
    by_name.sort_by(|a, b| a.name.cmp(&b.name));
    for c in by_name {
        check_type_allowed(&c.ty)?;
        resolve_type(schema, &ks, &c.ty)?;
    }
    let mut columns = Vec::new();
    for (i, c) in ct.columns.iter().enumerate() {
        let ty = resolve_type(schema, &ks, &c.ty)?;
        let (kind, position) = if let Some(p) = ct.partition_key.iter().position(|n| *n == c.name) {
            (ColumnKind::PartitionKey, p as i32)
        } else if let Some(p) = ct.clustering_columns.iter().position(|n| *n == c.name) {
            (ColumnKind::Clustering, p as i32)
        } else if c.is_static {
            (ColumnKind::Static, -1)
        } else {
            (ColumnKind::Regular, -1)
        };
        if c.is_static && kind != ColumnKind::Static {
            return Err(EngineError::invalid(format!(
                "Static column {} cannot be part of the PRIMARY KEY",
                c.name
            )));
        }
        if c.is_static && ct.clustering_columns.is_empty() && !ct.options.compact_storage {
            return Err(EngineError::invalid("Static columns are only useful (and thus allowed) if the table has at least one clustering column"));
        }
        let is_key = matches!(kind, ColumnKind::PartitionKey | ColumnKind::Clustering);
        if is_key && matches!(c.ty, CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..)) {
            return Err(EngineError::invalid(format!(
                "Invalid non-frozen collection type {} for PRIMARY KEY component {}",
                c.ty, c.name
            )));
        }
        if is_key && contains_duration(&ty) {
            return Err(EngineError::invalid(format!(
                "duration type is not supported for PRIMARY KEY column '{}'",
                c.name
            )));
        }
        columns.push(ColumnDef {
            name: c.name.clone(),
            cql_type: column_type_text(&c.ty),
            ty,
            kind,
            position,
            desc: false,
            id: i as u16,
            mask: None,
        });
        if let Some(m) = &c.mask {
            let last = columns.len() - 1;
            columns[last].mask = Some(crate::masking::prepare(
                &c.name,
                &columns[last].ty,
                m,
                Now::at_micros(now_micros),
            )?);
        }
    }
    for k in ct.partition_key.iter().chain(&ct.clustering_columns) {
        if !columns.iter().any(|c| c.name == *k) {
            return Err(EngineError::invalid(format!(
                "Unknown definition {k} referenced in PRIMARY KEY"
            )));
        }
    }
    let mut seen_keys = std::collections::HashSet::new();
    for k in ct.partition_key.iter().chain(&ct.clustering_columns) {
        if !seen_keys.insert(k) {
            return Err(EngineError::invalid(format!(
                "Duplicate definition for {k} in PRIMARY KEY"
            )));
        }
    }
    if ct.options.compact_storage {
        crate::compact::check_create(ct, &mut columns)?;
    }
    let counters = columns
        .iter()
        .filter(|c| c.ty == ColumnType::Counter)
        .count();
    let non_key = columns
        .iter()
        .filter(|c| matches!(c.kind, ColumnKind::Regular | ColumnKind::Static))
        .count();
    if counters > 0 && counters != non_key {
        return Err(EngineError::invalid(
            "Cannot mix counter and non counter columns in the same table",
        ));
    }
    if columns.iter().any(|c| {
        c.ty == ColumnType::Counter
            && matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering)
    }) {
        return Err(EngineError::invalid(
            "counter type is not supported for PRIMARY KEY column",
        ));
    }
    let order = &ct.options.clustering_order;
    for (i, (col, o)) in order.iter().enumerate() {
        if ct.clustering_columns.get(i) != Some(col) {
            if !ct.clustering_columns.contains(col) {
                return Err(EngineError::invalid(format!("Only clustering key columns can be defined in CLUSTERING ORDER directive: {col} is not a clustering column")));
            }
            return Err(EngineError::invalid("The order of columns in the CLUSTERING ORDER directive must match that of the clustering columns"));
        }
        if let Some(c) = columns.iter_mut().find(|c| c.name == *col) {
            c.desc = *o == ast::Order::Desc;
        }
    }
    if !order.is_empty() && order.len() < ct.clustering_columns.len() {
        return Err(EngineError::invalid(format!(
            "Missing CLUSTERING ORDER for column {}",
            ct.clustering_columns[order.len()]
        )));
    }
    let (options, uuid) = options::new_table(&ct.options.properties)?;
    if let Some(id) = uuid {
        table_id::check_unique(id, (&ks, &name), schema.tables.values().map(|t| &**t))?;
    }
    let mut next = schema.clone();
    let id = next.next_table_id.max(1);
    next.next_table_id = id + 1;
    let mut t = TableDef {
        keyspace: ks.clone(),
        name: name.clone(),
        id,
        uuid: uuid.unwrap_or_else(|| crate::scalar::timeuuid_now(now_micros)),
        next_column_id: columns.len() as u16,
        columns,
        options,
        dropped: Vec::new(),
        indexes: Vec::new(),
        view: None,
        compact: ct.options.compact_storage,
    };
    t.sort_columns();
    next.tables.insert((ks.clone(), name.clone()), Arc::new(t));
    Ok(Some((
        next,
        crate::table_change(SchemaChangeType::Created, &ks, &name),
    )))
}

pub fn alter_table(
    schema: &Schema,
    ks_default: Option<&str>,
    at: &ast::AlterTable,
    now_micros: i64,
    drop_compact_storage_enabled: bool,
) -> Result<Option<(Schema, SchemaChange)>, EngineError> {
    let ks = keyspace_of(&at.name, ks_default)?;
    // An unknown keyspace is an unknown table here, as in Cassandra ("Table 'ks.t' doesn't
    // exist", and nothing with IF EXISTS).
    let Some(t) = schema.table(&ks, &at.name.name) else {
        if at.if_exists {
            return Ok(None);
        }
        return Err(EngineError::invalid(format!(
            "Table '{ks}.{}' doesn't exist",
            at.name.name
        )));
    };
    crate::view::ddl::check_alter_table(t)?;
    let mut t = (**t).clone();
    match &at.action {
        ast::AlterTableAction::Add {
            if_not_exists,
            columns,
        } => {
            let counter_table = t.columns.iter().any(|c| c.ty == ColumnType::Counter);
            for c in columns {
                if t.column(&c.name).is_some() {
                    if *if_not_exists {
                        continue;
                    }
                    return Err(EngineError::invalid(format!(
                        "Column with name '{}' already exists",
                        c.name
                    )));
                }
                crate::compact::check_add_column(&t)?;
                check_type_allowed(&c.ty)?;
                if c.is_static && t.clustering_count() == 0 {
                    return Err(EngineError::invalid(
                        "Static columns are only useful (and thus allowed) if the table has at least one clustering column",
                    ));
                }
                let ty = resolve_type(schema, &ks, &c.ty)?;
                if let Some(d) = t.dropped.iter().find(|d| d.name == c.name) {
                    let (new, old) = (column_type_text(&c.ty), &d.cql_type);
                    let readds = cql::parse_type(old)
                        .is_ok_and(|o| readd::compatible(schema, &ks, &c.ty, &o));
                    if !readds {
                        return Err(EngineError::invalid(format!("Cannot add a column '{}' of type {new}, incompatible with previously dropped column '{}' of type {old}", c.name, c.name)));
                    }
                    if d.is_static != c.is_static {
                        let kind = |s: bool| if s { "STATIC" } else { "REGULAR" };
                        return Err(EngineError::invalid(format!(
                            "Cannot re-add previously dropped column '{}' of kind {}, incompatible with previous kind {}",
                            c.name,
                            kind(c.is_static),
                            kind(d.is_static)
                        )));
                    }
                    if counter_table {
                        return Err(EngineError::invalid(format!(
                            "Cannot re-add previously dropped counter column {}",
                            c.name
                        )));
                    }
                }
                let kind = if c.is_static {
                    ColumnKind::Static
                } else {
                    ColumnKind::Regular
                };
                let mask = match &c.mask {
                    Some(m) => Some(crate::masking::prepare(
                        &c.name,
                        &ty,
                        m,
                        Now::at_micros(now_micros),
                    )?),
                    None => None,
                };
                t.push_column(c.name.clone(), column_type_text(&c.ty), ty, kind);
                if let Some(last) = t.columns.last_mut() {
                    last.mask = mask;
                }
            }
            // Cassandra's TableMetadata.validate, once the columns are in.
            let regular =
                |c: &&ColumnDef| matches!(c.kind, ColumnKind::Regular | ColumnKind::Static);
            let mixed = if counter_table {
                t.columns
                    .iter()
                    .filter(regular)
                    .find(|c| c.ty != ColumnType::Counter)
            } else {
                t.columns
                    .iter()
                    .filter(regular)
                    .find(|c| c.ty == ColumnType::Counter)
            };
            if let Some(c) = mixed {
                return Err(EngineError::config(format!(
                    "{ks}.{}: Cannot have a {}counter column (\"{}\") in a {}counter table",
                    t.name,
                    if counter_table { "non " } else { "" },
                    c.name,
                    if counter_table { "" } else { "non " },
                )));
            }
        }
        ast::AlterTableAction::AlterColumnMask { column, mask } => {
            let Some(i) = t.column_index(column) else {
                return Err(EngineError::invalid(format!(
                    "Column with name '{column}' doesn't exist on table '{}'",
                    t.name
                )));
            };
            t.columns[i].mask = match mask {
                Some(m) => Some(crate::masking::prepare(
                    column,
                    &t.columns[i].ty,
                    m,
                    Now::at_micros(now_micros),
                )?),
                None => None,
            };
        }
        ast::AlterTableAction::Drop {
            if_exists,
            columns,
            timestamp,
        } => {
            for name in columns {
                let Some(c) = t.column(name).cloned() else {
                    if *if_exists {
                        continue;
                    }
                    return Err(EngineError::invalid(format!(
                        "Column {name} was not found in table '{ks}.{}'",
                        t.name
                    )));
                };
                if matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                    return Err(EngineError::invalid(format!(
                        "Cannot drop PRIMARY KEY column {name}"
                    )));
                }
                if let ColumnType::Udt { name: udt, .. } = &c.ty {
                    if !c.cql_type.starts_with("frozen<") {
                        return Err(EngineError::invalid(format!(
                            "Cannot drop non-frozen column {name} of user type {udt}"
                        )));
                    }
                }
                crate::compact::check_drop_column(&t, &c)?;
                crate::index::ddl::check_drop_column(&t, name)?;
                crate::view::ddl::check_drop_column(schema, &t, name)?;
                t.columns.retain(|x| x.name != *name);
                let dropped = crate::catalog::DroppedColumn {
                    name: name.clone(),
                    cql_type: readd::dropped_type(schema, &ks, &c.cql_type),
                    at: timestamp.unwrap_or(now_micros),
                    is_static: c.kind == ColumnKind::Static,
                };
                // Dropped again, it keeps its place (DESCRIBE ... WITH INTERNALS lists them so).
                match t.dropped.iter_mut().find(|d| d.name == *name) {
                    Some(d) => *d = dropped,
                    None => t.dropped.push(dropped),
                }
            }
        }
        // IF EXISTS changes nothing: 5.0.9 looks the column up before it reads it, and a
        // missing one is refused either way.
        ast::AlterTableAction::Rename { renames, .. } => {
            // 5.0.9 checks every rename against the table as it was: `c TO cc AND cc TO c`
            // finds no column cc.
            let before = t.clone();
            for (from, to) in renames {
                let Some(i) = before.column_index(from) else {
                    return Err(EngineError::invalid(format!(
                        "Undefined column name {from} in table {ks}.{}",
                        t.name
                    )));
                };
                if !matches!(
                    t.columns[i].kind,
                    ColumnKind::PartitionKey | ColumnKind::Clustering
                ) {
                    return Err(EngineError::invalid(format!(
                        "Cannot rename non PRIMARY KEY column {from}"
                    )));
                }
                // 5.0.9's order: a name taken before an index depending on the column.
                if before.column(to).is_some() {
                    return Err(EngineError::invalid(format!("Cannot rename column {from} to {to} in table '{ks}.{}'; another column with that name already exists", t.name)));
                }
                crate::index::ddl::check_rename_column(&before, from)?;
                t.columns[i].name = to.clone();
            }
        }
        ast::AlterTableAction::With(opts) => {
            if !opts.clustering_order.is_empty() || opts.compact_storage {
                return Err(EngineError::invalid(
                    "CLUSTERING ORDER and COMPACT STORAGE cannot be altered",
                ));
            }
            let had_labels = t.options.visibility.is_some();
            apply_table_properties(&mut t.options, &opts.properties)?;
            if !had_labels && t.options.visibility.is_some() {
                crate::labels::check_enable(schema, &t)?;
            }
        }
        ast::AlterTableAction::DropCompactStorage => {
            crate::compact::drop_compact_storage(&mut t, drop_compact_storage_enabled)?
        }
        ast::AlterTableAction::AlterColumnType { .. } => {
            return Err(EngineError::invalid(
                "Altering column types is no longer supported",
            ))
        }
    }
    t.sort_columns();
    let mut next = schema.clone();
    let name = t.name.clone();
    next.tables.insert((ks.clone(), name.clone()), Arc::new(t));
    crate::view::ddl::follow_base(&mut next, &ks, &name, &at.action);
    Ok(Some((
        next,
        crate::table_change(SchemaChangeType::Updated, &ks, &name),
    )))
}

pub fn keyspace_properties_durable(props: &[Property], default: bool) -> Result<bool, EngineError> {
    keyspace::durable_writes(props, default)
}

pub fn check_keyspace_props(props: &[Property]) -> Result<(), EngineError> {
    for p in props {
        if p.name != "replication" && p.name != "durable_writes" {
            return Err(EngineError::syntax(format!(
                "Unknown property '{}'",
                p.name
            )));
        }
    }
    Ok(())
}

pub fn create_keyspace_def(ck: &ast::CreateKeyspace) -> Result<KeyspaceDef, EngineError> {
    if !valid_name(&ck.name) {
        return Err(EngineError::invalid(format!("Keyspace name must not be empty, more than 48 characters long, or contain non-alphanumeric-underscore characters (got \"{}\")", ck.name)));
    }
    check_keyspace_props(&ck.properties)?;
    Ok(KeyspaceDef {
        name: ck.name.clone(),
        replication: replication(&ck.properties, None, &ck.name)?,
        durable_writes: keyspace_properties_durable(&ck.properties, true)?,
    })
}

/// Durations have no order, so Cassandra refuses them anywhere inside a key column's type.
pub(crate) fn contains_duration(ty: &ColumnType) -> bool {
    crate::types::contains(ty, &|t| *t == ColumnType::Duration)
}

/// Running a schema statement: its checks, then the new schema, persisted before it is visible.
impl crate::Engine {
    /// DROP INDEX, ALTER and DROP MATERIALIZED VIEW need ALTER on the table the index or view
    /// belongs to, as in Cassandra: the statement names only the index or view, so the general
    /// check cannot see the table. Other statements pass.
    pub(crate) fn authorize_owner_alter(
        &self,
        st: &cql::Statement,
        ks: Option<&str>,
        opts: &QueryOptions,
    ) -> Result<(), EngineError> {
        use cql::Statement as S;
        let name = match st {
            S::DropIndex { name, .. } | S::AlterView { name, .. } | S::DropView { name, .. } => {
                name
            }
            _ => return Ok(()),
        };
        if !self.auth.authorizing() {
            return Ok(());
        }
        let Some(k) = name.keyspace.as_deref().or(ks) else {
            return Ok(());
        };
        let schema = self.schema.get();
        let owner = match st {
            S::DropIndex { .. } => index::ddl::indexes_of(&schema, k)
                .find(|(_, i)| i.name == name.name)
                .map(|(t, _)| t.name.clone()),
            _ => schema
                .table(k, &name.name)
                .and_then(|v| v.view.as_ref())
                .map(|d| d.base.clone()),
        };
        let Some(owner) = owner else {
            return Ok(());
        };
        self.auth
            .authorize_table(opts.role.as_deref(), k, &owner, auth::Permission::Alter)
            .map_err(EngineError::Db)
    }

    pub(crate) fn ddl(
        &self,
        st: &cql::Statement,
        ks: Option<&str>,
        now: Now,
    ) -> Result<Outcome, EngineError> {
        use cql::Statement as S;
        let _g = self.ddl_lock.lock().unwrap_or_else(|p| p.into_inner());
        let schema = self.schema.get();
        let guard_system = |name: &str| -> Result<(), EngineError> {
            if SYSTEM_KEYSPACES.contains(&name) {
                return Err(EngineError::unauthorized(format!(
                    "{name} keyspace is not user-modifiable."
                )));
            }
            Ok(())
        };
        let table_ks = |q: &cql::ast::QualifiedName| keyspace_of(q, ks);
        let result: Option<(Schema, SchemaChange)> = match st {
            S::CreateKeyspace(ck) => {
                if SYSTEM_KEYSPACES.contains(&ck.name.as_str()) {
                    return Err(EngineError::invalid(format!(
                        "System keyspace '{}' is not user-modifiable",
                        ck.name
                    )));
                }
                if schema.keyspaces.contains_key(&ck.name) {
                    if ck.if_not_exists {
                        None
                    } else {
                        return Err(EngineError::already_exists(&ck.name, None));
                    }
                } else {
                    let def = create_keyspace_def(ck)?;
                    let mut next = (*schema).clone();
                    next.keyspaces.insert(def.name.clone(), Arc::new(def));
                    Some((
                        next,
                        crate::keyspace_change(SchemaChangeType::Created, &ck.name),
                    ))
                }
            }
            S::AlterKeyspace(ak) => {
                guard_system(&ak.name)?;
                match schema.keyspaces.get(&ak.name) {
                    None if ak.if_exists => None,
                    None => {
                        return Err(EngineError::invalid(format!(
                            "Keyspace '{}' doesn't exist",
                            ak.name
                        )))
                    }
                    Some(old) => {
                        check_keyspace_props(&ak.properties)?;
                        let def = catalog::KeyspaceDef {
                            name: ak.name.clone(),
                            replication: replication(
                                &ak.properties,
                                Some(&old.replication),
                                &ak.name,
                            )?,
                            durable_writes: keyspace_properties_durable(
                                &ak.properties,
                                old.durable_writes,
                            )?,
                        };
                        let mut next = (*schema).clone();
                        next.keyspaces.insert(def.name.clone(), Arc::new(def));
                        Some((
                            next,
                            crate::keyspace_change(SchemaChangeType::Updated, &ak.name),
                        ))
                    }
                }
            }
            S::DropKeyspace { name, if_exists } => {
                guard_system(name)?;
                if !schema.keyspaces.contains_key(name) {
                    if *if_exists {
                        None
                    } else {
                        return Err(EngineError::invalid(format!(
                            "Keyspace '{name}' doesn't exist"
                        )));
                    }
                } else {
                    let mut next = (*schema).clone();
                    next.keyspaces.remove(name);
                    next.tables.retain(|(k, _), _| k != name);
                    next.types.retain(|(k, _), _| k != name);
                    Some((
                        next,
                        crate::keyspace_change(SchemaChangeType::Dropped, name),
                    ))
                }
            }
            S::CreateTable(ct) => {
                guard_system(&table_ks(&ct.name)?)?;
                self.check_masking(st)?;
                create_table(&schema, ks, ct, now.micros)?
            }
            S::AlterTable(at) => {
                guard_system(&table_ks(&at.name)?)?;
                self.check_masking(st)?;
                let drop_compact = self.drop_compact_enabled.load(Ordering::Relaxed);
                alter_table(&schema, ks, at, now.micros, drop_compact)?
            }
            S::DropTable { name, if_exists } => {
                let k = table_ks(name)?;
                guard_system(&k)?;
                if schema.table(&k, &name.name).is_none() {
                    if *if_exists {
                        None
                    } else {
                        return Err(EngineError::invalid(format!(
                            "Table '{k}.{}' doesn't exist",
                            name.name
                        )));
                    }
                } else {
                    if let Some(t) = schema.table(&k, &name.name) {
                        view::ddl::check_drop_table(&schema, t)?;
                    }
                    let mut next = (*schema).clone();
                    next.tables.remove(&(k.clone(), name.name.clone()));
                    Some((
                        next,
                        crate::table_change(SchemaChangeType::Dropped, &k, &name.name),
                    ))
                }
            }
            S::CreateType(ct) => {
                guard_system(&table_ks(&ct.name)?)?;
                create_type(&schema, ks, ct)?
            }
            S::AlterType(at) => alter_type(&schema, ks, at)?,
            S::DropType { name, if_exists } => drop_type(&schema, ks, name, *if_exists)?,
            S::Truncate(name) => {
                let k = table_ks(name)?;
                if system::is_virtual_keyspace(&k) && schema.table(&k, &name.name).is_some() {
                    return Err(EngineError::invalid(format!(
                        "Truncation is not supported by table {k}.{}",
                        name.name
                    )));
                }
                guard_system(&k)?;
                let Some(t) = schema.table(&k, &name.name) else {
                    if !schema.keyspaces.contains_key(&k) {
                        return Err(EngineError::invalid(format!("keyspace {k} does not exist")));
                    }
                    return Err(EngineError::invalid(format!(
                        "table {} does not exist",
                        name.name
                    )));
                };
                view::ddl::check_truncate(t)?;
                // A fresh id makes every old row unreachable at once; compaction reclaims it.
                // The base's views are emptied with it.
                let mut next = (*schema).clone();
                let views: Vec<Arc<TableDef>> = view::ddl::views_of(&schema, &k, &name.name)
                    .cloned()
                    .collect();
                for t in std::iter::once(t).chain(&views) {
                    let mut nt: TableDef = (**t).clone();
                    nt.id = next.next_table_id;
                    next.next_table_id += 1;
                    index::ddl::renumber(&mut nt, &mut next.next_table_id);
                    next.tables
                        .insert((k.clone(), nt.name.clone()), Arc::new(nt));
                }
                self.install(next)?;
                // The fresh index ids get fresh (empty) graphs; the old ones are freed.
                self.build_vector_indexes()?;
                return Ok(Outcome::Void);
            }
            S::CreateIndex(ci) => {
                let k = table_ks(&ci.table)?;
                guard_system(&k)?;
                // Cassandra 5.0 ships SASI disabled (`sasi_indexes_enabled: false`); Peregrine
                // has no SASI, and answers as the default configuration does.
                if ci.custom_class.as_deref() == Some("org.apache.cassandra.index.sasi.SASIIndex") {
                    return Err(EngineError::invalid(
                        "SASI indexes are disabled. Enable in cassandra.yaml to use.",
                    ));
                }
                index::ddl::create_index(&schema, &k, ci)?
            }
            S::CreateView(cv) => {
                if !self.views_enabled.load(Ordering::Relaxed) {
                    return Err(EngineError::invalid(
                        "Materialized views are disabled. Enable in cassandra.yaml to use.",
                    ));
                }
                guard_system(&table_ks(&cv.name)?)?;
                view::ddl::create_view(&schema, ks, cv, now)?
            }
            S::AlterView {
                name,
                if_exists,
                options,
            } => view::ddl::alter_view(&schema, ks, name, *if_exists, options)?,
            S::DropView { name, if_exists } => view::ddl::drop_view(&schema, ks, name, *if_exists)?,
            S::DropIndex { name, if_exists } => {
                index::ddl::drop_index(&schema, ks, name, *if_exists)?
            }
            S::UserCode(u) => {
                crate::user_code::answer(&schema, ks, u)?;
                return Ok(Outcome::Void);
            }
            other => {
                return Err(EngineError::invalid(format!(
                    "This statement is not supported by Peregrine yet: {}",
                    statement_kind(other)
                )))
            }
        };
        match result {
            None => Ok(Outcome::Void),
            Some((mut next, change)) => {
                let invalidated = invalidated_by(&schema, &next, &change);
                next.version = scalar::random_uuid(0);
                self.install(next)?;
                if let Some((k, table)) = invalidated {
                    self.forget_prepared(&k, table.as_deref());
                }
                self.build_indexes_briefly()?;
                self.build_views()?;
                Ok(Outcome::SchemaChange(change))
            }
        }
    }

    /// Forgets the prepared statements that read or write `keyspace` (only `table` of it, if
    /// given), as Cassandra does when a table is dropped or its columns change: their next
    /// EXECUTE answers UNPREPARED and the driver prepares again, learning the new columns.
    /// Re-planning them in place instead would hand a v4 client that asked to skip the result
    /// metadata rows of a shape it does not know.
    fn forget_prepared(&self, keyspace: &str, table: Option<&str>) {
        let on = |q: &cql::ast::QualifiedName, default_ks: Option<&str>| {
            q.keyspace.as_deref().or(default_ks) == Some(keyspace)
                && table.is_none_or(|t| q.name == t)
        };
        let touches = |p: &Prepared| {
            use cql::ast::ModificationStatement as M;
            let ks = p.keyspace.as_deref();
            let modifies = |m: &M| match m {
                M::Insert(i) => on(&i.table, ks),
                M::Update(u) => on(&u.table, ks),
                M::Delete(d) => on(&d.table, ks),
            };
            match &p.statement.statement {
                cql::Statement::Select(s) => on(&s.table, ks),
                cql::Statement::Insert(i) => on(&i.table, ks),
                cql::Statement::Update(u) => on(&u.table, ks),
                cql::Statement::Delete(d) => on(&d.table, ks),
                cql::Statement::Batch(b) => b.statements.iter().any(modifies),
                _ => false,
            }
        };
        self.prepared
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, p| !touches(p));
    }

    /// Records index or view builds as done: every table `unbuilt` selects is replaced by a
    /// copy that `mark` changed, and the schema is installed.
    pub(crate) fn mark_built(
        &self,
        unbuilt: impl Fn(&TableDef) -> bool,
        mark: impl Fn(&mut TableDef),
    ) -> Result<(), EngineError> {
        let mut next = (*self.schema.get()).clone();
        let mut changed = false;
        for t in next.tables.values_mut() {
            if unbuilt(t) {
                let mut nt = (**t).clone();
                mark(&mut nt);
                *t = Arc::new(nt);
                changed = true;
            }
        }
        // Nothing left to mark (a DDL dropped what was built meanwhile): the schema stands.
        if !changed {
            return Ok(());
        }
        self.install(next)
    }

    /// Persists a new schema, then makes it visible.
    pub(crate) fn install(&self, mut next: Schema) -> Result<(), EngineError> {
        next.refresh_indexed();
        let persisted = PersistedSchema {
            keyspaces: next
                .keyspaces
                .values()
                .filter(|k| !SYSTEM_KEYSPACES.contains(&k.name.as_str()))
                .map(|k| (**k).clone())
                .collect(),
            types: next.types.values().map(|u| (**u).clone()).collect(),
            tables: next
                .tables
                .values()
                .filter(|t| !system::is_virtual(t))
                .map(|t| (**t).clone())
                .collect(),
            next_table_id: next.next_table_id,
            version: next.version,
        };
        let bytes =
            serde_json::to_vec(&persisted).map_err(|e| EngineError::server(e.to_string()))?;
        let mut b = storage::WriteBatch::new();
        b.put(SCHEMA_KEY.to_vec(), bytes);
        self.storage.write(b)?;
        self.storage.sync()?;
        let has_indexes = !next.indexed.is_empty();
        *self.schema.0.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        self.has_indexes.store(has_indexes, Ordering::Release);
        self.schema_generation.fetch_add(1, Ordering::AcqRel);
        // A dropped vector index's graph and saved files go with it at once.
        self.forget_dropped_vector_indexes();
        Ok(())
    }
}

/// The keyspace (and table) whose prepared statements a schema change invalidates, as
/// Cassandra's `QueryProcessor` decides: a dropped keyspace, a dropped table or view, or a
/// table whose columns, indexes, default TTL or gc_grace changed (not a change of other
/// options).
fn invalidated_by(
    before: &Schema,
    after: &Schema,
    change: &SchemaChange,
) -> Option<(String, Option<String>)> {
    use crate::SchemaChangeTarget as Target;
    match (&change.target, change.change) {
        (Target::Keyspace(k), SchemaChangeType::Dropped) => Some((k.clone(), None)),
        (Target::Table { keyspace, name }, SchemaChangeType::Dropped) => {
            Some((keyspace.clone(), Some(name.clone())))
        }
        (Target::Table { keyspace, name }, SchemaChangeType::Updated) => {
            let (k, t) = (keyspace.clone(), name.as_str());
            let (old, new) = (before.table(&k, t)?, after.table(&k, t)?);
            fn shape(d: &TableDef) -> (&[ColumnDef], &[crate::index::IndexDef], i32, i32, bool) {
                (
                    &d.columns,
                    &d.indexes,
                    d.options.default_time_to_live,
                    d.options.gc_grace_seconds,
                    d.compact,
                )
            }
            (shape(old) != shape(new)).then(|| (k, Some(t.to_string())))
        }
        _ => None,
    }
}
