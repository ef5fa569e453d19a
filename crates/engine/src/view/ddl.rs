//! CREATE / ALTER / DROP MATERIALIZED VIEW, with Cassandra 5.0's rules and messages, and the
//! refusals the base table's DDL owes to its views.

use super::{ViewDef, ViewFilter};
use crate::catalog::{ColumnKind, Schema, TableDef};
use crate::ddl::NO_KEYSPACE;
use crate::{EngineError, Now, SchemaChange, SchemaChangeType};
use cql::ast::{self, Operator, Relation, Selection, SelectorExpr};
use std::sync::Arc;

type DdlResult = Result<Option<(Schema, SchemaChange)>, EngineError>;

fn invalid(msg: impl Into<String>) -> EngineError {
    EngineError::invalid(msg.into())
}

/// The views of base table `base` in keyspace `ks`.
pub fn views_of<'a>(
    schema: &'a Schema,
    ks: &'a str,
    base: &'a str,
) -> impl Iterator<Item = &'a Arc<TableDef>> + 'a {
    schema
        .tables_of(ks)
        .filter(move |t| t.view.as_ref().is_some_and(|v| v.base == base))
}

pub fn create_view(
    schema: &Schema,
    ks_default: Option<&str>,
    cv: &ast::CreateView,
    now: Now,
) -> DdlResult {
    let ks = cv
        .name
        .keyspace
        .as_deref()
        .or(ks_default)
        .ok_or_else(|| invalid(NO_KEYSPACE))?
        .to_string();
    if cv.select.table.keyspace.as_deref().is_some_and(|k| k != ks) {
        return Err(invalid(
            "Cannot create a materialized view on a table in a different keyspace",
        ));
    }
    let name = &cv.name.name;
    let base_name = &cv.select.table.name;
    if !schema.keyspaces.contains_key(&ks) {
        return Err(invalid(format!("Keyspace '{ks}' doesn't exist")));
    }
    // A view is no base table (Cassandra looks the base up among tables only).
    let Some(base) = schema.table(&ks, base_name).filter(|t| t.view.is_none()) else {
        return Err(invalid(format!("Base table '{base_name}' doesn't exist")));
    };
    match schema.table(&ks, name) {
        Some(t) if t.view.is_none() => {
            return Err(invalid(format!(
            "Cannot create materialized view '{name}' - a table with the same name already exists"
        )))
        }
        Some(_) if cv.if_not_exists => return Ok(None),
        Some(_) => return Err(EngineError::already_exists(&ks, Some(name))),
        None => {}
    }
    if base
        .columns
        .iter()
        .any(|c| c.ty == proto::types::ColumnType::Counter)
    {
        return Err(invalid(
            "Materialized views are not supported on counter tables",
        ));
    }
    if base.options.gc_grace_seconds == 0 {
        return Err(invalid(format!(
            "Cannot create materialized view '{name}' for base table '{base_name}' with gc_grace_seconds of 0, since this value is used to TTL undelivered updates. Setting gc_grace_seconds too low might cause undelivered updates to expire before being replayed."
        )));
    }
    // SELECT clause: plain columns of the base.
    let include_all = cv.select.selection == Selection::Wildcard;
    let mut selected: Vec<String> = Vec::new();
    match &cv.select.selection {
        Selection::Wildcard => selected.extend(base.columns.iter().map(|c| c.name.clone())),
        Selection::Selectors(sels) => {
            for s in sels {
                if s.alias.is_some() {
                    return Err(invalid(format!(
                        "Cannot use aliases when defining a materialized view (got {:?})",
                        s.expr
                    )));
                }
                let SelectorExpr::Column(c) = &s.expr else {
                    return Err(invalid(format!(
                        "Can only select columns by name when defining a materialized view (got {:?})",
                        s.expr
                    )));
                };
                if base.column(c).is_none() {
                    return Err(invalid(format!(
                        "Undefined column name {c} in table {ks}.{base_name}"
                    )));
                }
                if !selected.contains(c) {
                    selected.push(c.clone());
                }
            }
        }
    }
    if let Some(c) = selected
        .iter()
        .find(|c| base.column(c).is_some_and(|c| c.kind == ColumnKind::Static))
    {
        return Err(invalid(format!(
            "Cannot include static column '{c}' in materialized view '{name}'"
        )));
    }
    // PRIMARY KEY.
    if cv.partition_key.is_empty() {
        return Err(invalid(format!(
            "Must provide at least one partition key column for materialized view '{name}'"
        )));
    }
    let key: Vec<&String> = cv
        .partition_key
        .iter()
        .chain(&cv.clustering_columns)
        .collect();
    for (i, k) in key.iter().enumerate() {
        let Some(c) = base.column(k).filter(|_| selected.contains(k)) else {
            return Err(invalid(format!(
                "Unknown column '{k}' referenced in PRIMARY KEY for materialized view '{name}'"
            )));
        };
        if key[..i].contains(k) {
            return Err(invalid(format!(
                "Duplicate column '{k}' in PRIMARY KEY clause for materialized view '{name}'"
            )));
        }
        let t = c.cql_type.as_str();
        let frozen = t.starts_with("frozen<");
        if !frozen && (t.starts_with("list<") || t.starts_with("set<") || t.starts_with("map<")) {
            return Err(invalid(format!(
                "Invalid non-frozen collection type '{}' for PRIMARY KEY column '{k}'",
                marshal_name(&c.ty)
            )));
        }
        if crate::ddl::contains_duration(&c.ty) {
            return Err(invalid(format!(
                "duration type is not supported for PRIMARY KEY column '{k}'"
            )));
        }
    }
    let order = &cv.options.clustering_order;
    if !order.is_empty()
        && order.iter().map(|(c, _)| c).collect::<Vec<_>>()
            != cv.clustering_columns.iter().collect::<Vec<_>>()
    {
        return Err(invalid(
            "Clustering key columns must exactly match columns in CLUSTERING ORDER BY directive",
        ));
    }
    let base_key: Vec<&str> = base
        .columns
        .iter()
        .filter(|c| matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering))
        .map(|c| c.name.as_str())
        .collect();
    let missing: Vec<&str> = base_key
        .iter()
        .copied()
        .filter(|c| !key.iter().any(|k| k == c))
        .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "Cannot create materialized view '{name}' without primary key columns {} from base table '{base_name}'",
            missing.join(", ")
        )));
    }
    // Cassandra keeps the view key's columns in a HashSet and names them in its order.
    let key_names: Vec<&str> = key.iter().map(|k| k.as_str()).collect();
    let key_set_order = java_hash_set_order(&key_names);
    let regular_in_key: Vec<&str> = key_set_order
        .iter()
        .copied()
        .filter(|k| !base_key.contains(k))
        .collect();
    if regular_in_key.len() > 1 {
        return Err(invalid(format!(
            "Cannot include more than one non-primary key column in materialized view primary key (got {})",
            regular_in_key.join(", ")
        )));
    }
    // WHERE clause.
    let (where_parts, filters) = where_clause(base, &cv.select.where_clause, now)?;
    let restricted: Vec<&String> = where_parts.iter().map(|(c, _)| c).collect();
    let unrestricted: Vec<&str> = key_set_order
        .iter()
        .copied()
        .filter(|k| !restricted.iter().any(|r| r.as_str() == *k))
        .collect();
    if !unrestricted.is_empty() {
        return Err(invalid(format!(
            "Primary key columns {} must be restricted with 'IS NOT NULL' or otherwise",
            unrestricted.join(", ")
        )));
    }
    let illegal: Vec<&str> = filters
        .iter()
        .map(|f| f.column.as_str())
        .filter(|c| !base_key.contains(c))
        .collect();
    if !illegal.is_empty() {
        return Err(invalid(format!(
            "Non-primary key columns can only be restricted with 'IS NOT NULL' (got: {} restricted illegally)",
            illegal.join(",")
        )));
    }
    if ast::find_property(&cv.options.properties, "default_time_to_live").is_some() {
        return Err(invalid("Cannot set default_time_to_live for a materialized view. Data in a materialized view always expire at the same time than the corresponding data in the parent table."));
    }
    // The view is a table of the selected columns, keyed as asked.
    let mut columns = Vec::new();
    for c in &selected {
        let bc = base
            .column(c)
            .ok_or_else(|| invalid(format!("Undefined column name {c}")))?;
        columns.push(ast::ColumnDef {
            name: c.clone(),
            ty: cql::parse_type(&bc.cql_type)
                .map_err(|e| EngineError::server(format!("stored type {}: {e}", bc.cql_type)))?,
            is_static: false,
            mask: None,
        });
    }
    // Without CLUSTERING ORDER BY a view clustering column keeps its base column's order (a
    // DESC base clustering column stays DESC), as Cassandra's view columns keep their base
    // type, reversed or not.
    let mut options = cv.options.clone();
    if options.clustering_order.is_empty()
        && cv
            .clustering_columns
            .iter()
            .any(|c| base.column(c).is_some_and(|bc| bc.desc))
    {
        options.clustering_order = cv
            .clustering_columns
            .iter()
            .map(|c| {
                let desc = base.column(c).is_some_and(|bc| bc.desc);
                (
                    c.clone(),
                    if desc {
                        ast::Order::Desc
                    } else {
                        ast::Order::Asc
                    },
                )
            })
            .collect();
    }
    let ct = ast::CreateTable {
        name: ast::QualifiedName {
            keyspace: Some(ks.clone()),
            name: name.clone(),
        },
        if_not_exists: false,
        columns,
        partition_key: cv.partition_key.clone(),
        clustering_columns: cv.clustering_columns.clone(),
        options,
    };
    let Some((mut next, _)) = crate::ddl::create_table(schema, Some(&ks), &ct, now.micros)? else {
        return Ok(None);
    };
    let key_of = (ks.clone(), name.clone());
    let mut vt = next
        .tables
        .get(&key_of)
        .map(|t| (**t).clone())
        .ok_or_else(|| EngineError::server("the view's table was not created"))?;
    // A partition key column from a descending base clustering column keeps its reversed
    // type (see `ColumnDef::desc`).
    for c in vt.columns.iter_mut() {
        if c.kind == ColumnKind::PartitionKey {
            c.desc = base
                .column(&c.name)
                .is_some_and(|bc| bc.kind == ColumnKind::Clustering && bc.desc);
        }
    }
    // Its rows carry the base cells' labels (`rows::view_row`): the option follows the base.
    crate::labels::check_view_option(vt.options.visibility, None)?;
    vt.options.visibility = base.options.visibility;
    vt.view = Some(ViewDef {
        base: base_name.clone(),
        where_parts,
        strict: !regular_in_key.is_empty(),
        include_all,
        filters,
        built: false,
    });
    next.tables.insert(key_of, Arc::new(vt));
    Ok(Some((
        next,
        crate::table_change(SchemaChangeType::Created, &ks, name),
    )))
}

