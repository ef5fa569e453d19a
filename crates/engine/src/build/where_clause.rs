//! The WHERE clause of a SELECT, UPDATE or DELETE: which restrictions select partitions and
//! clustering rows, which are filters, and Cassandra's refusals (with its messages) of the
//! combinations it does not serve, including when ALLOW FILTERING is needed.
//!
//! [`Builder::where_clause`] runs in named steps: each relation kind is gathered into
//! [`Restrictions`] by its own method (single column, IN, token, multi-column, multi-column
//! IN); then the partition selection, the clustering selection and the filtering check are
//! built from what was gathered.

use super::*;

/// What the relations of a WHERE clause restrict, gathered relation by relation before the
/// partition and clustering selections are built from it.
struct Restrictions {
    /// Per partition key column, its EQ or IN values.
    pk: Vec<Option<KeyValues>>,
    /// Per partition key column, whether a slice set its start and its end bound (a SELECT
    /// filters on them).
    pk_bounds: Vec<[bool; 2]>,
    /// Per clustering column, its EQ or IN values.
    cl: Vec<Option<KeyValues>>,
    /// Clustering slices: (position of the first column, operator, one value per column).
    slices: Vec<(usize, Operator, Vec<Src>)>,
    token_start: Option<TokenBound>,
    token_end: Option<TokenBound>,
    /// Whether the token bounds come from `token(..) = x`.
    token_eq: bool,
    filters: Vec<Filter>,
    /// A multi-column IN: (position of its first column, its tuples).
    multi_in: Option<(usize, TupleValues)>,
    /// A write's relations on columns outside the primary key, which Cassandra refuses after
    /// its key checks ("Non PRIMARY KEY columns found in where clause").
    non_pk: Vec<NonPk>,
}

/// The relations of an UPDATE or DELETE on one column outside the primary key, kept to name
/// the column and to merge them as Cassandra does (a second EQ, a bound given twice).
struct NonPk {
    column: usize,
    /// "an Equal" or "a IN" when an EQ or IN relation restricts it.
    eq: Option<&'static str>,
    /// Whether a slice gave its start and its end bound.
    bounds: [bool; 2],
}

/// What an UPDATE's or DELETE's WHERE clause names: the partition key values, the token()
/// bounds the partitions must lie within (start, end), the clustering rows.
pub(crate) type WriteRows = (Vec<KeyValues>, [Option<TokenBound>; 2], ClusteringSel);

/// The statement a WHERE clause belongs to: writes name their rows, and some of Cassandra's
/// messages name the statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clause {
    Select,
    Update,
    Delete,
}

