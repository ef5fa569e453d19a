//! SELECT: a statement's plan ([`Builder::select`]), and what Cassandra reads for it — the
//! columns a selection names (its queried columns, whether it fetches the static row), and
//! the order of its refusals (the selectors' before the restrictions', DISTINCT's before
//! ALLOW FILTERING's).

use super::*;

/// Cassandra's first refusal of a DISTINCT restricted on clustering columns: a PER PARTITION
/// LIMIT is checked before the restrictions.
fn distinct_refusal(s: &ast::SelectStatement) -> EngineError {
    EngineError::invalid(if s.per_partition_limit.is_some() {
        "PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries"
    } else {
        DISTINCT_WHERE_MSG
    })
}

impl Builder<'_> {
    /// Whether Cassandra refuses the DISTINCT `s` before the ALLOW FILTERING that `e` asks
    /// for: its restrictions are built first (a partial partition key or a relation on a
    /// regular or static column asks for ALLOW FILTERING there), then a DISTINCT is checked,
    /// and only then whether a scan of partitions restricted on clustering columns (`c1 > 0`,
    /// `token(k) > 0 AND c1 = 0`) needs filtering.
    fn distinct_refused_first(
        &mut self,
        t: &Arc<TableDef>,
        s: &ast::SelectStatement,
        e: &EngineError,
    ) -> bool {
        if !matches!(e, EngineError::Db(db) if db.message() == FILTERING_MSG) {
            return false;
        }
        matches!(
            self.where_clause(t, &s.where_clause, true, Clause::Select),
            Ok((PartitionSel::Range { .. }, clustering, filters))
                if filters.is_empty() && !clustering.is_unrestricted()
        )
    }

    pub fn select(&mut self, s: &ast::SelectStatement) -> Result<SelectPlan, EngineError> {
        let mut plan = self.select_plan(s)?;
        // An error Cassandra raises once the statement is otherwise prepared comes after every
        // other; one it raises at execution is the plan's to raise.
        if let Some(m) = self.late_error.take() {
            return Err(EngineError::server(m));
        }
        plan.execution_error = self.execution_error.take().map(Arc::from);
        Ok(plan)
    }

    fn select_plan(&mut self, s: &ast::SelectStatement) -> Result<SelectPlan, EngineError> {
        let t = self.table(&s.table)?;
        self.refuse_vector_relations(&t, &s.where_clause)?;
        let ann = self.ann_plan(&t, s)?;
        // Cassandra builds every relation's restriction, refusing an unknown column there,
        // before it picks an index or asks for ALLOW FILTERING (`pk1 = .. AND pk2 = .. AND z
        // = ..` with pk1 indexed: generated plain seed 428); the plain path refuses so.
        if s.where_clause.iter().any(|r| names_unknown_column(&t, r)) {
            self.where_clause(&t, &s.where_clause, s.allow_filtering, Clause::Select)?;
        }
        let (partitions, clustering, filters, index) = match self.indexed_where(&t, s)? {
            Some(w) => (w.partitions, w.clustering, w.filters, w.index),
            None => {
                let (p, c, f) =
                    match self.where_clause(&t, &s.where_clause, s.allow_filtering, Clause::Select)
                    {
                        Err(e) if s.distinct && self.distinct_refused_first(&t, s, &e) => {
                            return Err(distinct_refusal(s));
                        }
                        other => other?,
                    };
                (p, c, f, None)
            }
        };
        let eq_restricted = |i: usize| -> bool {
            let c = &t.columns[i];
            let pos = c.position as usize;
            match c.kind {
                ColumnKind::PartitionKey => matches!(
                    &partitions,
                    PartitionSel::Keys(k, _) if matches!(k.get(pos), Some(KeyValues::Eq(_)))
                ),
                ColumnKind::Clustering => {
                    matches!(clustering.eq.get(pos), Some(KeyValues::Eq(_)))
                        || filters
                            .iter()
                            .any(|f| f.column == i && f.op == FilterOp::Eq)
                }
                _ => false,
            }
        };
        // Cassandra checks this with the restrictions: after it resolves the selection's
        // functions (`RawSelector.toSelectables`), before it types the rest of the selection
        // (a CAST) or the GROUP BY (generated --views seeds 143 and 144).
        let clustering_restricted = !clustering.is_unrestricted()
            || filters
                .iter()
                .any(|f| t.columns[f.column].kind == ColumnKind::Clustering);
        if clustering_restricted && selects_only_statics(&t, &s.selection) {
            return Err(match self.selection(&t, s) {
                Err(e) if is_function_resolution(&e) => e,
                _ => EngineError::invalid(
                    "Cannot restrict clustering columns when selecting only static columns",
                ),
            });
        }
        let (mut selection, mut output) = self.selection(&t, s)?;
        if s.distinct {
            if s.per_partition_limit.is_some() {
                return Err(distinct_refusal(s));
            }
            let non_static_filter = filters.iter().any(|f| {
                !matches!(
                    t.columns[f.column].kind,
                    ColumnKind::Static | ColumnKind::PartitionKey
                )
            });
            if !clustering.is_unrestricted() || non_static_filter {
                return Err(EngineError::invalid(DISTINCT_WHERE_MSG));
            }
            if let (Selection::Rows(_), ast::Selection::Selectors(list)) =
                (&selection, &s.selection)
            {
                // Every column a selector reads, as Cassandra's `Selection.getColumns()`
                // (`[k, 1]`, `abs(k)` and `writetime(v)` read k and v).
                let mut read = Vec::new();
                for x in list {
                    selector_columns(&x.expr, &mut read);
                }
                // Rows of several partitions sorted by ORDER BY carry its columns in the
                // selection, so Cassandra checks them too ("(not c1)").
                if names_partitions_by_in(&partitions) {
                    read.extend(s.order_by.iter().map(|(name, _)| name.as_str()));
                }
                for name in &read {
                    if let Some(c) = t.column(name) {
                        if !matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Static) {
                            return Err(EngineError::invalid(format!(
                                "SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})",
                                c.name
                            )));
                        }
                    }
                }
                let pks_selected = t.partition_key().all(|c| read.contains(&c.name.as_str()));
                if !pks_selected {
                    return Err(EngineError::invalid(
                        "SELECT DISTINCT queries must request all the partition key columns",
                    ));
                }
            }
        }
        // Cassandra checks the GROUP BY after the selection and its DISTINCT rules.
        if let Some((n, f)) = self.group_by(&t, s, &eq_restricted)? {
            if let Selection::Aggregates(a) = &mut selection {
                a.group_by = Some(n);
                a.group_fn = f;
            }
        }
        let mut reversed = false;
        let mut order_components = 0;
        if !s.order_by.is_empty() {
            if !matches!(partitions, PartitionSel::Keys(..)) {
                return Err(EngineError::invalid(
                    "ORDER BY is only supported when the partition key is restricted by an EQ or an IN.",
                ));
            }
            const OUT_OF_ORDER: &str = "Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY";
            let mut clust: Vec<usize> = t
                .columns
                .iter()
                .enumerate()
                .filter(|(_, c)| c.kind == ColumnKind::Clustering)
                .map(|(i, _)| i)
                .collect();
            clust.sort_by_key(|&i| t.columns[i].position);
            // The next clustering position an ORDER BY column may name: as in Cassandra, the
            // columns before it may be skipped only when an equality restricts them (`a = 1
            // ORDER BY b DESC` orders by b).
            let mut next = 0usize;
            let mut rev: Option<bool> = None;
            for (name, order) in &s.order_by {
                let (_, c) = self.column(&t, name)?;
                if c.kind != ColumnKind::Clustering {
                    return Err(EngineError::invalid(format!(
                        "Order by is currently only supported on the clustered columns of the PRIMARY KEY, got {name}"
                    )));
                }
                let pos = c.position as usize;
                if pos < next {
                    return Err(EngineError::invalid(OUT_OF_ORDER));
                }
                while next != pos {
                    if !eq_restricted(clust[next]) {
                        return Err(EngineError::invalid(OUT_OF_ORDER));
                    }
                    next += 1;
                }
                next += 1;
                let r = (*order == ast::Order::Desc) != c.desc;
                if rev.is_some_and(|x| x != r) {
                    return Err(EngineError::invalid("Unsupported order by relation"));
                }
                rev = Some(r);
            }
            reversed = rev.unwrap_or(false);
            order_components = next;
        }
        let limit = match &s.limit {
            Some(l) => Some(self.term(&t, l, "[limit]", &ColumnType::Int)?),
            None => None,
        };
        let per_partition_limit = match &s.per_partition_limit {
            Some(l) => Some(self.term(&t, l, "[per_partition_limit]", &ColumnType::Int)?),
            None => None,
        };
        let order_with_in = !s.order_by.is_empty() && names_partitions_by_in(&partitions);
        let (json, json_columns) = if s.json {
            let cols = std::mem::replace(
                &mut output,
                vec![OutputColumn {
                    name: "[json]".into(),
                    ty: ColumnType::Varchar,
                }],
            );
            (true, cols)
        } else {
            (false, Vec::new())
        };
        let names_filter = t.clustering_count() > 0
            && clustering.start.is_none()
            && clustering.end.is_none()
            && clustering.eq.len() + clustering.tuples.as_ref().map_or(0, TupleValues::arity)
                == t.clustering_count();
        Ok(SelectPlan {
            empty_names_read: names_filter && fetches_statics(&t, &s.selection),
            legacy_static_index: where_clause::legacy_static_index_read(
                &t,
                &s.where_clause,
                &partitions,
            ),
            queried_columns: queried_columns(&t, &s.selection),
            queried: queried_ids(&t, &s.selection, &filters),
            output: wire_columns(&t.keyspace, &t.name, output),
            columns_only: crate::plan::columns_only(&t, &selection),
            json,
            json_columns,
            order_with_in,
            order_components,
            table: t,
            partitions,
            clustering,
            filters,
            selection,
            distinct: s.distinct,
            reversed,
            limit,
            per_partition_limit,
            index,
            ann,
            execution_error: None,
        })
    }
}

