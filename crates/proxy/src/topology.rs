//! What the proxy tells drivers about the cluster: itself in `system.local`, the other proxies
//! in `system.peers` / `system.peers_v2`, and a split of the token ring among all proxies.
//!
//! The upstream's own `system.local` row is the base (cluster name, partitioner, versions,
//! schema version, data center, rack stay the cluster's); the proxy replaces the addresses,
//! port, host id and tokens. Proxies sort by address; proxy `i` of `n` owns the token range
//! ending at `MIN + (i + 1) * 2^64 / n - 1`, so each proxy owns one contiguous `1/n` of the
//! ring, and every proxy computes the same split from the same list.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;

use proto::request::{Query, QueryParams, Request};
use proto::response::{ColumnSpec, Response, ResultBody, Rows, RowsBuilder};
use proto::types::Value;
use server::ConnState;

use crate::classify::LocalTable;
use crate::forward::decoded_rows;
use crate::{Ctx, PreparedInfo, ProxyBackend};

/// This proxy and its peers.
#[derive(Debug, Clone)]
pub struct Topology {
    me: SocketAddr,
    /// All proxies, this one included, sorted.
    all: Vec<SocketAddr>,
}

/// Cluster facts the peers rows copy from the upstream's `system.local`.
#[derive(Debug, Clone, Default)]
pub struct ClusterFacts {
    pub data_center: Option<Vec<u8>>,
    pub rack: Option<Vec<u8>>,
    pub release_version: Option<Vec<u8>>,
    pub schema_version: Option<Vec<u8>>,
}

impl Topology {
    pub fn new(me: SocketAddr, peers: &[SocketAddr]) -> Self {
        let mut all: Vec<SocketAddr> = peers.iter().copied().filter(|p| *p != me).collect();
        all.push(me);
        all.sort();
        Topology { me, all }
    }

    pub fn peers(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.all.iter().copied().filter(move |a| *a != self.me)
    }

    pub fn has_peers(&self) -> bool {
        self.all.len() > 1
    }

    /// The one token proxy `addr` reports.
    pub fn token_of(&self, addr: SocketAddr) -> String {
        let n = self.all.len().max(1) as i128;
        let i = self.all.iter().position(|a| *a == addr).unwrap_or(0) as i128;
        let step = (1i128 << 64) / n;
        let t = if i + 1 == n {
            i64::MAX as i128
        } else {
            i64::MIN as i128 + (i + 1) * step - 1
        };
        t.to_string()
    }

    /// A stable host id for a proxy address (a version-4-shaped UUID from its hash).
    pub fn host_id(addr: SocketAddr) -> [u8; 16] {
        let mut out = [0u8; 16];
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            let mut h = DefaultHasher::new();
            ("peregrine-proxy", addr, i).hash(&mut h);
            chunk.copy_from_slice(&h.finish().to_be_bytes());
        }
        out[6] = (out[6] & 0x0f) | 0x40;
        out[8] = (out[8] & 0x3f) | 0x80;
        out
    }

    /// Rewrites the upstream's `system.local` rows (`names` are the result columns).
    pub fn rewrite_local(&self, rows: &Rows, names: &[String]) -> Rows {
        let me = self.me;
        rewrite(rows, names, |name| match name {
            "rpc_address" | "broadcast_address" | "listen_address" => Some(Value::Inet(me.ip())),
            "rpc_port" | "native_port" => Some(Value::Int(i32::from(me.port()))),
            "host_id" => Some(Value::Uuid(Topology::host_id(me))),
            "tokens" => Some(Value::Set(vec![Value::Varchar(self.token_of(me))])),
            _ => None,
        })
    }

    /// One row per other proxy, in the column layout `names` (of `system.peers` or
    /// `system.peers_v2`); unknown columns are null.
    pub fn peers_rows(&self, template: &Rows, names: &[String], facts: &ClusterFacts) -> Rows {
        let mut b = RowsBuilder::new();
        for peer in self.peers() {
            for name in names {
                let cell: Option<Vec<u8>> = match name.as_str() {
                    "peer" | "rpc_address" | "native_address" | "preferred_ip" => {
                        Some(proto::value::to_bytes(&Value::Inet(peer.ip())))
                    }
                    "native_port" => {
                        Some(proto::value::to_bytes(&Value::Int(i32::from(peer.port()))))
                    }
                    "host_id" => Some(Topology::host_id(peer).to_vec()),
                    "tokens" => Some(proto::value::to_bytes(&Value::Set(vec![Value::Varchar(
                        self.token_of(peer),
                    )]))),
                    "data_center" => facts.data_center.clone(),
                    "rack" => facts.rack.clone(),
                    "release_version" => facts.release_version.clone(),
                    "schema_version" => facts.schema_version.clone(),
                    _ => None,
                };
                b.push_cell(cell.as_deref());
            }
            b.end_row();
        }
        b.finish(template.metadata.clone())
    }
}

