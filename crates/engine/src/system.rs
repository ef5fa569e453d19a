//! Virtual system tables (`system.local`, `system.peers*`, `system_schema.*`) generated from
//! the live schema, and server-side `DESCRIBE`.
//!
//! A virtual table is materialized into a small in-memory store on each query and read by
//! the same SELECT executor as user tables, so every restriction, limit and paging rule
//! behaves identically on both.

use crate::catalog::{ColumnDef, ColumnKind, KeyspaceDef, Schema, TableDef};
use crate::keys;
use crate::row::{Cell, CellValue, Marker, Row};
use crate::token;
use crate::virtual_tables::LiveData;
use crate::EngineError;
use proto::types::{ColumnType, Value};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use storage::{MemStorage, Storage, WriteBatch};

/// Facts about this node that `system.local` shows.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub cluster_name: String,
    pub datacenter: String,
    pub rack: String,
    pub rpc_address: IpAddr,
    pub rpc_port: u16,
    pub host_id: [u8; 16],
    pub release_version: String,
}

const SYSTEM_TABLES: &[&str] = &[
    "CREATE TABLE system.local (key text PRIMARY KEY, bootstrapped text, broadcast_address inet, broadcast_port int, cluster_name text, cql_version text, data_center text, gossip_generation int, host_id uuid, listen_address inet, listen_port int, native_protocol_version text, partitioner text, rack text, release_version text, rpc_address inet, rpc_port int, schema_version uuid, tokens set<text>, truncated_at map<uuid, blob>)",
    "CREATE TABLE system.peers (peer inet PRIMARY KEY, data_center text, host_id uuid, preferred_ip inet, rack text, release_version text, rpc_address inet, schema_version uuid, tokens set<text>)",
    "CREATE TABLE system.peers_v2 (peer inet, peer_port int, data_center text, host_id uuid, native_address inet, native_port int, preferred_ip inet, preferred_port int, rack text, release_version text, schema_version uuid, tokens set<text>, PRIMARY KEY (peer, peer_port))",
    "CREATE TABLE system_schema.keyspaces (keyspace_name text PRIMARY KEY, durable_writes boolean, replication frozen<map<text, text>>)",
    "CREATE TABLE system_schema.tables (keyspace_name text, table_name text, additional_write_policy text, allow_auto_snapshot boolean, bloom_filter_fp_chance double, caching frozen<map<text, text>>, cdc boolean, comment text, compaction frozen<map<text, text>>, compression frozen<map<text, text>>, crc_check_chance double, dclocal_read_repair_chance double, default_time_to_live int, extensions frozen<map<text, blob>>, flags frozen<set<text>>, gc_grace_seconds int, id uuid, incremental_backups boolean, max_index_interval int, memtable text, memtable_flush_period_in_ms int, min_index_interval int, read_repair text, read_repair_chance double, speculative_retry text, PRIMARY KEY (keyspace_name, table_name))",
    "CREATE TABLE system_schema.columns (keyspace_name text, table_name text, column_name text, clustering_order text, column_name_bytes blob, kind text, position int, type text, PRIMARY KEY (keyspace_name, table_name, column_name))",
    "CREATE TABLE system_schema.dropped_columns (keyspace_name text, table_name text, column_name text, dropped_time timestamp, kind text, type text, PRIMARY KEY (keyspace_name, table_name, column_name))",
    "CREATE TABLE system_schema.indexes (keyspace_name text, table_name text, index_name text, kind text, options frozen<map<text, text>>, PRIMARY KEY (keyspace_name, table_name, index_name))",
    "CREATE TABLE system_schema.triggers (keyspace_name text, table_name text, trigger_name text, options frozen<map<text, text>>, PRIMARY KEY (keyspace_name, table_name, trigger_name))",
    "CREATE TABLE system_schema.types (keyspace_name text, type_name text, field_names frozen<list<text>>, field_types frozen<list<text>>, PRIMARY KEY (keyspace_name, type_name))",
    "CREATE TABLE system_schema.functions (keyspace_name text, function_name text, argument_types frozen<list<text>>, argument_names frozen<list<text>>, body text, called_on_null_input boolean, language text, return_type text, PRIMARY KEY (keyspace_name, function_name, argument_types))",
    "CREATE TABLE system_schema.aggregates (keyspace_name text, aggregate_name text, argument_types frozen<list<text>>, final_func text, initcond text, return_type text, state_func text, state_type text, PRIMARY KEY (keyspace_name, aggregate_name, argument_types))",
    "CREATE TABLE system_schema.views (keyspace_name text, view_name text, additional_write_policy text, allow_auto_snapshot boolean, base_table_id uuid, base_table_name text, bloom_filter_fp_chance double, caching frozen<map<text, text>>, cdc boolean, comment text, compaction frozen<map<text, text>>, compression frozen<map<text, text>>, crc_check_chance double, dclocal_read_repair_chance double, default_time_to_live int, extensions frozen<map<text, blob>>, gc_grace_seconds int, id uuid, include_all_columns boolean, incremental_backups boolean, max_index_interval int, memtable text, memtable_flush_period_in_ms int, min_index_interval int, read_repair text, read_repair_chance double, speculative_retry text, where_clause text, PRIMARY KEY (keyspace_name, view_name))",
    // Views of the auth module's records (crate::auth), with Cassandra 5.0's columns.
    "CREATE TABLE system_auth.roles (role text PRIMARY KEY, can_login boolean, is_superuser boolean, member_of set<text>, salted_hash text)",
    "CREATE TABLE system_auth.role_members (role text, member text, PRIMARY KEY (role, member))",
    "CREATE TABLE system_auth.role_permissions (role text, resource text, permissions set<text>, PRIMARY KEY (role, resource))",
    "CREATE TABLE system_auth.resource_role_permissons_index (resource text, role text, PRIMARY KEY (resource, role))",
    "CREATE TABLE system_auth.network_permissions (role text PRIMARY KEY, dcs frozen<set<text>>)",
    "CREATE TABLE system_auth.cidr_groups (cidr_group text PRIMARY KEY, cidrs frozen<set<frozen<tuple<inet, smallint>>>>)",
    "CREATE TABLE system_auth.cidr_permissions (role text PRIMARY KEY, cidr_groups frozen<set<text>>)",
    "CREATE TABLE system_auth.identity_to_role (identity text PRIMARY KEY, role text)",
    "CREATE TABLE system_virtual_schema.keyspaces (keyspace_name text PRIMARY KEY)",
    "CREATE TABLE system_virtual_schema.tables (keyspace_name text, table_name text, comment text, PRIMARY KEY (keyspace_name, table_name))",
    "CREATE TABLE system_virtual_schema.columns (keyspace_name text, table_name text, column_name text, clustering_order text, column_name_bytes blob, kind text, position int, type text, PRIMARY KEY (keyspace_name, table_name, column_name))",
    "CREATE TABLE system.\"IndexInfo\" (table_name text, index_name text, value blob, PRIMARY KEY (table_name, index_name))",
    "CREATE TABLE system.built_views (keyspace_name text, view_name text, status_replicated boolean, PRIMARY KEY (keyspace_name, view_name))",
    "CREATE TABLE system_schema.column_masks (keyspace_name text, table_name text, column_name text, function_argument_nulls frozen<list<boolean>>, function_argument_types frozen<list<text>>, function_argument_values frozen<list<text>>, function_keyspace text, function_name text, PRIMARY KEY (keyspace_name, table_name, column_name))",
];