/// The order a Java `HashSet` of column names (Cassandra's `ColumnIdentifier`s), filled in
/// the order of `names`, iterates them: by hash bucket, then in insertion order. A name's
/// hash is `ByteBuffer.hashCode` of its UTF-8 bytes, spread as `HashMap` spreads it; the table
/// has 16 buckets, doubled while more than three quarters full.
fn java_hash_set_order<'a>(names: &[&'a str]) -> Vec<&'a str> {
    crate::javafmt::java_hash_set_order(names.to_vec(), |n| {
        crate::javafmt::byte_buffer_hash_code(n.as_bytes())
    })
}

/// A non-frozen collection type as Cassandra's type classes print themselves
/// (`...marshal.MapType(...)`), as in the messages that name one. Its frozen collection and
/// UDT elements are wrapped in `FrozenType(...)`; tuples are not, nor is anything inside a
/// frozen value or a tuple (checked against 5.0.9).
fn marshal_name(ty: &proto::types::ColumnType) -> String {
    use proto::types::ColumnType as T;
    match ty {
        T::List(e) => format!("{MARSHAL}ListType({})", marshal_inner(e, true)),
        T::Set(e) => format!("{MARSHAL}SetType({})", marshal_inner(e, true)),
        T::Map(k, v) => format!(
            "{MARSHAL}MapType({},{})",
            marshal_inner(k, true),
            marshal_inner(v, true)
        ),
        other => marshal_inner(other, false),
    }
}

