//! A generator of CQL statements and bound values for hunting panics in the engine.
//!
//! Shared by the seeded test `tests/generated_statements.rs` (runs in `cargo test`) and the
//! fuzz target `fuzz/fuzz_targets/engine_statements.rs` (which drives the same choices from
//! the fuzzer's bytes). It draws statements over a fixed schema that holds every kind of
//! column (all native types, collections frozen and not, nested ones, a UDT, a tuple, static,
//! counter, compound partition and clustering keys, DESC order), valid and invalid: wrong
//! types, out-of-range numbers, keys at and over the 65,535-byte limit, bind markers with
//! random bytes, paging states from earlier results or made up. The engine may answer any of
//! them with an error; it must never panic.

#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr};

use proto::DbError;

use engine::{
    BatchItem, BatchKind, BoundValue, Engine, NodeInfo, Now, Outcome, QueryOptions, Values,
};

/// The node an engine under test describes in `system.local`.
pub fn node() -> NodeInfo {
    NodeInfo {
        cluster_name: "Test Cluster".into(),
        datacenter: "datacenter1".into(),
        rack: "rack1".into(),
        rpc_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        rpc_port: 9042,
        host_id: [0; 16],
        release_version: "5.0.9".into(),
    }
}

/// Where the generator's choices come from.
pub trait Choices {
    /// A number in `0..n` (`n > 0`).
    fn pick(&mut self, n: usize) -> usize;
    /// True when the source has run dry (the fuzzer's input is used up).
    fn exhausted(&self) -> bool {
        false
    }
}

/// A seeded xorshift source for the deterministic test.
pub struct Seeded(pub u64);

impl Choices for Seeded {
    fn pick(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Choices read from fuzzer bytes, one byte (or two for large ranges) per choice.
pub struct FromBytes<'a>(pub &'a [u8]);

impl Choices for FromBytes<'_> {
    fn pick(&mut self, n: usize) -> usize {
        let take = if n > 256 { 2 } else { 1 };
        let mut v = 0usize;
        for _ in 0..take {
            let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
            self.0 = rest;
            v = (v << 8) | b as usize;
        }
        v % n
    }
    fn exhausted(&self) -> bool {
        self.0.is_empty()
    }
}

pub const SCHEMA: &[&str] = &[
    "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TYPE ks.addr (street text, zip int, tags frozen<set<text>>)",
    "CREATE TABLE ks.a (k int PRIMARY KEY, v text, n bigint, b blob, l list<int>, s set<text>, \
     m map<text, int>, f frozen<list<text>>, u frozen<addr>, t tuple<int, text>, d decimal, \
     vi varint, du duration, ts timestamp, uu uuid, tu timeuuid, ip inet, fl float, db double, \
     bo boolean, dt date, tm time, si smallint, ti tinyint, ac ascii)",
    "CREATE TABLE ks.c (p text, q int, c1 int, c2 text, v int, st text static, \
     m map<int, frozen<list<text>>>, PRIMARY KEY ((p, q), c1, c2)) \
     WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)",
    "CREATE TABLE ks.cnt (k int, c int, n counter, PRIMARY KEY (k, c))",
    "CREATE TABLE ks.fz (k frozen<map<text, int>>, c frozen<tuple<int, text>>, d decimal, \
     v int, PRIMARY KEY (k, c, d))",
    "CREATE TABLE ks.bk (k blob, c blob, v int, PRIMARY KEY (k, c))",
];

/// A table of the schema: its name and columns (name, type), keys first.
struct Table {
    name: &'static str,
    keys: &'static [(&'static str, &'static str)],
    clustering: &'static [(&'static str, &'static str)],
    regular: &'static [(&'static str, &'static str)],
}

