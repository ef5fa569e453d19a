//! Blind writes to indexed tables change no answer: generated writes (INSERT, UPDATE, DELETE
//! of cells, rows, ranges and partitions, collection element changes, TTLs, explicit
//! timestamps older than what is stored, LWT, BATCH) interleaved with indexed reads (every
//! index kind: regular, static, clustering and partition key columns, collection values, map
//! keys and entries, FULL, SAI equality and ranges; with LIMIT, count and small pages
//! followed to the end) give the same answers on an LSM store that merges partial rows (the
//! rows and their index entries written without reading the row; memtable flushed every 15
//! statements, a major compaction now and then, the background sweep of stale entries now
//! and then) as on the in-memory store without a merge operator, where every write reads its
//! row. A write to an indexed table is blind only when it touches no index (`ks.q`: writes
//! of its column `x` alone); one that changes an indexed value reads its row and deletes the
//! entries of what it replaces. Both stores' indexes must hold exactly the entries their rows
//! call for: none missing (`check_indexes`) and none stale (`stale_index_entries`), so a
//! sweep has nothing to remove.

mod support;

use std::sync::Arc;

use engine::{BatchItem, BatchKind, Engine, Now, Outcome, QueryOptions, Values};
use proto::DbError;
use storage::Storage;
use support::statements::{node, Choices, Seeded};
use support::stores::merging_lsm;

const SCHEMA: &[&str] = &[
    "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TYPE ks.pt (x int, y int)",
    "CREATE TABLE ks.r (k int, c int, v int, w text, s int static, l list<int>, st set<text>, \
     mk map<text, int>, me map<text, int>, mv map<text, int>, f frozen<list<int>>, u pt, \
     PRIMARY KEY (k, c))",
    "CREATE INDEX ON ks.r (v)",
    "CREATE INDEX ON ks.r (w)",
    "CREATE INDEX ON ks.r (s)",
    "CREATE INDEX ON ks.r (c)",
    "CREATE INDEX ON ks.r (values(l))",
    "CREATE INDEX ON ks.r (st)",
    "CREATE INDEX ON ks.r (keys(mk))",
    "CREATE INDEX ON ks.r (entries(me))",
    "CREATE INDEX ON ks.r (mv)",
    "CREATE INDEX ON ks.r (full(f))",
    "CREATE TABLE ks.p (a int, b int, c int, n int, t text, PRIMARY KEY ((a, b), c))",
    "CREATE INDEX ON ks.p (b)",
    "CREATE CUSTOM INDEX ON ks.p (n) USING 'StorageAttachedIndex'",
    "CREATE CUSTOM INDEX ON ks.p (t) USING 'sai' WITH OPTIONS = {'case_sensitive': 'false'}",
    // Indexes on regular columns only: a write of `x` alone touches none (blind).
    "CREATE TABLE ks.q (k int, c int, v int, x int, l list<int>, PRIMARY KEY (k, c))",
    "CREATE CUSTOM INDEX ON ks.q (v) USING 'StorageAttachedIndex'",
    "CREATE INDEX ON ks.q (l)",
];

/// Seconds since the epoch at the start (the wall clock: compaction's TTL purge uses it, so
/// the statements' clock must not be behind it).
fn base_secs() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as u32
}

struct Gen<'c> {
    c: &'c mut Seeded,
    /// The default write timestamp of this step (explicit ones are drawn around it).
    micros: i64,
}