/// Whether the partition key is restricted by an IN (Cassandra's `keyIsInRelation`), which
/// makes ORDER BY sort rows of several partitions. `k IN (1)` is not one: Cassandra reads an
/// IN of one literal as an EQ (`IN ?` stays an IN whatever it is bound to).
fn names_partitions_by_in(partitions: &PartitionSel) -> bool {
    matches!(partitions, PartitionSel::Keys(k, _)
    if k.iter().any(|v| match v {
        KeyValues::Eq(_) => false,
        KeyValues::In(list) => list.len() != 1,
        KeyValues::InBind(..) => true,
    }))
}

/// The columns a selector expression names.
pub(crate) fn selector_columns<'a>(e: &'a ast::SelectorExpr, out: &mut Vec<&'a str>) {
    use ast::SelectorExpr as E;
    walk_selector(e, &mut |x| match x {
        E::Column(c) | E::WriteTime(c) | E::MaxWriteTime(c) | E::Ttl(c) => out.push(c),
        E::ElementTime { column, .. }
        | E::SliceTime { column, .. }
        | E::FieldTime { column, .. } => out.push(column),
        _ => {}
    });
}

/// `e` and every selector inside it, outermost first.
pub(crate) fn walk_selector<'a>(
    e: &'a ast::SelectorExpr,
    f: &mut dyn FnMut(&'a ast::SelectorExpr),
) {
    use ast::SelectorExpr as E;
    f(e);
    match e {
        E::Function { args, .. } => args.iter().for_each(|a| walk_selector(a, f)),
        E::Cast { expr, .. }
        | E::Field { expr, .. }
        | E::Element { expr, .. }
        | E::Slice { expr, .. }
        | E::Parens(expr)
        | E::TypeHint { expr, .. } => walk_selector(expr, f),
        E::Operation { left, right, .. } => {
            walk_selector(left, f);
            walk_selector(right, f);
        }
        E::Collection(c) => c.items().into_iter().for_each(|a| walk_selector(a, f)),
        E::Column(_)
        | E::WriteTime(_)
        | E::MaxWriteTime(_)
        | E::Ttl(_)
        | E::ElementTime { .. }
        | E::SliceTime { .. }
        | E::FieldTime { .. }
        | E::CountRows
        | E::Term(_) => {}
    }
}