const TABLES: &[Table] = &[
    Table {
        name: "a",
        keys: &[("k", "int")],
        clustering: &[],
        regular: &[
            ("v", "text"),
            ("n", "bigint"),
            ("b", "blob"),
            ("l", "list<int>"),
            ("s", "set<text>"),
            ("m", "map<text,int>"),
            ("f", "frozen<list<text>>"),
            ("u", "addr"),
            ("t", "tuple<int,text>"),
            ("d", "decimal"),
            ("vi", "varint"),
            ("du", "duration"),
            ("ts", "timestamp"),
            ("uu", "uuid"),
            ("tu", "timeuuid"),
            ("ip", "inet"),
            ("fl", "float"),
            ("db", "double"),
            ("bo", "boolean"),
            ("dt", "date"),
            ("tm", "time"),
            ("si", "smallint"),
            ("ti", "tinyint"),
            ("ac", "ascii"),
        ],
    },
    Table {
        name: "c",
        keys: &[("p", "text"), ("q", "int")],
        clustering: &[("c1", "int"), ("c2", "text")],
        regular: &[("v", "int"), ("st", "text"), ("m", "map<int,list<text>>")],
    },
    Table {
        name: "cnt",
        keys: &[("k", "int")],
        clustering: &[("c", "int")],
        regular: &[("n", "counter")],
    },
    Table {
        name: "fz",
        keys: &[("k", "map<text,int>")],
        clustering: &[("c", "tuple<int,text>"), ("d", "decimal")],
        regular: &[("v", "int")],
    },
    Table {
        name: "bk",
        keys: &[("k", "blob")],
        clustering: &[("c", "blob")],
        regular: &[("v", "int")],
    },
];

const ALL_TYPES: &[&str] = &[
    "int",
    "bigint",
    "text",
    "blob",
    "decimal",
    "varint",
    "duration",
    "timestamp",
    "uuid",
    "timeuuid",
    "inet",
    "float",
    "double",
    "boolean",
    "date",
    "time",
    "smallint",
    "tinyint",
    "ascii",
    "list<int>",
    "set<text>",
    "map<text,int>",
    "tuple<int,text>",
    "addr",
    "counter",
];

/// Draws statements and values from a source of choices.
pub struct Gen<'c, C: Choices> {
    pub c: &'c mut C,
    /// Bound values of the statement being drawn, one per `?`.
    binds: Vec<BoundValue>,
    /// Whether this statement may be deliberately wrong (other types, bad literals, random
    /// bytes, unknown columns); half the statements are drawn clean so that most of the
    /// engine past validation is reached too.
    chaos: bool,
}

fn pick_of<'a, C: Choices, T>(c: &mut C, items: &'a [T]) -> &'a T {
    &items[c.pick(items.len())]
}

impl<'c, C: Choices> Gen<'c, C> {
    pub fn new(c: &'c mut C) -> Self {
        Gen {
            c,
            binds: Vec::new(),
            chaos: true,
        }
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.c.pick(n) == 0
    }

    /// A literal of type `ty`, now and then a marker bound to random bytes, or a literal of
    /// another type.
    fn term(&mut self, ty: &str) -> String {
        if !self.chaos {
            if let (0, Some(value)) = (self.c.pick(4), self.bound_for(ty)) {
                self.binds.push(value);
                return "?".into();
            }
            return self.literal(ty);
        }
        match self.c.pick(12) {
            0 => {
                let value = self.bound();
                self.binds.push(value);
                "?".into()
            }
            1 => {
                let other = pick_of(self.c, ALL_TYPES);
                self.literal(other)
            }
            _ => self.literal(ty),
        }
    }

    fn bound(&mut self) -> BoundValue {
        match self.c.pick(8) {
            0 => BoundValue::Null,
            1 => BoundValue::Unset,
            2 => BoundValue::Bytes(vec![b'x'; 65_535 + self.c.pick(3)].into()),
            3 => BoundValue::Bytes(bytes::Bytes::new()),
            _ => {
                let len = *pick_of(self.c, &[1usize, 2, 4, 8, 16, 3, 5, 9, 17, 40]);
                let bytes: Vec<u8> = (0..len).map(|_| self.c.pick(256) as u8).collect();
                BoundValue::Bytes(bytes.into())
            }
        }
    }