impl Gen<'_> {
    fn pick(&mut self, n: usize) -> usize {
        self.c.pick(n)
    }
    fn one_in(&mut self, n: usize) -> bool {
        self.c.pick(n) == 0
    }
    fn int(&mut self) -> String {
        if self.one_in(12) {
            return "null".into();
        }
        self.pick(4).to_string()
    }
    fn text(&mut self) -> String {
        ["'a'", "'b'", "'A'", "'c'"][self.pick(4)].to_string()
    }
    fn list(&mut self) -> String {
        let n = self.pick(3);
        let items: Vec<String> = (0..n).map(|_| self.pick(4).to_string()).collect();
        format!("[{}]", items.join(", "))
    }
    fn set(&mut self) -> String {
        let n = self.pick(3);
        let items: Vec<String> = (0..n).map(|_| self.text()).collect();
        format!("{{{}}}", items.join(", "))
    }
    fn map(&mut self) -> String {
        let n = self.pick(3);
        let items: Vec<String> = (0..n)
            .map(|_| format!("{}: {}", self.text(), self.pick(3)))
            .collect();
        format!("{{{}}}", items.join(", "))
    }

    /// `USING TTL` (short: the clock moves a second every 10 statements) and/or `TIMESTAMP`
    /// (now and then older than the default, so that the write loses to what is stored).
    fn using(&mut self) -> String {
        let ts = self.micros - 1000 * self.pick(40) as i64;
        match self.pick(6) {
            0 => format!(" USING TTL {}", 1 + self.pick(4)),
            1 => format!(" USING TIMESTAMP {ts}"),
            2 => format!(" USING TTL {} AND TIMESTAMP {ts}", 1 + self.pick(4)),
            _ => String::new(),
        }
    }

    /// A DELETE's `USING TIMESTAMP`, now and then (at or before the default: it may lose).
    fn delete_using(&mut self) -> String {
        if self.one_in(3) {
            format!(
                " USING TIMESTAMP {}",
                self.micros - 1000 * self.pick(40) as i64
            )
        } else {
            String::new()
        }
    }

    /// An assignment to a column of `r` (a few read the stored value).
    fn r_assignment(&mut self) -> String {
        match self.pick(17) {
            0 => format!("v = {}", self.int()),
            1 => format!("w = {}", self.text()),
            2 => format!("s = {}", self.int()),
            3 => format!("l = {}", self.list()),
            4 => format!("l = l + [{}]", self.pick(4)),
            5 => format!("l[0] = {}", self.pick(4)),
            6 => format!("st = {}", self.set()),
            7 => format!("st = st + {{{}}}", self.text()),
            8 => format!("st = st - {{{}}}", self.text()),
            9 => format!("mk = {}", self.map()),
            10 => format!("mk[{}] = {}", self.text(), self.pick(3)),
            11 => format!("me[{}] = {}", self.text(), self.pick(3)),
            12 => format!("me = me - {{{}}}", self.text()),
            13 => format!("mv[{}] = {}", self.text(), self.pick(3)),
            14 => format!("f = {}", self.list()),
            15 if self.one_in(2) => format!("u.x = {}", self.pick(2)),
            15 => format!("u = {{x: {}, y: {}}}", self.pick(2), self.pick(2)),
            _ => format!("v = {}, w = {}", self.int(), self.text()),
        }
    }

    fn r_write(&mut self) -> String {
        let k = self.pick(3);
        let c = self.pick(4);
        match self.pick(10) {
            0..=2 => {
                let cols = ["v", "w", "s", "l", "st", "mk", "me", "mv", "f"];
                let mut names = vec!["k", "c"];
                let mut vals = vec![k.to_string(), c.to_string()];
                for col in cols {
                    if self.one_in(3) {
                        names.push(col);
                        vals.push(match col {
                            "v" | "s" => self.int(),
                            "w" => self.text(),
                            "l" | "f" => self.list(),
                            "st" => self.set(),
                            _ => self.map(),
                        });
                    }
                }
                let lwt = if self.one_in(8) { " IF NOT EXISTS" } else { "" };
                format!(
                    "INSERT INTO r ({}) VALUES ({}){lwt}{}",
                    names.join(", "),
                    vals.join(", "),
                    self.using()
                )
            }
            3..=6 => {
                let sets: Vec<String> =
                    (0..1 + self.pick(2)).map(|_| self.r_assignment()).collect();
                let using = self.using();
                let cond = match self.pick(12) {
                    0 => " IF EXISTS".to_string(),
                    1 => format!(" IF v = {}", self.int()),
                    _ => String::new(),
                };
                // A write of the static column alone names the partition only.
                let row = if sets.iter().all(|s| s.starts_with("s =")) {
                    String::new()
                } else {
                    format!(" AND c = {c}")
                };
                format!(
                    "UPDATE r{using} SET {} WHERE k = {k}{row}{cond}",
                    sets.join(", ")
                )
            }
            _ => {
                let ts = self.delete_using();
                match self.pick(6) {
                    0 => format!("DELETE FROM r{ts} WHERE k = {k}"),
                    1 => format!("DELETE FROM r{ts} WHERE k = {k} AND c > {}", self.pick(4)),
                    2 => {
                        let col = ["v", "w", "s", "l", "st", "mk", "me", "mv", "f"][self.pick(9)];
                        let row = if col == "s" {
                            String::new()
                        } else {
                            format!(" AND c = {c}")
                        };
                        format!("DELETE {col} FROM r{ts} WHERE k = {k}{row}")
                    }
                    3 => format!(
                        "DELETE mk[{}] FROM r{ts} WHERE k = {k} AND c = {c}",
                        self.text()
                    ),
                    _ => format!("DELETE FROM r{ts} WHERE k = {k} AND c = {c}"),
                }
            }
        }
    }

    fn p_write(&mut self) -> String {
        let (a, b, c) = (self.pick(2), self.pick(3), self.pick(3));
        match self.pick(6) {
            0 | 1 => format!(
                "INSERT INTO p (a, b, c, n, t) VALUES ({a}, {b}, {c}, {}, {}){}",
                self.int(),
                self.text(),
                self.using()
            ),
            2 | 3 => {
                let set = match self.pick(3) {
                    0 => format!("n = {}", self.int()),
                    1 => format!("t = {}", self.text()),
                    _ => format!("n = {}, t = {}", self.int(), self.text()),
                };
                format!(
                    "UPDATE p{} SET {set} WHERE a = {a} AND b = {b} AND c = {c}",
                    self.using()
                )
            }
            4 => format!("DELETE FROM p WHERE a = {a} AND b = {b} AND c = {c}"),
            _ => format!("DELETE n FROM p WHERE a = {a} AND b = {b} AND c = {c}"),
        }
    }

    fn q_write(&mut self) -> String {
        let (k, c) = (self.pick(2), self.pick(3));
        let using = self.using();
        let ts = self.delete_using();
        let at = format!("WHERE k = {k} AND c = {c}");
        match self.pick(11) {
            0 => format!(
                "INSERT INTO q (k, c, v, x) VALUES ({k}, {c}, {}, {}){using}",
                self.int(),
                self.int()
            ),
            1 | 2 => format!("UPDATE q{using} SET x = {} {at}", self.int()),
            3 | 4 => format!("UPDATE q{using} SET v = {} {at}", self.int()),
            5 => format!(
                "UPDATE q{using} SET v = {}, x = {} {at}",
                self.int(),
                self.int()
            ),
            6 => format!("UPDATE q{using} SET l = {} {at}", self.list()),
            7 => format!("UPDATE q{using} SET l = l + [{}] {at}", self.pick(4)),
            8 => format!("DELETE x FROM q{ts} {at}"),
            9 => format!("DELETE v FROM q{ts} {at}"),
            _ => format!("DELETE FROM q{ts} {at}"),
        }
    }

    fn select(&mut self) -> String {
        if self.one_in(6) {
            let rel = match self.pick(3) {
                0 => format!("v = {}", self.pick(4)),
                1 => format!("v >= {} AND v < {}", self.pick(3), 1 + self.pick(3)),
                _ => format!("l CONTAINS {}", self.pick(4)),
            };
            let what = ["*", "count(*)", "k, c, x, writetime(v), ttl(v)"][self.pick(3)];
            return format!("SELECT {what} FROM q WHERE {rel}");
        }
        let (table, rel) = match self.pick(15) {
            0 => ("r", format!("v = {}", self.pick(4))),
            1 => ("r", format!("w = {}", self.text())),
            2 => ("r", format!("s = {}", self.pick(4))),
            3 => ("r", format!("c = {}", self.pick(4))),
            4 => ("r", format!("l CONTAINS {}", self.pick(4))),
            5 => ("r", format!("st CONTAINS {}", self.text())),
            6 => ("r", format!("mk CONTAINS KEY {}", self.text())),
            7 => ("r", format!("me[{}] = {}", self.text(), self.pick(3))),
            8 => ("r", format!("mv CONTAINS {}", self.pick(3))),
            9 => ("r", format!("f = {}", self.list())),
            10 => ("p", format!("b = {}", self.pick(3))),
            11 => ("p", format!("n = {}", self.pick(4))),
            12 => (
                "p",
                format!("n > {} AND n <= {}", self.pick(3), 1 + self.pick(3)),
            ),
            13 => ("p", format!("t = {}", self.text())),
            _ => ("r", format!("v >= 0 AND w = {}", self.text())),
        };
        let rel = match (self.one_in(4), table) {
            (false, _) => rel,
            (true, "r") => format!("k = {} AND {rel}", self.pick(3)),
            (true, _) => format!("a = {} AND b = {} AND {rel}", self.pick(2), self.pick(3)),
        };
        let what = match (self.pick(4), table) {
            (0, _) => "count(*)",
            (1, "r") => "k, c, s, writetime(v), ttl(w)",
            (1, _) => "a, b, c, n, writetime(n), ttl(t)",
            _ => "*",
        };
        let limit = if self.one_in(3) {
            format!(" LIMIT {}", 1 + self.pick(3))
        } else {
            String::new()
        };
        let filtering = if rel.contains(">=") {
            " ALLOW FILTERING"
        } else {
            ""
        };
        format!("SELECT {what} FROM {table} WHERE {rel}{limit}{filtering}")
    }

    /// One statement (or batch) to run: text items, whether a batch, whether a read.
    fn statement(&mut self) -> (Vec<String>, bool, bool) {
        match self.pick(12) {
            0..=4 => (vec![self.select()], false, true),
            5 => {
                let n = 2 + self.pick(2);
                let items = (0..n)
                    .map(|_| match self.pick(4) {
                        0 => self.p_write(),
                        1 => self.q_write(),
                        _ => self.r_write(),
                    })
                    .filter(|s| !s.contains(" IF "))
                    .collect();
                (items, true, false)
            }
            6 | 7 => (vec![self.p_write()], false, false),
            8 | 9 => (vec![self.q_write()], false, false),
            _ => (vec![self.r_write()], false, false),
        }
    }
}