impl Builder<'_> {
    pub(crate) fn where_clause(
        &mut self,
        t: &Arc<TableDef>,
        rels: &[Relation],
        allow_filtering: bool,
        stmt: Clause,
    ) -> Result<(PartitionSel, ClusteringSel, Vec<Filter>), EngineError> {
        let for_write = stmt != Clause::Select;
        let mut r = self.gather(t, rels, stmt)?;
        // Cassandra's virtual tables filter without ALLOW FILTERING.
        let implicit = crate::system::is_virtual_keyspace(&t.keyspace);
        if !for_write && !allow_filtering {
            clustering_merge_order(t, rels, &|_| false)?;
        }
        if !for_write {
            let named = r.pk.iter().filter(|p| p.is_some()).count();
            let sliced = r.pk_bounds.iter().flatten().any(|b| *b);
            // A partial partition key or a slice on a part of it needs filtering, and
            // Cassandra says so before it looks at the clustering restrictions (`k1 = 1 AND
            // c2 = 1` with c1 free, `k1 < 1 AND c2 = 1`: generator seed 88).
            if ((named > 0 && named < r.pk.len()) || sliced) && !allow_filtering && !implicit {
                return Err(EngineError::invalid(FILTERING_MSG));
            }
            partial_key_to_filters(t, &mut r);
            if allow_filtering {
                gapped_clustering_to_filters(t, &mut r);
            }
        }
        let partitions = partition_selection(t, r.pk, r.token_start, r.token_end, for_write)?;
        let sel = clustering_selection(t, r.cl, r.slices, r.multi_in)?;
        let filters = r.filters;
        let needs_filtering = !filters.is_empty()
            || (matches!(partitions, PartitionSel::Range { .. }) && !sel.is_unrestricted());
        if needs_filtering && !allow_filtering && !implicit && !for_write {
            return Err(EngineError::invalid(FILTERING_MSG));
        }
        Ok((partitions, sel, filters))
    }

    /// The WHERE clause of an UPDATE or DELETE: the partitions and rows it names. After the
    /// relations one by one (unknown columns, value types, a CONTAINS), Cassandra 5.0.9
    /// checks, in this order: a token() relation, missing partition key parts, a partition key
    /// slice, clustering restrictions on a write of static columns only (`statics_only`), an
    /// UPDATE's clustering slice and missing clustering keys (a DELETE's gaps instead), and
    /// last the columns outside the primary key.
    pub(crate) fn write_where_clause(
        &mut self,
        t: &Arc<TableDef>,
        rels: &[Relation],
        stmt: Clause,
        statics_only: bool,
    ) -> Result<WriteRows, EngineError> {
        let mut r = self.gather(t, rels, stmt)?;
        clustering_merge_order(t, rels, &|_| false)?;
        let what = if stmt == Clause::Update {
            "UPDATE"
        } else {
            "DELETE"
        };
        let restricted = |i: usize| r.pk[i].is_some() || r.pk_bounds[i].iter().any(|b| *b);
        let missing: Vec<&str> = t
            .partition_key()
            .enumerate()
            .filter(|(i, _)| !restricted(*i))
            .map(|(_, c)| c.name.as_str())
            .collect();
        let on_token = r.token_start.is_some() || r.token_end.is_some();
        if on_token && (!missing.is_empty() || r.pk_bounds.iter().flatten().any(|b| *b)) {
            return Err(EngineError::invalid(format!(
                "The token function cannot be used in WHERE clauses for {what} statements"
            )));
        }
        if !missing.is_empty() {
            return Err(EngineError::invalid(format!(
                "Some partition key parts are missing: {}",
                missing.join(", ")
            )));
        }
        if r.pk_bounds.iter().flatten().any(|b| *b) {
            return Err(EngineError::invalid(format!(
                "Only EQ and IN relation are supported on the partition key (unless you use the token() function) for {what} statements"
            )));
        }
        // With the whole partition key named, a token() relation only filters the partitions.
        let token = [r.token_start.take(), r.token_end.take()];
        let PartitionSel::Keys(partition, _) = partition_selection(t, r.pk, None, None, true)?
        else {
            return Err(EngineError::invalid("Some partition key parts are missing"));
        };
        let mut cl_restricted: Vec<bool> = r.cl.iter().map(Option::is_some).collect();
        if let Some((first, tuples)) = &r.multi_in {
            let end = (first + tuples.arity()).min(cl_restricted.len());
            cl_restricted[*first..end]
                .iter_mut()
                .for_each(|x| *x = true);
        }
        let any_clustering = cl_restricted.iter().any(|x| *x) || !r.slices.is_empty();
        if statics_only && any_clustering {
            return Err(EngineError::invalid(format!(
                "Invalid restrictions on clustering columns since the {what} statement modifies only static columns"
            )));
        }
        // A compact table's UPDATE may name a clustering prefix (checked when the row is built).
        if stmt == Clause::Update && !(t.compact && any_clustering) {
            if !r.slices.is_empty() {
                return Err(EngineError::invalid(
                    "Slice restrictions are not supported on the clustering columns in UPDATE statements",
                ));
            }
            let missing: Vec<&str> = t
                .clustering()
                .zip(&cl_restricted)
                .filter(|(_, r)| !**r)
                .map(|(c, _)| c.name.as_str())
                .collect();
            if !statics_only && !missing.is_empty() {
                return Err(EngineError::invalid(format!(
                    "Some clustering keys are missing: {}",
                    missing.join(", ")
                )));
            }
        }
        let sel = clustering_selection(t, r.cl, r.slices, r.multi_in)?;
        if !r.non_pk.is_empty() {
            // Cassandra names them in the order of their names' bytes, with a space after.
            let mut names: Vec<&str> = r
                .non_pk
                .iter()
                .map(|n| t.columns[n.column].name.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            return Err(EngineError::invalid(format!(
                "Non PRIMARY KEY columns found in where clause: {} ",
                names.join(", ")
            )));
        }
        Ok((partition, token, sel))
    }

    /// Each relation of a WHERE clause gathered into [`Restrictions`], with the errors Cassandra
    /// reports relation by relation.
    fn gather(
        &mut self,
        t: &Arc<TableDef>,
        rels: &[Relation],
        stmt: Clause,
    ) -> Result<Restrictions, EngineError> {
        let for_write = stmt != Clause::Select;
        let mut r = Restrictions {
            pk: vec![None; t.pk_count()],
            pk_bounds: vec![[false; 2]; t.pk_count()],
            cl: vec![None; t.clustering_count()],
            slices: Vec::new(),
            token_start: None,
            token_end: None,
            token_eq: false,
            filters: Vec::new(),
            multi_in: None,
            non_pk: Vec::new(),
        };
        for rel in rels {
            match rel {
                Relation::Binary {
                    op: op @ (Operator::Contains | Operator::ContainsKey),
                    ..
                } if for_write => {
                    return Err(EngineError::invalid(format!(
                        "Cannot use {} with {op}",
                        if stmt == Clause::Update {
                            "UPDATE"
                        } else {
                            "DELETE"
                        }
                    )))
                }
                Relation::Element { .. } if for_write => {
                    let f = self.relation_filter(t, rel)?;
                    r.non_pk.push(NonPk {
                        column: f.column,
                        eq: None,
                        bounds: [false; 2],
                    });
                }
                Relation::Binary {
                    op: Operator::Contains | Operator::ContainsKey,
                    ..
                }
                | Relation::Element { .. } => {
                    r.filters.push(self.relation_filter(t, rel)?);
                }
                Relation::Binary { column, op, value } => {
                    self.single_column(t, &mut r, column, *op, value, stmt)?
                }
                Relation::In { column, values } => {
                    self.in_relation(t, &mut r, column, values, for_write)?
                }
                Relation::Token { columns, op, value } => {
                    self.token_relation(t, &mut r, columns, *op, value)?
                }
                Relation::MultiColumn { columns, op, value } => {
                    self.multi_column(t, &mut r, columns, *op, value)?
                }
                Relation::MultiColumnIn { columns, values } => {
                    self.multi_column_in(t, &mut r, columns, values)?
                }
                Relation::IsNotNull { column } => {
                    return Err(EngineError::invalid(format!(
                        "Unsupported restriction: {column} IS NOT NULL"
                    )))
                }
            }
        }
        Ok(r)
    }

    /// `c op term` on one column: a key column's EQ or clustering slice, or a filter.
    fn single_column(
        &mut self,
        t: &Arc<TableDef>,
        r: &mut Restrictions,
        column: &str,
        op: Operator,
        value: &Term,
        stmt: Clause,
    ) -> Result<(), EngineError> {
        let for_write = stmt != Clause::Select;
        let (idx, c) = self.column(t, column)?;
        let c = c.clone();
        multi_cell_restricted(&c, &op.to_string())?;
        let src = self.term(t, value, &c.name, &c.ty)?;
        // Cassandra refuses a LIKE as it meets the relation, before merging it with the
        // column's other relations and before the partition key's own checks: of every column
        // kind (also a key or a clustering column with an index on it, which serves no LIKE),
        // and in a write.
        if op == Operator::Like {
            return Err(like_unindexed(&c.name, value));
        }
        match (c.kind, op) {
            (ColumnKind::PartitionKey, Operator::Eq) => {
                let pos = c.position as usize;
                if r.pk_bounds[pos].iter().any(|b| *b) {
                    return Err(both_equality_and_inequality(&c.name));
                }
                set_once(&mut r.pk[pos], KeyValues::Eq(src), &c.name)?
            }
            // Cassandra 5.0 filters on no `!=` relation, of any column kind.
            (_, Operator::Neq) => {
                return Err(EngineError::invalid(format!(
                    "Unsupported \"!=\" relation: {} != {}",
                    c.name,
                    cassandra_text(value)
                )))
            }
            // A slice of a partition key column selects no partitions: with ALLOW FILTERING it
            // filters a scan, as in Cassandra; a write refuses it after its other key checks.
            (ColumnKind::PartitionKey, Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte) => {
                let pos = c.position as usize;
                if let Some(had) = &r.pk[pos] {
                    return Err(more_than_one(had, &c.name));
                }
                let end = matches!(op, Operator::Lt | Operator::Lte);
                if std::mem::replace(&mut r.pk_bounds[pos][usize::from(end)], true) {
                    return Err(EngineError::invalid(format!(
                        "More than one restriction was found for the {} bound on {}",
                        if end { "end" } else { "start" },
                        c.name
                    )));
                }
                r.filters.push(whole_value_filter(idx, op, src))
            }
            (ColumnKind::PartitionKey, _) => {
                return Err(EngineError::invalid(format!(
                    "Only EQ and IN relation are supported on the partition key (unless you use the token() function){}",
                    match stmt {
                        Clause::Select => "",
                        Clause::Update => " for UPDATE statements",
                        Clause::Delete => " for DELETE statements",
                    }
                )))
            }
            // Cassandra merges a column's relations as they come: a slice after an EQ or IN
            // names the first, an EQ after a slice names both kinds.
            (ColumnKind::Clustering, Operator::Eq) => {
                let pos = c.position as usize;
                if r.slices.iter().any(|(first, _, v)| (*first..first + v.len()).contains(&pos)) {
                    return Err(both_equality_and_inequality(&c.name));
                }
                if let Some((first, tuples)) = &r.multi_in {
                    if (*first..first + tuples.arity()).contains(&pos) {
                        // As for a one-column IN, one tuple counts as an EQ.
                        let what = match tuples {
                            TupleValues::List { tuples, .. } if tuples.len() == 1 => "an Equal",
                            _ => "a IN",
                        };
                        return Err(EngineError::invalid(format!(
                            "{} cannot be restricted by more than one relation if it includes {what}",
                            c.name
                        )));
                    }
                }
                set_once(&mut r.cl[pos], KeyValues::Eq(src), &c.name)?
            }
            (ColumnKind::Clustering, Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte) => {
                let pos = c.position as usize;
                if let Some(had) = &r.cl[pos] {
                    return Err(more_than_one(had, &c.name));
                }
                // A second start (or end) bound, refused as it is merged, even where ALLOW
                // FILTERING makes the slice a filter.
                let end = |o: &Operator| matches!(o, Operator::Lt | Operator::Lte);
                if r.slices.iter().any(|(p, o, v)| *p == pos && v.len() == 1 && end(o) == end(&op)) {
                    return Err(EngineError::invalid(format!(
                        "More than one restriction was found for the {} bound on {}",
                        if end(&op) { "end" } else { "start" },
                        c.name
                    )));
                }
                r.slices.push((pos, op, vec![src]))
            }
            (_, Operator::Eq | Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte) if !for_write => {
                r.filters.push(whole_value_filter(idx, op, src))
            }
            (_, Operator::Eq) => {
                r.non_pk_relation(idx, &c.name, Some("an Equal"))?;
            }
            (_, Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte) => {
                let end = matches!(op, Operator::Lt | Operator::Lte);
                let had = r.non_pk_relation(idx, &c.name, None)?;
                if std::mem::replace(&mut had.bounds[usize::from(end)], true) {
                    return Err(EngineError::invalid(format!(
                        "More than one restriction was found for the {} bound on {}",
                        if end { "end" } else { "start" },
                        c.name
                    )));
                }
            }
            _ => {
                return Err(EngineError::invalid(format!(
                    "Non PRIMARY KEY columns found in where clause: {}",
                    c.name
                )))
            }
        }
        Ok(())
    }

    /// `c IN (...)` / `c IN ?`: a key column's values, or a filter on another column.
    fn in_relation(
        &mut self,
        t: &Arc<TableDef>,
        r: &mut Restrictions,
        column: &str,
        values: &ast::InValues,
        for_write: bool,
    ) -> Result<(), EngineError> {
        let (idx, c) = self.column(t, column)?;
        let c = c.clone();
        multi_cell_restricted(&c, "IN")?;
        let kv = match values {
            ast::InValues::Terms(terms) => KeyValues::In(
                terms
                    .iter()
                    .map(|x| self.term(t, x, &c.name, &c.ty))
                    .collect::<Result<_, _>>()?,
            ),
            ast::InValues::Marker(m) => {
                let list_ty = ColumnType::List(Box::new(c.ty.clone()));
                self.bind(t, m, &format!("in({})", c.name), &list_ty);
                KeyValues::InBind(m.index, c.ty.clone())
            }
        };
        match c.kind {
            ColumnKind::PartitionKey => {
                let pos = c.position as usize;
                if r.pk_bounds[pos].iter().any(|b| *b) {
                    return Err(both_equality_and_inequality(&c.name));
                }
                set_once(&mut r.pk[pos], kv, &c.name)?
            }
            ColumnKind::Clustering => set_once(&mut r.cl[c.position as usize], kv, &c.name)?,
            _ => match kv {
                KeyValues::In(values) if !for_write => r.filters.push(Filter {
                    column: idx,
                    op: FilterOp::Eq,
                    value: Src::Const(None),
                    target: FilterTarget::In(values),
                    analyzer: crate::index::Analyzer::NONE,
                }),
                KeyValues::InBind(marker, _) if !for_write => r.filters.push(Filter {
                    column: idx,
                    op: FilterOp::Eq,
                    value: Src::Bind(marker),
                    target: FilterTarget::InList,
                    analyzer: crate::index::Analyzer::NONE,
                }),
                KeyValues::In(ref v) if for_write && v.len() == 1 => {
                    r.non_pk_relation(idx, &c.name, Some("an Equal"))?;
                }
                KeyValues::In(_) | KeyValues::InBind(..) if for_write => {
                    r.non_pk_relation(idx, &c.name, Some("a IN"))?;
                }
                _ => {
                    return Err(EngineError::invalid(format!(
                        "IN predicates on non-primary-key columns ({}) is not yet supported",
                        c.name
                    )))
                }
            },
        }
        Ok(())
    }

    /// `token(a, b) op term`: a bound of the token range scanned.
    fn token_relation(
        &mut self,
        t: &Arc<TableDef>,
        r: &mut Restrictions,
        columns: &[String],
        op: Operator,
        value: &Term,
    ) -> Result<(), EngineError> {
        let pk_names: Vec<&str> = t.partition_key().map(|c| c.name.as_str()).collect();
        let named: Vec<&str> = columns.iter().map(|s| s.as_str()).collect();
        if named != pk_names {
            let mut sorted = named.clone();
            sorted.sort_unstable();
            let mut pk_sorted = pk_names.clone();
            pk_sorted.sort_unstable();
            if sorted == pk_sorted {
                return Err(EngineError::invalid(format!(
                    "The token function arguments must be in the partition key order: {}",
                    pk_names.join(", ")
                )));
            }
            return Err(EngineError::invalid(
                "The token() function must be applied to all partition key components or none of them",
            ));
        }
        // A second token() relation: Cassandra merges them as it does on one column, naming
        // the partition key columns.
        let names = pk_names.join(", ");
        if r.token_eq {
            return Err(EngineError::invalid(format!(
                "{names} cannot be restricted by more than one relation if it includes an Equal"
            )));
        }
        let taken = match op {
            Operator::Eq if r.token_start.is_some() || r.token_end.is_some() => {
                return Err(EngineError::invalid(format!(
                    "Columns \"{names}\" cannot be restricted by both an equality and an inequality relation"
                )))
            }
            Operator::Gt | Operator::Gte => r.token_start.is_some().then_some("start"),
            Operator::Lt | Operator::Lte => r.token_end.is_some().then_some("end"),
            _ => None,
        };
        if let Some(bound) = taken {
            return Err(EngineError::invalid(format!(
                "More than one restriction was found for the {bound} bound on {names}"
            )));
        }
        let src = match value {
            Term::FunctionCall { name, args } if name.name.eq_ignore_ascii_case("token") => {
                let cols: Vec<ColumnDef> = t.partition_key().cloned().collect();
                if args.len() != cols.len() {
                    return Err(EngineError::invalid(format!(
                        "Invalid number of arguments in call to function system.token: {} required but {} provided",
                        cols.len(),
                        args.len()
                    )));
                }
                let mut srcs = Vec::new();
                for (i, (a, c)) in args.iter().zip(&cols).enumerate() {
                    srcs.push(self.term(t, a, &format!("arg{i}(system.token)"), &c.ty)?);
                }
                TokenSrc::KeyOf(srcs)
            }
            other => {
                TokenSrc::Token(self.term(t, other, "partition key token", &ColumnType::Bigint)?)
            }
        };
        match op {
            Operator::Gt | Operator::Gte => {
                r.token_start = Some(TokenBound {
                    src,
                    inclusive: op == Operator::Gte,
                })
            }
            Operator::Lt | Operator::Lte => {
                r.token_end = Some(TokenBound {
                    src,
                    inclusive: op == Operator::Lte,
                })
            }
            Operator::Eq => {
                r.token_eq = true;
                r.token_start = Some(TokenBound {
                    src: src.clone(),
                    inclusive: true,
                });
                r.token_end = Some(TokenBound {
                    src,
                    inclusive: true,
                });
            }
            _ => {
                return Err(EngineError::invalid(format!(
                    "Unsupported operator {op} on token()"
                )))
            }
        }
        Ok(())
    }

    /// `(a, b) op (1, 2)` / `(a, b) op ?`: EQ on each clustering column, or one slice.
    fn multi_column(
        &mut self,
        t: &Arc<TableDef>,
        r: &mut Restrictions,
        columns: &[String],
        op: Operator,
        value: &Term,
    ) -> Result<(), EngineError> {
        let cols = self.multi_columns(t, columns)?;
        let srcs = self.tuple_srcs(
            t,
            &cols,
            value,
            "Multi-column relations need a tuple of values or one bind marker",
        )?;
        let first = in_key_order(&cols, || format!("{op} {value}"))?;
        match op {
            Operator::Eq => {
                for (c, s) in cols.iter().zip(srcs) {
                    let s = not_null_for_column(s, c);
                    set_once(&mut r.cl[c.position as usize], KeyValues::Eq(s), &c.name)?;
                }
            }
            Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte => {
                check_no_eq_before(r, &cols)?;
                // A null component is refused as Cassandra 5.0.9 refuses it in a slice.
                let srcs = cols
                    .iter()
                    .zip(srcs)
                    .map(|(c, s)| {
                        let m = format!("Invalid null value in condition for column {}", c.name);
                        Src::NotNull(Box::new(s), m)
                    })
                    .collect();
                r.slices.push((first, op, srcs))
            }
            _ => {
                return Err(EngineError::invalid(format!(
                    "Unsupported operator {op} in multi-column relation"
                )))
            }
        }
        Ok(())
    }

    /// `(a, b) IN ((1, 2), (3, 4))` / `(a, b) IN ?`: tuples of clustering values.
    fn multi_column_in(
        &mut self,
        t: &Arc<TableDef>,
        r: &mut Restrictions,
        columns: &[String],
        values: &ast::InValues,
    ) -> Result<(), EngineError> {
        let cols = self.multi_columns(t, columns)?;
        let first = in_key_order(&cols, || match values {
            ast::InValues::Terms(terms) => {
                let shown: Vec<String> = terms.iter().map(Term::to_string).collect();
                format!("IN ({})", shown.join(", "))
            }
            ast::InValues::Marker(_) => "IN ?".to_string(),
        })?;
        check_no_eq_before(r, &cols)?;
        let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
        // Cassandra's messages for a null: an IN of one tuple is its EQ ("Invalid null value
        // for column c2"), a longer one or a marker names every column.
        let null_message = format!(
            "Invalid null value in condition for columns: [{}]",
            names.join(", ")
        );
        let tuples = match values {
            ast::InValues::Terms(tuples) => tuples,
            ast::InValues::Marker(m) => {
                let ty = ColumnType::List(Box::new(ColumnType::Tuple(
                    cols.iter().map(|c| c.ty.clone()).collect(),
                )));
                let name = format!("in({})", names.join(","));
                let Src::Bind(index) = self.bind(t, m, &name, &ty) else {
                    return Err(EngineError::invalid("Invalid bind marker"));
                };
                r.multi_in = Some((
                    first,
                    TupleValues::Bind {
                        index,
                        arity: cols.len(),
                        null_message,
                    },
                ));
                return Ok(());
            }
        };
        let one = tuples.len() == 1;
        let mut out = Vec::new();
        for tuple in tuples {
            let srcs = self.tuple_srcs(
                t,
                &cols,
                tuple,
                "Expected a tuple of values in multi-column IN",
            )?;
            let checked = srcs.into_iter().zip(&cols).map(|(s, c)| {
                if one {
                    not_null_for_column(s, c)
                } else {
                    Src::NotNull(Box::new(s), null_message.clone())
                }
            });
            out.push(checked.collect());
        }
        r.multi_in = Some((
            first,
            TupleValues::List {
                tuples: out,
                arity: cols.len(),
            },
        ));
        Ok(())
    }

    /// The values a tuple literal (`(1, ?)`) or one marker for the whole tuple gives the
    /// columns of a multi-column relation, each column reading its field of the marker's
    /// value; anything else is refused with `other`.
    fn tuple_srcs(
        &mut self,
        t: &Arc<TableDef>,
        cols: &[ColumnDef],
        value: &Term,
        other: &str,
    ) -> Result<Vec<Src>, EngineError> {
        match value {
            Term::Tuple(items) => {
                if items.len() != cols.len() {
                    return Err(EngineError::invalid(format!(
                        "Expected {} elements in value tuple, but got {}",
                        cols.len(),
                        items.len()
                    )));
                }
                let mut srcs = Vec::with_capacity(items.len());
                for (i, c) in items.iter().zip(cols) {
                    srcs.push(self.term(t, i, &c.name, &c.ty)?);
                }
                Ok(srcs)
            }
            Term::Bind(m) => {
                let ty = ColumnType::Tuple(cols.iter().map(|c| c.ty.clone()).collect());
                let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
                let name = format!("({})", names.join(","));
                let Src::Bind(index) = self.bind(t, m, &name, &ty) else {
                    return Err(EngineError::invalid("Invalid bind marker"));
                };
                Ok((0..cols.len()).map(|f| Src::Field(index, f)).collect())
            }
            _ => Err(EngineError::invalid(other)),
        }
    }

    /// The columns of a multi-column relation, each of which must be a clustering column.
    fn multi_columns(
        &self,
        t: &Arc<TableDef>,
        columns: &[String],
    ) -> Result<Vec<ColumnDef>, EngineError> {
        let mut cols = Vec::new();
        for name in columns {
            let (_, c) = self.column(t, name)?;
            if c.kind != ColumnKind::Clustering {
                return Err(EngineError::invalid(format!(
                    "Multi-column relations can only be applied to clustering columns but was applied to: {}",
                    c.name
                )));
            }
            cols.push(c.clone());
        }
        Ok(cols)
    }
}

