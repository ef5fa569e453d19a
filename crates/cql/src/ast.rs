//! The syntax tree the parser produces and the executor consumes.
//!
//! Names are already normalised: unquoted identifiers are lower-cased, quoted ones keep their
//! case and lose their quotes. Literals keep their source text ([`Literal::Integer`] holds
//! `"-12"`, not a number) because only the executor knows the receiving column's type and so
//! whether `12` is an `int`, a `bigint`, a `varint`, a `decimal` or a `timestamp`.
//!
//! Walking the common statements:
//! - [`SelectStatement`]: `table`, `selection` ([`Selection::Wildcard`] or a list of
//!   [`Selector`]s), `where_clause` (a list of [`Relation`]s joined by AND), `group_by`,
//!   `order_by`, `per_partition_limit`, `limit`, `allow_filtering`.
//! - [`InsertStatement`]: `table`, `values` ([`InsertValues::Values`] with parallel `columns` and
//!   `values`, or [`InsertValues::Json`]), `if_not_exists`, `using` (TTL / TIMESTAMP).
//! - [`UpdateStatement`]: `table`, `using`, `assignments` ([`Assignment`]), `where_clause`,
//!   `condition` ([`IfClause`]).
//! - [`DeleteStatement`]: `table`, `targets` (empty = whole rows), `using`, `where_clause`,
//!   `condition`.
//!
//! Bind markers (`?`, `:name`) are [`Term::Bind`] with a 0-based `index` in textual order; the
//! statement's [`ParsedStatement::bind_markers`] lists them all, so executors size the
//! prepared metadata from it and fill each slot when they meet the marker in the tree.

use std::fmt;

pub use proto::types::ColumnType;

use crate::keywords::{quote_identifier, quote_string};

mod service_level;
pub use service_level::{ServiceLevelOptions, ServiceLevelStatement, WorkloadType};

/// One parsed statement with its bind markers.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedStatement {
    pub statement: Statement,
    /// One entry per bind marker, in textual order (index = position): `None` for `?`,
    /// `Some(name)` for `:name`.
    pub bind_markers: Vec<Option<String>>,
}

impl ParsedStatement {
    /// Number of bind markers (`?` and `:name`) in the statement.
    pub fn bind_count(&self) -> usize {
        self.bind_markers.len()
    }
}

/// `[keyspace.]name` for tables, types, indexes, functions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QualifiedName {
    pub keyspace: Option<String>,
    pub name: String,
}

impl QualifiedName {
    /// A name without keyspace.
    pub fn new(name: impl Into<String>) -> Self {
        QualifiedName {
            keyspace: None,
            name: name.into(),
        }
    }

    /// A keyspace-qualified name.
    pub fn qualified(keyspace: impl Into<String>, name: impl Into<String>) -> Self {
        QualifiedName {
            keyspace: Some(keyspace.into()),
            name: name.into(),
        }
    }
}

impl fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(ks) = &self.keyspace {
            write!(f, "{}.", quote_identifier(ks))?;
        }
        f.write_str(&quote_identifier(&self.name))
    }
}

/// Every statement the parser understands.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Select(SelectStatement),
    Insert(InsertStatement),
    Update(UpdateStatement),
    Delete(DeleteStatement),
    Batch(BatchStatement),
    /// `USE keyspace`.
    Use(String),
    CreateKeyspace(CreateKeyspace),
    AlterKeyspace(AlterKeyspace),
    DropKeyspace {
        name: String,
        if_exists: bool,
    },
    CreateTable(CreateTable),
    AlterTable(AlterTable),
    DropTable {
        name: QualifiedName,
        if_exists: bool,
    },
    /// `TRUNCATE [TABLE] t`.
    Truncate(QualifiedName),
    CreateType(CreateType),
    AlterType(AlterType),
    DropType {
        name: QualifiedName,
        if_exists: bool,
    },
    CreateIndex(CreateIndex),
    /// `CREATE MATERIALIZED VIEW`.
    CreateView(CreateView),
    /// `ALTER MATERIALIZED VIEW name WITH options`.
    AlterView {
        name: QualifiedName,
        if_exists: bool,
        options: TableOptions,
    },
    /// `DROP MATERIALIZED VIEW`.
    DropView {
        name: QualifiedName,
        if_exists: bool,
    },
    DropIndex {
        name: QualifiedName,
        if_exists: bool,
    },
    /// `CREATE ROLE` (`is_user == false`) or `CREATE USER` (`true`).
    CreateRole(CreateRole),
    /// `ALTER ROLE` / `ALTER USER`.
    AlterRole(AlterRole),
    /// `DROP ROLE` / `DROP USER`.
    DropRole {
        name: String,
        if_exists: bool,
        is_user: bool,
    },
    /// `GRANT permissions ON resource TO role`.
    GrantPermissions(PermissionChange),
    /// `REVOKE permissions ON resource FROM role`.
    RevokePermissions(PermissionChange),
    /// `GRANT role TO grantee`.
    GrantRole {
        role: String,
        grantee: String,
    },
    /// `REVOKE role FROM revokee`.
    RevokeRole {
        role: String,
        revokee: String,
    },
    /// `LIST ROLES [OF role] [NORECURSIVE]`.
    ListRoles {
        of: Option<String>,
        recursive: bool,
    },
    /// `LIST USERS`.
    ListUsers,
    /// `LIST permissions [ON resource] [OF role] [NORECURSIVE]`.
    ListPermissions {
        permissions: Vec<Permission>,
        resource: Option<Resource>,
        of: Option<String>,
        recursive: bool,
    },
    Describe(DescribeStatement),
    /// ScyllaDB's service level statements (`ast::service_level`).
    ServiceLevel(ServiceLevelStatement),
    /// `GRANT/REVOKE AUTHORIZATIONS` and `LIST AUTHORIZATIONS`: a Peregrine extension
    /// (docs/visibility.md).
    Authorizations(AuthorizationsStatement),
    /// User-defined functions, aggregates and triggers: statements about code Peregrine does
    /// not run. The executor answers them as Cassandra 5.0 does with its default
    /// configuration, where no such object exists.
    UserCode(UserCodeStatement),
}

