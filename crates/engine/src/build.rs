//! AST -> plans: name resolution against one schema snapshot, the restrictions Cassandra
//! accepts (with its error messages for the ones it refuses), and the type of every bind
//! marker.
//!
//! | module | what it holds |
//! |---|---|
//! | this file | [`Builder`]: tables, columns, terms and bind markers; INSERT, UPDATE, DELETE |
//! | `select` | SELECT plans and the columns a selection reads |
//! | `where_clause` | the WHERE clause of a SELECT, UPDATE or DELETE |
//! | `operation` | arithmetic over bind markers in terms: the operator function, marker types |
//! | `call` | native function calls with bind markers among their arguments, in terms |
//! | `batch` | the checks of a write's USING attributes and of a BATCH as a whole |

use crate::catalog::{ColumnDef, ColumnKind, Schema, TableDef};
use crate::literal::const_term_for;
use crate::plan::*;
use crate::EngineError;
use cql::ast::{self, Operator, Relation, Term};
use proto::types::ColumnType;
use std::sync::Arc;

mod batch;
mod call;
pub(crate) mod operation;
mod select;
pub(crate) use select::{selector_columns, walk_selector};
mod where_clause;
pub(crate) use batch::{check_write_attributes, validate_batch};
pub(crate) use call::const_call;
pub(crate) use operation::{
    apply as operation_apply, callee_name as operation_function_name, cassandra_text,
    resolve as resolve_operation,
};
pub(crate) use where_clause::{clustering_merge_order, like_unindexed, Clause};

/// The plan of one statement plus what PREPARE reports about it.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub kind: CompiledKind,
    pub binds: Vec<Option<BindSpec>>,
    /// For each partition key column, the bind marker that sets it (token-aware routing).
    pub pk_indexes: Vec<u16>,
    /// Contains `now()` and the like: rebuilt at each execution.
    pub volatile: bool,
    /// Digest of the result metadata (v5 `result_metadata_id`).
    pub result_metadata_id: [u8; 16],
}

#[derive(Debug, Clone)]
pub enum CompiledKind {
    Select(SelectPlan),
    /// A SELECT on a virtual (system) table; evaluated by `system.rs`.
    VirtualSelect(SelectPlan),
    Write(WritePlan),
    Batch(crate::BatchKind, Vec<WritePlan>),
    /// `DELETE ... RETURNING` (see `returning`).
    DeleteReturning(Box<crate::returning::DeleteReturning>),
    /// DDL, USE and the rest run from the AST.
    Other,
}

pub(crate) struct Builder<'a> {
    pub schema: &'a Schema,
    pub keyspace: Option<&'a str>,
    pub binds: Vec<Option<BindSpec>>,
    pub volatile: bool,
    /// The statement's clock: `now()`, `currentTimestamp()`... in terms are evaluated at it
    /// (a plan using them is volatile and rebuilt at each execution).
    pub now: crate::Now,
    /// An error Cassandra raises once the statement is otherwise prepared (a nested list in a
    /// similarity function's vector literal), reported once the plan is built: its message,
    /// for a server error.
    pub late_error: Option<String>,
    /// An error Cassandra raises only when the statement executes (a null element in a
    /// similarity function's vector literal: PREPARE succeeds, every EXECUTE fails): its
    /// message, for a server error the plan carries (`SelectPlan::execution_error`).
    pub execution_error: Option<String>,
}

pub(crate) const DISTINCT_WHERE_MSG: &str = "SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns.";
pub(crate) const FILTERING_MSG: &str = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING";

impl<'a> Builder<'a> {
    pub fn new(
        schema: &'a Schema,
        keyspace: Option<&'a str>,
        bind_count: usize,
        now: crate::Now,
    ) -> Self {
        Builder {
            schema,
            keyspace,
            binds: vec![None; bind_count],
            volatile: false,
            now,
            late_error: None,
            execution_error: None,
        }
    }

    pub fn table(&self, name: &ast::QualifiedName) -> Result<Arc<TableDef>, EngineError> {
        let ks = match &name.keyspace {
            Some(k) => k.as_str(),
            None => self
                .keyspace
                .ok_or_else(|| EngineError::invalid(crate::ddl::NO_KEYSPACE))?,
        };
        if let Some(t) = self.schema.table(ks, &name.name) {
            return Ok(t.clone());
        }
        if !self.schema.keyspaces.contains_key(ks) {
            return Err(EngineError::invalid(format!(
                "keyspace {ks} does not exist"
            )));
        }
        Err(EngineError::invalid(format!(
            "table {} does not exist",
            name.name
        )))
    }