impl Restrictions {
    /// A write's relation on column `column` (named `name`) outside the primary key:
    /// `eq` names an EQ or IN relation ("an Equal", "a IN"), `None` a slice, whose bound the
    /// caller sets. Cassandra's errors for a second relation that cannot merge with the first.
    fn non_pk_relation(
        &mut self,
        column: usize,
        name: &str,
        eq: Option<&'static str>,
    ) -> Result<&mut NonPk, EngineError> {
        let i = match self.non_pk.iter().position(|n| n.column == column) {
            Some(i) => i,
            None => {
                self.non_pk.push(NonPk {
                    column,
                    eq: None,
                    bounds: [false; 2],
                });
                self.non_pk.len() - 1
            }
        };
        let had = &mut self.non_pk[i];
        if let Some(what) = had.eq {
            return Err(EngineError::invalid(format!(
                "{name} cannot be restricted by more than one relation if it includes {what}"
            )));
        }
        if eq.is_some() && had.bounds.iter().any(|b| *b) {
            return Err(both_equality_and_inequality(name));
        }
        had.eq = eq;
        Ok(had)
    }
}

/// A multi-column slice or IN on columns an earlier EQ or IN restricts: Cassandra 5.0.9 names
/// that column ("d cannot be restricted by more than one relation if it includes an Equal").
/// With several such columns it names one or another depending on the table (seen on
/// `c = 1 AND d = 1 AND (c, d) > (1, 1)` across runs); this names the last.
fn check_no_eq_before(r: &Restrictions, cols: &[ColumnDef]) -> Result<(), EngineError> {
    for c in cols.iter().rev() {
        if let Some(had) = &r.cl[c.position as usize] {
            return Err(more_than_one(had, &c.name));
        }
    }
    Ok(())
}