/// `CREATE/DROP FUNCTION`, `CREATE/DROP AGGREGATE`, `CREATE/DROP TRIGGER`.
#[derive(Debug, Clone, PartialEq)]
pub enum UserCodeStatement {
    /// `CREATE [OR REPLACE] FUNCTION [IF NOT EXISTS] name ...`: the rest of the statement (its
    /// arguments, body and language) is not modelled.
    CreateFunction { name: FunctionName },
    /// `CREATE [OR REPLACE] AGGREGATE [IF NOT EXISTS] name (types) SFUNC f STYPE type ...`
    /// (the final function and initial condition are not modelled).
    CreateAggregate {
        name: FunctionName,
        args: Vec<CqlType>,
        state_function: String,
        state_type: CqlType,
    },
    /// `DROP FUNCTION` (or `DROP AGGREGATE`) `[IF EXISTS] name [(types)]`.
    Drop {
        aggregate: bool,
        name: FunctionName,
        if_exists: bool,
        args: Option<Vec<CqlType>>,
    },
    /// `CREATE TRIGGER [IF NOT EXISTS] name ON table USING 'class'`.
    CreateTrigger {
        name: String,
        table: QualifiedName,
        class: String,
    },
    /// `DROP TRIGGER [IF EXISTS] name ON table`.
    DropTrigger {
        name: String,
        table: QualifiedName,
        if_exists: bool,
    },
}

impl Statement {
    /// The table (or other schema object) a DML statement targets; `None` for the rest and for
    /// batches. Useful for routing and caching decisions.
    pub fn table(&self) -> Option<&QualifiedName> {
        match self {
            Statement::Select(s) => Some(&s.table),
            Statement::Insert(s) => Some(&s.table),
            Statement::Update(s) => Some(&s.table),
            Statement::Delete(s) => Some(&s.table),
            _ => None,
        }
    }

    /// True for the role and permission statements (CREATE/ALTER/DROP ROLE and USER,
    /// GRANT, REVOKE, LIST ROLES/USERS/PERMISSIONS).
    pub fn is_role_statement(&self) -> bool {
        matches!(
            self,
            Statement::CreateRole(_)
                | Statement::AlterRole(_)
                | Statement::DropRole { .. }
                | Statement::GrantPermissions(_)
                | Statement::RevokePermissions(_)
                | Statement::GrantRole { .. }
                | Statement::RevokeRole { .. }
                | Statement::ListRoles { .. }
                | Statement::ListUsers
                | Statement::ListPermissions { .. }
                | Statement::Authorizations(_)
        )
    }
}

/// The visibility authorization statements (docs/visibility.md).
#[derive(Debug, Clone, PartialEq)]
pub enum AuthorizationsStatement {
    /// `GRANT AUTHORIZATIONS 'a', 'b' TO role`.
    Grant { auths: Vec<String>, role: String },
    /// `REVOKE AUTHORIZATIONS 'a', 'b' FROM role`.
    Revoke { auths: Vec<String>, role: String },
    /// `LIST AUTHORIZATIONS [OF role]`.
    List { of: Option<String> },
}

// ---------------------------------------------------------------------------------------------
// Terms and literals
// ---------------------------------------------------------------------------------------------

/// A constant as written. Numeric and other typed constants keep their text (sign included) for
/// type-directed conversion by the executor.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `'...'` or `$$...$$`, unescaped.
    String(String),
    /// Decimal digits with optional leading `-`; may exceed `i64` (varint, decimal).
    Integer(String),
    /// `1.5`, `-2e10`, `1.`, and `NaN`, `Infinity`, `-Infinity` (all accepted by
    /// `f64::from_str`).
    Float(String),
    Boolean(bool),
    /// A UUID literal as written.
    Uuid(String),
    /// Hex digits of a `0x...` blob, without the `0x` (may be empty or of odd length; the
    /// executor rejects odd lengths).
    Blob(String),
    /// A duration literal as written, sign included: `1h30m`, `-P1D`, `PT2H`.
    Duration(String),
    /// `NULL`.
    Null,
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::String(s) => f.write_str(&quote_string(s)),
            Literal::Integer(s) | Literal::Float(s) | Literal::Uuid(s) | Literal::Duration(s) => {
                f.write_str(s)
            }
            Literal::Boolean(b) => write!(f, "{b}"),
            Literal::Blob(h) => write!(f, "0x{h}"),
            Literal::Null => f.write_str("NULL"),
        }
    }
}

/// A bind marker: `?` (`name == None`) or `:name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindMarker {
    /// 0-based position among the statement's markers, in textual order.
    pub index: usize,
    pub name: Option<String>,
}

/// Arithmetic operator in terms and selectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl ArithOp {
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Rem => "%",
        }
    }
}