/// Copies `rows`, replacing the cells of the columns for which `replace` gives a value.
fn rewrite(rows: &Rows, names: &[String], replace: impl Fn(&str) -> Option<Value>) -> Rows {
    let width = names.len();
    if width == 0 {
        return rows.clone();
    }
    let replacements: Vec<Option<Vec<u8>>> = names
        .iter()
        .map(|n| replace(n).map(|v| proto::value::to_bytes(&v)))
        .collect();
    let mut b = RowsBuilder::with_capacity(rows.data.len() + 64);
    for (i, cell) in rows.cells().enumerate() {
        let col = i % width;
        match &replacements[col] {
            Some(v) => b.push_cell(Some(v)),
            None => b.push_cell(cell),
        }
        if col + 1 == width {
            b.end_row();
        }
    }
    b.finish(rows.metadata.clone())
}

/// Reads the cluster facts out of an upstream `system.local` result.
pub fn facts_of(rows: &Rows, names: &[String]) -> ClusterFacts {
    let mut f = ClusterFacts::default();
    for (i, cell) in rows.cells().take(names.len()).enumerate() {
        let v = cell.map(<[u8]>::to_vec);
        match names[i].as_str() {
            "data_center" => f.data_center = v,
            "rack" => f.rack = v,
            "release_version" => f.release_version = v,
            "schema_version" => f.schema_version = v,
            _ => {}
        }
    }
    f
}

impl ProxyBackend {
    /// `system.local`, `system.peers*` (read upstream, rewritten) and the metrics table.
    pub(crate) async fn local_read(
        &self,
        conn: &ConnState,
        ctx: &Ctx,
        which: LocalTable,
        _ks: Option<&str>,
        req: &Request,
        info: Option<&PreparedInfo>,
    ) -> Response {
        if which == LocalTable::Metrics {
            return Response::Result(ResultBody::Rows(self.metrics.rows(&self.cache)));
        }
        let conn_ks = conn.keyspace();
        let pool_ks = info.map_or(conn_ks.as_deref(), |i| i.keyspace.as_deref());
        let resp = self.forward(conn, ctx, pool_ks, req, false).await;
        let Some(rows) = decoded_rows(&resp, conn.version()) else {
            return resp;
        };
        let rows = &rows;
        let names = column_names(rows, info);
        match which {
            LocalTable::Local => {
                Response::Result(ResultBody::Rows(self.topology.rewrite_local(rows, &names)))
            }
            _ => {
                let facts = if self.topology.has_peers() {
                    self.cluster_facts(conn).await
                } else {
                    ClusterFacts::default()
                };
                Response::Result(ResultBody::Rows(
                    self.topology.peers_rows(rows, &names, &facts),
                ))
            }
        }
    }

    async fn cluster_facts(&self, conn: &ConnState) -> ClusterFacts {
        let q = Request::Query(Query {
            query: "SELECT data_center, rack, release_version, schema_version FROM system.local WHERE key = 'local'".into(),
            params: QueryParams::default(),
        });
        let resp = self.forward(conn, &Ctx::default(), None, &q, false).await;
        match decoded_rows(&resp, conn.version()) {
            Some(rows) => {
                let names = column_names(&rows, None);
                facts_of(&rows, &names)
            }
            None => ClusterFacts::default(),
        }
    }
}

/// Result column names: from the rows' metadata, or (metadata skipped) from the prepared
/// statement's.
fn column_names(rows: &Rows, info: Option<&PreparedInfo>) -> Vec<String> {
    if rows.metadata.no_metadata {
        if let Some(info) = info {
            return info.result_names.clone();
        }
    }
    rows.metadata
        .columns
        .iter()
        .map(|c: &ColumnSpec| c.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_the_ring_evenly_and_the_last_ends_at_max() {
        let a: SocketAddr = "127.0.0.1:9001".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:9002".parse().unwrap();
        let t = Topology::new(a, &[b]);
        assert_eq!(t.token_of(a), "-1");
        assert_eq!(t.token_of(b), i64::MAX.to_string());
        let single = Topology::new(a, &[]);
        assert_eq!(single.token_of(a), i64::MAX.to_string());
        assert!(!single.has_peers());
        assert_eq!(t.peers().collect::<Vec<_>>(), vec![b]);
        assert_ne!(Topology::host_id(a), Topology::host_id(b));
    }
}