/// Cassandra refuses a relation other than CONTAINS / CONTAINS KEY on a non-frozen
/// collection column (`op` as it names it: `=`, `IN`, ...).
fn multi_cell_restricted(c: &ColumnDef, op: &str) -> Result<(), EngineError> {
    let value_column = matches!(c.kind, ColumnKind::Regular | ColumnKind::Static);
    if value_column && is_collection(&c.ty) && !is_frozen(c) {
        return Err(EngineError::invalid(format!(
            "Collection column '{}' ({}) cannot be restricted by a '{op}' relation",
            c.name,
            crate::types::cql_type_name(&c.ty)
        )));
    }
    Ok(())
}

/// The position of the first of a multi-column relation's columns, which must follow each
/// other in PRIMARY KEY order.
/// `rhs` is the relation's operator and right side as Cassandra shows them (`= (1, 2)`).
fn in_key_order(cols: &[ColumnDef], rhs: impl FnOnce() -> String) -> Result<usize, EngineError> {
    let first = cols[0].position as usize;
    if cols
        .iter()
        .enumerate()
        .any(|(i, c)| c.position as usize != first + i)
    {
        let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
        return Err(EngineError::invalid(format!(
            "Clustering columns must appear in the PRIMARY KEY order in multi-column relations: ({}) {}",
            names.join(", "),
            rhs()
        )));
    }
    Ok(first)
}