/// A `[keyspace.]function` name (lower-cased unless quoted).
pub type FunctionName = QualifiedName;

/// A value expression (Cassandra's `term`). Never refers to a column.
#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    Literal(Literal),
    Bind(BindMarker),
    /// `[a, b]`.
    List(Vec<Term>),
    /// `{a, b}`. `{}` also parses as an empty set, as in Cassandra: the executor must accept it
    /// for map (and UDT) receivers too.
    Set(Vec<Term>),
    /// `{k: v, ...}` (non-empty).
    Map(Vec<(Term, Term)>),
    /// `(a, b)`; also the value side of multi-column relations.
    Tuple(Vec<Term>),
    /// `{field: v, ...}` where the keys are identifiers.
    Udt(Vec<(String, Term)>),
    /// `f(args)`, e.g. `now()`, `toTimestamp(now())`, `token(?, ?)`.
    FunctionCall {
        name: FunctionName,
        args: Vec<Term>,
    },
    /// `(type) term`.
    TypeHint {
        ty: CqlType,
        term: Box<Term>,
    },
    /// `a + b` etc. (`*`, `/`, `%` bind tighter than `+`, `-`, all left-associative).
    Operation {
        op: ArithOp,
        left: Box<Term>,
        right: Box<Term>,
    },
    /// `-term` for non-literal terms (negative literals fold into the literal).
    Negate(Box<Term>),
}

impl Term {
    /// The literal, if this term is one.
    pub fn as_literal(&self) -> Option<&Literal> {
        match self {
            Term::Literal(l) => Some(l),
            _ => None,
        }
    }
}

fn write_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, t) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{t}")?;
    }
    Ok(())
}

impl fmt::Display for BindMarker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            None => f.write_str("?"),
            Some(n) => write!(f, ":{}", quote_identifier(n)),
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Literal(l) => write!(f, "{l}"),
            Term::Bind(b) => write!(f, "{b}"),
            Term::List(v) => {
                f.write_str("[")?;
                write_list(f, v)?;
                f.write_str("]")
            }
            Term::Set(v) => {
                f.write_str("{")?;
                write_list(f, v)?;
                f.write_str("}")
            }
            Term::Map(v) => {
                f.write_str("{")?;
                for (i, (k, val)) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {val}")?;
                }
                f.write_str("}")
            }
            Term::Tuple(v) => {
                f.write_str("(")?;
                write_list(f, v)?;
                f.write_str(")")
            }
            Term::Udt(v) => {
                f.write_str("{")?;
                for (i, (k, val)) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {val}", quote_identifier(k))?;
                }
                f.write_str("}")
            }
            Term::FunctionCall { name, args } => {
                write!(f, "{name}(")?;
                write_list(f, args)?;
                f.write_str(")")
            }
            Term::TypeHint { ty, term } => write!(f, "({ty}){term}"),
            Term::Operation { op, left, right } => {
                write!(f, "{left} {} {right}", op.symbol())
            }
            Term::Negate(t) => write!(f, "-{t}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

/// A CQL type as written in DDL and type hints. Native types reuse [`ColumnType`]'s scalar
/// variants (`text` and `varchar` are both [`ColumnType::Varchar`]); user types stay as names
/// until the executor resolves them against the schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CqlType {
    /// A scalar native type (never a collection, tuple or UDT variant).
    Native(ColumnType),
    /// `'org.apache.cassandra.db.marshal.XType'`.
    Custom(String),
    List(Box<CqlType>),
    Set(Box<CqlType>),
    Map(Box<CqlType>, Box<CqlType>),
    Tuple(Vec<CqlType>),
    Frozen(Box<CqlType>),
    /// `vector<float, 3>` (Cassandra 5.0).
    Vector(Box<CqlType>, u32),
    /// A user-defined type by name.
    UserDefined(QualifiedName),
    /// `varchar` in a cast or type hint: the same type as `Native(ColumnType::Varchar)`
    /// (`text`), kept apart because Cassandra prints a cast's type as written (`(varchar)'a'`)
    /// and has no `CAST(x AS varchar)`. The parser gives it nowhere else (DDL says `text`).
    Varchar,
}

impl CqlType {
    /// Maps a native type name (lower case) to its type.
    pub fn native_from_name(name: &str) -> Option<CqlType> {
        let t = match name {
            "ascii" => ColumnType::Ascii,
            "bigint" => ColumnType::Bigint,
            "blob" => ColumnType::Blob,
            "boolean" => ColumnType::Boolean,
            "counter" => ColumnType::Counter,
            "date" => ColumnType::Date,
            "decimal" => ColumnType::Decimal,
            "double" => ColumnType::Double,
            "duration" => ColumnType::Duration,
            "float" => ColumnType::Float,
            "inet" => ColumnType::Inet,
            "int" => ColumnType::Int,
            "smallint" => ColumnType::Smallint,
            "text" | "varchar" => ColumnType::Varchar,
            "time" => ColumnType::Time,
            "timestamp" => ColumnType::Timestamp,
            "timeuuid" => ColumnType::Timeuuid,
            "tinyint" => ColumnType::Tinyint,
            "uuid" => ColumnType::Uuid,
            "varint" => ColumnType::Varint,
            _ => return None,
        };
        Some(CqlType::Native(t))
    }

    /// True if this is `frozen<...>`.
    pub fn is_frozen(&self) -> bool {
        matches!(self, CqlType::Frozen(_))
    }