/// `ty` printed as an element of a collection; `wrap`: whether a frozen collection or UDT
/// gets its `FrozenType(...)`.
fn marshal_inner(ty: &proto::types::ColumnType, wrap: bool) -> String {
    use proto::types::ColumnType as T;
    let frozen = |s: String| {
        if wrap {
            format!("{MARSHAL}FrozenType({s})")
        } else {
            s
        }
    };
    let simple = match ty {
        T::Custom(c) => return c.clone(),
        T::Ascii => "AsciiType",
        T::Bigint => "LongType",
        T::Blob => "BytesType",
        T::Boolean => "BooleanType",
        T::Counter => "CounterColumnType",
        T::Decimal => "DecimalType",
        T::Double => "DoubleType",
        T::Float => "FloatType",
        T::Int => "Int32Type",
        T::Timestamp => "TimestampType",
        T::Uuid => "UUIDType",
        T::Varchar => "UTF8Type",
        T::Varint => "IntegerType",
        T::Timeuuid => "TimeUUIDType",
        T::Inet => "InetAddressType",
        T::Date => "SimpleDateType",
        T::Time => "TimeType",
        T::Smallint => "ShortType",
        T::Tinyint => "ByteType",
        T::Duration => "DurationType",
        T::List(e) => return frozen(format!("{MARSHAL}ListType({})", marshal_inner(e, false))),
        T::Set(e) => return frozen(format!("{MARSHAL}SetType({})", marshal_inner(e, false))),
        T::Map(k, v) => {
            return frozen(format!(
                "{MARSHAL}MapType({},{})",
                marshal_inner(k, false),
                marshal_inner(v, false)
            ))
        }
        T::Vector(e, n) => return format!("{MARSHAL}VectorType({},{n})", marshal_inner(e, false)),
        T::Tuple(es) => {
            let es: Vec<String> = es.iter().map(|e| marshal_inner(e, false)).collect();
            return format!("{MARSHAL}TupleType({})", es.join(","));
        }
        T::Udt {
            keyspace,
            name,
            fields,
        } => {
            let fs: Vec<String> = fields
                .iter()
                .map(|(f, t)| {
                    format!(
                        "{}:{}",
                        crate::javafmt::hex(f.as_bytes()),
                        marshal_inner(t, false)
                    )
                })
                .collect();
            return frozen(format!(
                "{MARSHAL}UserType({keyspace},{},{})",
                crate::javafmt::hex(name.as_bytes()),
                fs.join(",")
            ));
        }
    };
    format!("{MARSHAL}{simple}")
}