/// Partition key: all by EQ/IN, or none (then a token range / full scan).
/// A filter comparing column `column`'s whole value with `value` by `op`.
fn whole_value_filter(column: usize, op: Operator, value: Src) -> Filter {
    Filter {
        column,
        op: filter_op(op),
        value,
        target: FilterTarget::Whole,
        analyzer: crate::index::Analyzer::NONE,
    }
}

/// Cassandra's checks as it adds a statement's single-column clustering relations one by one,
/// in the order written (a SELECT's only without ALLOW FILTERING) (`ClusteringColumnRestrictions.mergeWith`): a
/// relation on a column after one a range restricts, or a range on a column before the last
/// restricted one, is refused naming those two columns. The gaps the merged relations leave
/// are refused later (`clustering_selection`). A relation an index supports (`supported`) is
/// merged unchecked.
pub(crate) fn clustering_merge_order(
    t: &TableDef,
    rels: &[Relation],
    supported: &dyn Fn(&Relation) -> bool,
) -> Result<(), EngineError> {
    let clust: Vec<&ColumnDef> = t.clustering().collect();
    // Position -> whether a range restricts it, for the relations merged so far.
    let mut merged: std::collections::BTreeMap<usize, bool> = Default::default();
    for rel in rels {
        let (column, slice) = match rel {
            Relation::Binary { column, op, .. } => (
                column,
                matches!(
                    op,
                    Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
                ),
            ),
            Relation::In { column, .. } => (column, false),
            _ => continue,
        };
        let Some(pos) = clust.iter().position(|c| c.name == *column) else {
            continue;
        };
        if let Some((&last, &last_slice)) = merged.iter().next_back().filter(|_| !supported(rel)) {
            if last_slice && pos > last {
                return Err(EngineError::invalid(format!(
                    "Clustering column \"{}\" cannot be restricted (preceding column \"{}\" is restricted by a non-EQ relation)",
                    clust[pos].name, clust[last].name
                )));
            }
            if slice && pos < last {
                let next = merged.range(pos + 1..).next().map_or(last, |(p, _)| *p);
                return Err(EngineError::invalid(format!(
                    "PRIMARY KEY column \"{}\" cannot be restricted (preceding column \"{}\" is restricted by a non-EQ relation)",
                    clust[next].name, clust[pos].name
                )));
            }
        }
        let entry = merged.entry(pos).or_insert(false);
        *entry |= slice;
    }
    Ok(())
}