    pub(crate) fn column<'t>(
        &self,
        t: &'t TableDef,
        name: &str,
    ) -> Result<(usize, &'t ColumnDef), EngineError> {
        t.column_index(name)
            .map(|i| (i, &t.columns[i]))
            .ok_or_else(|| {
                EngineError::invalid(format!(
                    "Undefined column name {name} in table {}.{}",
                    t.keyspace, t.name
                ))
            })
    }

    pub(crate) fn bind(
        &mut self,
        t: &TableDef,
        m: &ast::BindMarker,
        name: &str,
        ty: &ColumnType,
    ) -> Src {
        if let Some(slot) = self.binds.get_mut(m.index) {
            *slot = Some(BindSpec {
                name: m.name.clone().unwrap_or_else(|| name.to_string()),
                ty: ty.clone(),
                keyspace: t.keyspace.clone(),
                table: t.name.clone(),
            });
        }
        Src::Bind(m.index)
    }

    /// A term for a receiver named `name` of type `ty`.
    pub fn term(
        &mut self,
        t: &TableDef,
        term: &Term,
        name: &str,
        ty: &ColumnType,
    ) -> Result<Src, EngineError> {
        match term {
            Term::Bind(m) => Ok(self.bind(t, m, name, ty)),
            Term::TypeHint { ty: hint, term } => {
                // Only a column itself can be multi-cell (not `value(m)`, `u.f`, ...).
                let multi_cell = t
                    .column(name)
                    .is_some_and(|c| crate::exec::multi_cell_kind(c).is_some());
                crate::literal::check_cast(name, ty, Some(multi_cell), hint, term)?;
                self.term(t, term, name, ty)
            }
            Term::FunctionCall { name: f, args }
                if crate::functions::json_fn(&f.name) == Some(crate::functions::JsonFn::From)
                    && args.iter().any(contains_bind) =>
            {
                self.json_decoded_bind(t, args, ty)
            }
            // A collection function cannot type a marker, or a literal holding one, without a
            // hint (Cassandra prints any marker as `?` there).
            Term::FunctionCall { name: f, args }
                if crate::fcts::collection_param(&f.name).is_some()
                    && args
                        .iter()
                        .any(|a| contains_bind(a) && !matches!(a, Term::TypeHint { .. })) =>
            {
                let kind = crate::fcts::collection_param(&f.name).unwrap_or("collection");
                let shown = match args.iter().find(|a| contains_bind(a)) {
                    Some(Term::Bind(_)) | None => "?".to_string(),
                    Some(other) => other.to_string(),
                };
                Err(EngineError::invalid(format!(
                    "Cannot infer type of argument {shown} in call to function system.{}({kind}): use type casts to disambiguate",
                    f.name.to_ascii_lowercase()
                )))
            }
            // `token(1)` too: its signature comes from the table's partition key.
            Term::FunctionCall { name: f, args }
                if args.iter().any(contains_bind) || f.name == "token" =>
            {
                match self.call_src(t, f, args, name, ty)? {
                    Some(src) => Ok(src),
                    None => self.term_with_binds(t, term, name, ty),
                }
            }
            Term::FunctionCall { name: f, args } => {
                self.volatile = true;
                Ok(Src::Const(crate::functions::call_for(
                    ty,
                    Some(name),
                    &f.name,
                    args,
                    self.now,
                )?))
            }
            _ => {
                if contains_call(term) {
                    self.volatile = true;
                }
                // Cassandra types a DESC clustering column as a reversed type, which changes
                // which operator function an operation for it finds.
                let reversed = t.column(name).is_some_and(|c| c.desc);
                if matches!(term, Term::Operation { .. } | Term::Negate(_)) && contains_bind(term) {
                    return self.operation_src(t, term, ty, reversed);
                }
                if reversed {
                    operation::refuse_reversed_tie(term, ty)?;
                }
                if contains_bind(term) {
                    return self.term_with_binds(t, term, name, ty);
                }
                match const_term_for(name, ty, term, self.now) {
                    Ok(v) => Ok(Src::Const(v)),
                    // Cassandra resolves the operator function before it types a literal:
                    // where none takes the operands (`k = 1 + 'a'`, `k = -true`), its refusal
                    // says so rather than naming the literal the receiver cannot take.
                    Err(e)
                        if matches!(term, Term::Operation { .. } | Term::Negate(_))
                            && !operation::has_hex_operand(term) =>
                    {
                        Err(operation::resolve(term, Some(ty)).err().unwrap_or(e))
                    }
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// `fromJson(?)` for a receiver of type `ty`: the marker is text, named
    /// `arg0(system.fromjson)` unless it has its own name, decoded at execution.
    fn json_decoded_bind(
        &mut self,
        t: &TableDef,
        args: &[Term],
        ty: &ColumnType,
    ) -> Result<Src, EngineError> {
        crate::functions::from_json_arity(args.len())?;
        let Term::Bind(m) = &args[0] else {
            return Err(EngineError::invalid(format!(
                "Cannot infer type of argument {} in call to function system.fromjson(text): use type casts to disambiguate",
                args[0]
            )));
        };
        let text = self.bind(t, m, "arg0(system.fromjson)", &ColumnType::Varchar);
        Ok(Src::FromJson(Box::new(text), ty.clone()))
    }

    /// A tuple or UDT literal with bind markers among its fields: each field its own source,
    /// its markers named as Cassandra names them (`tu[0]`, `u.street`). Cassandra refuses
    /// markers inside collection literals, and so does this.
    fn term_with_binds(
        &mut self,
        t: &TableDef,
        term: &Term,
        name: &str,
        ty: &ColumnType,
    ) -> Result<Src, EngineError> {
        match (term, ty) {
            (Term::Tuple(items), ColumnType::Tuple(types)) => {
                crate::literal::tuple_arity(ty, types.len(), items.len())?;
                let mut fields = Vec::with_capacity(items.len());
                for (i, (item, ty)) in items.iter().zip(types).enumerate() {
                    fields.push((
                        self.term(t, item, &format!("{name}[{i}]"), ty)?,
                        format!("Invalid unset value for tuple field number {i}"),
                    ));
                }
                Ok(Src::Fields(fields))
            }
            (Term::Udt(given), ColumnType::Udt { fields: defs, .. }) => {
                crate::literal::udt_fields_known(ty, defs, given)?;
                let mut fields = Vec::with_capacity(defs.len());
                for (field, fty) in defs {
                    let src = match given.iter().find(|(n, _)| n == field) {
                        Some((_, term)) => self.term(t, term, &format!("{name}.{field}"), fty)?,
                        None => Src::Const(None),
                    };
                    let unset = format!(
                        "Invalid unset value for field '{field}' of user defined type {}",
                        crate::types::cql_type_name(ty)
                    );
                    fields.push((src, unset));
                }
                Ok(Src::Fields(fields))
            }
            (Term::List(items), ColumnType::Vector(elem, _)) => {
                crate::literal::vector_arity(name, ty, items.len())?;
                let mut srcs = Vec::with_capacity(items.len());
                for item in items {
                    srcs.push(self.term(t, item, name, elem)?);
                }
                Ok(Src::Elements((**elem).clone(), srcs))
            }
            (Term::List(_) | Term::Set(_) | Term::Map(_), _) => {
                let kind = match term {
                    Term::List(_) => "list",
                    Term::Set(_) => "set",
                    _ => "map",
                };
                Err(EngineError::invalid(format!(
                    "Invalid {kind} literal for {name}: bind variables are not supported inside collection literals"
                )))
            }
            _ => Err(EngineError::invalid(format!(
                "Invalid value {term} for column {name} of type {}",
                crate::types::cql_type_name(ty)
            ))),
        }
    }

    // ----------------------------------------------------------------------------- writes

    fn using(
        &mut self,
        t: &TableDef,
        u: &ast::UsingClause,
    ) -> Result<(Option<Src>, Option<Src>), EngineError> {
        // The grammar takes only an integer or a bind marker here.
        for (what, term) in [("TTL", &u.ttl), ("TIMESTAMP", &u.timestamp)] {
            if let Some(term) = term {
                let ok = matches!(
                    term,
                    Term::Bind(_) | Term::Literal(ast::Literal::Integer(_))
                );
                if !ok {
                    return Err(EngineError::syntax(format!(
                        "no viable alternative at input '{term}' (... USING {what} [{term}]...)"
                    )));
                }
            }
        }
        let ttl = match &u.ttl {
            Some(x) => Some(self.term(t, x, "[ttl]", &ColumnType::Int)?),
            None => None,
        };
        let ts = match &u.timestamp {
            Some(x) => Some(self.term(t, x, "[timestamp]", &ColumnType::Bigint)?),
            None => None,
        };
        Ok((ttl, ts))
    }

    /// `USING VISIBILITY 'expr'` or `USING VISIBILITY ?` of a write to `t` (docs/visibility.md):
    /// a literal is checked now; a marker is text named `[visibility]` (as TTL's is `[ttl]`)
    /// unless it has its own name, and its value is checked at each execution.
    pub(crate) fn visibility(
        &mut self,
        t: &TableDef,
        term: Option<&Term>,
    ) -> Result<Option<LabelSrc>, EngineError> {
        match term {
            None => Ok(None),
            Some(Term::Literal(ast::Literal::String(expr))) => {
                Ok(crate::labels::write_label(t, Some(expr))?.map(LabelSrc::Label))
            }
            Some(m @ Term::Bind(_)) => {
                crate::labels::check_labelled(t)?;
                let src = self.term(t, m, "[visibility]", &ColumnType::Varchar)?;
                Ok(Some(LabelSrc::Bind(src)))
            }
            Some(other) => Err(EngineError::syntax(format!(
                "no viable alternative at input '{other}' (... USING VISIBILITY [{other}]...)"
            ))),
        }
    }

    /// The IF clause of an UPDATE or DELETE. Cassandra prepares it before the assignments and
    /// the WHERE clause, each condition's column and value before refusing a key column; a
    /// `USING TIMESTAMP` (`timestamp_set`) is refused first.
    fn if_clause(
        &mut self,
        t: &TableDef,
        c: &Option<ast::IfClause>,
        timestamp_set: bool,
    ) -> Result<Option<Condition>, EngineError> {
        let conds = match c {
            None => return Ok(None),
            Some(ast::IfClause::Exists) => return Ok(Some(Condition::IfExists)),
            Some(ast::IfClause::Conditions(conds)) => conds,
        };
        if timestamp_set {
            return Err(EngineError::invalid(
                "Cannot provide custom timestamp for conditional updates",
            ));
        }
        let mut out = Vec::with_capacity(conds.len());
        for cond in conds {
            let (column, col) = self.column(t, &cond.column)?;
            let col = col.clone();
            if col.ty == ColumnType::Counter {
                return Err(EngineError::invalid(
                    "Conditions on counters are not supported",
                ));
            }
            // What the condition compares: the column, one element of it, or one field.
            let (target, ty, receiver) = match &cond.target {
                None => (CondTarget::Whole, col.ty.clone(), col.name.clone()),
                Some(ast::ElementOrField::Element(key)) => {
                    let (key_ty, key_name, elem) = match &col.ty {
                        ColumnType::List(e) => (ColumnType::Int, format!("idx({})", col.name), e),
                        ColumnType::Map(k, v) => ((**k).clone(), format!("key({})", col.name), v),
                        // Cassandra 5.0.9 names a set as such and anything else by what
                        // it is not (ColumnCondition.Raw.prepare).
                        ColumnType::Set(_) => {
                            return Err(EngineError::invalid(format!(
                                "Invalid element access syntax for set column {}",
                                col.name
                            )))
                        }
                        _ => {
                            return Err(EngineError::invalid(format!(
                                "Invalid element access syntax for non-collection column {}",
                                col.name
                            )))
                        }
                    };
                    let key = self.term(t, key, &key_name, &key_ty)?;
                    let name = format!("value({})", col.name);
                    (CondTarget::Element(key), (**elem).clone(), name)
                }
                Some(ast::ElementOrField::Field(f)) => {
                    let ColumnType::Udt { fields, .. } = &col.ty else {
                        return Err(EngineError::invalid(format!(
                            "Invalid field selection: {} of type {} is not a user type",
                            col.name,
                            crate::types::cql_type_name(&col.ty)
                        )));
                    };
                    let Some(i) = fields.iter().position(|(n, _)| n == f) else {
                        return Err(EngineError::invalid(format!(
                            "Unknown field {f} for column {}",
                            col.name
                        )));
                    };
                    (
                        CondTarget::Field(i),
                        fields[i].1.clone(),
                        format!("{}.{f}", col.name),
                    )
                }
            };
            let op = match &cond.op {
                ast::ConditionOp::Compare(Operator::Contains, term) => {
                    let elem = match &ty {
                        ColumnType::List(e) | ColumnType::Set(e) | ColumnType::Map(_, e) => {
                            (**e).clone()
                        }
                        other => {
                            return Err(EngineError::invalid(format!(
                            "Cannot use CONTAINS on non-collection column {receiver} of type {}",
                            crate::types::cql_type_name(other)
                        )))
                        }
                    };
                    CondOp::Contains(self.term(t, term, &format!("value({receiver})"), &elem)?)
                }
                ast::ConditionOp::Compare(Operator::ContainsKey, term) => {
                    let ColumnType::Map(k, _) = &ty else {
                        return Err(EngineError::invalid(format!(
                            "Cannot use CONTAINS KEY on non-map column {receiver} of type {}",
                            crate::types::cql_type_name(&ty)
                        )));
                    };
                    let key_ty = (**k).clone();
                    CondOp::ContainsKey(self.term(t, term, &format!("key({receiver})"), &key_ty)?)
                }
                ast::ConditionOp::Compare(op, term) => {
                    CondOp::Compare(filter_op(*op), self.term(t, term, &receiver, &ty)?)
                }
                ast::ConditionOp::In(ast::InValues::Terms(terms)) => {
                    let mut list = Vec::with_capacity(terms.len());
                    for term in terms {
                        list.push(self.term(t, term, &receiver, &ty)?);
                    }
                    CondOp::In(list)
                }
                ast::ConditionOp::In(ast::InValues::Marker(m)) => {
                    let list_ty = ColumnType::List(Box::new(ty.clone()));
                    match self.bind(t, m, &format!("in({receiver})"), &list_ty) {
                        Src::Bind(i) => CondOp::InBind(i),
                        other => CondOp::In(vec![other]),
                    }
                }
            };
            if matches!(col.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                return Err(EngineError::invalid(format!(
                    "PRIMARY KEY column '{}' cannot have IF conditions",
                    col.name
                )));
            }
            out.push(ColumnCondition { column, target, op });
        }
        Ok(Some(Condition::Columns(out)))
    }

    pub fn insert(&mut self, s: &ast::InsertStatement) -> Result<WritePlan, EngineError> {
        let t = self.table(&s.table)?;
        if t.columns.iter().any(|c| c.ty == ColumnType::Counter) {
            return Err(EngineError::invalid(
                "INSERT statements are not allowed on counter tables, use UPDATE instead",
            ));
        }
        let pairs: Vec<(String, Src)> = match &s.values {
            ast::InsertValues::Values { columns, values } => {
                if columns.len() != values.len() {
                    return Err(EngineError::invalid(format!(
                        "Unmatched column names/values: {} columns, {} values",
                        columns.len(),
                        values.len()
                    )));
                }
                if columns
                    .iter()
                    .enumerate()
                    .any(|(i, c)| columns[..i].contains(c))
                {
                    return Err(EngineError::invalid("The column names contains duplicates"));
                }
                // Cassandra resolves the columns and types the other values in column order,
                // then the key values (its WHERE restrictions).
                let mut out: Vec<Option<(String, Src)>> = vec![None; columns.len()];
                let mut keys = Vec::new();
                for (i, (name, term)) in columns.iter().zip(values).enumerate() {
                    let (_, c) = self.column(&t, name)?;
                    let c = c.clone();
                    if matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                        keys.push((i, c));
                    } else {
                        out[i] = Some((c.name.clone(), self.term(&t, term, &c.name, &c.ty)?));
                    }
                }
                for (i, c) in keys {
                    out[i] = Some((c.name.clone(), self.term(&t, &values[i], &c.name, &c.ty)?));
                }
                out.into_iter().flatten().collect()
            }
            ast::InsertValues::Json {
                json,
                default_unset,
            } => {
                crate::compact::check_insert_json(&t)?;
                json_pairs(&t, json, *default_unset, self)?
            }
        };
        let mut pk: Vec<Option<KeyValues>> = vec![None; t.pk_count()];
        let mut cl: Vec<Option<KeyValues>> = vec![None; t.clustering_count()];
        let mut assignments = Vec::new();
        for (name, src) in pairs {
            let (i, c) = self.column(&t, &name)?;
            let c = c.clone();
            match c.kind {
                ColumnKind::PartitionKey => {
                    set_once(&mut pk[c.position as usize], KeyValues::Eq(src), &c.name)?
                }
                ColumnKind::Clustering => {
                    set_once(&mut cl[c.position as usize], KeyValues::Eq(src), &c.name)?
                }
                _ => {
                    if assignments.iter().any(|(j, _)| *j == i) {
                        return Err(EngineError::invalid(format!(
                            "Multiple definitions found for column {}",
                            c.name
                        )));
                    }
                    assignments.push((i, Assign::Set(src)))
                }
            }
        }
        let missing_pk: Vec<&str> = t
            .partition_key()
            .zip(&pk)
            .filter(|(_, p)| p.is_none())
            .map(|(c, _)| c.name.as_str())
            .collect();
        if !missing_pk.is_empty() {
            return Err(EngineError::invalid(format!(
                "Some partition key parts are missing: {}",
                missing_pk.join(", ")
            )));
        }
        let missing_cl: Vec<&str> = t
            .clustering()
            .zip(&cl)
            .filter(|(_, p)| p.is_none())
            .map(|(c, _)| c.name.as_str())
            .collect();
        let statics_only = !assignments.is_empty()
            && assignments
                .iter()
                .all(|(i, _)| t.columns[*i].kind == ColumnKind::Static)
            && cl.iter().all(|c| c.is_none());
        if statics_only {
            crate::view::ddl::check_write(&t)?;
            let (ttl, timestamp) = self.using(&t, &s.using)?;
            let visibility = self.visibility(&t, s.using.visibility.as_ref())?;
            return Ok(WritePlan {
                partition: pk.into_iter().flatten().collect(),
                token: [None, None],
                clustering: ClusteringSel::default(),
                kind: WriteKind::Upsert {
                    marker: false,
                    assignments,
                },
                ttl,
                timestamp,
                visibility,
                condition: s.if_not_exists.then_some(Condition::IfNotExists),
                table: t,
            });
        }
        // A compact dense table takes a row named by a clustering prefix.
        let prefix_row = !missing_cl.is_empty()
            && t.compact
            && crate::compact::clustering_prefix_insert(&t, &cl)?;
        if !missing_cl.is_empty() && !prefix_row {
            return Err(EngineError::invalid(format!(
                "Some clustering keys are missing: {}",
                missing_cl.join(", ")
            )));
        }
        crate::view::ddl::check_write(&t)?;
        let marker = !t.compact
            || crate::compact::insert_marker(&t, |i| assignments.iter().any(|(j, _)| *j == i))?;
        let (ttl, timestamp) = self.using(&t, &s.using)?;
        let visibility = self.visibility(&t, s.using.visibility.as_ref())?;
        Ok(WritePlan {
            partition: pk.into_iter().flatten().collect(),
            token: [None, None],
            clustering: ClusteringSel {
                eq: cl.into_iter().flatten().collect(),
                ..ClusteringSel::default()
            },
            kind: WriteKind::Upsert {
                marker,
                assignments,
            },
            ttl,
            timestamp,
            visibility,
            condition: s.if_not_exists.then_some(Condition::IfNotExists),
            table: t,
        })
    }

    pub fn update(&mut self, s: &ast::UpdateStatement) -> Result<WritePlan, EngineError> {
        incompatible_settings(&s.assignments)?;
        let t = self.table(&s.table)?;
        let (ttl, timestamp) = self.using(&t, &s.using)?;
        let visibility = self.visibility(&t, s.using.visibility.as_ref())?;
        let condition = self.if_clause(&t, &s.condition, s.using.timestamp.is_some())?;
        let mut assignments = Vec::new();
        for a in &s.assignments {
            let (i, c) = self.column(&t, a.column())?;
            let c = c.clone();
            if matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                return Err(EngineError::invalid(format!(
                    "PRIMARY KEY part {} found in SET part",
                    c.name
                )));
            }
            check_operation(&c, a)?;
            let op = match a {
                ast::Assignment::Set { value, .. } => {
                    if c.ty == ColumnType::Counter {
                        return Err(EngineError::invalid(format!(
                            "Cannot set the value of counter column {} (counters can only be incremented/decremented, not set)",
                            c.name
                        )));
                    }
                    Assign::Set(self.term(&t, value, &c.name, &c.ty)?)
                }
                ast::Assignment::Add { value, .. } => {
                    // Cassandra takes neither a non-map nor a map literal with bind markers.
                    if matches!(c.ty, ColumnType::Map(..))
                        && (matches!(value, Term::Literal(_) | Term::List(_) | Term::Tuple(_))
                            || (matches!(value, Term::Map(_)) && contains_bind(value)))
                    {
                        return Err(EngineError::invalid(format!(
                            "Value for a map addition has to be a map, but was: '{value}'"
                        )));
                    }
                    Assign::Append(self.term(&t, value, &c.name, &c.ty)?)
                }
                ast::Assignment::Prepend { value, .. } => {
                    Assign::Prepend(self.term(&t, value, &c.name, &c.ty)?)
                }
                ast::Assignment::Subtract { value, .. } => {
                    if matches!(c.ty, ColumnType::Map(..))
                        && (matches!(value, Term::Literal(_) | Term::List(_) | Term::Map(_))
                            || (matches!(value, Term::Set(_)) && contains_bind(value)))
                    {
                        return Err(EngineError::invalid(format!(
                            "Value for a map substraction has to be a set, but was: '{value}'"
                        )));
                    }
                    let ty = match &c.ty {
                        ColumnType::Map(k, _) => ColumnType::Set(k.clone()),
                        other => other.clone(),
                    };
                    Assign::Remove(self.term(&t, value, &c.name, &ty)?)
                }
                ast::Assignment::SetElement { key, value, .. } => {
                    let (kt, vt) = match &c.ty {
                        ColumnType::Map(k, v) => ((**k).clone(), (**v).clone()),
                        ColumnType::List(v) => (ColumnType::Int, (**v).clone()),
                        _ => {
                            return Err(EngineError::invalid(format!(
                            "Invalid operation ({}[{key}] = {value}) for non collection column {}",
                            c.name, c.name
                        )))
                        }
                    };
                    Assign::SetKey(
                        self.term(&t, key, &format!("key({})", c.name), &kt)?,
                        self.term(&t, value, &format!("value({})", c.name), &vt)?,
                    )
                }
                ast::Assignment::SetField { field, value, .. } => {
                    let (index, fty) = udt_field(&c, field)?;
                    let name = format!("{}.{field}", c.name);
                    Assign::SetField(index, self.term(&t, value, &name, &fty)?)
                }
            };
            assignments.push((i, op));
        }
        let targets = assignments.iter().map(|a| a.0);
        let statics_only = writes_only_statics(&t, targets, condition.as_ref());
        let (partition, token, clustering) =
            self.write_where_clause(&t, &s.where_clause, Clause::Update, statics_only)?;
        crate::view::ddl::check_write(&t)?;
        let plan = WritePlan {
            table: t,
            partition,
            token,
            clustering,
            kind: WriteKind::Upsert {
                marker: false,
                assignments,
            },
            ttl,
            timestamp,
            visibility,
            condition,
        };
        crate::exec::check_upsert_rows(&plan)?;
        Ok(plan)
    }

    pub fn delete(&mut self, s: &ast::DeleteStatement) -> Result<WritePlan, EngineError> {
        let t = self.table(&s.table)?;
        let (ttl, timestamp) = self.using(&t, &s.using)?;
        let visibility = self.visibility(&t, s.using.visibility.as_ref())?;
        if ttl.is_some() {
            return Err(EngineError::invalid(
                "A TTL is not allowed on DELETE statements",
            ));
        }
        if visibility.is_some() {
            return Err(EngineError::invalid(
                "A VISIBILITY is not allowed on DELETE statements: a deletion removes cells whatever their labels",
            ));
        }
        let condition = self.if_clause(&t, &s.condition, s.using.timestamp.is_some())?;
        let mut columns = Vec::new();
        let mut elements = Vec::new();
        for target in &s.targets {
            let (i, c) = self.column(&t, &target.column)?;
            let c = c.clone();
            if matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                return Err(EngineError::invalid(format!(
                    "Invalid identifier {} for deletion (should not be a PRIMARY KEY part)",
                    c.name
                )));
            }
            match &target.target {
                None => columns.push(i),
                Some(ast::ElementOrField::Element(term)) => {
                    let (receiver, ty) = match &c.ty {
                        _ if !is_collection(&c.ty) => {
                            return Err(EngineError::invalid(format!(
                                "Invalid deletion operation for non collection column {}",
                                c.name
                            )))
                        }
                        _ if is_frozen(&c) => {
                            return Err(EngineError::invalid(format!(
                                "Invalid deletion operation for frozen collection column {}",
                                c.name
                            )))
                        }
                        ColumnType::List(_) => (format!("idx({})", c.name), ColumnType::Int),
                        ColumnType::Set(e) => (format!("value({})", c.name), (**e).clone()),
                        ColumnType::Map(k, _) => (format!("key({})", c.name), (**k).clone()),
                        _ => unreachable_collection(),
                    };
                    let src = self.term(&t, term, &receiver, &ty)?;
                    elements.push((i, Assign::DeleteElement(src)));
                }
                Some(ast::ElementOrField::Field(field)) => {
                    if !matches!(c.ty, ColumnType::Udt { .. }) {
                        return Err(EngineError::invalid(format!(
                            "Invalid field deletion operation for non-UDT column {}",
                            c.name
                        )));
                    }
                    if is_frozen(&c) {
                        return Err(EngineError::invalid(format!(
                            "Frozen UDT column {} does not support field deletions",
                            c.name
                        )));
                    }
                    let (index, _) = udt_field(&c, field)?;
                    elements.push((i, Assign::SetField(index, Src::Const(None))));
                }
            }
        }
        let targets = columns.iter().copied().chain(elements.iter().map(|e| e.0));
        let statics_only = writes_only_statics(&t, targets, condition.as_ref());
        let (partition, token, clustering) =
            self.write_where_clause(&t, &s.where_clause, Clause::Delete, statics_only)?;
        crate::view::ddl::check_write(&t)?;
        if let Some(cond) = &condition {
            // A conditional DELETE names one row, unless it only touches static columns. With
            // every clustering column restricted (EQ, IN, a multi-column IN), Cassandra 5.0.9
            // takes it and refuses an IN of other than one value when it runs (`lwt`).
            let eq = |k: &KeyValues| matches!(k, KeyValues::Eq(_));
            let arity = clustering.tuples.as_ref().map_or(0, TupleValues::arity);
            let complete = clustering.eq.len() + arity == t.clustering().count()
                && clustering.start.is_none()
                && clustering.end.is_none();
            let regular = |i: &usize| t.columns[*i].kind != ColumnKind::Static;
            if !complete {
                let targets: Vec<usize> = columns
                    .iter()
                    .copied()
                    .chain(elements.iter().map(|e| e.0))
                    .collect();
                if targets.is_empty() || targets.iter().any(regular) {
                    return Err(EngineError::invalid(
                        "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns",
                    ));
                }
                if let Condition::Columns(cs) = cond {
                    if cs.iter().any(|c| regular(&c.column)) {
                        return Err(EngineError::invalid(
                            "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF condition on non static columns",
                        ));
                    }
                }
                if !partition.iter().all(eq) {
                    return Err(EngineError::invalid(
                        "IN on the partition key is not supported with conditional deletions",
                    ));
                }
                if !clustering.eq.iter().all(eq) {
                    return Err(EngineError::invalid(
                        "IN on the clustering key columns is not supported with conditional deletions",
                    ));
                }
            }
        }
        Ok(WritePlan {
            table: t,
            partition,
            token,
            clustering,
            kind: WriteKind::Delete { columns, elements },
            ttl: None,
            timestamp,
            visibility,
            condition,
        })
    }

    pub fn pk_indexes(&self, plan_pk: Option<&[KeyValues]>) -> Vec<u16> {
        let Some(pk) = plan_pk else { return Vec::new() };
        let mut out = Vec::new();
        for kv in pk {
            match kv {
                KeyValues::Eq(Src::Bind(i)) => out.push(*i as u16),
                _ => return Vec::new(),
            }
        }
        out
    }
}