    /// True for a collection or user type written without `frozen<...>` (one cell per element
    /// or field when it is a column's type; a tuple is always frozen).
    pub fn is_multi_cell(&self) -> bool {
        matches!(
            self,
            CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..) | CqlType::UserDefined(_)
        )
    }

    /// The scalar native type this is, however it is spelled (`text` or `varchar`).
    pub fn as_native(&self) -> Option<&ColumnType> {
        static VARCHAR: ColumnType = ColumnType::Varchar;
        match self {
            CqlType::Native(t) => Some(t),
            CqlType::Varchar => Some(&VARCHAR),
            _ => None,
        }
    }

    /// Converts to the protocol type. `udt` resolves user type names (returning the full
    /// [`ColumnType::Udt`]); `frozen` is dropped (the protocol does not carry it). `None` if a
    /// user type does not resolve.
    pub fn to_column_type(
        &self,
        udt: &mut dyn FnMut(&QualifiedName) -> Option<ColumnType>,
    ) -> Option<ColumnType> {
        Some(match self {
            CqlType::Native(t) => t.clone(),
            CqlType::Varchar => ColumnType::Varchar,
            CqlType::Custom(c) => ColumnType::Custom(c.clone()),
            CqlType::List(t) => ColumnType::List(Box::new(t.to_column_type(udt)?)),
            CqlType::Set(t) => ColumnType::Set(Box::new(t.to_column_type(udt)?)),
            CqlType::Map(k, v) => ColumnType::Map(
                Box::new(k.to_column_type(udt)?),
                Box::new(v.to_column_type(udt)?),
            ),
            CqlType::Tuple(ts) => ColumnType::Tuple(
                ts.iter()
                    .map(|t| t.to_column_type(udt))
                    .collect::<Option<Vec<_>>>()?,
            ),
            CqlType::Frozen(t) => t.to_column_type(udt)?,
            CqlType::Vector(t, n) => ColumnType::Vector(Box::new(t.to_column_type(udt)?), *n),
            CqlType::UserDefined(name) => udt(name)?,
        })
    }
}

/// CQL name of a scalar protocol type (`text` for varchar, as DESCRIBE prints it).
pub fn native_type_name(t: &ColumnType) -> Option<&'static str> {
    Some(match t {
        ColumnType::Ascii => "ascii",
        ColumnType::Bigint => "bigint",
        ColumnType::Blob => "blob",
        ColumnType::Boolean => "boolean",
        ColumnType::Counter => "counter",
        ColumnType::Decimal => "decimal",
        ColumnType::Double => "double",
        ColumnType::Float => "float",
        ColumnType::Int => "int",
        ColumnType::Timestamp => "timestamp",
        ColumnType::Uuid => "uuid",
        ColumnType::Varchar => "text",
        ColumnType::Varint => "varint",
        ColumnType::Timeuuid => "timeuuid",
        ColumnType::Inet => "inet",
        ColumnType::Date => "date",
        ColumnType::Time => "time",
        ColumnType::Smallint => "smallint",
        ColumnType::Tinyint => "tinyint",
        ColumnType::Duration => "duration",
        ColumnType::Custom(_)
        | ColumnType::List(_)
        | ColumnType::Map(..)
        | ColumnType::Set(_)
        | ColumnType::Udt { .. }
        | ColumnType::Tuple(_)
        | ColumnType::Vector(..) => return None,
    })
}

impl fmt::Display for CqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CqlType::Native(t) => match native_type_name(t) {
                Some(n) => f.write_str(n),
                // Not produced by the parser; print something readable anyway.
                None => write!(f, "{t:?}"),
            },
            CqlType::Varchar => f.write_str("varchar"),
            CqlType::Custom(c) => f.write_str(&quote_string(c)),
            CqlType::List(t) => write!(f, "list<{t}>"),
            CqlType::Set(t) => write!(f, "set<{t}>"),
            CqlType::Map(k, v) => write!(f, "map<{k}, {v}>"),
            CqlType::Tuple(ts) => {
                f.write_str("tuple<")?;
                write_list(f, ts)?;
                f.write_str(">")
            }
            // A vector is always frozen and Cassandra prints it without the word.
            CqlType::Frozen(t) if matches!(**t, CqlType::Vector(..)) => write!(f, "{t}"),
            CqlType::Frozen(t) => write!(f, "frozen<{t}>"),
            CqlType::Vector(t, n) => write!(f, "vector<{t}, {n}>"),
            // A user type named like a native type (`"int"`) must stay quoted to read back.
            CqlType::UserDefined(n)
                if n.keyspace.is_none() && CqlType::native_from_name(&n.name).is_some() =>
            {
                write!(f, "\"{}\"", n.name)
            }
            // A user type (or its keyspace) named like a native type must be quoted to read
            // back as a user type (`"bigint".i`).
            CqlType::UserDefined(n) => {
                let part = |x: &str| {
                    if CqlType::native_from_name(x).is_some() {
                        format!("\"{}\"", x.replace('"', "\"\""))
                    } else {
                        crate::keywords::quote_identifier(x).into_owned()
                    }
                };
                match &n.keyspace {
                    // After `ks.` a name cannot be a native type, so it needs no quotes.
                    Some(ks) => write!(
                        f,
                        "{}.{}",
                        part(ks),
                        crate::keywords::quote_identifier(&n.name)
                    ),
                    None => f.write_str(&part(&n.name)),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SELECT
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub struct SelectStatement {
    pub table: QualifiedName,
    /// `SELECT JSON`.
    pub json: bool,
    /// `SELECT DISTINCT`.
    pub distinct: bool,
    pub selection: Selection,
    /// Relations joined by AND; empty without WHERE.
    pub where_clause: Vec<Relation>,
    /// Primary key columns, the last one possibly under a function (`floor(t, 1h)`).
    pub group_by: Vec<SelectorExpr>,
    pub order_by: Vec<(String, Order)>,
    /// `ORDER BY c ANN OF term` (Cassandra 5.0 vector search); kept apart from `order_by`,
    /// which then holds the other orderings written beside it (an error for the planner).
    pub ann: Option<AnnOrdering>,
    pub per_partition_limit: Option<Term>,
    pub limit: Option<Term>,
    pub allow_filtering: bool,
}

/// `ORDER BY column ANN OF term`.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnOrdering {
    pub column: String,
    pub term: Term,
}

/// What a SELECT returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// `*`.
    Wildcard,
    Selectors(Vec<Selector>),
}