/// Cassandra's refusal of an EQ or IN on a column a slice already restricts.
/// Cassandra's refusal of `column LIKE value`: no index of 5.0's serves a LIKE.
pub(crate) fn like_unindexed(column: &str, value: &ast::Term) -> EngineError {
    EngineError::invalid(format!(
        "LIKE restriction is only supported on properly indexed columns. {column} LIKE {} is not valid.",
        cassandra_text(value)
    ))
}

fn both_equality_and_inequality(column: &str) -> EngineError {
    EngineError::invalid(format!(
        "Column \"{column}\" cannot be restricted by both an equality and an inequality relation"
    ))
}

/// A SELECT that restricts only some partition key columns cannot name its partitions: its
/// EQ and IN restrictions on them filter a scan instead (ALLOW FILTERING, as Cassandra).
fn partial_key_to_filters(t: &TableDef, r: &mut Restrictions) {
    let restricted = r.pk.iter().filter(|p| p.is_some()).count();
    if restricted == 0 || restricted == r.pk.len() {
        return;
    }
    for (c, kv) in t.partition_key().zip(r.pk.iter_mut()) {
        let Some(kv) = kv.take() else { continue };
        let column = t
            .columns
            .iter()
            .position(|x| x.name == c.name)
            .expect("a partition key column is a column of its table");
        let (value, target) = match kv {
            KeyValues::Eq(src) => (src, FilterTarget::Whole),
            KeyValues::In(values) => (Src::Const(None), FilterTarget::In(values)),
            KeyValues::InBind(marker, _) => (Src::Bind(marker), FilterTarget::InList),
        };
        r.filters.push(Filter {
            column,
            op: FilterOp::Eq,
            value,
            target,
            analyzer: crate::index::Analyzer::NONE,
        });
    }
}