/// Cassandra's `*` order: partition key, clustering, then the static columns by name, then
/// the regular ones by name (`t.columns` keeps the last two mixed).
pub(crate) fn wildcard_order(t: &TableDef) -> Vec<usize> {
    let mut order: Vec<usize> = (0..t.columns.len()).collect();
    order.sort_by_key(|i| match t.columns[*i].kind {
        ColumnKind::PartitionKey | ColumnKind::Clustering => 0,
        ColumnKind::Static => 1,
        ColumnKind::Regular => 2,
    });
    order
}

fn is_frozen(c: &ColumnDef) -> bool {
    c.cql_type.starts_with("frozen<")
}

fn is_collection(ty: &ColumnType) -> bool {
    matches!(
        ty,
        ColumnType::List(_) | ColumnType::Set(_) | ColumnType::Map(..)
    )
}

#[allow(clippy::panic)]
fn unreachable_collection() -> ! {
    panic!("is_collection checked the type")
}

/// The index and type of `field` in the non-frozen UDT column `c`, with Cassandra's errors.
fn udt_field(c: &ColumnDef, field: &str) -> Result<(usize, ColumnType), EngineError> {
    let ColumnType::Udt { fields, .. } = &c.ty else {
        return Err(EngineError::invalid(format!(
            "Invalid field deletion operation for non-UDT column {}",
            c.name
        )));
    };
    fields
        .iter()
        .position(|(n, _)| n == field)
        .map(|i| (i, fields[i].1.clone()))
        .ok_or_else(|| {
            EngineError::invalid(format!(
                "UDT column {} does not have a field named {field}",
                c.name
            ))
        })
}