/// One output column: an expression and an optional `AS alias`.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    pub expr: SelectorExpr,
    pub alias: Option<String>,
}

/// The selection functions over a cell's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellTimeFn {
    WriteTime,
    MaxWriteTime,
    Ttl,
}

impl fmt::Display for CellTimeFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CellTimeFn::WriteTime => "writetime",
            CellTimeFn::MaxWriteTime => "maxwritetime",
            CellTimeFn::Ttl => "ttl",
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum SelectorExpr {
    Column(String),
    /// `COUNT(*)` (the result column is named `count`). `count(1)` is a
    /// [`SelectorExpr::Function`] named `count` with a literal argument.
    CountRows,
    /// `writetime(c)`.
    WriteTime(String),
    /// `maxwritetime(c)` (Cassandra 5.0).
    MaxWriteTime(String),
    /// `ttl(c)`.
    Ttl(String),
    /// `writetime(c[k])`, `maxwritetime(c[k])`, `ttl(c[k])`: of one element of a non-frozen
    /// set or map (Cassandra 5.0).
    ElementTime {
        func: CellTimeFn,
        column: String,
        key: Term,
    },
    /// `writetime(c[a..b])`, `maxwritetime(c[a..])`, `ttl(c[..b])`: of the elements of a set or
    /// map whose keys are in the slice (Cassandra 5.0).
    SliceTime {
        func: CellTimeFn,
        column: String,
        from: Option<Term>,
        to: Option<Term>,
    },
    /// `writetime(u.f)`, `maxwritetime(u.f)`, `ttl(u.f)` (and `u.f.g` through nested UDTs): of
    /// one field of a UDT column (Cassandra 5.0).
    FieldTime {
        func: CellTimeFn,
        column: String,
        fields: Vec<String>,
    },
    /// `f(args)`, including `token(a, b)`, `now()`, `toTimestamp(now())`, aggregates.
    Function {
        name: FunctionName,
        args: Vec<SelectorExpr>,
    },
    /// `CAST(expr AS type)` (`call`), or the type hint of a literal or marker (`(int) 1`).
    Cast {
        expr: Box<SelectorExpr>,
        ty: CqlType,
        /// Written `CAST(expr AS type)`: of a bare term (`CAST(1 AS int)`) Cassandra cannot
        /// infer the type, unlike the hint's.
        call: bool,
    },
    /// A constant or bind marker used as a selector.
    Term(Term),
    /// `expr.field` (UDT field).
    Field {
        expr: Box<SelectorExpr>,
        field: String,
    },
    /// `expr[key]` (map value / set or list element).
    Element {
        expr: Box<SelectorExpr>,
        key: Term,
    },
    /// `expr[from..to]` with either bound optional.
    Slice {
        expr: Box<SelectorExpr>,
        from: Option<Term>,
        to: Option<Term>,
    },
    /// `a + b` etc.
    Operation {
        op: ArithOp,
        left: Box<SelectorExpr>,
        right: Box<SelectorExpr>,
    },
    /// `(expr)`: a selector in parentheses, kept because Cassandra names it with them
    /// (`-(m)`, `(m) + 1`) and cannot type it on its own (`SELECT (m) FROM t` is refused).
    Parens(Box<SelectorExpr>),
    /// `(type) selector` of a selector that is not a literal (`(int)m`): no conversion, the
    /// selector's value taken as of a type it is value-compatible with (a literal's hint is
    /// a [`SelectorExpr::Cast`] of a [`SelectorExpr::Term`]).
    TypeHint {
        ty: CqlType,
        expr: Box<SelectorExpr>,
    },
    /// `[a, b]`, `{a, b}`, `{k: v}` or `(a, b)` whose items are not all terms (`[v, 3]`): built
    /// per row from its items' values (one of terms only is a [`SelectorExpr::Term`]).
    Collection(SelectorCollection),
}

/// The items of a [`SelectorExpr::Collection`].
#[derive(Debug, Clone, PartialEq)]
pub enum SelectorCollection {
    List(Vec<SelectorExpr>),
    Set(Vec<SelectorExpr>),
    Map(Vec<(SelectorExpr, SelectorExpr)>),
    Tuple(Vec<SelectorExpr>),
}