pub const VIRTUAL_ID_BASE: u32 = 0xFFFF_0000;

/// Keyspaces Cassandra calls virtual: listed in `system_virtual_schema.*`, not in
/// `system_schema.*` (drivers of Cassandra 4+ read both).
pub const VIRTUAL_KEYSPACES: &[&str] = &["system_views", "system_virtual_schema"];

pub(crate) fn is_virtual_keyspace(name: &str) -> bool {
    VIRTUAL_KEYSPACES.contains(&name)
}

/// Adds the system keyspaces and virtual tables to a schema.
pub fn add_system_tables(schema: &mut Schema) -> Result<(), EngineError> {
    for (ks, class) in [
        ("system", "org.apache.cassandra.locator.LocalStrategy"),
        (
            "system_schema",
            "org.apache.cassandra.locator.LocalStrategy",
        ),
        ("system_auth", "org.apache.cassandra.locator.SimpleStrategy"),
        (
            "system_distributed",
            "org.apache.cassandra.locator.SimpleStrategy",
        ),
        (
            "system_traces",
            "org.apache.cassandra.locator.SimpleStrategy",
        ),
        ("system_views", "org.apache.cassandra.locator.LocalStrategy"),
        (
            "system_virtual_schema",
            "org.apache.cassandra.locator.LocalStrategy",
        ),
    ] {
        let mut replication = BTreeMap::new();
        replication.insert("class".to_string(), class.to_string());
        if class.ends_with("SimpleStrategy") {
            let rf = if ks == "system_auth" { "1" } else { "3" };
            replication.insert("replication_factor".into(), rf.into());
        }
        schema.keyspaces.insert(
            ks.into(),
            Arc::new(KeyspaceDef {
                name: ks.into(),
                replication,
                durable_writes: true,
            }),
        );
    }
    let all = SYSTEM_TABLES
        .iter()
        .chain(crate::virtual_tables::SYSTEM_VIEWS_TABLES);
    for (i, text) in all.enumerate() {
        let parsed = cql::parse(text)
            .map_err(|e| EngineError::server(format!("system table definition: {e}")))?;
        let cql::Statement::CreateTable(ct) = parsed.statement else {
            return Err(EngineError::server(
                "system table definition is not CREATE TABLE",
            ));
        };
        let saved = schema.next_table_id;
        schema.next_table_id = VIRTUAL_ID_BASE + i as u32;
        let (mut next, _) = crate::ddl::create_table(schema, None, &ct, 0)?
            .ok_or_else(|| EngineError::server("system table defined twice"))?;
        next.next_table_id = saved;
        *schema = next;
    }
    Ok(())
}

pub fn is_virtual(t: &TableDef) -> bool {
    t.id >= VIRTUAL_ID_BASE
}

fn text(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}
fn int(v: i32) -> Option<Vec<u8>> {
    Some(v.to_be_bytes().to_vec())
}
fn double(v: f64) -> Option<Vec<u8>> {
    Some(v.to_be_bytes().to_vec())
}
fn boolean(v: bool) -> Option<Vec<u8>> {
    Some(vec![v as u8])
}
fn inet(a: IpAddr) -> Option<Vec<u8>> {
    Some(proto::value::to_bytes(&Value::Inet(a)))
}
fn text_map(m: &BTreeMap<String, String>) -> Option<Vec<u8>> {
    let v = Value::Map(
        m.iter()
            .map(|(k, v)| (Value::Varchar(k.clone()), Value::Varchar(v.clone())))
            .collect(),
    );
    Some(proto::value::to_bytes(&v))
}
fn text_list(items: &[&str]) -> Option<Vec<u8>> {
    let v = Value::List(
        items
            .iter()
            .map(|s| Value::Varchar(s.to_string()))
            .collect(),
    );
    Some(proto::value::to_bytes(&v))
}

/// The option columns `system_schema.tables` and `system_schema.views` share.
/// `extensions frozen<map<text, blob>>`: empty as in Cassandra, but for Peregrine's
/// `visibility` option (docs/visibility.md), whose value is its CQL text.
fn extensions(tb: &TableDef) -> Vec<u8> {
    // A view's option follows its base table's and is not set on the view itself.
    let Some(v) = tb.options.visibility.filter(|_| tb.view.is_none()) else {
        return 0i32.to_be_bytes().to_vec();
    };
    let mut out = 1i32.to_be_bytes().to_vec();
    for part in [crate::labels::EXTENSION_KEY.to_string(), v.cql()] {
        out.extend((part.len() as i32).to_be_bytes());
        out.extend(part.as_bytes());
    }
    out
}

