//! Secondary indexes (`CREATE INDEX`) and Storage-Attached Indexes (`USING 'sai'`).
//!
//! Both kinds share one storage design (see `docs/dev/indexes.md`): an index entry is a key
//! in its own key space,
//!
//! ```text
//! entry:  0x02 index_id:u32 enc(value) tail     value: expires_at:u32 (0 = never) len(enc):u32
//! ```
//!
//! where `enc(value)` is the indexed value's order-preserving, self-delimiting encoding
//! ([`crate::keys::encode_component`]; a map entry is its key's then its value's) and `tail`
//! is the indexed base key without its `0x01 table_id` prefix (token, partition key, then the
//! row's clustering or the header marker). Entries of one value are thus in base-key order —
//! Cassandra's token order — and a range of values is one contiguous key range.
//!
//! Entries are written blind, as Cassandra's SAI writes its memtable index: for a row `apply`
//! reads (under the partition's stripe lock), [`maintain`] puts the entries the new row has
//! and the old one lacked, in the same atomic batch, and leaves the old row's other entries in
//! place (stale) instead of deleting them; for a row written blind (a partial row: cells set
//! or deleted, stored without reading the row, see `exec.rs`), it puts the entries of the
//! values written, never expiring, and whatever they replace is left stale. Reads check every
//! candidate against the base row (the indexed relation is one of the read's filters; an
//! entry whose cell has since expired by TTL is skipped, and its expiry lets compaction drop
//! it), so a stale entry costs a row read, never a wrong row; a range dedups the base keys
//! its entries name. Growth is bounded by a background sweep (`entries`: the server's
//! index-build thread runs it once stale entries are about as many as live ones, and once
//! after start-up), which removes an entry only if its row no longer has it, judged under the
//! partition's stripe lock (see `Engine::sweep_index_entries`).
//!
//! | module | what it holds |
//! |---|---|
//! | `ddl` | CREATE/DROP INDEX: Cassandra's rules, names and errors |
//! | `entries` | the entries of one stored row or partition header; [`maintain`] |
//! | `query` | choosing an index for a SELECT, Cassandra's ALLOW FILTERING rules |
//! | `scan` | candidates of an index lookup, in base-key order |
//! | `vector` | the HNSW graphs of SAI vector indexes: build, upkeep, memory budget |
//! | `ann` | planning `ORDER BY v ANN OF q LIMIT k` with Cassandra's rules |

pub(crate) mod ann;
pub mod ddl;
mod entries;
pub use entries::IndexBuilds;
pub(crate) mod query;
pub(crate) mod scan;
pub(crate) mod vector;

pub(crate) use entries::encode_value;
pub use entries::{maintain, Sweep};
pub(crate) use entries::{row_entries, upkeep, writes_blind};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// First byte of every index entry key.
pub const INDEX_PREFIX: u8 = 0x02;

/// What of a column an index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// The whole value of a non-collection column.
    Simple,
    /// Elements of a list or set, values of a map.
    Values,
    /// Keys of a map.
    Keys,
    /// Key/value pairs of a map.
    Entries,
    /// The whole value of a frozen collection.
    Full,
}

/// One index, stored with its table in the schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexDef {
    pub name: String,
    /// Key space of its entries; taken from the schema's id counter, never reused.
    pub id: u32,
    pub column: String,
    pub target: Target,
    /// The class of a CUSTOM index as written (`sai`, `StorageAttachedIndex`); `None` for a
    /// legacy secondary index.
    pub class_name: Option<String>,
    /// Options as written in `WITH OPTIONS` (SAI: `case_sensitive`, `normalize`, `ascii`).
    pub options: BTreeMap<String, String>,
    /// Whether the build over the table's data finished (an unbuilt index is built again
    /// when the store opens).
    #[serde(default)]
    pub built: bool,
}

impl IndexDef {
    pub fn is_sai(&self) -> bool {
        self.class_name.is_some()
    }