    /// A well-formed bound value of a simple type.
    fn bound_for(&mut self, ty: &str) -> Option<BoundValue> {
        let n = self.c.pick(1000) as i64 - 500;
        let bytes: Vec<u8> = match ty {
            "int" => (n as i32).to_be_bytes().to_vec(),
            "bigint" | "counter" | "timestamp" => n.to_be_bytes().to_vec(),
            "text" | "ascii" | "blob" => n.to_string().into_bytes(),
            "boolean" => vec![(n & 1) as u8],
            _ => return None,
        };
        Some(BoundValue::Bytes(bytes.into()))
    }

    fn literal(&mut self, ty: &str) -> String {
        if self.one_in(15) {
            return "null".into();
        }
        // Mostly valid literals of the type, now and then one it must refuse.
        let (valid, invalid): (&[&str], &[&str]) = match ty {
            "int" | "counter" => (
                &["0", "1", "-1", "2147483647", "-2147483648", "42", "7"],
                &["2147483648", "1.5", "'7'", "99999999999999999999"],
            ),
            "bigint" => (
                &["0", "9223372036854775807", "-9223372036854775808", "123"],
                &["9223372036854775808", "0x01"],
            ),
            "smallint" => (&["0", "32767", "-32768", "5"], &["32768"]),
            "tinyint" => (&["0", "127", "-128", "3"], &["128"]),
            "varint" => (
                &[
                    "0",
                    "-1",
                    "123456789012345678901234567890",
                    "-99999999999999999999999",
                ],
                &["1.0"],
            ),
            "decimal" => (
                &["0", "1.5", "-0.0", "1e10", "1E-300", "123456789.987654321"],
                &["NaN", "-1.0e400", "'x'"],
            ),
            "float" | "double" => (
                &[
                    "0",
                    "1.5",
                    "-0.0",
                    "NaN",
                    "Infinity",
                    "-Infinity",
                    "1e-50",
                    "2",
                ],
                &["3.4e39", "'1'"],
            ),
            "text" | "ascii" => (
                &["''", "'a'", "'it''s'", "'b'", "'zz'"],
                &["'é€'", "'\u{0}'", "LONG_TEXT", "1"],
            ),
            "blob" => (
                &["0x", "0x00", "0xff", "0xdeadbeef"],
                &["0x0", "LONG_BLOB", "'ab'"],
            ),
            "boolean" => (&["true", "false"], &["'true'", "1"]),
            "uuid" | "timeuuid" => (
                &[
                    "50554d6e-29bb-11e5-b345-feff819cdc9f",
                    "now()",
                    "minTimeuuid('2013-02-02 10:00+0000')",
                ],
                &[
                    "00000000-0000-0000-0000-000000000000",
                    "uuid()",
                    "'not-a-uuid'",
                ],
            ),
            "timestamp" => (
                &[
                    "0",
                    "'2015-05-21 11:03:02+00'",
                    "'2011-02-03T04:05:00.000+0000'",
                    "'1900-01-01'",
                    "toTimestamp(now())",
                ],
                &["-62135596800001", "9223372036854775807", "'garbage'"],
            ),
            "date" => (
                &[
                    "'2011-02-03'",
                    "'-5877641-06-23'",
                    "'5881580-07-11'",
                    "2147483648",
                    "0",
                ],
                &["'2011-02-30'", "4294967296"],
            ),
            "time" => (
                &["'08:12:54'", "'08:12:54.123456789'", "0", "86399999999999"],
                &["'24:00:00'", "86400000000000", "-1"],
            ),
            "duration" => (
                &[
                    "1h2m",
                    "-1d",
                    "P1Y2M3DT4H5M6S",
                    "P0003-02-01T00:00:00",
                    "P3W",
                    "1y2mo3w4d5h6m7s8ms9us10ns",
                ],
                &["9223372036854775807ns", "1mo-1d"],
            ),
            "inet" => (
                &["'127.0.0.1'", "'::1'"],
                &["'256.0.0.1'", "'fe80::1%eth0'"],
            ),
            _ => return self.composite(ty),
        };
        let chosen = if self.chaos && self.one_in(6) {
            pick_of(self.c, invalid)
        } else {
            pick_of(self.c, valid)
        };
        match *chosen {
            "LONG_TEXT" => format!("'{}'", "x".repeat(70_000)),
            "LONG_BLOB" => format!("0x{}", "ab".repeat(65_534 + self.c.pick(4))),
            other => other.to_string(),
        }
    }