fn option_cells(tb: &TableDef) -> Vec<(&'static str, Option<Vec<u8>>)> {
    let o = &tb.options;
    vec![
        ("additional_write_policy", text(&o.additional_write_policy)),
        // Cassandra 5.0.9 writes these two only when they are off.
        (
            "allow_auto_snapshot",
            (!o.allow_auto_snapshot).then(|| vec![0]),
        ),
        (
            "incremental_backups",
            (!o.incremental_backups).then(|| vec![0]),
        ),
        ("bloom_filter_fp_chance", double(o.bloom_filter_fp_chance)),
        ("caching", text_map(&o.caching)),
        ("comment", text(&o.comment)),
        ("compaction", text_map(&o.compaction)),
        ("compression", text_map(&o.compression)),
        ("crc_check_chance", double(o.crc_check_chance)),
        ("dclocal_read_repair_chance", double(0.0)),
        ("default_time_to_live", int(o.default_time_to_live)),
        ("extensions", Some(extensions(tb))),
        ("gc_grace_seconds", int(o.gc_grace_seconds)),
        ("id", Some(tb.uuid.to_vec())),
        ("max_index_interval", int(o.max_index_interval)),
        (
            "memtable_flush_period_in_ms",
            int(o.memtable_flush_period_in_ms),
        ),
        ("min_index_interval", int(o.min_index_interval)),
        ("read_repair", text(&o.read_repair)),
        ("read_repair_chance", double(0.0)),
        ("speculative_retry", text(&o.speculative_retry)),
    ]
}

/// The `columns` rows (`system_schema` or `system_virtual_schema`) of `tb`.
fn push_columns(push: &mut impl FnMut(Vec<(&str, Option<Vec<u8>>)>), tb: &TableDef) {
    for c in &tb.columns {
        let order = match c.kind {
            ColumnKind::Clustering if c.desc => "desc",
            ColumnKind::Clustering => "asc",
            _ => "none",
        };
        push(vec![
            ("keyspace_name", text(&tb.keyspace)),
            ("table_name", text(&tb.name)),
            ("column_name", text(&c.name)),
            ("clustering_order", text(order)),
            ("column_name_bytes", Some(c.name.as_bytes().to_vec())),
            ("kind", text(c.kind.as_str())),
            ("position", int(c.position)),
            ("type", text(&schema_type(c))),
        ]);
    }
    for h in crate::compact::hidden_columns(tb) {
        let clustering = h.kind == ColumnKind::Clustering;
        push(vec![
            ("keyspace_name", text(&tb.keyspace)),
            ("table_name", text(&tb.name)),
            ("column_name", text(&h.name)),
            (
                "clustering_order",
                text(if clustering { "asc" } else { "none" }),
            ),
            ("column_name_bytes", Some(h.name.as_bytes().to_vec())),
            ("kind", text(h.kind.as_str())),
            ("position", int(if clustering { 0 } else { -1 })),
            ("type", text(h.cql_type)),
        ]);
    }
}

/// A row of `t` from (column name, value) pairs: a value per column, in `t`'s column order.
pub(crate) fn row_by_names(
    t: &TableDef,
    pairs: Vec<(&str, Option<Vec<u8>>)>,
) -> Vec<Option<Vec<u8>>> {
    let mut row = vec![None; t.columns.len()];
    for (name, v) in pairs {
        if let Some(i) = t.column_index(name) {
            row[i] = v;
        }
    }
    row
}