    /// `kind` in `system_schema.indexes`.
    pub fn kind(&self) -> &'static str {
        if self.is_sai() {
            "CUSTOM"
        } else {
            "COMPOSITES"
        }
    }

    /// `target` option: `v`, `values(l)`, `keys(m)`, `entries(m)`, `full(f)`.
    pub fn target_text(&self) -> String {
        let c = cql::quote_identifier(&self.column).into_owned();
        match self.target {
            Target::Simple => c,
            Target::Values => format!("values({c})"),
            Target::Keys => format!("keys({c})"),
            Target::Entries => format!("entries({c})"),
            Target::Full => format!("full({c})"),
        }
    }

    /// `options` in `system_schema.indexes`.
    pub fn schema_options(&self) -> BTreeMap<String, String> {
        let mut o = self.options.clone();
        if let Some(c) = &self.class_name {
            o.insert("class_name".into(), c.clone());
        }
        o.insert("target".into(), self.target_text());
        o
    }

    /// What SAI's analyzer does to this index's text values before they are indexed or
    /// compared (its `case_sensitive`, `normalize` and `ascii` options).
    pub fn analyzer(&self) -> Analyzer {
        let on = |k: &str, v: &str| {
            self.options
                .get(k)
                .is_some_and(|x| x.eq_ignore_ascii_case(v))
        };
        Analyzer {
            lower: on("case_sensitive", "false"),
            nfc: on("normalize", "true"),
            ascii: on("ascii", "true"),
            inet: InetOrder::Bytes,
        }
    }
}

/// SAI's non-tokenizing analyzer, in Cassandra's order: lower case (`case_sensitive: false`),
/// then Unicode NFC (`normalize: true`), then Lucene's ASCII folding (`ascii: true`, "é" to
/// "e", "ß" to "ss"). Values that differ only in what it removes then match each other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Analyzer {
    pub lower: bool,
    pub nfc: bool,
    pub ascii: bool,
    /// The order inet values are compared in (only a query's check of an SAI relation on an
    /// inet column sets another than `Bytes`; index entries keep the stored bytes, so such a
    /// range reads the whole index).
    pub inet: InetOrder,
}

/// How an SAI relation on an inet column orders values. SAI orders and matches them as IPv6
/// addresses, an IPv4 address as its IPv4-mapped form (`::ffff:a.b.c.d`): `v > '2001:db8::7'`
/// finds no IPv4 address. Cassandra 5.0.9 then checks the rows it found against its row
/// filter in the type's own (byte) order, except a partition key relation when the query
/// restricts no regular or static column (that filter is then left out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InetOrder {
    /// The type's own order: the stored bytes.
    #[default]
    Bytes,
    /// IPv4-mapped order, and the row must also hold in byte order.
    MappedAndBytes,
    /// IPv4-mapped order alone.
    Mapped,
}

impl Analyzer {
    /// Compares values as stored.
    pub const NONE: Analyzer = Analyzer {
        lower: false,
        nfc: false,
        ascii: false,
        inet: InetOrder::Bytes,
    };

    pub fn is_none(self) -> bool {
        self == Analyzer::NONE
    }

    /// The analyzed form of a text value (values that are not UTF-8 are left as they are), or
    /// in IPv4-mapped order of an inet value.
    pub fn apply(self, v: &[u8]) -> std::borrow::Cow<'_, [u8]> {
        use unicode_normalization::UnicodeNormalization;
        if self.inet != InetOrder::Bytes {
            return match <[u8; 4]>::try_from(v) {
                Ok(a) => std::borrow::Cow::Owned(
                    std::net::Ipv4Addr::from(a)
                        .to_ipv6_mapped()
                        .octets()
                        .to_vec(),
                ),
                Err(_) => std::borrow::Cow::Borrowed(v),
            };
        }
        let s = match std::str::from_utf8(v) {
            Ok(s) if !self.is_none() => s,
            _ => return std::borrow::Cow::Borrowed(v),
        };
        let mut out = if self.lower {
            s.to_lowercase()
        } else {
            s.to_string()
        };
        if self.nfc && !unicode_normalization::is_nfc(&out) {
            out = out.nfc().collect();
        }
        if self.ascii && !out.is_ascii() {
            out = asciifolding::fold_to_ascii(&out);
        }
        std::borrow::Cow::Owned(out.into_bytes())
    }
}

/// Cassandra 5.0.9's answer to a query that needs an index still being built: ReadFailure
/// from this node, reason INDEX_NOT_AVAILABLE (0x0006) for SAI and UNKNOWN (0x0000) for a
/// legacy index.
pub(crate) fn not_available(node: &crate::NodeInfo, sai: bool) -> crate::EngineError {
    if sai {
        read_failure(node.rpc_address, "INDEX_NOT_AVAILABLE", 0x0006)
    } else {
        read_failure(node.rpc_address, "UNKNOWN", 0x0000)
    }
}