const MARSHAL: &str = "org.apache.cassandra.db.marshal.";

/// The WHERE clause's relations (column, rest of the text), and its restrictions other than
/// IS NOT NULL.
type WhereParts = Vec<(String, String)>;

fn where_clause(
    base: &TableDef,
    relations: &[Relation],
    now: Now,
) -> Result<(WhereParts, Vec<ViewFilter>), EngineError> {
    let mut restricted = Vec::new();
    let mut filters = Vec::new();
    let column = |c: &str| {
        base.column(c).ok_or_else(|| {
            invalid(format!(
                "Undefined column name {c} in table {}.{}",
                base.keyspace, base.name
            ))
        })
    };
    for r in relations {
        match r {
            Relation::IsNotNull { column: c } => {
                column(c)?;
                restricted.push((c.clone(), "IS NOT NULL".to_string()));
            }
            Relation::Binary {
                column: c,
                op,
                value,
            } => {
                let col = column(c)?;
                let op = match op {
                    Operator::Eq => "=",
                    Operator::Lt => "<",
                    Operator::Lte => "<=",
                    Operator::Gt => ">",
                    Operator::Gte => ">=",
                    Operator::Neq => {
                        return Err(invalid(format!(
                            "Unsupported \"!=\" relation: {c} != {}",
                            crate::build::cassandra_text(value)
                        )))
                    }
                    other => {
                        return Err(invalid(format!(
                            "Operator {other} is not supported in a materialized view's WHERE clause by Peregrine yet"
                        )))
                    }
                };
                let v = crate::literal::const_term_for(c, &col.ty, value, now)?
                    .ok_or_else(|| invalid(format!("Invalid null value for column {c}")))?;
                // As Cassandra writes a term of a statement: text literals unescaped, UDT
                // literals' fields in its HashMap order.
                let text = crate::selection::term_text(value, true);
                restricted.push((c.clone(), format!("{op} {text}")));
                filters.push(ViewFilter {
                    column: c.clone(),
                    op: op.into(),
                    values: vec![v],
                });
            }
            Relation::In {
                column: c,
                values: ast::InValues::Terms(terms),
            } => {
                let col = column(c)?;
                let mut values = Vec::new();
                for t in terms {
                    if let Some(v) = crate::literal::const_term_for(c, &col.ty, t, now)? {
                        values.push(v);
                    }
                }
                let list: Vec<String> = terms
                    .iter()
                    .map(|t| crate::selection::term_text(t, true))
                    .collect();
                restricted.push((c.clone(), format!("IN ({})", list.join(", "))));
                filters.push(ViewFilter {
                    column: c.clone(),
                    op: "IN".into(),
                    values,
                });
            }
            Relation::Token { .. } => {
                return Err(invalid(
                    "Cannot use token relation when defining a materialized view",
                ))
            }
            _ => {
                return Err(invalid(
                    "This restriction is not supported in a materialized view's WHERE clause by Peregrine yet",
                ))
            }
        }
    }
    Ok((restricted, filters))
}