/// Rows of a virtual table, each a value per column in the table's column order.
fn rows_of(
    t: &TableDef,
    schema: &Schema,
    node: &NodeInfo,
    live: Option<&dyn LiveData>,
    facts: &crate::virtual_tables::EngineFacts,
) -> Vec<Vec<Option<Vec<u8>>>> {
    if t.keyspace == "system_views" {
        return crate::virtual_tables::rows_of(t, schema, node, live, facts);
    }
    let mut out = Vec::new();
    let mut push = |pairs: Vec<(&str, Option<Vec<u8>>)>| out.push(row_by_names(t, pairs));
    let user_tables = || schema.tables.values().filter(|t| !is_virtual(t));
    // What Cassandra lists in `system_schema.tables`: user tables and the system keyspaces'
    // tables (cqlsh checks a SELECT's table against this metadata before sending it).
    let schema_tables = || {
        schema
            .tables
            .values()
            .filter(|t| !is_virtual_keyspace(&t.keyspace))
    };
    let virtual_tables = || {
        schema
            .tables
            .values()
            .filter(|t| is_virtual_keyspace(&t.keyspace))
    };
    match (t.keyspace.as_str(), t.name.as_str()) {
        ("system", "local") => push(vec![
            ("key", text("local")),
            ("bootstrapped", text("COMPLETED")),
            ("broadcast_address", inet(node.rpc_address)),
            ("broadcast_port", int(7000)),
            ("cluster_name", text(&node.cluster_name)),
            ("cql_version", text("3.4.7")),
            ("data_center", text(&node.datacenter)),
            ("gossip_generation", int(0)),
            ("host_id", Some(node.host_id.to_vec())),
            ("listen_address", inet(node.rpc_address)),
            ("listen_port", int(7000)),
            ("native_protocol_version", text("5")),
            (
                "partitioner",
                text("org.apache.cassandra.dht.Murmur3Partitioner"),
            ),
            ("rack", text(&node.rack)),
            ("release_version", text(&node.release_version)),
            ("rpc_address", inet(node.rpc_address)),
            ("rpc_port", int(node.rpc_port as i32)),
            ("schema_version", Some(schema.version.to_vec())),
            ("tokens", text_list(&["-9223372036854775808"])),
        ]),
        ("system_schema", "keyspaces") => {
            for ks in schema.keyspaces.values() {
                if is_virtual_keyspace(&ks.name) {
                    continue;
                }
                push(vec![
                    ("keyspace_name", text(&ks.name)),
                    ("durable_writes", boolean(ks.durable_writes)),
                    ("replication", text_map(&ks.replication)),
                ]);
            }
        }
        ("system_schema", "tables") => {
            for tb in schema_tables().filter(|t| t.view.is_none()) {
                push(
                    vec![
                        ("keyspace_name", text(&tb.keyspace)),
                        ("table_name", text(&tb.name)),
                        // Cassandra 5.0.9 leaves `cdc` null (cdc_enabled is off) and
                        // `memtable` null for its `default`; `allow_auto_snapshot` and
                        // `incremental_backups` are in `option_cells`.
                        ("flags", text_list(&crate::compact::flags(tb))),
                    ]
                    .into_iter()
                    .chain(option_cells(tb))
                    .collect(),
                );
            }
        }
        ("system_schema", "views") => {
            for tb in schema_tables() {
                let Some(def) = &tb.view else { continue };
                let base_id = schema
                    .table(&tb.keyspace, &def.base)
                    .map(|b| b.uuid.to_vec());
                push(
                    vec![
                        ("keyspace_name", text(&tb.keyspace)),
                        ("view_name", text(&tb.name)),
                        ("base_table_id", base_id),
                        ("base_table_name", text(&def.base)),
                        ("include_all_columns", boolean(def.include_all)),
                        ("where_clause", text(&def.where_text())),
                    ]
                    .into_iter()
                    .chain(option_cells(tb))
                    .collect(),
                );
            }
        }
        ("system_schema", "columns") => {
            for tb in schema_tables() {
                push_columns(&mut push, tb);
            }
        }
        ("system_schema", "types") => {
            for u in schema.types.values() {
                let names: Vec<&str> = u.fields.iter().map(|(f, _)| f.as_str()).collect();
                let types: Vec<&str> = u.fields.iter().map(|(_, t)| t.as_str()).collect();
                push(vec![
                    ("keyspace_name", text(&u.keyspace)),
                    ("type_name", text(&u.name)),
                    ("field_names", text_list(&names)),
                    ("field_types", text_list(&types)),
                ]);
            }
        }
        ("system_schema", "column_masks") => {
            for tb in user_tables() {
                for c in &tb.columns {
                    let Some(m) = &c.mask else { continue };
                    let (types, values, nulls) = crate::masking::schema_row(m, &c.ty);
                    let strs =
                        |v: &[String]| text_list(&v.iter().map(String::as_str).collect::<Vec<_>>());
                    let nulls: Vec<Vec<u8>> = nulls.iter().map(|b| vec![u8::from(*b)]).collect();
                    push(vec![
                        ("keyspace_name", text(&tb.keyspace)),
                        ("table_name", text(&tb.name)),
                        ("column_name", text(&c.name)),
                        (
                            "function_argument_nulls",
                            Some(crate::literal::encode_collection(&nulls)),
                        ),
                        ("function_argument_types", strs(&types)),
                        ("function_argument_values", strs(&values)),
                        ("function_keyspace", text("system")),
                        ("function_name", text(&m.function)),
                    ]);
                }
            }
        }
        ("system_schema", "dropped_columns") => {
            for tb in user_tables() {
                for d in &tb.dropped {
                    push(vec![
                        ("keyspace_name", text(&tb.keyspace)),
                        ("table_name", text(&tb.name)),
                        ("column_name", text(&d.name)),
                        ("dropped_time", Some((d.at / 1000).to_be_bytes().to_vec())),
                        ("kind", text(if d.is_static { "static" } else { "regular" })),
                        ("type", text(&d.cql_type)),
                    ]);
                }
            }
        }
        ("system_schema", "indexes") => {
            for tb in user_tables() {
                for i in &tb.indexes {
                    push(vec![
                        ("keyspace_name", text(&tb.keyspace)),
                        ("table_name", text(&tb.name)),
                        ("index_name", text(&i.name)),
                        ("kind", text(i.kind())),
                        ("options", text_map(&i.schema_options())),
                    ]);
                }
            }
        }
        // Cassandra keys this table by keyspace under the name `table_name`.
        ("system", "IndexInfo") => {
            for tb in user_tables() {
                for i in tb.indexes.iter().filter(|i| i.built) {
                    push(vec![
                        ("table_name", text(&tb.keyspace)),
                        ("index_name", text(&i.name)),
                    ]);
                }
            }
        }
        ("system", "built_views") => {
            for v in user_tables().filter(|t| t.view.as_ref().is_some_and(|d| d.built)) {
                push(vec![
                    ("keyspace_name", text(&v.keyspace)),
                    ("view_name", text(&v.name)),
                    ("status_replicated", boolean(true)),
                ]);
            }
        }
        ("system_virtual_schema", "keyspaces") => {
            for ks in VIRTUAL_KEYSPACES {
                push(vec![("keyspace_name", text(ks))]);
            }
        }
        ("system_virtual_schema", "tables") => {
            for tb in virtual_tables() {
                push(vec![
                    ("keyspace_name", text(&tb.keyspace)),
                    ("table_name", text(&tb.name)),
                    ("comment", text(&tb.options.comment)),
                ]);
            }
        }
        ("system_virtual_schema", "columns") => {
            for tb in virtual_tables() {
                push_columns(&mut push, tb);
            }
        }
        _ => {}
    }
    out
}

/// Materializes a virtual table into a fresh in-memory store (`facts`: what the engine
/// itself counts, for `system_views`).
pub fn materialize(
    t: &TableDef,
    schema: &Schema,
    node: &NodeInfo,
    live: Option<&dyn LiveData>,
    facts: &crate::virtual_tables::EngineFacts,
) -> Result<MemStorage, EngineError> {
    store_rows(t, rows_of(t, schema, node, live, facts))
}

/// Writes rows (a value per column, in `t`'s column order) of a virtual table into a fresh
/// in-memory store.
pub fn store_rows(
    t: &TableDef,
    rows: Vec<Vec<Option<Vec<u8>>>>,
) -> Result<MemStorage, EngineError> {
    let store = MemStorage::new();
    let mut batch = WriteBatch::new();
    for row in rows {
        let pk_parts: Vec<&[u8]> = t
            .partition_key()
            .map(|c| {
                row[t.column_index(&c.name).unwrap_or(0)]
                    .as_deref()
                    .unwrap_or(&[])
            })
            .collect();
        let pk = token::compose_partition_key(&pk_parts);
        let prefix = keys::partition_prefix(t.id, token::token(&pk), &pk);
        let clustering: Vec<Vec<u8>> = t
            .clustering()
            .map(|c| {
                row[t.column_index(&c.name).unwrap_or(0)]
                    .clone()
                    .unwrap_or_default()
            })
            .collect();
        let enc = crate::exec::encode_clustering(t, &clustering);
        let mut cells = Vec::new();
        for (i, c) in t.columns.iter().enumerate() {
            if matches!(c.kind, ColumnKind::Regular | ColumnKind::Static) {
                if let Some(v) = &row[i] {
                    cells.push(Cell {
                        column: c.id,
                        ts: 0,
                        value: CellValue::Live {
                            label: None,
                            value: v.clone().into(),
                            expiry: None,
                        },
                    });
                }
            }
        }
        cells.sort_by_key(|c| c.column);
        let stored = Row {
            marker_label: None,
            clustering,
            marker: Some(Marker {
                ts: 0,
                expiry: None,
            }),
            deletion: None,
            cells,
        };
        batch.put(keys::row_key(&prefix, &enc), stored.encode());
    }
    store.write(batch)?;
    Ok(store)
}