impl SelectorCollection {
    /// Every item, a map's keys and values alternating.
    pub fn items(&self) -> Vec<&SelectorExpr> {
        match self {
            SelectorCollection::List(v)
            | SelectorCollection::Set(v)
            | SelectorCollection::Tuple(v) => v.iter().collect(),
            SelectorCollection::Map(v) => v.iter().flat_map(|(k, v)| [k, v]).collect(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Order::Asc => "ASC",
            Order::Desc => "DESC",
        })
    }
}

/// Comparison operators of relations and conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Eq,
    Neq,
    Lt,
    Lte,
    Gt,
    Gte,
    Like,
    Contains,
    ContainsKey,
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operator::Eq => "=",
            Operator::Neq => "!=",
            Operator::Lt => "<",
            Operator::Lte => "<=",
            Operator::Gt => ">",
            Operator::Gte => ">=",
            Operator::Like => "LIKE",
            Operator::Contains => "CONTAINS",
            Operator::ContainsKey => "CONTAINS KEY",
        })
    }
}

/// The right side of `IN`.
#[derive(Debug, Clone, PartialEq)]
pub enum InValues {
    /// `IN (a, b)`; for multi-column IN each item is a [`Term::Tuple`] or a marker.
    Terms(Vec<Term>),
    /// `IN ?` / `IN :name`: one marker bound to a whole list.
    Marker(BindMarker),
}

/// One WHERE relation.
#[derive(Debug, Clone, PartialEq)]
pub enum Relation {
    /// `c op term` for `= != < <= > >= LIKE CONTAINS [KEY]`.
    Binary {
        column: String,
        op: Operator,
        value: Term,
    },
    /// `c IN (...)` / `c IN ?`.
    In { column: String, values: InValues },
    /// `c IS NOT NULL` (materialized view and filtering syntax).
    IsNotNull { column: String },
    /// `m[key] op term` (map entry filtering).
    Element {
        column: String,
        key: Term,
        op: Operator,
        value: Term,
    },
    /// `token(a, b) op term`; the term is typically `token(?, ?)`, a marker or an integer.
    Token {
        columns: Vec<String>,
        op: Operator,
        value: Term,
    },
    /// `(a, b) op (1, 2)` / `(a, b) op ?`.
    MultiColumn {
        columns: Vec<String>,
        op: Operator,
        value: Term,
    },
    /// `(a, b) IN ((1, 2), (3, 4))` / `(a, b) IN ?`.
    MultiColumnIn {
        columns: Vec<String>,
        values: InValues,
    },
}

// ---------------------------------------------------------------------------------------------
// INSERT / UPDATE / DELETE / BATCH
// ---------------------------------------------------------------------------------------------

/// `USING TTL t AND TIMESTAMP ts`; each is an integer literal or a bind marker.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UsingClause {
    pub ttl: Option<Term>,
    pub timestamp: Option<Term>,
    /// `VISIBILITY 'expr'` or `VISIBILITY ?`: a Peregrine extension (docs/visibility.md), the
    /// visibility label of every cell the statement writes: a string literal or a bind marker.
    pub visibility: Option<Term>,
}