fn opts(page_size: Option<i32>, paging_state: Option<Vec<u8>>) -> QueryOptions {
    QueryOptions {
        keyspace: Some("ks".into()),
        page_size,
        paging_state,
        ..QueryOptions::default()
    }
}

/// Runs one generated statement on `engine`: a read follows its pages to the end.
fn run(
    engine: &Engine,
    items: &[String],
    batch: bool,
    page_size: Option<i32>,
    now: Now,
) -> Vec<Result<Outcome, DbError>> {
    if batch {
        let items = items
            .iter()
            .map(|t| BatchItem::Query(t.clone(), vec![]))
            .collect();
        return vec![engine.batch(BatchKind::Logged, items, &opts(None, None), now)];
    }
    let mut out = Vec::new();
    let mut paging = None;
    loop {
        let r = engine.query(
            &items[0],
            Values::Positional(vec![]),
            &opts(page_size, paging.take()),
            now,
        );
        paging = match &r {
            Ok(Outcome::Rows(rs)) => rs.paging_state.clone(),
            _ => None,
        };
        out.push(r);
        if paging.is_none() || out.len() > 100 {
            return out;
        }
    }
}

#[test]
fn blind_writes_to_indexed_tables_answer_as_reading_writes_do() {
    let secs = base_secs();
    for seed in [0x1DB1_0001u64, 0x1DB1_0002] {
        let (_dir, lsm) = merging_lsm(std::env::temp_dir().join(format!(
            "peregrine-blind-index-writes-{}-{seed:x}",
            std::process::id()
        )));
        let blind = Engine::open(lsm.clone(), node()).unwrap();
        let reading = Engine::open(Arc::new(storage::MemStorage::new()), node()).unwrap();
        let now = |step: usize| Now {
            micros: (secs as i64) * 1_000_000 + step as i64 * 1000,
            secs: secs + (step / 10) as u32,
        };
        for e in [&blind, &reading] {
            for ddl in SCHEMA {
                e.query(ddl, Values::Positional(vec![]), &opts(None, None), now(0))
                    .unwrap_or_else(|err| panic!("{ddl}: {err:?}"));
            }
        }
        let mut choices = Seeded(seed);
        let (mut reads, mut rows) = (0usize, 0usize);
        for step in 1..=1200 {
            let mut g = Gen {
                c: &mut choices,
                micros: now(step).micros,
            };
            let (items, batch, read) = g.statement();
            let page_size = [None, Some(1), Some(2), Some(3)][g.pick(4)];
            let a = run(&blind, &items, batch, page_size, now(step));
            let b = run(&reading, &items, batch, page_size, now(step));
            let (sa, sb) = (format!("{a:?}"), format!("{b:?}"));
            assert_eq!(
                sa, sb,
                "seed {seed:#x}, step {step}: {items:?} (page size {page_size:?})"
            );
            if read {
                reads += 1;
                rows += a
                    .iter()
                    .map(|r| match r {
                        Ok(Outcome::Rows(rs)) => rs.rows,
                        _ => 0,
                    })
                    .sum::<usize>();
            }
            if step % 150 == 0 {
                lsm.compact().unwrap();
            } else if step % 15 == 0 {
                lsm.flush().unwrap();
            }
            if step % 400 == 0 {
                // The writes left nothing stale (checked below every 100 steps).
                assert_eq!(blind.sweep_index_entries().unwrap().removed, 0);
            }
            if step % 100 == 0 {
                for e in [&blind, &reading] {
                    assert_eq!(
                        e.check_indexes().unwrap(),
                        Vec::<String>::new(),
                        "step {step}"
                    );
                    assert_eq!(
                        e.stale_index_entries().unwrap(),
                        Vec::<String>::new(),
                        "step {step}"
                    );
                }
            }
        }
        assert!(reads > 300 && rows > 300, "{reads} reads, {rows} rows");
    }
}