    fn composite(&mut self, ty: &str) -> String {
        let inner = |t: &str, open: &str| t[open.len()..t.len() - 1].to_string();
        if let Some(rest) = ty.strip_prefix("frozen<") {
            return self.literal(&rest[..rest.len() - 1]);
        }
        if ty.starts_with("list<") {
            let e = inner(ty, "list<");
            let n = self.c.pick(4);
            let items: Vec<String> = (0..n).map(|_| self.term(&e)).collect();
            return format!("[{}]", items.join(", "));
        }
        if ty.starts_with("set<") {
            let e = inner(ty, "set<");
            let n = self.c.pick(4);
            let items: Vec<String> = (0..n).map(|_| self.term(&e)).collect();
            return format!("{{{}}}", items.join(", "));
        }
        if ty.starts_with("map<") {
            let kv = inner(ty, "map<");
            let (k, v) = kv.split_once(',').unwrap_or(("text", "int"));
            let n = self.c.pick(4);
            let items: Vec<String> = (0..n)
                .map(|_| format!("{}: {}", self.term(k), self.term(v)))
                .collect();
            return format!("{{{}}}", items.join(", "));
        }
        if ty.starts_with("tuple<") {
            let n = 1 + self.c.pick(3);
            let a = self.term("int");
            let rest: Vec<String> = (1..n).map(|_| self.term("text")).collect();
            return format!("({a}{}{})", if n > 1 { ", " } else { "" }, rest.join(", "));
        }
        if ty == "addr" {
            let street = self.term("text");
            let zip = self.term("int");
            let field = *pick_of(self.c, &["street", "zip", "tags", "nope"]);
            return format!(
                "{{street: {street}, zip: {zip}, {field}: {}}}",
                self.term("set<text>")
            );
        }
        "0".into()
    }

