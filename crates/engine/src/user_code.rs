//! User-defined functions, aggregates and triggers: `CREATE/DROP FUNCTION`, `CREATE/DROP
//! AGGREGATE`, `CREATE/DROP TRIGGER`.
//!
//! Peregrine runs no user code: Cassandra's functions are Java compiled and run in its JVM, its
//! triggers Java classes on its class path. Each statement is answered as Cassandra 5.0.9
//! answers it with its default configuration (`user_defined_functions_enabled: false`, no
//! trigger class installed), where none of these objects can exist: creating a function is
//! refused as disabled, an aggregate for want of its state function, a trigger for want of its
//! class; dropping one is an error unless `IF EXISTS`. The checks come in Cassandra's order,
//! with its messages (scenario `140_user_code.cql`, docs/compatibility.md).

use cql::ast::{CqlType, QualifiedName, UserCodeStatement};

use crate::catalog::Schema;
use crate::ddl::{keyspace_of, resolve_type};
use crate::EngineError;

/// The keyspaces whose functions and triggers Cassandra refuses to change: its local system
/// keyspaces and its virtual ones (`system_auth`, `system_traces` and `system_distributed`
/// take the same answers as a user keyspace).
const LOCAL_SYSTEM_KEYSPACES: [&str; 4] = [
    "system",
    "system_schema",
    "system_views",
    "system_virtual_schema",
];

/// Answers `st`: `Ok` only for the drops with `IF EXISTS`, which find nothing to drop.
pub(crate) fn answer(
    schema: &Schema,
    ks_default: Option<&str>,
    st: &UserCodeStatement,
) -> Result<(), EngineError> {
    use UserCodeStatement as U;
    match st {
        U::CreateFunction { name } => {
            guarded_keyspace(name, ks_default)?;
            Err(EngineError::invalid(
                "User-defined functions are disabled in cassandra.yaml - set \
                 user_defined_functions_enabled=true to enable",
            ))
        }
        U::CreateAggregate {
            name,
            args,
            state_function,
            state_type,
        } => {
            let ks = guarded_keyspace(name, ks_default)?;
            if !schema.keyspaces.contains_key(&ks) {
                return Err(EngineError::config(format!("Keyspace {ks} doesn't exist")));
            }
            let mut signature = Vec::with_capacity(args.len() + 1);
            for arg in args {
                signature.push(checked(schema, &ks, arg, "Argument", Some(&ks))?);
            }
            let state = checked(schema, &ks, state_type, "State type", Some(&ks))?;
            signature.insert(0, state);
            Err(EngineError::invalid(format!(
                "State function {ks}.{state_function}({}) doesn't exist",
                signature.join(", ")
            )))
        }
        U::Drop {
            aggregate,
            name,
            if_exists,
            args,
        } => {
            let ks = guarded_keyspace(name, ks_default)?;
            let mut shown = String::new();
            if let Some(args) = args {
                let mut written = Vec::with_capacity(args.len());
                for arg in args {
                    written.push(checked(schema, &ks, arg, "Argument", None)?);
                }
                shown = format!("({})", written.join(", "));
            }
            if *if_exists {
                return Ok(());
            }
            let what = if *aggregate { "Aggregate" } else { "Function" };
            Err(EngineError::invalid(format!(
                "{what} '{ks}.{}{shown}' doesn't exist",
                name.name
            )))
        }
        U::CreateTrigger { table, class, .. } => {
            let ks = guarded_keyspace(table, ks_default)?;
            if !schema.keyspaces.contains_key(&ks) {
                return Err(EngineError::invalid(format!(
                    "Keyspace '{ks}' doesn't exist"
                )));
            }
            if !schema.tables.contains_key(&(ks, table.name.clone())) {
                return Err(EngineError::invalid(format!(
                    "Table '{}' doesn't exist",
                    table.name
                )));
            }
            Err(EngineError::invalid(format!(
                "Trigger class '{class}' couldn't be loaded"
            )))
        }
        U::DropTrigger {
            name,
            table,
            if_exists,
        } => {
            let ks = guarded_keyspace(table, ks_default)?;
            if *if_exists {
                return Ok(());
            }
            Err(EngineError::invalid(format!(
                "Trigger '{name}' on '{ks}.{}' doesn't exist",
                table.name
            )))
        }
    }
}

/// The keyspace of `name` (or the session's), which must not be a local system keyspace.
fn guarded_keyspace(name: &QualifiedName, ks_default: Option<&str>) -> Result<String, EngineError> {
    let ks = keyspace_of(name, ks_default)?;
    if LOCAL_SYSTEM_KEYSPACES.contains(&ks.as_str()) {
        return Err(EngineError::invalid(format!(
            "System keyspace '{ks}' is not user-modifiable"
        )));
    }
    Ok(ks)
}

/// Checks an argument or state type as Cassandra does (not frozen, every user type known) and
/// returns it as Cassandra prints it: as written, its user types named in `qualify`'s keyspace
/// when given. `what` names it in the message ("Argument", "State type").
fn checked(
    schema: &Schema,
    ks: &str,
    ty: &CqlType,
    what: &str,
    qualify: Option<&str>,
) -> Result<String, EngineError> {
    let shown = as_written(ty, qualify).to_string();
    if let CqlType::Frozen(inner) = ty {
        if !matches!(**inner, CqlType::Tuple(_) | CqlType::Vector(..)) {
            return Err(EngineError::invalid(format!(
                "{what} '{shown}' cannot be frozen; remove frozen<> modifier from '{shown}'"
            )));
        }
    }
    resolve_type(schema, ks, ty)?;
    Ok(shown)
}

/// `ty` as Cassandra prints a type as written: a tuple is frozen without saying so, and user
/// types without a keyspace take `qualify`'s when given.
fn as_written(ty: &CqlType, qualify: Option<&str>) -> CqlType {
    let inner = |t: &CqlType| Box::new(as_written(t, qualify));
    match ty {
        CqlType::Frozen(t) if matches!(**t, CqlType::Tuple(_)) => as_written(t, qualify),
        CqlType::Frozen(t) => CqlType::Frozen(inner(t)),
        CqlType::List(t) => CqlType::List(inner(t)),
        CqlType::Set(t) => CqlType::Set(inner(t)),
        CqlType::Map(k, v) => CqlType::Map(inner(k), inner(v)),
        CqlType::Tuple(ts) => CqlType::Tuple(ts.iter().map(|t| as_written(t, qualify)).collect()),
        CqlType::Vector(t, n) => CqlType::Vector(inner(t), *n),
        CqlType::UserDefined(n) if n.keyspace.is_none() => CqlType::UserDefined(QualifiedName {
            keyspace: qualify.map(str::to_string),
            name: n.name.clone(),
        }),
        other => other.clone(),
    }
}