/// Cassandra's refusals of an assignment the column's kind does not take: an operation on a
/// frozen collection or UDT, a field of a non-UDT, arithmetic on a non-counter. The message
/// quotes the assignment as Cassandra prints it (including its `-` for a frozen prepend).
fn check_operation(c: &ColumnDef, a: &ast::Assignment) -> Result<(), EngineError> {
    use ast::Assignment as A;
    let col = &c.name;
    let refuse = |text: String, what: &str| {
        Err(EngineError::invalid(format!(
            "Invalid operation ({text}) for {what} column {col}"
        )))
    };
    let shown = operation::cassandra_text;
    let counter = c.ty == ColumnType::Counter;
    let collection = is_collection(&c.ty);
    match a {
        A::Set { .. } => Ok(()),
        A::SetField { field, value, .. } => match &c.ty {
            ColumnType::Udt { .. } if is_frozen(c) => {
                refuse(format!("{col}.{field} = {}", shown(value)), "frozen UDT")
            }
            ColumnType::Udt { .. } => Ok(()),
            _ => refuse(format!("{col}.{field} = {}", shown(value)), "non-UDT"),
        },
        A::Add { value, .. } | A::Subtract { value, .. } => {
            let sign = if matches!(a, A::Add { .. }) { '+' } else { '-' };
            let text = format!("{col} = {col} {sign} {}", shown(value));
            if collection && is_frozen(c) {
                refuse(text, "frozen collection")
            } else if matches!(c.ty, ColumnType::Udt { .. } | ColumnType::Tuple(_)) {
                // Cassandra's UDTs are tuples underneath, and its message says so.
                refuse(text, "tuple")
            } else if !collection && !counter {
                refuse(text, "non counter")
            } else {
                Ok(())
            }
        }
        A::Prepend { value, .. } if collection && is_frozen(c) => {
            refuse(format!("{col} = {} - {col}", shown(value)), "frozen list")
        }
        A::SetElement { key, value, .. } if collection && is_frozen(c) => refuse(
            format!("{col}[{}] = {}", shown(key), shown(value)),
            "frozen collection",
        ),
        _ => Ok(()),
    }
}

