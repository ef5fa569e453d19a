//! In-place updates: a prepared INSERT / UPDATE / whole-row DELETE into a table without
//! clustering columns patches the cached point reads of its partition with its bound values,
//! instead of only invalidating them, when no other write overlapped it and its timestamp
//! beats the entry's timestamp floor (`Cache::write_started` / `Cache::write_acknowledged`;
//! docs/proxy.md, "In-place updates").

use std::sync::{Arc, PoisonError};

use bytes::Bytes;
use proto::request::{Execute, Query, QueryParams, RawValue, Request, Values};
use proto::response::{ColumnSpec, Response, ResultBody, Rows, RowsBuilder};
use proto::types::{ColumnType, Value};
use server::ConnState;

use crate::classify::{self, Class, PatchShape, TableRef};
use crate::forward::decoded_rows;
use crate::{cache, partition_key, Ctx, PreparedInfo, ProxyBackend};

/// A write that may patch cached results, between its start and the upstream's answer.
pub(crate) struct PatchingWrite {
    ticket: cache::WriteTicket,
    patch: Arc<WritePatch>,
    values: Vec<RawValue>,
}

impl ProxyBackend {
    /// Whether a prepared statement takes part in in-place cache updates: a point read of
    /// plain columns restricted by exactly its partition key (its result column names), or an
    /// INSERT / UPDATE of bound values of simple types naming its whole partition key (its
    /// [`WritePatch`]), in either case of a table known to have no clustering columns (asked of
    /// the upstream once per table). See `execute_patching`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn patch_shapes(
        &self,
        conn: &ConnState,
        query: &str,
        class: &Class,
        pk: &Option<(TableRef, Vec<usize>, bool)>,
        cache_read: &Option<TableRef>,
        binds: &[ColumnSpec],
        result_names: &[String],
    ) -> (Option<Arc<[String]>>, Option<Arc<WritePatch>>) {
        let Some((table, idx, true)) = pk else {
            return (None, None);
        };
        let simple_binds = binds.iter().all(|c| {
            c.table == table.table
                && c.keyspace == table.keyspace
                && (canonical_type(&c.ty) || matches!(c.ty, ColumnType::Double | ColumnType::Float))
        });
        let names_pk = |keys: &[(String, usize)]| {
            keys.len() == idx.len() && keys.iter().all(|(_, i)| idx.contains(i))
        };
        let (read, write) = match (classify::patch_shape(query), class) {
            (Some(PatchShape::PointRead), Class::Select { eq_binds, .. })
                if cache_read.is_some() && eq_binds.len() == idx.len() =>
            {
                (Some(result_names.into()), None)
            }
            (Some(PatchShape::Insert { columns }), Class::Write { single: true, .. })
                if columns.len() == binds.len() && simple_binds =>
            {
                let (keys, sets): (Vec<_>, Vec<_>) = columns
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| (c, i))
                    .partition(|(_, i)| idx.contains(i));
                let patch = WritePatch {
                    sets,
                    keys,
                    row_marker: true,
                    deletes_row: false,
                };
                (None, names_pk(&patch.keys).then(|| Arc::new(patch)))
            }
            (Some(PatchShape::Update { sets, keys }), Class::Write { single: true, .. })
                if simple_binds && names_pk(&keys) =>
            {
                let patch = WritePatch {
                    sets,
                    keys,
                    row_marker: false,
                    deletes_row: false,
                };
                (None, Some(Arc::new(patch)))
            }
            (Some(PatchShape::Delete { keys }), Class::Write { single: true, .. })
                if simple_binds && names_pk(&keys) =>
            {
                let patch = WritePatch {
                    sets: Vec::new(),
                    keys,
                    row_marker: false,
                    deletes_row: true,
                };
                (None, Some(Arc::new(patch)))
            }
            _ => (None, None),
        };
        if read.is_none() && write.is_none() {
            return (None, None);
        }
        if !self.cache.enabled() || self.clustering_free(conn, table).await != Some(true) {
            return (None, None);
        }
        (read, write)
    }

    /// Whether `table` has no clustering columns: remembered, else asked of the upstream's
    /// `system_schema.columns`. `None` when the upstream did not say.
    async fn clustering_free(&self, conn: &ConnState, table: &TableRef) -> Option<bool> {
        if let Some(&known) = self
            .clustering_free
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(table)
        {
            return Some(known);
        }
        let quote = |s: &str| s.replace('\'', "''");
        let q = Request::Query(Query {
            query: format!(
                "SELECT kind FROM system_schema.columns WHERE keyspace_name = '{}' AND table_name = '{}'",
                quote(&table.keyspace),
                quote(&table.table)
            ),
            params: QueryParams::default(),
        });
        let resp = self.forward(conn, &Ctx::default(), None, &q, false).await;
        let rows = decoded_rows(&resp, conn.version())?;
        let kinds = rows.decode_rows().ok()?;
        if kinds.is_empty() {
            return None; // no such table (yet)
        }
        let free = !kinds
            .iter()
            .any(|r| matches!(r.first(), Some(Value::Varchar(k)) if k == "clustering"));
        self.clustering_free
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(table.clone(), free);
        Some(free)
    }

    /// Starts a prepared INSERT, UPDATE or DELETE with a [`WritePatch`] (see
    /// `Cache::write_started`), or `None` when this execution cannot patch: named values, or a
    /// null partition key. A client `timestamp` goes with the write: the cache patches only
    /// where it wins.
    pub(crate) fn start_patching_write(
        &self,
        info: &PreparedInfo,
        values: &Values,
        timestamp: Option<i64>,
    ) -> Option<PatchingWrite> {
        let (Some(patch), Some((table, idx, true))) = (&info.write_patch, &info.pk) else {
            return None;
        };
        let Values::Positional(raw) = values else {
            return None;
        };
        if !patch.fits(raw.len()) {
            return None;
        }
        let pk = partition_key(values, idx)?;
        let ticket = self
            .cache
            .write_started(&table.keyspace, &table.table, &pk, timestamp);
        Some(PatchingWrite {
            ticket,
            patch: patch.clone(),
            values: raw.clone(),
        })
    }

    /// Ends a write begun by [`ProxyBackend::start_patching_write`] with the upstream's answer:
    /// an acknowledgement patches, anything else leaves the partition invalidated.
    pub(crate) fn finish_patching_write(&self, w: PatchingWrite, resp: &Response) {
        if let Response::Result(ResultBody::Void) = resp {
            self.cache.write_acknowledged(w.ticket, &|rows, names| {
                patch_rows(rows, names, &w.patch, &w.values)
            });
        } else {
            self.cache.write_failed(w.ticket);
        }
    }

    /// An EXECUTE of a write that patches the cached results of its partition in place (see
    /// `Cache::write_acknowledged`) instead of only invalidating them, or `Err(x)` when it
    /// cannot (see [`ProxyBackend::start_patching_write`]).
    pub(crate) async fn execute_patching(
        &self,
        conn: &ConnState,
        ctx: &Ctx,
        info: &PreparedInfo,
        x: Execute,
    ) -> Result<Response, Execute> {
        let Some(write) =
            self.start_patching_write(info, &x.params.values, x.params.default_timestamp)
        else {
            return Err(x);
        };
        let req = Request::Execute(x);
        let resp = self
            .forward(conn, ctx, info.keyspace.as_deref(), &req, true)
            .await;
        self.finish_patching_write(write, &resp);
        Ok(resp)
    }
}