/// `SELECT <this> FROM` in Cassandra's rebuild of a read (the tombstone warning's text).
fn queried_columns(t: &TableDef, selection: &ast::Selection) -> String {
    crate::read::tombstones::queried_columns(t, selected_names(selection).as_deref())
}

/// The names of the columns a selection's selectors name (each time named); `None` for `*`.
fn selected_names(selection: &ast::Selection) -> Option<Vec<&str>> {
    let ast::Selection::Selectors(selectors) = selection else {
        return None;
    };
    let mut names = Vec::new();
    selectors
        .iter()
        .for_each(|s| selector_columns(&s.expr, &mut names));
    Some(names)
}

/// The ids of the regular and static columns a read names, in its selection or its filters
/// (Cassandra's `ColumnFilter` queried columns); `None` when that is all of them: `*`, or a
/// selection and filters naming none (only key columns, `count(*)`).
fn queried_ids(t: &TableDef, selection: &ast::Selection, filters: &[Filter]) -> Option<Arc<[u16]>> {
    let names = selected_names(selection)?;
    let named = |i: usize| {
        let c = &t.columns[i];
        names.contains(&c.name.as_str()) || filters.iter().any(|f| f.column == i)
    };
    let ids: Vec<u16> = (0..t.columns.len())
        .filter(|&i| matches!(t.columns[i].kind, ColumnKind::Regular | ColumnKind::Static))
        .filter(|&i| named(i))
        .map(|i| t.columns[i].id)
        .collect();
    (!ids.is_empty()).then(|| ids.into())
}