/// With ALLOW FILTERING, Cassandra filters on the clustering restrictions a slice cannot serve
/// (on a column after an unrestricted one, or after the column a slice bounds) instead of
/// refusing them: `k = 1 AND b = 2` with the first clustering column free. The EQ/IN prefix
/// and one single-column slice right after it stay the clustering selection.
fn gapped_clustering_to_filters(t: &TableDef, r: &mut Restrictions) {
    if r.multi_in.is_some() || r.slices.iter().any(|(_, _, srcs)| srcs.len() != 1) {
        return; // multi-column relations keep their own checks and messages
    }
    let prefix = r.cl.iter().take_while(|c| c.is_some()).count();
    let served = prefix + usize::from(r.slices.iter().any(|(pos, ..)| *pos == prefix));
    let column_at = |pos: usize| {
        t.columns
            .iter()
            .position(|c| c.kind == ColumnKind::Clustering && c.position as usize == pos)
            .expect("a clustering position is a column of its table")
    };
    for (pos, slot) in r.cl.iter_mut().enumerate().skip(served) {
        let Some(kv) = slot.take() else { continue };
        let (value, target) = match kv {
            KeyValues::Eq(src) => (src, FilterTarget::Whole),
            KeyValues::In(values) => (Src::Const(None), FilterTarget::In(values)),
            KeyValues::InBind(marker, _) => (Src::Bind(marker), FilterTarget::InList),
        };
        r.filters.push(Filter {
            column: column_at(pos),
            op: FilterOp::Eq,
            value,
            target,
            analyzer: crate::index::Analyzer::NONE,
        });
    }
    let (kept, filtered): (Vec<_>, Vec<_>) = std::mem::take(&mut r.slices)
        .into_iter()
        .partition(|(pos, ..)| *pos < served);
    r.slices = kept;
    for (pos, op, mut srcs) in filtered {
        r.filters.push(Filter {
            column: column_at(pos),
            op: filter_op(op),
            value: srcs.remove(0),
            target: FilterTarget::Whole,
            analyzer: crate::index::Analyzer::NONE,
        });
    }
}