/// Cassandra's parser refuses two settings of one column that cannot both apply: a plain
/// `c = v` with anything else on `c`, or the same UDT field twice.
fn incompatible_settings(assignments: &[ast::Assignment]) -> Result<(), EngineError> {
    use ast::Assignment as A;
    for (i, a) in assignments.iter().enumerate() {
        for b in &assignments[..i] {
            if a.column() != b.column() {
                continue;
            }
            let clash = match (a, b) {
                (A::Set { .. }, _) | (_, A::Set { .. }) => true,
                (A::SetField { field: f, .. }, A::SetField { field: g, .. }) => f == g,
                _ => false,
            };
            if clash {
                return Err(EngineError::syntax(format!(
                    "Multiple incompatible setting of column {}",
                    a.column()
                )));
            }
        }
    }
    Ok(())
}

/// `INSERT ... JSON '{...}'` / `JSON ?`: each column the row sets, with its source. A literal
/// is decoded here (its keys only); a bound row is decoded at execution, every column reading
/// its own key. Columns left out become null, or unset with `DEFAULT UNSET` (a key column left
/// out is refused either way, as null or as unset).
fn json_pairs(
    t: &TableDef,
    json: &Term,
    default_unset: bool,
    b: &mut Builder<'_>,
) -> Result<Vec<(String, Src)>, EngineError> {
    let columns: Vec<(String, ColumnType)> = t
        .columns
        .iter()
        .map(|c| (c.name.clone(), c.ty.clone()))
        .collect();
    let text = match json {
        Term::Literal(ast::Literal::String(text)) => text,
        Term::Bind(m) => {
            let Src::Bind(bind) = b.bind(t, m, "[json]", &ColumnType::Varchar) else {
                return Err(EngineError::invalid("Invalid bind marker"));
            };
            let columns: std::sync::Arc<crate::json_row::JsonColumns> = columns.into();
            return Ok(t
                .columns
                .iter()
                .enumerate()
                .map(|(pos, c)| {
                    let src = Src::JsonColumn {
                        bind,
                        columns: columns.clone(),
                        pos,
                        unset_if_missing: default_unset,
                    };
                    (c.name.clone(), src)
                })
                .collect());
        }
        other => {
            return Err(EngineError::invalid(format!(
                "Invalid JSON value for INSERT: {other}"
            )))
        }
    };
    let decoded = crate::json_row::decode(&columns, text, b.now)?;
    let mut out: Vec<(String, Src)> = decoded
        .into_iter()
        .map(|(pos, v)| (columns[pos].0.clone(), Src::Const(v)))
        .collect();
    for c in &t.columns {
        if out.iter().any(|(n, _)| *n == c.name) {
            continue;
        }
        if default_unset && matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
            return Err(EngineError::invalid(format!(
                "Invalid unset value for column {}",
                c.name
            )));
        }
        if !default_unset {
            out.push((c.name.clone(), Src::Const(None)));
        }
    }
    Ok(out)
}