impl UsingClause {
    pub fn is_empty(&self) -> bool {
        self.ttl.is_none() && self.timestamp.is_none() && self.visibility.is_none()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct InsertStatement {
    pub table: QualifiedName,
    pub values: InsertValues,
    pub if_not_exists: bool,
    pub using: UsingClause,
}

#[derive(Debug, Clone, PartialEq)]
pub enum InsertValues {
    /// `(c1, c2) VALUES (v1, v2)`; the two lists have the same length.
    Values {
        columns: Vec<String>,
        values: Vec<Term>,
    },
    /// `JSON 'doc' [DEFAULT NULL | DEFAULT UNSET]`; `json` is a string literal or a marker.
    Json { json: Term, default_unset: bool },
}

/// The IF clause of UPDATE and DELETE.
#[derive(Debug, Clone, PartialEq)]
pub enum IfClause {
    /// `IF EXISTS`.
    Exists,
    /// `IF cond AND cond ...`.
    Conditions(Vec<Condition>),
}

/// One lightweight-transaction condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub column: String,
    /// `c[key]` or `c.field` instead of the whole column.
    pub target: Option<ElementOrField>,
    pub op: ConditionOp,
}

/// A part of a collection or UDT column.
#[derive(Debug, Clone, PartialEq)]
pub enum ElementOrField {
    Element(Term),
    Field(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConditionOp {
    Compare(Operator, Term),
    In(InValues),
}

#[derive(Debug, Clone, PartialEq)]
pub struct UpdateStatement {
    pub table: QualifiedName,
    pub using: UsingClause,
    pub assignments: Vec<Assignment>,
    pub where_clause: Vec<Relation>,
    pub condition: Option<IfClause>,
}

/// One `SET` item.
#[derive(Debug, Clone, PartialEq)]
pub enum Assignment {
    /// `c = term`.
    Set { column: String, value: Term },
    /// `c = c + term` or `c += term`: counter increment, collection append/union, or
    /// number addition, by the column's type.
    Add { column: String, value: Term },
    /// `c = term + c`: list prepend.
    Prepend { column: String, value: Term },
    /// `c = c - term` or `c -= term`: counter decrement or collection removal.
    Subtract { column: String, value: Term },
    /// `c[key] = term`.
    SetElement {
        column: String,
        key: Term,
        value: Term,
    },
    /// `c.field = term`.
    SetField {
        column: String,
        field: String,
        value: Term,
    },
}

impl Assignment {
    /// The column the assignment writes.
    pub fn column(&self) -> &str {
        match self {
            Assignment::Set { column, .. }
            | Assignment::Add { column, .. }
            | Assignment::Prepend { column, .. }
            | Assignment::Subtract { column, .. }
            | Assignment::SetElement { column, .. }
            | Assignment::SetField { column, .. } => column,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeleteStatement {
    pub table: QualifiedName,
    /// Columns (or elements / fields) to delete; empty deletes whole rows.
    pub targets: Vec<DeleteTarget>,
    pub using: UsingClause,
    pub where_clause: Vec<Relation>,
    pub condition: Option<IfClause>,
    /// `RETURNING <selectors> | *`: a Peregrine extension (docs/extensions.md) that answers
    /// with the deleted rows as they were just before the delete.
    pub returning: Option<Selection>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeleteTarget {
    pub column: String,
    pub target: Option<ElementOrField>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchKind {
    Logged,
    Unlogged,
    Counter,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BatchStatement {
    pub kind: BatchKind,
    pub using: UsingClause,
    /// Bind marker indexes run across all children in order.
    pub statements: Vec<ModificationStatement>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ModificationStatement {
    Insert(InsertStatement),
    Update(UpdateStatement),
    Delete(DeleteStatement),
}

// ---------------------------------------------------------------------------------------------
// DDL
// ---------------------------------------------------------------------------------------------

/// `name = value` in WITH clauses (keyspace, table, role options).
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// Lower-cased unless quoted.
    pub name: String,
    pub value: PropertyValue,
}

/// A property value: a constant or a map (replication, compaction, compression, caching).
#[derive(Debug, Clone, PartialEq)]
pub enum PropertyValue {
    Literal(Literal),
    /// Keys and values as text, in written order: strings unescaped, numbers and booleans as
    /// written (Cassandra stores these maps as `map<text, text>`).
    Map(Vec<(String, String)>),
}

impl PropertyValue {
    /// The value as text: string content, number text, `true`/`false`; `None` for maps.
    pub fn as_text(&self) -> Option<String> {
        match self {
            PropertyValue::Literal(Literal::String(s)) => Some(s.clone()),
            PropertyValue::Literal(Literal::Boolean(b)) => Some(b.to_string()),
            PropertyValue::Literal(Literal::Null) => None,
            PropertyValue::Literal(Literal::Blob(h)) => Some(format!("0x{h}")),
            PropertyValue::Literal(
                Literal::Integer(s) | Literal::Float(s) | Literal::Uuid(s) | Literal::Duration(s),
            ) => Some(s.clone()),
            PropertyValue::Map(_) => None,
        }
    }

    /// The entries, if this is a map.
    pub fn as_map(&self) -> Option<&[(String, String)]> {
        match self {
            PropertyValue::Map(m) => Some(m),
            PropertyValue::Literal(_) => None,
        }
    }
}

impl fmt::Display for PropertyValue {
    /// Literals as written in CQL; maps as `{'k': 'v', ...}` with every value quoted, the
    /// way DESCRIBE prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropertyValue::Literal(l) => write!(f, "{l}"),
            PropertyValue::Map(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {}", quote_string(k), quote_string(v))?;
                }
                f.write_str("}")
            }
        }
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}", quote_identifier(&self.name), self.value)
    }
}

/// Looks up a property by (lower-case) name.
pub fn find_property<'a>(props: &'a [Property], name: &str) -> Option<&'a PropertyValue> {
    props.iter().find(|p| p.name == name).map(|p| &p.value)
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateKeyspace {
    pub name: String,
    pub if_not_exists: bool,
    /// `replication`, `durable_writes`, ...
    pub properties: Vec<Property>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlterKeyspace {
    pub name: String,
    pub if_exists: bool,
    pub properties: Vec<Property>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    pub ty: CqlType,
    pub is_static: bool,
    /// `MASKED WITH ...` (dynamic data masking).
    pub mask: Option<ColumnMask>,
}

impl fmt::Display for ColumnDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", quote_identifier(&self.name), self.ty)?;
        if self.is_static {
            f.write_str(" static")?;
        }
        if let Some(m) = &self.mask {
            write!(f, " MASKED WITH {m}")?;
        }
        Ok(())
    }
}

/// A column mask as written: `MASKED WITH f(a, b)` names a masking function and its
/// arguments after the first (the column's value); `MASKED WITH DEFAULT` is
/// `mask_default()`.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMask {
    pub function: FunctionName,
    pub args: Vec<Term>,
}

impl fmt::Display for ColumnMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.function)?;
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{a}")?;
        }
        f.write_str(")")
    }
}

/// Options after `WITH` in CREATE/ALTER TABLE.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableOptions {
    /// `CLUSTERING ORDER BY (c DESC, d ASC)`.
    pub clustering_order: Vec<(String, Order)>,
    /// `COMPACT STORAGE`.
    pub compact_storage: bool,
    /// Everything else, in written order.
    pub properties: Vec<Property>,
}