fn partition_selection(
    t: &TableDef,
    pk: Vec<Option<KeyValues>>,
    token_start: Option<TokenBound>,
    token_end: Option<TokenBound>,
    for_write: bool,
) -> Result<PartitionSel, EngineError> {
    let restricted = pk.iter().filter(|p| p.is_some()).count();
    if restricted == pk.len() {
        // With the whole key named, a token() relation only filters the partitions named.
        Ok(PartitionSel::Keys(
            pk.into_iter().flatten().collect(),
            [token_start, token_end],
        ))
    } else if restricted == 0 {
        if for_write {
            let missing: Vec<&str> = t.partition_key().map(|c| c.name.as_str()).collect();
            return Err(EngineError::invalid(format!(
                "Some partition key parts are missing: {}",
                missing.join(", ")
            )));
        }
        Ok(PartitionSel::Range {
            start: token_start,
            end: token_end,
        })
    } else {
        let missing: Vec<&str> = t
            .partition_key()
            .zip(&pk)
            .filter(|(_, p)| p.is_none())
            .map(|(c, _)| c.name.as_str())
            .collect();
        if for_write {
            return Err(EngineError::invalid(format!(
                "Some partition key parts are missing: {}",
                missing.join(", ")
            )));
        }
        Err(EngineError::invalid(FILTERING_MSG))
    }
}

/// Clustering: an EQ/IN prefix, then a multi-column IN or at most one slice on the next
/// column.
fn clustering_selection(
    t: &TableDef,
    cl: Vec<Option<KeyValues>>,
    slices: Vec<(usize, Operator, Vec<Src>)>,
    multi_in: Option<(usize, TupleValues)>,
) -> Result<ClusteringSel, EngineError> {
    let mut sel = ClusteringSel::default();
    let mut prefix_done = false;
    let clust_cols: Vec<ColumnDef> = t.clustering().cloned().collect();
    for (i, r) in cl.into_iter().enumerate() {
        match r {
            Some(kv) if !prefix_done => sel.eq.push(kv),
            Some(_) => {
                // Cassandra names the first free column after the EQ/IN prefix (or the
                // range on it), not the one right before this column.
                let prev = &clust_cols[sel.eq.len()].name;
                if slices.iter().any(|s| s.0 == sel.eq.len()) {
                    return Err(EngineError::invalid(format!(
                        "Clustering column \"{}\" cannot be restricted (preceding column \"{}\" is restricted by a non-EQ relation)",
                        clust_cols[i].name, prev
                    )));
                }
                return Err(EngineError::invalid(format!(
                    "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{}\" is not restricted",
                    clust_cols[i].name, prev
                )));
            }
            None => prefix_done = true,
        }
    }
    let mut consumed = sel.eq.len();
    if let Some((first, tuples)) = multi_in {
        if first != sel.eq.len() {
            return Err(EngineError::invalid(
                "Clustering columns of a multi-column IN must follow the restricted prefix",
            ));
        }
        consumed += tuples.arity();
        sel.tuples = Some(tuples);
    }
    for (pos, op, srcs) in slices {
        if sel.tuples.is_some() && pos != consumed {
            return Err(EngineError::invalid(
                "Slices after a multi-column IN are not supported",
            ));
        }
        if sel.tuples.is_none() && pos != sel.eq.len() {
            let c = &clust_cols[pos];
            if pos < sel.eq.len() {
                return Err(both_equality_and_inequality(&c.name));
            }
            return Err(EngineError::invalid(format!(
                "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{}\" is not restricted",
                c.name,
                clust_cols[sel.eq.len()].name
            )));
        }
        let b = SliceBound {
            values: srcs,
            inclusive: matches!(op, Operator::Lte | Operator::Gte),
        };
        let slot = match op {
            Operator::Gt | Operator::Gte => &mut sel.start,
            _ => &mut sel.end,
        };
        if slot.is_some() {
            return Err(EngineError::invalid(format!(
                "More than one restriction was found for the {} bound on {}",
                if matches!(op, Operator::Gt | Operator::Gte) {
                    "start"
                } else {
                    "end"
                },
                clust_cols[pos].name
            )));
        }
        *slot = Some(b);
    }
    Ok(sel)
}

/// A value of a multi-column EQ (or of an IN of one tuple), refused when null with
/// Cassandra's message for it ("Invalid null value for column c2", where a single-column
/// relation says "... in condition for column c2").
fn not_null_for_column(s: Src, c: &ColumnDef) -> Src {
    Src::NotNull(
        Box::new(s),
        format!("Invalid null value for column {}", c.name),
    )
}

/// Whether Cassandra 5.0.9 reads this SELECT of one partition (its key given by `=`) through a
/// legacy index on a static column: a relation such an index serves, and none another index
/// serves (a read where another index could be chosen is left as it was). That index holds
/// one entry per partition, clustered by the partition key alone, and Cassandra looks it up
/// with the slice `(key, start)..(key, end)` of the read's clustering filter
/// (`CassandraIndexSearcher.makeIndexFilter`): the entry sorts before any bounded start, so a
/// filter that starts above the bottom of the clustering order (`c > 0`, `c < 10` on a DESC
/// column, `c = 1`, `c IN (..)`) misses it and the read answers no row
/// (`SelectRun::static_index_misses`).
pub(super) fn legacy_static_index_read(
    t: &TableDef,
    rels: &[Relation],
    partitions: &PartitionSel,
) -> bool {
    let one_partition = matches!(partitions, PartitionSel::Keys(k, _)
        if k.iter().all(|v| matches!(v, KeyValues::Eq(_))));
    let served: Vec<_> = rels
        .iter()
        .filter_map(|r| {
            let idx = crate::index::query::served_by(t, r)?;
            let column = t.column(&idx.column)?;
            (column.kind != ColumnKind::PartitionKey).then_some((idx, column.kind))
        })
        .collect();
    one_partition
        && !served.is_empty()
        && served
            .iter()
            .all(|(idx, kind)| *kind == ColumnKind::Static && !idx.is_sai())
}