    fn column<'t>(&mut self, t: &'t Table) -> (&'t str, &'t str) {
        let all: Vec<&(&str, &str)> = t.keys.iter().chain(t.clustering).chain(t.regular).collect();
        if self.chaos && self.one_in(20) {
            return ("nosuch", "int");
        }
        let (n, ty) = *all[self.c.pick(all.len())];
        (n, ty)
    }

    /// A regular column (or, in a chaotic statement, any column).
    fn regular<'t>(&mut self, t: &'t Table) -> (&'t str, &'t str) {
        if self.chaos {
            return self.column(t);
        }
        *pick_of(self.c, t.regular)
    }

    fn relation(&mut self, t: &Table) -> String {
        let (col, ty) = self.column(t);
        match self.c.pick(10) {
            0 => format!("{col} IN ({}, {})", self.term(ty), self.term(ty)),
            1 => format!(
                "{col} {} {}",
                pick_of(self.c, &["<", ">", "<=", ">=", "!="]),
                self.term(ty)
            ),
            2 => format!("token({}) > {}", t.keys[0].0, self.term("bigint")),
            3 => format!("{col} CONTAINS {}", self.term("text")),
            4 => format!("{col} CONTAINS KEY {}", self.term("text")),
            5 if !t.clustering.is_empty() => {
                let (c1, ty1) = t.clustering[0];
                let (c2, ty2) = t.clustering[t.clustering.len() - 1];
                format!(
                    "({c1}, {c2}) {} ({}, {})",
                    pick_of(self.c, &[">", "<=", "="]),
                    self.term(ty1),
                    self.term(ty2)
                )
            }
            6 => format!("{col}[{}] = {}", self.term("text"), self.term("int")),
            _ => format!("{col} = {}", self.term(ty)),
        }
    }

    /// The full key of `t` (or, now and then, part of it), as a WHERE clause.
    fn key_where(&mut self, t: &Table) -> String {
        let mut rels: Vec<String> = Vec::new();
        let keep = if self.one_in(6) {
            self.c.pick(t.keys.len() + t.clustering.len() + 1)
        } else {
            usize::MAX
        };
        for (i, (n, ty)) in t.keys.iter().chain(t.clustering).enumerate() {
            if i < keep {
                rels.push(format!("{n} = {}", self.term(ty)));
            }
        }
        for _ in 0..self.c.pick(3) {
            if self.chaos && self.one_in(3) {
                rels.push(self.relation(t));
            }
        }
        if rels.is_empty() {
            return String::new();
        }
        format!(" WHERE {}", rels.join(" AND "))
    }

    fn selector(&mut self, t: &Table) -> String {
        if !self.chaos {
            let (col, _) = self.regular(t);
            return match self.c.pick(4) {
                0 => format!("writetime({col})"),
                1 => format!("ttl({col})"),
                _ => col.to_string(),
            };
        }
        let (col, _) = self.column(t);
        match self.c.pick(12) {
            0 => "*".into(),
            1 => "count(*)".into(),
            2 => format!("writetime({col})"),
            3 => format!("ttl({col})"),
            4 => format!(
                "token({})",
                t.keys.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
            ),
            5 => format!("{col} AS x"),
            6 => format!("toJson({col})"),
            7 => format!(
                "{}({col})",
                pick_of(
                    self.c,
                    &[
                        "min",
                        "max",
                        "sum",
                        "avg",
                        "blobAsInt",
                        "textAsBlob",
                        "toDate",
                        "toUnixTimestamp",
                        "abs",
                        "collection_count",
                        "map_keys"
                    ]
                )
            ),
            8 => format!("DISTINCT {}", t.keys[0].0),
            9 => format!(
                "CAST({col} AS {})",
                pick_of(
                    self.c,
                    &["text", "int", "bigint", "double", "varint", "decimal", "ascii", "blob"]
                )
            ),
            10 => format!("{col}[{}]", self.term("text")),
            _ => col.to_string(),
        }
    }

    fn using(&mut self) -> String {
        match self.c.pick(5) {
            0 => format!(" USING TTL {}", self.term("int")),
            1 => format!(" USING TIMESTAMP {}", self.term("bigint")),
            2 => format!(
                " USING TTL {} AND TIMESTAMP {}",
                self.term("int"),
                self.term("bigint")
            ),
            _ => String::new(),
        }
    }

    fn assignment(&mut self, t: &Table) -> String {
        let (col, ty) = self.regular(t);
        match self.c.pick(8) {
            0 => format!("{col} = {col} + {}", self.term(ty)),
            1 => format!("{col} = {} + {col}", self.term(ty)),
            2 => format!("{col} = {col} - {}", self.term(ty)),
            3 => format!("{col}[{}] = {}", self.term("int"), self.term("int")),
            4 => format!("{col}.zip = {}", self.term("int")),
            _ => format!("{col} = {}", self.term(ty)),
        }
    }

    fn write(&mut self, t: &Table) -> String {
        match self.c.pick(4) {
            0 | 1 => {
                let mut cols: Vec<(&str, &str)> =
                    t.keys.iter().chain(t.clustering).copied().collect();
                for _ in 0..self.c.pick(4) {
                    let c = self.column(t);
                    cols.push(c);
                }
                if self.one_in(8) && !cols.is_empty() {
                    cols.remove(self.c.pick(cols.len()));
                }
                let names: Vec<&str> = cols.iter().map(|c| c.0).collect();
                let values: Vec<String> = cols.iter().map(|c| self.term(c.1)).collect();
                let lwt = if self.one_in(5) { " IF NOT EXISTS" } else { "" };
                format!(
                    "INSERT INTO {} ({}) VALUES ({}){lwt}{}",
                    t.name,
                    names.join(", "),
                    values.join(", "),
                    self.using()
                )
            }
            2 => {
                let sets: Vec<String> = (0..1 + self.c.pick(2))
                    .map(|_| self.assignment(t))
                    .collect();
                let using = self.using();
                let cond = match self.c.pick(6) {
                    0 => " IF EXISTS".to_string(),
                    1 => format!(" IF {}", self.relation(t)),
                    _ => String::new(),
                };
                format!(
                    "UPDATE {}{using} SET {}{}{cond}",
                    t.name,
                    sets.join(", "),
                    self.key_where(t)
                )
            }
            _ => {
                let what = match self.c.pick(4) {
                    0 => format!("{} ", self.column(t).0),
                    1 => format!("{}[{}] ", self.column(t).0, self.term("text")),
                    _ => String::new(),
                };
                let cond = if self.one_in(6) { " IF EXISTS" } else { "" };
                let ts = if self.one_in(4) {
                    format!(" USING TIMESTAMP {}", self.term("bigint"))
                } else {
                    String::new()
                };
                format!(
                    "DELETE {what}FROM {}{ts}{}{cond}",
                    t.name,
                    self.key_where(t)
                )
            }
        }
    }

    fn select(&mut self, t: &Table) -> String {
        let sels: Vec<String> = (0..1 + self.c.pick(3)).map(|_| self.selector(t)).collect();
        let json = if self.one_in(8) { "JSON " } else { "" };
        let mut s = format!(
            "SELECT {json}{} FROM {}{}",
            sels.join(", "),
            t.name,
            self.key_where(t)
        );
        if self.one_in(5) && !t.clustering.is_empty() {
            s.push_str(&format!(
                " ORDER BY {} {}",
                t.clustering[0].0,
                pick_of(self.c, &["ASC", "DESC"])
            ));
        }
        if self.chaos && self.one_in(6) {
            s.push_str(&format!(" GROUP BY {}", self.column(t).0));
        }
        if self.one_in(5) {
            s.push_str(&format!(" PER PARTITION LIMIT {}", self.term("int")));
        }
        if self.one_in(4) {
            s.push_str(&format!(" LIMIT {}", self.term("int")));
        }
        if self.one_in(3) {
            s.push_str(" ALLOW FILTERING");
        }
        s
    }

    fn ddl(&mut self, t: &Table) -> String {
        let (col, ty) = self.column(t);
        match self.c.pick(9) {
            8 => format!("ALTER TABLE {} DROP {}", t.name, t.keys[0].0),
            0 => format!("ALTER TABLE {} ADD extra{} {ty}", t.name, self.c.pick(3)),
            1 => format!("ALTER TABLE {} DROP extra{}", t.name, self.c.pick(3)),
            2 => format!("TRUNCATE {}", t.name),
            3 => format!("CREATE INDEX ON {} ({col})", t.name),
            4 => format!(
                "ALTER TYPE addr ADD f{} {}",
                self.c.pick(3),
                pick_of(self.c, ALL_TYPES)
            ),
            5 => format!(
                "ALTER TABLE {} WITH default_time_to_live = {}",
                t.name,
                self.term("int")
            ),
            6 => format!(
                "INSERT INTO {} JSON '{{\"{col}\": {}}}'",
                t.name,
                pick_of(
                    self.c,
                    &[
                        "1",
                        "\"x\"",
                        "[1, 2]",
                        "{\"a\": 1}",
                        "null",
                        "1e400",
                        "\"0xzz\""
                    ]
                )
            ),
            _ => format!(
                "SELECT * FROM {} WHERE {col} = fromJson({})",
                t.name,
                pick_of(self.c, &["'1'", "'\"x\"'", "'[1'", "'null'"])
            ),
        }
    }

    /// One statement and its bound values.
    pub fn statement(&mut self) -> (String, Vec<BoundValue>) {
        self.binds.clear();
        self.chaos = self.c.pick(2) != 0;
        let t = pick_of(self.c, TABLES);
        let text = match self.c.pick(20) {
            0 => self.ddl(t),
            1..=8 => self.write(t),
            _ => self.select(t),
        };
        (text, std::mem::take(&mut self.binds))
    }
}