/// The kinds of the columns a selection's selectors name (`None` for a name that is no
/// column of the table); `None` for `*`.
fn selected_kinds(t: &TableDef, selection: &ast::Selection) -> Option<Vec<Option<ColumnKind>>> {
    let names = selected_names(selection)?;
    let kind = |name: &str| t.columns.iter().find(|c| c.name == name).map(|c| c.kind);
    Some(names.into_iter().map(kind).collect())
}

/// Whether a read fetches the table's static columns, as Cassandra 5.0.9 was seen to: `*`, a
/// selection naming one, or one naming no regular column (measured by a `c IN ()` read of an
/// empty key, which is refused only when they are fetched).
fn fetches_statics(t: &TableDef, selection: &ast::Selection) -> bool {
    if !t.columns.iter().any(|c| c.kind == ColumnKind::Static) {
        return false;
    }
    let Some(kinds) = selected_kinds(t, selection) else {
        return true;
    };
    kinds.contains(&Some(ColumnKind::Static)) || !kinds.contains(&Some(ColumnKind::Regular))
}

/// Whether `e` is a refusal Cassandra gives while it prepares the selectors
/// (`RawSelector.toSelectables`), before the statement's restrictions: an unknown column, an
/// unknown function, a call no signature fits (a CAST's is typed later), an argument a
/// function factory (masking, collection) refuses, an operator no `_add`/`_negate`/...
/// signature takes.
fn is_function_resolution(e: &EngineError) -> bool {
    let EngineError::Db(db) = e else {
        return false;
    };
    let m = db.message();
    m.starts_with("Undefined column name ")
        || (m.starts_with("the '") && m.contains("' operation is not supported between "))
        || (m.starts_with("Ambiguous '") && m.contains("' operation with args "))
        || m.starts_with("Unknown function")
        || m.starts_with("Function system.")
        || m.starts_with("Invalid number of arguments ")
        || m.starts_with("Ambiguous call to function")
        || m.starts_with("Type error: ")
        || (m.starts_with("Invalid call to function")
            && !m.starts_with("Invalid call to function system.cast_as_"))
}

fn names_unknown_column(t: &TableDef, r: &ast::Relation) -> bool {
    use ast::Relation as R;
    let unknown = |c: &String| t.column(c).is_none();
    match r {
        R::Binary { column, .. }
        | R::In { column, .. }
        | R::IsNotNull { column }
        | R::Element { column, .. } => unknown(column),
        R::MultiColumn { columns, .. } | R::MultiColumnIn { columns, .. } => {
            columns.iter().any(unknown)
        }
        // A token() relation is checked as a whole (all partition key columns) first.
        R::Token { .. } => false,
    }
}

/// Whether a selection reads static columns and nothing but them and partition key columns
/// (Cassandra's `Selection.containsOnlyStaticColumns`): such a SELECT reads the static row, so
/// Cassandra refuses a clustering restriction beside it. `*` reads every column.
fn selects_only_statics(t: &TableDef, selection: &ast::Selection) -> bool {
    let Some(kinds) = selected_kinds(t, selection) else {
        return false;
    };
    kinds.contains(&Some(ColumnKind::Static))
        && kinds.iter().all(|k| {
            matches!(
                k,
                Some(ColumnKind::Static | ColumnKind::PartitionKey) | None
            )
        })
}