// ------------------------------------------------------------------------------- DESCRIBE

fn quote(s: &str) -> String {
    cql::quote_identifier(s).into_owned()
}

fn map_literal(m: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("'{}': '{}'", k.replace('\'', "''"), v.replace('\'', "''")))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

pub fn describe_type(u: &crate::catalog::UdtDef) -> String {
    let fields: Vec<String> = u
        .fields
        .iter()
        .map(|(f, t)| {
            let shown = match cql::parse_type(t) {
                Ok(parsed) if t.contains("tuple<") => frozen_tuples(parsed, false).to_string(),
                _ => t.clone(),
            };
            format!("    {} {}", quote(f), shown)
        })
        .collect();
    format!(
        "CREATE TYPE {}.{} (\n{}\n);",
        quote(&u.keyspace),
        quote(&u.name),
        fields.join(",\n")
    )
}

pub fn describe_keyspace(ks: &KeyspaceDef) -> String {
    // Cassandra names its own strategies by their short class name here (system_schema keeps
    // the full one).
    let mut replication = ks.replication.clone();
    if let Some(class) = replication.get_mut("class") {
        if let Some(short) = class.strip_prefix("org.apache.cassandra.locator.") {
            *class = short.to_string();
        }
    }
    format!(
        "CREATE KEYSPACE {} WITH replication = {}  AND durable_writes = {};",
        quote(&ks.name),
        map_literal(&replication),
        ks.durable_writes
    )
}