/// What a run did, for the test to check that it covered ground.
#[derive(Debug, Default)]
pub struct Tally {
    pub ok: usize,
    pub errors: usize,
    pub rows: usize,
}

fn now(step: usize) -> Now {
    Now {
        micros: 1_700_000_000_000_000 + step as i64 * 1000,
        secs: 1_700_000_000 + (step / 50) as u32,
    }
}

/// Runs `count` drawn statements (fewer if the choices run dry) on `engine`: as QUERY, as
/// PREPARE + EXECUTE, or in a BATCH, with small pages whose paging states are followed, and
/// now and then a made-up paging state.
pub fn run<C: Choices>(
    engine: &Engine,
    choices: &mut C,
    count: usize,
    on_statement: impl FnMut(&str),
) -> Tally {
    run_on(&[engine], choices, count, on_statement, |_, _| {})
}

/// [`run`] on several engines: each drawn statement (with the same options, values and `now`)
/// runs on every engine in turn, and `on_results` sees the statement and what each answered.
/// The tally counts the first engine's answers.
pub fn run_on<C: Choices>(
    engines: &[&Engine],
    choices: &mut C,
    count: usize,
    mut on_statement: impl FnMut(&str),
    mut on_results: impl FnMut(&str, &[Result<Outcome, DbError>]),
) -> Tally {
    let mut tally = Tally::default();
    let mut last_paging: Option<Vec<u8>> = None;
    for step in 0..count {
        if choices.exhausted() {
            break;
        }
        let mut g = Gen::new(choices);
        let (text, binds) = g.statement();
        let chaos = g.chaos;
        let page_size = *pick_of(g.c, &[None, Some(1), Some(2), Some(5), Some(0), Some(-1)]);
        let paging_state = match g.c.pick(6) {
            0 => last_paging.clone(),
            1 if chaos => Some((0..g.c.pick(24)).map(|_| g.c.pick(256) as u8).collect()),
            _ => None,
        };
        let how = g.c.pick(4);
        on_statement(&text);
        let opts = QueryOptions {
            keyspace: Some("ks".into()),
            page_size,
            paging_state,
            timestamp: None,
            role: None,
            ..QueryOptions::default()
        };
        let results: Vec<_> = engines
            .iter()
            .map(|engine| run_one(engine, &text, binds.clone(), how, &opts, now(step)))
            .collect();
        on_results(&text, &results);
        let Some(result) = results.into_iter().next() else {
            break;
        };
        match result {
            Ok(Outcome::Rows(rs)) => {
                tally.ok += 1;
                tally.rows += rs.rows;
                last_paging = rs.paging_state;
            }
            Ok(_) => tally.ok += 1,
            Err(e) => {
                if !chaos && std::env::var_os("GEN_STATEMENTS_VERBOSE").is_some() {
                    let shown: String = text.chars().take(200).collect();
                    eprintln!("{e:?} <- {shown}");
                }
                tally.errors += 1
            }
        }
    }
    tally
}