/// What a prepared INSERT, UPDATE or whole-row DELETE does to a row, by bind marker index
/// (see `patch_rows`).
#[derive(Debug)]
pub(crate) struct WritePatch {
    /// Regular columns set.
    sets: Vec<(String, usize)>,
    /// The partition key columns.
    keys: Vec<(String, usize)>,
    /// INSERT: the row exists afterwards whatever the values (row marker); UPDATE: only
    /// through its non-null cells.
    row_marker: bool,
    /// DELETE of the whole row (of the partition: the table has no clustering columns).
    deletes_row: bool,
}

impl WritePatch {
    /// Whether `n` bound values are what the statement takes.
    fn fits(&self, n: usize) -> bool {
        self.sets.iter().chain(&self.keys).all(|(_, i)| *i < n)
    }
}

/// The result of a point read (`names`: its column names) after the write `p` with bound
/// `values`, or `None` when it cannot be computed from them: more than one row, a paged result,
/// or an UPDATE that nulls a cell of an existing row (whether the row survives depends on
/// cells the proxy has not seen).
fn patch_rows(rows: &Rows, names: &[String], p: &WritePatch, values: &[RawValue]) -> Option<Rows> {
    if rows.metadata.paging_state.is_some() || rows.rows_count > 1 {
        return None;
    }
    let old: Vec<Option<&[u8]>> = rows.cells().collect();
    if old.len() != names.len() * rows.rows_count as usize {
        return None;
    }
    if p.deletes_row {
        return Some(Rows {
            rows_count: 0,
            data: Bytes::new(),
            metadata: rows.metadata.clone(),
        });
    }
    let sets = || p.sets.iter().map(|(_, i)| &values[*i]);
    let exists = rows.rows_count == 1;
    if !exists && !p.row_marker && !sets().any(|v| matches!(v, RawValue::Bytes(_))) {
        return Some(rows.clone()); // an UPDATE that sets nothing leaves no row
    }
    let value_of = |name: &String| {
        p.sets
            .iter()
            .chain(&p.keys)
            .find(|(c, _)| c == name)
            .map(|(_, i)| &values[*i])
    };
    let cells: Vec<Option<&[u8]>> = names
        .iter()
        .enumerate()
        .map(|(i, name)| match (value_of(name), exists) {
            (Some(RawValue::Bytes(v)), _) => Some(&v[..]),
            (Some(RawValue::Null), _) => None,
            // Not written: the old cell, or nothing in a row the write creates.
            (Some(RawValue::Unset) | None, true) => old[i],
            (Some(RawValue::Unset) | None, false) => None,
        })
        .collect();
    // An UPDATE that nulls cells of an existing row: the row survives if a cell the result
    // shows is still live; if none is, it depends on cells (or a row marker) not seen here.
    let is_key = |name: &String| p.keys.iter().any(|(k, _)| k == name);
    if exists
        && !p.row_marker
        && sets().any(|v| matches!(v, RawValue::Null))
        && !names
            .iter()
            .zip(&cells)
            .any(|(name, cell)| cell.is_some() && !is_key(name))
    {
        return None;
    }
    let mut b = RowsBuilder::with_capacity(rows.data.len() + 64);
    for cell in cells {
        b.push_cell(cell);
    }
    b.end_row();
    Some(b.finish(rows.metadata.clone()))
}