/// Cassandra's refusal of a second relation on a column its EQ or IN (`had`) restricts.
fn more_than_one(had: &KeyValues, name: &str) -> EngineError {
    let what = match had {
        // Cassandra takes an IN of one value as an EQ.
        KeyValues::Eq(_) => "an Equal",
        KeyValues::In(v) if v.len() == 1 => "an Equal",
        KeyValues::In(_) | KeyValues::InBind(..) => "a IN",
    };
    EngineError::invalid(format!(
        "{name} cannot be restricted by more than one relation if it includes {what}"
    ))
}

/// Whether an UPDATE or DELETE writes only static columns (`targets`), with no condition on
/// a regular column: it writes the partition's static row, and Cassandra refuses a clustering
/// restriction on it.
fn writes_only_statics(
    t: &TableDef,
    mut targets: impl Iterator<Item = usize>,
    condition: Option<&Condition>,
) -> bool {
    let is_static = |i: usize| t.columns[i].kind == ColumnKind::Static;
    let regular_condition = match condition {
        Some(Condition::Columns(cs)) => cs.iter().any(|c| !is_static(c.column)),
        _ => false,
    };
    let mut any = false;
    let statics_only = targets.all(|i| {
        any = true;
        is_static(i)
    }) && any;
    statics_only && !regular_condition
}