fn find_view<'a>(
    schema: &'a Schema,
    ks_default: Option<&str>,
    name: &ast::QualifiedName,
) -> Result<(String, Option<&'a Arc<TableDef>>), EngineError> {
    let ks = name
        .keyspace
        .as_deref()
        .or(ks_default)
        .ok_or_else(|| invalid(NO_KEYSPACE))?
        .to_string();
    let v = schema.table(&ks, &name.name).filter(|t| t.view.is_some());
    Ok((ks, v))
}

pub fn alter_view(
    schema: &Schema,
    ks_default: Option<&str>,
    name: &ast::QualifiedName,
    if_exists: bool,
    options: &ast::TableOptions,
) -> DdlResult {
    let (ks, v) = find_view(schema, ks_default, name)?;
    let Some(v) = v else {
        if if_exists {
            return Ok(None);
        }
        return Err(invalid(format!(
            "Materialized view '{ks}.{}' doesn't exist",
            name.name
        )));
    };
    if !options.clustering_order.is_empty() || options.compact_storage {
        return Err(invalid(
            "CLUSTERING ORDER and COMPACT STORAGE cannot be altered",
        ));
    }
    let mut nt = (**v).clone();
    crate::ddl::apply_table_properties(&mut nt.options, &options.properties)?;
    crate::labels::check_view_option(nt.options.visibility, v.options.visibility)?;
    if nt.options.default_time_to_live > 0 {
        return Err(invalid("Forbidden default_time_to_live detected for a materialized view. Data in a materialized view always expire at the same time than the corresponding data in the parent table. default_time_to_live must be set to zero, see CASSANDRA-12868 for more information"));
    }
    let mut next = schema.clone();
    next.tables
        .insert((ks.clone(), name.name.clone()), Arc::new(nt));
    Ok(Some((
        next,
        crate::table_change(SchemaChangeType::Updated, &ks, &name.name),
    )))
}

pub fn drop_view(
    schema: &Schema,
    ks_default: Option<&str>,
    name: &ast::QualifiedName,
    if_exists: bool,
) -> DdlResult {
    let (ks, v) = find_view(schema, ks_default, name)?;
    if v.is_none() {
        if if_exists {
            return Ok(None);
        }
        return Err(invalid(format!(
            "Materialized view '{ks}.{}' doesn't exist",
            name.name
        )));
    }
    let mut next = schema.clone();
    next.tables.remove(&(ks.clone(), name.name.clone()));
    Ok(Some((
        next,
        crate::table_change(SchemaChangeType::Dropped, &ks, &name.name),
    )))
}