/// One statement run as [`run`] draws it: `how` 0 prepared, 1 (a write) in a BATCH, else a
/// QUERY.
fn run_one(
    engine: &Engine,
    text: &str,
    binds: Vec<BoundValue>,
    how: usize,
    opts: &QueryOptions,
    now: Now,
) -> Result<Outcome, DbError> {
    match how {
        0 => engine
            .prepare(text, Some("ks"), now)
            .and_then(|p| engine.execute(&p.id, Values::Positional(binds), opts, now)),
        1 if text.starts_with("INSERT")
            || text.starts_with("UPDATE")
            || text.starts_with("DELETE") =>
        {
            let items = vec![
                BatchItem::Query(text.to_string(), binds.into_iter().map(Some).collect()),
                BatchItem::Query("INSERT INTO ks.a (k, v) VALUES (1, 'batch')".into(), vec![]),
            ];
            let kind = if text.contains("cnt") {
                BatchKind::Counter
            } else {
                BatchKind::Logged
            };
            engine.batch(kind, items, opts, now)
        }
        _ => engine.query(text, Values::Positional(binds), opts, now),
    }
}

/// The schema of [`SCHEMA`] created on `engine`.
pub fn create_schema(engine: &Engine) {
    for ddl in SCHEMA {
        let opts = QueryOptions::default();
        engine
            .query(ddl, Values::Positional(vec![]), &opts, now(0))
            .unwrap_or_else(|e| panic!("schema statement {ddl} failed: {e:?}"));
    }
}