fn set_once(slot: &mut Option<KeyValues>, kv: KeyValues, name: &str) -> Result<(), EngineError> {
    if let Some(had) = slot {
        return Err(more_than_one(had, name));
    }
    *slot = Some(kv);
    Ok(())
}

pub(crate) fn filter_op(op: Operator) -> FilterOp {
    match op {
        Operator::Eq => FilterOp::Eq,
        Operator::Neq => FilterOp::Ne,
        Operator::Lt => FilterOp::Lt,
        Operator::Lte => FilterOp::Le,
        Operator::Gt => FilterOp::Gt,
        _ => FilterOp::Ge,
    }
}

fn contains_call(t: &Term) -> bool {
    match t {
        Term::FunctionCall { .. } => true,
        Term::List(v) | Term::Set(v) | Term::Tuple(v) => v.iter().any(contains_call),
        Term::Map(kv) => kv.iter().any(|(k, v)| contains_call(k) || contains_call(v)),
        Term::Udt(f) => f.iter().any(|(_, v)| contains_call(v)),
        Term::TypeHint { term, .. } | Term::Negate(term) => contains_call(term),
        Term::Operation { left, right, .. } => contains_call(left) || contains_call(right),
        _ => false,
    }
}

pub(crate) fn contains_bind(t: &Term) -> bool {
    match t {
        Term::Bind(_) => true,
        Term::List(v) | Term::Set(v) | Term::Tuple(v) => v.iter().any(contains_bind),
        Term::Map(kv) => kv.iter().any(|(k, v)| contains_bind(k) || contains_bind(v)),
        Term::Udt(f) => f.iter().any(|(_, v)| contains_bind(v)),
        Term::TypeHint { term, .. } | Term::Negate(term) => contains_bind(term),
        Term::FunctionCall { args, .. } => args.iter().any(contains_bind),
        Term::Operation { left, right, .. } => contains_bind(left) || contains_bind(right),
        _ => false,
    }
}