impl TableOptions {
    pub fn is_empty(&self) -> bool {
        self.clustering_order.is_empty() && !self.compact_storage && self.properties.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateView {
    pub name: QualifiedName,
    pub if_not_exists: bool,
    /// `AS SELECT ... FROM base WHERE ...`.
    pub select: SelectStatement,
    pub partition_key: Vec<String>,
    pub clustering_columns: Vec<String>,
    pub options: TableOptions,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    pub name: QualifiedName,
    pub if_not_exists: bool,
    /// In declaration order.
    pub columns: Vec<ColumnDef>,
    /// Partition key columns, in key order (never empty).
    pub partition_key: Vec<String>,
    /// Clustering columns, in key order.
    pub clustering_columns: Vec<String>,
    pub options: TableOptions,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlterTable {
    pub name: QualifiedName,
    pub if_exists: bool,
    pub action: AlterTableAction,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AlterTableAction {
    /// `ADD [IF NOT EXISTS] c type [static]` or `ADD (a int, b text)`.
    Add {
        if_not_exists: bool,
        columns: Vec<ColumnDef>,
    },
    /// `DROP [IF EXISTS] c` or `DROP (a, b)` `[USING TIMESTAMP t]`.
    Drop {
        if_exists: bool,
        columns: Vec<String>,
        timestamp: Option<i64>,
    },
    /// `RENAME [IF EXISTS] a TO b [AND c TO d]`.
    Rename {
        if_exists: bool,
        renames: Vec<(String, String)>,
    },
    /// `WITH options`.
    With(TableOptions),
    /// `DROP COMPACT STORAGE` (Cassandra 4.0 migration aid).
    DropCompactStorage,
    /// Legacy `ALTER c TYPE t` (removed in Cassandra 4.0; the executor rejects it).
    AlterColumnType { column: String, ty: CqlType },
    /// `ALTER c MASKED WITH ...` (Some) or `ALTER c DROP MASKED` (None).
    AlterColumnMask {
        column: String,
        mask: Option<ColumnMask>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateType {
    pub name: QualifiedName,
    pub if_not_exists: bool,
    pub fields: Vec<(String, CqlType)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlterType {
    pub name: QualifiedName,
    pub if_exists: bool,
    pub action: AlterTypeAction,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AlterTypeAction {
    Add {
        if_not_exists: bool,
        field: String,
        ty: CqlType,
    },
    Rename {
        if_exists: bool,
        renames: Vec<(String, String)>,
    },
    /// Legacy `ALTER f TYPE t` (removed in Cassandra 4.0; the executor rejects it).
    AlterFieldType { field: String, ty: CqlType },
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateIndex {
    /// `None` when the statement names none.
    pub name: Option<String>,
    pub table: QualifiedName,
    pub if_not_exists: bool,
    pub targets: Vec<IndexTarget>,
    /// `CREATE CUSTOM INDEX ... USING 'class'`.
    pub custom_class: Option<String>,
    /// `WITH OPTIONS = {...}` entries (other WITH properties are folded in too).
    pub options: Vec<Property>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct IndexTarget {
    pub column: String,
    pub kind: IndexTargetKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexTargetKind {
    /// Plain `c` (values of a non-frozen collection, or the column).
    Simple,
    Keys,
    Values,
    Entries,
    Full,
}

// ---------------------------------------------------------------------------------------------
// Roles and permissions
// ---------------------------------------------------------------------------------------------

/// Options of CREATE/ALTER ROLE and USER; unset options are `None`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RoleOptions {
    pub password: Option<String>,
    pub hashed_password: Option<String>,
    pub login: Option<bool>,
    pub superuser: Option<bool>,
    pub options: Option<Vec<(String, String)>>,
    pub datacenters: Option<DatacenterAccess>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DatacenterAccess {
    All,
    Only(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateRole {
    pub name: String,
    pub if_not_exists: bool,
    /// `CREATE USER` (which implies `LOGIN = true`).
    pub is_user: bool,
    pub options: RoleOptions,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlterRole {
    pub name: String,
    pub if_exists: bool,
    pub is_user: bool,
    pub options: RoleOptions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// `ALL [PERMISSIONS]`.
    All,
    Create,
    Alter,
    Drop,
    Select,
    Modify,
    Authorize,
    Describe,
    Execute,
    Unmask,
    SelectMasked,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Resource {
    AllKeyspaces,
    Keyspace(String),
    /// `ALL TABLES IN KEYSPACE ks`.
    AllTables(String),
    Table(QualifiedName),
    AllRoles,
    Role(String),
    AllFunctions {
        keyspace: Option<String>,
    },
    Function {
        name: FunctionName,
        arg_types: Vec<CqlType>,
    },
    AllMBeans,
    /// `MBEAN 'name'` or `MBEANS 'pattern'`.
    MBean(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct PermissionChange {
    pub permissions: Vec<Permission>,
    pub resource: Resource,
    pub role: String,
}

// ---------------------------------------------------------------------------------------------
// DESCRIBE
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub struct DescribeStatement {
    pub target: DescribeTarget,
    /// `WITH INTERNALS`.
    pub with_internals: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DescribeTarget {
    Cluster,
    /// `DESCRIBE [FULL] SCHEMA`.
    Schema {
        full: bool,
    },
    Keyspaces,
    /// `DESCRIBE [ONLY] KEYSPACE [k]`; `None` means the session's keyspace.
    Keyspace {
        name: Option<String>,
        only: bool,
    },
    Tables,
    Table(QualifiedName),
    Types,
    Type(QualifiedName),
    Functions,
    Function(FunctionName),
    Aggregates,
    Aggregate(FunctionName),
    Index(QualifiedName),
    MaterializedView(QualifiedName),
    /// `DESCRIBE name` / `DESCRIBE ks.name`: a keyspace or a table (or index, view), found by
    /// lookup.
    Name(QualifiedName),
}