/// Cassandra 5.0.9's answer to an ANN query whose vector no index can be searched with
/// (`vector_index::check_indexable`): ReadFailure from this node, reason UNKNOWN.
pub(crate) fn unindexable_read(node: &crate::NodeInfo) -> crate::EngineError {
    read_failure(node.rpc_address, "UNKNOWN", 0x0000)
}

/// A ReadFailure of one replica, this node, with Cassandra's message and `RequestFailureReason`
/// (`reason`, `code`). The consistency here is a placeholder: the server puts the request's in.
pub(crate) fn read_failure(node: std::net::IpAddr, reason: &str, code: u16) -> crate::EngineError {
    let (message, reasons) = one_failure(node, reason, code);
    crate::EngineError::Db(proto::DbError::ReadFailure {
        message,
        consistency: proto::request::Consistency::LocalOne,
        received: 0,
        block_for: 1,
        num_failures: 1,
        reasons,
        data_present: false,
    })
}

/// Cassandra 5.0.9's answer to a write of a vector its index refuses
/// (`vector_index::check_indexable`): WriteFailure from this node, reason UNKNOWN, write type
/// SIMPLE (a batch of several partitions puts its own in). The consistency is a placeholder
/// the server replaces with the request's.
pub(crate) fn unindexable_write(node: std::net::IpAddr) -> crate::EngineError {
    let (message, reasons) = one_failure(node, "UNKNOWN", 0x0000);
    crate::EngineError::Db(proto::DbError::WriteFailure {
        write_type: proto::error::WriteType::Simple,
        message,
        reasons,
        num_failures: 1,
        block_for: 1,
        received: 0,
        consistency: proto::request::Consistency::LocalOne,
    })
}

/// The message and failure map of a request that one replica, this node, failed.
fn one_failure(
    node: std::net::IpAddr,
    reason: &str,
    code: u16,
) -> (String, Vec<proto::error::FailureReason>) {
    (
        format!(
            "Operation failed - received 0 responses and 1 failures: {reason} from /{node}:7000"
        ),
        vec![proto::error::FailureReason {
            endpoint: node,
            code,
        }],
    )
}

/// `0x02 index_id`: the start of an index's entries.
pub(crate) fn index_prefix(id: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(5);
    k.push(INDEX_PREFIX);
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// The compaction filter's verdict on an index entry: `true` keeps it.
pub fn keep_entry(schema: &crate::catalog::Schema, key: &[u8], value: &[u8], now: u32) -> bool {
    let Some(id) = key
        .get(1..5)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
    else {
        return true;
    };
    let known = schema
        .indexed
        .values()
        .any(|t| t.indexes.iter().any(|i| i.id == id));
    if !known && id < schema.next_table_id {
        return false;
    }
    !expired(value, now)
}

/// Whether an entry (its stored value) belongs to a cell that has expired by `now`.
pub(crate) fn expired(value: &[u8], now: u32) -> bool {
    match value
        .get(0..4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
    {
        Some(exp) => exp != 0 && exp <= now,
        None => false,
    }
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod analyzer_tests {
    use super::Analyzer;

    fn run(a: Analyzer, s: &str) -> String {
        String::from_utf8(a.apply(s.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn options_apply_in_cassandras_order() {
        let all = Analyzer {
            lower: true,
            nfc: true,
            ascii: true,
            inet: super::InetOrder::Bytes,
        };
        assert_eq!(run(Analyzer::NONE, "CAFÉ"), "CAFÉ");
        assert_eq!(run(all, "STRAßE"), "strasse");
        // NFC composes e + U+0301 into é before folding removes the accent.
        assert_eq!(run(all, "CAFE\u{301}"), "cafe");
        // Folding alone keeps a combining mark, as Lucene does.
        let fold = Analyzer {
            ascii: true,
            ..Analyzer::NONE
        };
        assert_eq!(run(fold, "cafe\u{301}"), "cafe\u{301}");
        assert_eq!(run(fold, "\u{fb01}le"), "file");
        let nfc = Analyzer {
            nfc: true,
            ..Analyzer::NONE
        };
        assert_eq!(run(nfc, "cafe\u{301}"), "caf\u{e9}");
        // Bytes that are not UTF-8 are compared as they are.
        assert_eq!(all.apply(&[0xff, 0x41]).as_ref(), &[0xff, 0x41]);
    }
}