/// DROP TABLE of a view, or of a table views depend on, is refused as Cassandra refuses it.
pub fn check_drop_table(schema: &Schema, t: &TableDef) -> Result<(), EngineError> {
    if t.view.is_some() {
        return Err(invalid(
            "Cannot use DROP TABLE on a materialized view. Please use DROP MATERIALIZED VIEW instead.",
        ));
    }
    if views_of(schema, &t.keyspace, &t.name).next().is_some() {
        return Err(invalid(format!(
            "Cannot drop a table when materialized views still depend on it ({})",
            t.keyspace
        )));
    }
    Ok(())
}

/// ALTER TABLE on a view.
pub fn check_alter_table(t: &TableDef) -> Result<(), EngineError> {
    if t.view.is_some() {
        return Err(invalid(
            "Cannot use ALTER TABLE on a materialized view; use ALTER MATERIALIZED VIEW instead",
        ));
    }
    Ok(())
}

/// Dropping a column of a table with views is refused. Cassandra checks it last for each
/// column, after its key-column and dependent-index refusals (`AlterTableStatement`).
pub fn check_drop_column(schema: &Schema, t: &TableDef, column: &str) -> Result<(), EngineError> {
    if views_of(schema, &t.keyspace, &t.name).next().is_none() {
        return Ok(());
    }
    Err(invalid(format!(
        "Cannot drop column {column} on base table {} with materialized views",
        t.name
    )))
}

/// After ALTER TABLE on a base, as Cassandra's views follow it: a `SELECT *` view gains
/// the added columns; a renamed key column is renamed in every view and its WHERE clause.
pub fn follow_base(next: &mut Schema, ks: &str, base: &str, action: &ast::AlterTableAction) {
    let Some(b) = next.table(ks, base).cloned() else {
        return;
    };
    let views: Vec<Arc<TableDef>> = views_of(next, ks, base).cloned().collect();
    for v in views {
        let mut nv = (*v).clone();
        match action {
            ast::AlterTableAction::Add { .. }
                if nv.view.as_ref().is_some_and(|d| d.include_all) =>
            {
                for c in &b.columns {
                    if nv.column(&c.name).is_none() {
                        let mut nc = c.clone();
                        nc.id = nv.next_column_id;
                        nv.next_column_id += 1;
                        nc.kind = ColumnKind::Regular;
                        nc.position = -1;
                        nc.desc = false;
                        nv.columns.push(nc);
                    }
                }
            }
            ast::AlterTableAction::Rename { renames, .. } => {
                for (from, to) in renames {
                    if let Some(c) = nv.columns.iter_mut().find(|c| c.name == *from) {
                        c.name = to.clone();
                    }
                    if let Some(d) = &mut nv.view {
                        d.rename(from, to);
                    }
                }
            }
            _ => continue,
        }
        nv.sort_columns();
        next.tables
            .insert((ks.to_string(), nv.name.clone()), Arc::new(nv));
    }
}

/// Writes to a view are refused.
pub fn check_write(t: &TableDef) -> Result<(), EngineError> {
    if t.view.is_some() {
        return Err(invalid("Cannot directly modify a materialized view"));
    }
    Ok(())
}

/// TRUNCATE of a view is refused.
pub fn check_truncate(t: &TableDef) -> Result<(), EngineError> {
    if t.view.is_some() {
        return Err(invalid(
            "Cannot TRUNCATE materialized view directly; must truncate base table instead",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod hash_order_tests {
    use super::java_hash_set_order;

    #[test]
    fn names_come_in_java_hash_set_order() {
        // Cassandra 5.0.9: "Cannot include more than one non-primary key column in
        // materialized view primary key (got v1, v0)" for PRIMARY KEY (..., v0, v1).
        assert_eq!(java_hash_set_order(&["v0", "v1"]), ["v1", "v0"]);
        assert_eq!(java_hash_set_order(&["v1", "v0"]), ["v1", "v0"]);
    }
}