fn fmt_double(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// The DESCRIBE rows of a table's indexes, by name (as Cassandra lists them).
/// What DESCRIBE shows after a table: its indexes, then its materialized views.
fn index_rows(schema: &Schema, t: &TableDef, internals: bool) -> DescribeRows {
    let mut idx: Vec<&crate::index::IndexDef> = t.indexes.iter().collect();
    idx.sort_by(|a, b| a.name.cmp(&b.name));
    let mut rows: DescribeRows = idx
        .into_iter()
        .map(|i| {
            [
                t.keyspace.clone(),
                "index".into(),
                i.name.clone(),
                describe_index(t, i),
            ]
        })
        .collect();
    for v in crate::view::ddl::views_of(schema, &t.keyspace, &t.name) {
        rows.push(view_row(v, internals));
    }
    rows
}

fn view_row(v: &TableDef, internals: bool) -> [String; 4] {
    [
        v.keyspace.clone(),
        "materialized_view".into(),
        v.name.clone(),
        describe_table_with(v, internals),
    ]
}

/// `CREATE [CUSTOM] INDEX name ON ks.t (target) [USING 'class' [WITH OPTIONS = {...}]];`
pub fn describe_index(t: &TableDef, i: &crate::index::IndexDef) -> String {
    let on = format!(
        "{} ON {}.{} ({})",
        quote(&i.name),
        quote(&t.keyspace),
        quote(&t.name),
        i.target_text()
    );
    match &i.class_name {
        None => format!("CREATE INDEX {on};"),
        Some(class) if i.options.is_empty() => {
            format!("CREATE CUSTOM INDEX {on} USING '{class}';")
        }
        Some(class) => format!(
            "CREATE CUSTOM INDEX {on} USING '{class}' WITH OPTIONS = {};",
            map_literal(&i.options)
        ),
    }
}

/// `PRIMARY KEY (...)`'s inside: `(a, b), c, d` or `a, c`.
fn key_text(t: &TableDef) -> String {
    let pk: Vec<String> = t.partition_key().map(|c| quote(&c.name)).collect();
    let pk_text = if pk.len() == 1 {
        pk[0].clone()
    } else {
        format!("({})", pk.join(", "))
    };
    let mut key = vec![pk_text];
    key.extend(t.clustering().map(|c| quote(&c.name)));
    key.join(", ")
}

/// `CREATE MATERIALIZED VIEW ks.v AS SELECT ... PRIMARY KEY (...)\n WITH ` (Cassandra's
/// layout).
fn view_head(t: &TableDef, def: &crate::view::ViewDef) -> String {
    let cols = if def.include_all {
        "*".to_string()
    } else {
        t.columns
            .iter()
            .map(|c| quote(&c.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "CREATE MATERIALIZED VIEW {}.{} AS\n    SELECT {cols}\n    FROM {}.{}\n    WHERE {}\n    PRIMARY KEY ({})\n WITH ",
        quote(&t.keyspace),
        quote(&t.name),
        quote(&t.keyspace),
        quote(&def.base),
        def.where_text(),
        key_text(t)
    )
}

pub fn describe_table(t: &TableDef) -> String {
    describe_table_with(t, false)
}

/// DESCRIBE's `CREATE TABLE` (or view) statement; `WITH INTERNALS` adds the table id and the
/// dropped columns: each listed with the columns as it was, then dropped (`ALTER TABLE ... DROP
/// ... USING TIMESTAMP`) and, when a column of that name was added again, added (5.0.9 lists a
/// re-added column only there). The drops come in the order they were made: 5.0.9 keeps them
/// in a hash map, in that order until a later change to the table re-files them
/// (docs/compatibility.md).
fn describe_table_with(t: &TableDef, internals: bool) -> String {
    if is_virtual_keyspace(&t.keyspace) {
        return crate::virtual_tables::describe_table(t, &key_text(t));
    }
    if let Some(def) = &t.view {
        return table_options_text(t, view_head(t, def), internals);
    }
    let mut s = format!("CREATE TABLE {}.{} (\n", quote(&t.keyspace), quote(&t.name));
    let pk: Vec<&str> = t.partition_key().map(|c| c.name.as_str()).collect();
    let cl: Vec<&str> = t.clustering().map(|c| c.name.as_str()).collect();
    // A static compact table has a hidden clustering column: no `k int PRIMARY KEY` form, and
    // its (internally static) columns print as declared.
    let single = pk.len() == 1 && cl.is_empty() && !t.compact;
    let dropped: &[crate::catalog::DroppedColumn] = if internals { &t.dropped } else { &[] };
    let readded = |c: &ColumnDef| dropped.iter().any(|d| d.name == c.name);
    for c in describe_order(t).into_iter().filter(|c| !readded(c)) {
        s.push_str(&format!("    {} {}", quote(&c.name), schema_type(c)));
        if c.kind == ColumnKind::Static && !t.compact {
            s.push_str(" static");
        }
        if let Some(m) = &c.mask {
            s.push_str(&crate::masking::describe(m, &c.ty));
        }
        if single && c.kind == ColumnKind::PartitionKey {
            s.push_str(" PRIMARY KEY");
        }
        s.push_str(",\n");
    }
    for d in dropped {
        let kind = if d.is_static { " static" } else { "" };
        s.push_str(&format!("    {} {}{kind},\n", quote(&d.name), d.cql_type));
    }
    if single {
        s.truncate(s.len() - 2);
        s.push('\n');
    } else {
        s.push_str(&format!("    PRIMARY KEY ({})\n", key_text(t)));
    }
    s.push_str(") WITH ");
    if t.compact {
        s.push_str("COMPACT STORAGE\n    AND ");
        let text = table_options_text(t, s, internals) + &drops_text(t, dropped);
        return crate::compact::describe_wrap(t, text);
    }
    table_options_text(t, s, internals) + &drops_text(t, dropped)
}

/// `WITH INTERNALS`: each dropped column's drop, and its addition when it was added again.
fn drops_text(t: &TableDef, dropped: &[crate::catalog::DroppedColumn]) -> String {
    let table = format!("{}.{}", quote(&t.keyspace), quote(&t.name));
    let mut s = String::new();
    for d in dropped {
        let name = quote(&d.name);
        s.push_str(&format!(
            "\nALTER TABLE {table} DROP {name} USING TIMESTAMP {};",
            d.at
        ));
        if let Some(c) = t.columns.iter().find(|c| c.name == d.name) {
            let kind = if c.kind == ColumnKind::Static {
                " static"
            } else {
                ""
            };
            s.push_str(&format!(
                "\nALTER TABLE {table} ADD {name} {}{kind};",
                schema_type(c)
            ));
        }
    }
    s
}

/// The columns in the order Cassandra's DESCRIBE lists them: the partition key and clustering
/// columns by position, then the static columns and then the regular ones, each group with its
/// single-cell columns before its multi-cell (non-frozen collection and UDT) ones, by name
/// within each (SELECT * orders static and regular columns by name alone). A static compact
/// table's columns print as declared.
fn describe_order(t: &TableDef) -> Vec<&ColumnDef> {
    let mut cols: Vec<&ColumnDef> = t.columns.iter().collect();
    if t.compact {
        return cols;
    }
    cols.sort_by_key(|c| {
        let multi_cell = crate::exec::multi_cell_kind(c).is_some();
        match c.kind {
            ColumnKind::PartitionKey => (0, c.position, false),
            ColumnKind::Clustering => (1, c.position, false),
            ColumnKind::Static => (2, 0, multi_cell),
            ColumnKind::Regular => (3, 0, multi_cell),
        }
    });
    cols
}

/// A declared type with its tuples frozen, and the collections inside a tuple, as Cassandra
/// prints a user type's fields (`tuple<int, list<int>>` is `frozen<tuple<int,
/// frozen<list<int>>>>`).
fn frozen_tuples(t: cql::ast::CqlType, in_tuple: bool) -> cql::ast::CqlType {
    use cql::ast::CqlType as C;
    let frozen = |t: C| match t {
        C::Frozen(_) => t,
        other => C::Frozen(Box::new(other)),
    };
    let inner = |t: Box<C>| Box::new(frozen_tuples(*t, in_tuple));
    let collection = |t: C| if in_tuple { frozen(t) } else { t };
    match t {
        C::Tuple(ts) => frozen(C::Tuple(
            ts.into_iter().map(|x| frozen_tuples(x, true)).collect(),
        )),
        C::Frozen(x) => frozen(frozen_tuples(*x, in_tuple)),
        C::List(e) => collection(C::List(inner(e))),
        C::Set(e) => collection(C::Set(inner(e))),
        C::Map(k, v) => collection(C::Map(inner(k), inner(v))),
        other => other,
    }
}

/// A column's type as `system_schema.columns` and DESCRIBE show it. Tuples are always frozen
/// in Cassandra, which prints them (and what they hold) so whatever the declaration said:
/// `tuple<int, list<int>>` is `frozen<tuple<int, frozen<list<int>>>>`. Other types print as
/// declared.
fn schema_type(c: &ColumnDef) -> String {
    fn has_tuple(ty: &ColumnType) -> bool {
        match ty {
            ColumnType::Tuple(_) => true,
            ColumnType::List(e) | ColumnType::Set(e) | ColumnType::Vector(e, _) => has_tuple(e),
            ColumnType::Map(k, v) => has_tuple(k) || has_tuple(v),
            _ => false,
        }
    }
    if !has_tuple(&c.ty) {
        return c.cql_type.clone();
    }
    let canonical = crate::types::cql_type_name(&c.ty);
    if c.cql_type.starts_with("frozen<") && !canonical.starts_with("frozen<") {
        format!("frozen<{canonical}>")
    } else {
        canonical
    }
}

/// `s` followed by the table's options, Cassandra's DESCRIBE layout.
fn table_options_text(t: &TableDef, mut s: String, internals: bool) -> String {
    let o = &t.options;
    let mut opts = Vec::new();
    if internals {
        opts.push(format!("ID = {}", crate::javafmt::format_uuid(&t.uuid)));
    }
    let order: Vec<String> = t
        .clustering()
        .map(|c| format!("{} {}", quote(&c.name), if c.desc { "DESC" } else { "ASC" }))
        .collect();
    if !order.is_empty() {
        opts.push(format!("CLUSTERING ORDER BY ({})", order.join(", ")));
    } else if let Some(hidden) = crate::compact::describe_clustering_order(t) {
        opts.push(format!("CLUSTERING ORDER BY ({hidden})"));
    }
    opts.push(format!(
        "additional_write_policy = '{}'",
        o.additional_write_policy
    ));
    opts.push(format!("allow_auto_snapshot = {}", o.allow_auto_snapshot));
    opts.push(format!(
        "bloom_filter_fp_chance = {}",
        fmt_double(o.bloom_filter_fp_chance)
    ));
    opts.push(format!("caching = {}", map_literal(&o.caching)));
    opts.push(format!("cdc = {}", o.cdc));
    opts.push(format!("comment = '{}'", o.comment.replace('\'', "''")));
    opts.push(format!("compaction = {}", map_literal(&o.compaction)));
    opts.push(format!("compression = {}", map_literal(&o.compression)));
    opts.push("memtable = 'default'".into());
    opts.push(format!(
        "crc_check_chance = {}",
        fmt_double(o.crc_check_chance)
    ));
    if t.view.is_none() {
        opts.push(format!("default_time_to_live = {}", o.default_time_to_live));
    }
    opts.push("extensions = {}".into());
    opts.push(format!("gc_grace_seconds = {}", o.gc_grace_seconds));
    opts.push(format!("incremental_backups = {}", o.incremental_backups));
    opts.push(format!("max_index_interval = {}", o.max_index_interval));
    opts.push(format!(
        "memtable_flush_period_in_ms = {}",
        o.memtable_flush_period_in_ms
    ));
    opts.push(format!("min_index_interval = {}", o.min_index_interval));
    opts.push(format!("read_repair = '{}'", o.read_repair));
    opts.push(format!("speculative_retry = '{}'", o.speculative_retry));
    // Peregrine's extension (docs/visibility.md), so that a schema replayed from DESCRIBE keeps
    // its labelled cells hidden. A view's follows its base table's and is not printed.
    if let Some(v) = o.visibility.filter(|_| t.view.is_none()) {
        opts.push(format!("visibility = {}", v.cql()));
    }
    s.push_str(&opts.join("\n    AND "));
    s.push(';');
    s
}

/// Output of a DESCRIBE: rows of (keyspace_name, type, name, create_statement).
pub type DescribeRows = Vec<[String; 4]>;

pub fn describe(
    schema: &Schema,
    current_ks: Option<&str>,
    d: &cql::ast::DescribeTarget,
    internals: bool,
) -> Result<DescribeRows, EngineError> {
    let mut rows = describe_unquoted(schema, current_ks, d, internals)?;
    // 5.0.9 names each element as CQL would write it: `"Qk"`, `"IndexInfo"`.
    const ELEMENTS: [&str; 7] = [
        "keyspace",
        "table",
        "type",
        "index",
        "materialized_view",
        "function",
        "aggregate",
    ];
    for row in rows
        .iter_mut()
        .filter(|r| ELEMENTS.contains(&r[1].as_str()))
    {
        row[0] = quote(&row[0]);
        row[2] = quote(&row[2]);
    }
    Ok(rows)
}

/// Elements in 5.0.9's DESCRIBE order (`SchemaElement.NAME_COMPARATOR`): by name, ignoring
/// case.
fn by_name<'a, T>(items: impl Iterator<Item = &'a T>, name: impl Fn(&T) -> &str) -> Vec<&'a T> {
    let mut v: Vec<&T> = items.collect();
    v.sort_by_cached_key(|x| name(x).to_lowercase());
    v
}

fn describe_unquoted(
    schema: &Schema,
    current_ks: Option<&str>,
    d: &cql::ast::DescribeTarget,
    internals: bool,
) -> Result<DescribeRows, EngineError> {
    use cql::ast::DescribeTarget as D;
    let user_ks =
        |ks: &&Arc<KeyspaceDef>| !crate::ddl::SYSTEM_KEYSPACES.contains(&ks.name.as_str());
    let table_rows = |t: &TableDef| -> DescribeRows {
        let mut rows = vec![[
            t.keyspace.clone(),
            "table".into(),
            t.name.clone(),
            describe_table_with(t, internals),
        ]];
        rows.extend(index_rows(schema, t, internals));
        rows
    };
    let ks_rows = |ks: &KeyspaceDef, only: bool| -> DescribeRows {
        let mut rows = vec![[
            ks.name.clone(),
            "keyspace".into(),
            ks.name.clone(),
            if is_virtual_keyspace(&ks.name) {
                crate::virtual_tables::describe_keyspace(&ks.name)
            } else {
                describe_keyspace(ks)
            },
        ]];
        if !only {
            // Types in their own order (5.0.9's `Types.sortedStream`), not by name.
            for u in schema.types.values().filter(|u| u.keyspace == ks.name) {
                rows.push([
                    ks.name.clone(),
                    "type".into(),
                    u.name.clone(),
                    describe_type(u),
                ]);
            }
            let tables = schema.tables_of(&ks.name).filter(|t| {
                (!is_virtual(t) || is_virtual_keyspace(&t.keyspace)) && t.view.is_none()
            });
            for t in by_name(tables.map(|t| &**t), |t| &t.name) {
                rows.extend(table_rows(t));
            }
        }
        rows
    };
    let find_ks = |name: Option<&str>| -> Result<Arc<KeyspaceDef>, EngineError> {
        let name = name.or(current_ks).ok_or_else(|| EngineError::invalid("'DESCRIBE KEYSPACE' was called without specifying a keyspace name and no keyspace is set."))?;
        schema
            .keyspaces
            .get(name)
            .cloned()
            .ok_or_else(|| EngineError::invalid(format!("'{name}' not found in keyspaces")))
    };
    // Every DESCRIBE of one element checks its keyspace first (Cassandra's
    // `DescribeStatement.Element`), then looks the element up by its kind.
    let find_ks_of = |name: &cql::ast::QualifiedName| -> Result<String, EngineError> {
        let ks =
            name.keyspace.as_deref().or(current_ks).ok_or_else(|| {
                EngineError::invalid("No keyspace specified and no current keyspace")
            })?;
        if !schema.keyspaces.contains_key(ks) {
            return Err(EngineError::invalid(format!(
                "'{ks}' not found in keyspaces"
            )));
        }
        Ok(ks.to_string())
    };
    // A table, not a view (`KeyspaceMetadata.getTableNullable`).
    let base_table =
        |ks: &str, name: &str| schema.table(ks, name).filter(|t| t.view.is_none()).cloned();
    let index_row = |ks: &str, name: &str| {
        schema
            .tables_of(ks)
            .flat_map(|t| t.indexes.iter().map(move |i| (t, i)))
            .find(|(_, i)| i.name == name)
            .map(|(t, i)| {
                [
                    ks.to_string(),
                    "index".into(),
                    i.name.clone(),
                    describe_index(t, i),
                ]
            })
    };
    let view = |ks: &str, name: &str| schema.table(ks, name).filter(|t| t.view.is_some()).cloned();
    Ok(match d {
        D::Keyspaces => by_name(schema.keyspaces.values(), |k| &k.name)
            .into_iter()
            .map(|k| {
                [
                    k.name.clone(),
                    "keyspace".into(),
                    k.name.clone(),
                    String::new(),
                ]
            })
            .collect(),
        D::Keyspace { name, only, .. } => ks_rows(&*find_ks(name.as_deref())?, *only),
        D::Tables => {
            let mut rows = Vec::new();
            let kss: Vec<Arc<KeyspaceDef>> = match current_ks {
                Some(k) => schema.keyspaces.get(k).cloned().into_iter().collect(),
                None => by_name(schema.keyspaces.values(), |k| &k.name)
                    .into_iter()
                    .cloned()
                    .collect(),
            };
            for ks in kss {
                let tables = schema.tables_of(&ks.name).filter(|t| t.view.is_none());
                for t in by_name(tables, |t| &t.name) {
                    rows.push([
                        ks.name.clone(),
                        "table".into(),
                        t.name.clone(),
                        String::new(),
                    ]);
                }
            }
            rows
        }
        D::Table(name) => {
            let ks = find_ks_of(name)?;
            let t = base_table(&ks, &name.name).ok_or_else(|| {
                EngineError::invalid(format!(
                    "Table '{}' not found in keyspace '{ks}'",
                    name.name
                ))
            })?;
            table_rows(&t)
        }
        D::Index(name) => {
            let ks = find_ks_of(name)?;
            let row = index_row(&ks, &name.name).ok_or_else(|| {
                EngineError::invalid(format!(
                    "Table for existing index '{}' not found in '{ks}'",
                    name.name
                ))
            })?;
            vec![row]
        }
        D::Schema { full } => {
            let mut rows = Vec::new();
            let kss = schema.keyspaces.values().filter(|k| *full || user_ks(k));
            for ks in by_name(kss, |k| &k.name) {
                rows.extend(ks_rows(ks, false));
            }
            rows
        }
        D::Name(name) => {
            // A keyspace, a table, an index or a view, in that order (as cqlsh's help says).
            if name.keyspace.is_none() {
                if let Some(ks) = schema.keyspaces.get(&name.name) {
                    return Ok(ks_rows(ks, false));
                }
            }
            let named = cql::ast::QualifiedName {
                keyspace: name
                    .keyspace
                    .clone()
                    .or(current_ks.map(str::to_string))
                    .or(Some(name.name.clone())),
                name: name.name.clone(),
            };
            let ks = find_ks_of(&named)?;
            if let Some(t) = base_table(&ks, &name.name) {
                table_rows(&t)
            } else if let Some(row) = index_row(&ks, &name.name) {
                vec![row]
            } else if let Some(v) = view(&ks, &name.name) {
                vec![view_row(&v, internals)]
            } else {
                return Err(EngineError::invalid(format!(
                    "'{}' not found in keyspace '{ks}'",
                    name.name
                )));
            }
        }
        D::Cluster => vec![[
            "Peregrine Cluster".into(),
            "Murmur3Partitioner".into(),
            String::new(),
            String::new(),
        ]],
        D::Types => {
            let mut types: Vec<_> = schema
                .types
                .values()
                .filter(|u| current_ks.is_none_or(|k| u.keyspace == k))
                .collect();
            // By keyspace, then by name, each ignoring case (NAME_COMPARATOR).
            types.sort_by_cached_key(|u| (u.keyspace.to_lowercase(), u.name.to_lowercase()));
            types
                .into_iter()
                .map(|u| {
                    [
                        u.keyspace.clone(),
                        "type".into(),
                        u.name.clone(),
                        String::new(),
                    ]
                })
                .collect()
        }
        D::Type(name) => {
            let ks = find_ks_of(name)?;
            let u = schema
                .types
                .get(&(ks.clone(), name.name.clone()))
                .ok_or_else(|| {
                    EngineError::invalid(format!(
                        "User defined type '{}' not found in '{ks}'",
                        name.name
                    ))
                })?;
            vec![[
                u.keyspace.clone(),
                "type".into(),
                u.name.clone(),
                describe_type(u),
            ]]
        }
        D::MaterializedView(name) => {
            let ks = find_ks_of(name)?;
            let v = view(&ks, &name.name).ok_or_else(|| {
                EngineError::invalid(format!(
                    "Materialized view '{}' not found in '{ks}'",
                    name.name
                ))
            })?;
            vec![view_row(&v, internals)]
        }
        // Peregrine holds no user-defined function or aggregate (`user_code.rs`).
        D::Functions | D::Aggregates => Vec::new(),
        D::Function(name) => {
            let ks = find_ks_of(name)?;
            return Err(EngineError::invalid(format!(
                "User defined function '{}' not found in '{ks}'",
                name.name
            )));
        }
        D::Aggregate(name) => {
            let ks = find_ks_of(name)?;
            return Err(EngineError::invalid(format!(
                "User defined aggregate '{}' not found in '{ks}'",
                name.name
            )));
        }
    })
}

pub fn describe_columns(d: &cql::ast::DescribeTarget) -> Vec<(&'static str, ColumnType)> {
    use cql::ast::DescribeTarget as D;
    match d {
        D::Cluster => vec![
            ("cluster", ColumnType::Varchar),
            ("partitioner", ColumnType::Varchar),
            ("snitch", ColumnType::Varchar),
            ("dc", ColumnType::Varchar),
        ],
        // A listing names its elements without their statements, as Cassandra 5.0.9's does.
        D::Keyspaces | D::Tables | D::Types | D::Functions | D::Aggregates => vec![
            ("keyspace_name", ColumnType::Varchar),
            ("type", ColumnType::Varchar),
            ("name", ColumnType::Varchar),
        ],
        _ => vec![
            ("keyspace_name", ColumnType::Varchar),
            ("type", ColumnType::Varchar),
            ("name", ColumnType::Varchar),
            ("create_statement", ColumnType::Varchar),
        ],
    }
}