/// Types whose equal values always serialize to equal bytes, so a write's key bytes match a
/// read's. For the others (varint, decimal, floats, collections, ...) writes invalidate the
/// whole table.
pub(crate) fn canonical_type(t: &ColumnType) -> bool {
    matches!(
        t,
        ColumnType::Ascii
            | ColumnType::Bigint
            | ColumnType::Blob
            | ColumnType::Boolean
            | ColumnType::Int
            | ColumnType::Timestamp
            | ColumnType::Uuid
            | ColumnType::Varchar
            | ColumnType::Timeuuid
            | ColumnType::Inet
            | ColumnType::Date
            | ColumnType::Time
            | ColumnType::Smallint
            | ColumnType::Tinyint
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_patches_a_point_read_result() {
        let names: Vec<String> = ["k", "v", "n"].iter().map(|s| s.to_string()).collect();
        let insert = WritePatch {
            sets: vec![("v".into(), 1)],
            keys: vec![("k".into(), 0)],
            row_marker: true,
            deletes_row: false,
        };
        let update = WritePatch {
            sets: vec![("v".into(), 0)],
            keys: vec![("k".into(), 1)],
            row_marker: false,
            deletes_row: false,
        };
        let delete = WritePatch {
            sets: Vec::new(),
            keys: vec![("k".into(), 0)],
            row_marker: false,
            deletes_row: true,
        };
        let one_row = |cells: [Option<&[u8]>; 3]| {
            let mut b = RowsBuilder::new();
            for c in cells {
                b.push_cell(c);
            }
            b.end_row();
            b.finish(Default::default())
        };
        let old = one_row([Some(b"1"), Some(b"a"), Some(b"7")]);
        let empty = RowsBuilder::new().finish(Default::default());
        let k = || RawValue::Bytes(Bytes::from_static(b"1"));
        let b = || RawValue::Bytes(Bytes::from_static(b"b"));
        let ins = |v: RawValue| vec![k(), v];
        let upd = |v: RawValue| vec![v, k()];
        // A set cell replaced, an unset one kept, a null one cleared.
        let got = patch_rows(&old, &names, &insert, &ins(b())).unwrap();
        assert_eq!(got, one_row([Some(b"1"), Some(b"b"), Some(b"7")]));
        assert_eq!(
            patch_rows(&old, &names, &insert, &ins(RawValue::Unset)).unwrap(),
            old
        );
        let got = patch_rows(&old, &names, &insert, &ins(RawValue::Null)).unwrap();
        assert_eq!(got, one_row([Some(b"1"), None, Some(b"7")]));
        assert_eq!(
            patch_rows(&old, &names, &update, &upd(b())).unwrap(),
            one_row([Some(b"1"), Some(b"b"), Some(b"7")])
        );
        // No row yet: the INSERT creates it, columns it does not set are null.
        let got = patch_rows(&empty, &names, &insert, &ins(b())).unwrap();
        assert_eq!(got, one_row([Some(b"1"), Some(b"b"), None]));
        let got = patch_rows(&empty, &names, &insert, &ins(RawValue::Null)).unwrap();
        assert_eq!(
            got,
            one_row([Some(b"1"), None, None]),
            "INSERT's row marker"
        );
        // An UPDATE creates a row only through a value. Nulling a cell of a row keeps it when
        // another cell shown stays live; with none live, whether it survives is unknown.
        assert_eq!(
            patch_rows(&empty, &names, &update, &upd(b())).unwrap(),
            one_row([Some(b"1"), Some(b"b"), None])
        );
        assert_eq!(
            patch_rows(&empty, &names, &update, &upd(RawValue::Null)).unwrap(),
            empty
        );
        assert_eq!(
            patch_rows(&old, &names, &update, &upd(RawValue::Null)).unwrap(),
            one_row([Some(b"1"), None, Some(b"7")])
        );
        let without_n = one_row([Some(b"1"), Some(b"a"), None]);
        assert!(patch_rows(&without_n, &names, &update, &upd(RawValue::Null)).is_none());
        // A whole-row DELETE leaves no row.
        assert_eq!(patch_rows(&old, &names, &delete, &[k()]).unwrap(), empty);
        // Two rows or a paged result: not computable.
        let mut two = RowsBuilder::new();
        for _ in 0..2 {
            for c in [Some(&b"1"[..]), None, None] {
                two.push_cell(c);
            }
            two.end_row();
        }
        let two = two.finish(Default::default());
        assert!(patch_rows(&two, &names, &insert, &ins(b())).is_none());
        let mut paged = old.clone();
        paged.metadata.paging_state = Some(Bytes::from_static(b"p"));
        assert!(patch_rows(&paged, &names, &insert, &ins(b())).is_none());
    }
}
