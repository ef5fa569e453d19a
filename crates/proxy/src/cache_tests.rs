//! The DRAM and SSD tiers of `cache`, driven directly (time comes in as an argument).

use super::*;
use bytes::Bytes;
use proto::response::RowsMetadata;

fn rows(n: usize) -> Rows {
    Rows {
        metadata: RowsMetadata::default(),
        rows_count: 1,
        data: Bytes::from(vec![7u8; n]),
    }
}

fn key(pk: &str, req: &str) -> CacheKey {
    CacheKey::new(
        ProtocolVersion::V4,
        "ks",
        "t",
        pk.as_bytes(),
        req.as_bytes(),
    )
}

const TTL: Duration = Duration::from_secs(60);

#[test]
fn hit_after_insert_then_miss_after_partition_invalidation() {
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    let k = key("a", "q");
    assert!(c.get(&k, now).is_none());
    c.insert(k.clone(), c.ticket(&k), rows(10), now, TTL);
    assert_eq!(c.get(&k, now).unwrap().rows().unwrap().data.len(), 10);
    c.invalidate_partition("ks", "t", b"b");
    assert!(c.get(&k, now).is_some() || stripe_of("ks", "t", b"a") == stripe_of("ks", "t", b"b"));
    c.invalidate_partition("ks", "t", b"a");
    assert!(c.get(&k, now).is_none());
    assert!(c.stats.dram_hits.load(Ordering::Relaxed) >= 1);
}

#[test]
fn a_cached_body_is_the_encoded_result_and_shares_the_rows_data() {
    use proto::frame::{Envelope, Opcode};
    let mut b = proto::response::RowsBuilder::new();
    b.push_cell(Some(b"abc"));
    b.end_row();
    let rows = b.finish(RowsMetadata {
        columns: vec![proto::response::ColumnSpec {
            keyspace: "ks".into(),
            table: "t".into(),
            name: "v".into(),
            ty: proto::types::ColumnType::Varchar,
        }]
        .into(),
        ..RowsMetadata::default()
    });
    for version in [ProtocolVersion::V4, ProtocolVersion::V5] {
        let c = Cached::new(rows.clone(), version);
        assert_eq!(*c.rows().unwrap(), rows);
        assert!(
            c.body
                .as_ptr_range()
                .contains(&c.rows().unwrap().data.as_ptr()),
            "data not shared"
        );
        let mut expected = BytesMut::new();
        Response::Result(ResultBody::Rows(rows.clone())).encode_body(version, &mut expected);
        assert_eq!(c.body, expected.freeze());
        let env = Envelope {
            version,
            flags: 0,
            stream: 1,
            opcode: Opcode::Result,
            body: c.body.clone(),
        };
        let decoded = Response::from_envelope(&env).unwrap().response;
        assert_eq!(decoded, Response::Result(ResultBody::Rows(rows.clone())));
    }
}

#[test]
fn a_body_from_upstream_is_kept_as_sent_and_its_rows_decode_when_asked() {
    let mut b = proto::response::RowsBuilder::new();
    b.push_cell(Some(b"abc"));
    b.push_cell(None);
    b.end_row();
    let spec = |name: &str| proto::response::ColumnSpec {
        keyspace: "ks".into(),
        table: "t".into(),
        name: name.into(),
        ty: proto::types::ColumnType::Varchar,
    };
    let with_specs = b.finish(RowsMetadata {
        columns: vec![spec("v"), spec("w")].into(),
        ..RowsMetadata::default()
    });
    let without = Rows {
        metadata: RowsMetadata {
            no_metadata: true,
            ..with_specs.metadata.clone()
        },
        ..with_specs.clone()
    };
    for rows in [with_specs, without] {
        for version in [ProtocolVersion::V4, ProtocolVersion::V5] {
            let mut body = BytesMut::new();
            Response::Result(ResultBody::Rows(rows.clone())).encode_body(version, &mut body);
            let c = Cached::from_body(&body, version).unwrap();
            assert_eq!(c.body, body);
            let decoded = Rows::decode_result(version, body.clone().freeze()).unwrap();
            assert_eq!(*c.rows().unwrap(), decoded);
            assert_eq!(
                entry_size(0, &c),
                entry_size(0, &Cached::new(decoded, version)),
                "the same size as a decoded entry's"
            );
        }
    }
    let mut void = BytesMut::new();
    Response::Result(ResultBody::Void).encode_body(ProtocolVersion::V4, &mut void);
    assert!(Cached::from_body(&void, ProtocolVersion::V4).is_err());
    assert!(Cached::from_body(&[0, 0, 0, 2], ProtocolVersion::V4).is_err());
}

/// A patch that appends `x` to the data of a one-row result.
fn append_x(rows: &Rows, _names: &[String]) -> Option<Rows> {
    let mut data = rows.data.to_vec();
    data.push(b'x');
    Some(Rows {
        data: Bytes::from(data),
        ..rows.clone()
    })
}

fn shaped(c: &Cache, k: &CacheKey, now: Instant) {
    let shape: Arc<[String]> = vec!["v".to_string()].into();
    c.insert_shaped(k.clone(), c.ticket(k), rows(10), now, TTL, Some(shape));
}

#[test]
fn an_acknowledged_write_patches_the_entries_of_its_partition() {
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    let (a1, a2, b) = (key("a", "q1"), key("a", "q2"), key("b", "q"));
    shaped(&c, &a1, now);
    c.insert(a2.clone(), c.ticket(&a2), rows(10), now, TTL); // no shape
    shaped(&c, &b, now);
    let w = c.write_started("ks", "t", b"a", None);
    assert!(
        c.get(&a1, now).is_none(),
        "not served while the write is in flight"
    );
    c.write_acknowledged(w, &append_x);
    assert_eq!(
        c.get(&a1, now).unwrap().rows().unwrap().data.len(),
        11,
        "patched"
    );
    assert!(
        c.get(&a2, now).is_none(),
        "an entry without a shape is dropped"
    );
    let b_alive = c.get(&b, now).is_some();
    assert!(b_alive || stripe_of("ks", "t", b"a") == stripe_of("ks", "t", b"b"));
    assert_eq!(c.stats.patched.load(Ordering::Relaxed), 1);
    // The patched entry is invalidated like any other.
    c.invalidate_partition("ks", "t", b"a");
    assert!(c.get(&a1, now).is_none());
}

#[test]
fn a_client_timestamped_write_patches_only_above_what_the_entry_may_hold() {
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    let k = key("a", "q");
    let patched = |c: &Cache| c.stats.patched.load(Ordering::Relaxed);
    // Older than the entry (a lagging clock, or a write Cassandra will ignore): dropped.
    shaped(&c, &k, now);
    let w = c.write_started("ks", "t", b"a", Some(wall_clock_micros() - 1_000_000));
    c.write_acknowledged(w, &append_x);
    assert!(c.get(&k, now).is_none());
    assert_eq!(patched(&c), 0);
    // Newer: patched, and the floor rises to the write's timestamp.
    shaped(&c, &k, now);
    let future = wall_clock_micros() + 10_000_000;
    let w = c.write_started("ks", "t", b"a", Some(future));
    c.write_acknowledged(w, &append_x);
    assert_eq!(c.get(&k, now).unwrap().rows().unwrap().data.len(), 11);
    assert_eq!(patched(&c), 1);
    // A server-timestamped write now loses to that future cell upstream; neither it nor a
    // client timestamp at or below the floor may patch.
    for ts in [None, Some(future), Some(future - 1)] {
        let w = c.write_started("ks", "t", b"a", ts);
        c.write_acknowledged(w, &append_x);
        assert!(c.get(&k, now).is_none(), "{ts:?}");
        shaped(&c, &k, now);
        let w = c.write_started("ks", "t", b"a", Some(future));
        c.write_acknowledged(w, &append_x);
    }
    let w = c.write_started("ks", "t", b"a", Some(future + 1));
    c.write_acknowledged(w, &append_x);
    assert_eq!(
        c.get(&k, now).unwrap().rows().unwrap().data.len(),
        12,
        "patched twice"
    );
    assert_eq!(patched(&c), 2 + 3);
}

#[test]
fn overlapping_failed_or_unpatchable_writes_only_invalidate() {
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    let k = key("a", "q");
    // Two writes in flight at once: their order upstream is unknown.
    shaped(&c, &k, now);
    let w1 = c.write_started("ks", "t", b"a", None);
    let w2 = c.write_started("ks", "t", b"a", None);
    c.write_acknowledged(w1, &append_x);
    c.write_acknowledged(w2, &append_x);
    assert!(c.get(&k, now).is_none());
    // A failed write.
    shaped(&c, &k, now);
    let w = c.write_started("ks", "t", b"a", None);
    c.write_failed(w);
    assert!(c.get(&k, now).is_none());
    // A patch that cannot compute the result.
    shaped(&c, &k, now);
    let w = c.write_started("ks", "t", b"a", None);
    c.write_acknowledged(w, &|_, _| None);
    assert!(c.get(&k, now).is_none());
    // A read that went upstream while the write was in flight is never served.
    let w = c.write_started("ks", "t", b"a", None);
    let ticket = c.ticket(&k);
    c.insert_shaped(
        k.clone(),
        ticket,
        rows(10),
        now,
        TTL,
        Some(vec!["v".into()].into()),
    );
    c.write_acknowledged(w, &append_x);
    assert!(c.get(&k, now).is_none());
    // A table invalidation during the write: nothing is revived.
    shaped(&c, &k, now);
    let w = c.write_started("ks", "t", b"a", None);
    c.invalidate_table("ks", "t");
    c.write_acknowledged(w, &append_x);
    assert!(c.get(&k, now).is_none());
    assert_eq!(c.stats.patched.load(Ordering::Relaxed), 0);
}

#[test]
fn a_read_that_raced_with_a_write_is_not_cached() {
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    let k = key("a", "q");
    let ticket = c.ticket(&k); // read goes upstream
    c.invalidate_partition("ks", "t", b"a"); // write acknowledged meanwhile
    c.insert(k.clone(), ticket, rows(10), now, TTL); // old value arrives
    assert!(c.get(&k, now).is_none());
    assert_eq!(c.stats.stale_fills.load(Ordering::Relaxed), 1);
}

#[test]
fn table_keyspace_and_global_invalidation() {
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    for inv in 0..3 {
        let k = key("a", "q");
        c.insert(k.clone(), c.ticket(&k), rows(10), now, TTL);
        assert!(c.get(&k, now).is_some());
        match inv {
            0 => c.invalidate_table("ks", "t"),
            1 => c.invalidate_keyspace("ks"),
            _ => c.invalidate_all(),
        }
        assert!(c.get(&k, now).is_none(), "invalidation {inv}");
    }
}

#[test]
fn entries_expire_after_max_staleness() {
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    let k = key("a", "q");
    c.insert(
        k.clone(),
        c.ticket(&k),
        rows(10),
        now,
        Duration::from_millis(100),
    );
    assert!(c.get(&k, now + Duration::from_millis(99)).is_some());
    assert!(c.get(&k, now + Duration::from_millis(100)).is_none());
}

#[test]
fn one_hit_late_in_an_entrys_life_asks_for_one_refresh() {
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    let ms = Duration::from_millis;
    let k = key("a", "q");
    c.insert(k.clone(), c.ticket(&k), rows(10), now, ms(1000));
    let refresh = |at| c.get_with_refresh(&k, now + ms(at)).map(|(_, r)| r);
    let due = (0..1000)
        .find(|&at| refresh(at) == Some(true))
        .expect("a refresh is asked for");
    assert!((600..=900).contains(&due), "due at {due} ms of 1000");
    assert_eq!(refresh(due + 1), Some(false), "asked once");
    c.refresh_abandoned(&k);
    assert_eq!(
        refresh(due + 2),
        Some(true),
        "asked again after an abandoned refresh"
    );
    // The refresh read's result replaces the entry, with a bound of its own.
    let ticket = c.ticket(&k);
    c.insert(k.clone(), ticket, rows(11), now + ms(900), ms(1000));
    assert_eq!(refresh(1400), Some(false), "not due before 60% of its life");
    assert_eq!(refresh(1800), Some(true), "due by 90% of its life");
    assert_eq!(
        c.get(&k, now + ms(1899))
            .unwrap()
            .rows()
            .unwrap()
            .data
            .len(),
        11
    );
    assert_eq!(
        refresh(1900),
        None,
        "expired 1 s after the refresh read started"
    );
}

#[test]
fn refresh_points_spread_over_the_window() {
    let now = Instant::now();
    let expires = now + Duration::from_secs(100);
    let points: Vec<f64> = (0..1000u64)
        .map(|i| {
            let h = xxhash_rust::xxh3::xxh3_64(&i.to_be_bytes());
            (refresh_point(h, now, expires) - now).as_secs_f64()
        })
        .collect();
    assert!(points.iter().all(|p| (60.0..90.0).contains(p)));
    let early = points.iter().filter(|&&p| p < 75.0).count();
    assert!(
        (400..600).contains(&early),
        "{early} of 1000 in the first half of the window"
    );
}

#[test]
fn budget_holds_and_frequent_keys_survive_a_scan() {
    let budget = SHARDS * 8 * 1024;
    let c = Cache::new(budget, 4096);
    let now = Instant::now();
    let hot: Vec<_> = (0..16).map(|i| key(&format!("hot{i}"), "q")).collect();
    for _ in 0..5 {
        for k in &hot {
            if c.get(k, now).is_none() {
                c.insert(k.clone(), c.ticket(k), rows(600), now, TTL);
            }
        }
    }
    for i in 0..2000 {
        let k = key(&format!("scan{i}"), "q");
        if c.get(&k, now).is_none() {
            c.insert(k.clone(), c.ticket(&k), rows(600), now, TTL);
        }
    }
    let (_, bytes) = c.usage();
    assert!(bytes as usize <= budget, "{bytes} > {budget}");
    let survivors = hot.iter().filter(|k| c.get(k, now).is_some()).count();
    assert!(
        survivors >= 12,
        "only {survivors} of 16 hot keys survived the scan"
    );
    assert!(c.stats.rejected.load(Ordering::Relaxed) > 0);
}

#[test]
fn oversized_results_are_not_cached() {
    let c = Cache::new(1 << 20, 1000);
    let now = Instant::now();
    let k = key("a", "q");
    c.insert(k.clone(), c.ticket(&k), rows(5000), now, TTL);
    assert!(c.get(&k, now).is_none());
    assert_eq!(c.stats.too_large.load(Ordering::Relaxed), 1);
}

// --- the SSD tier under DRAM ---

use super::super::ssd::tests::TempDir;

/// DRAM of 16 shards x `shard_bytes` over an SSD tier of `ssd_bytes`.
fn tiered(dir: &TempDir, shard_bytes: usize, ssd_bytes: u64) -> Cache {
    let ssd = SsdTier::open(&dir.0, ssd_bytes, None).unwrap();
    Cache::with_ssd(SHARDS * shard_bytes, 1 << 16, Some(ssd))
}

fn ssd_stat(c: &Cache, f: fn(&super::super::ssd::SsdStats) -> &AtomicU64) -> u64 {
    f(c.ssd().unwrap().stats()).load(Ordering::Relaxed)
}

/// Fills `n` keys through the read path (lookup, then insert on a miss) and waits for
/// the SSD writer.
async fn fill(c: &Cache, n: usize, now: Instant, ttl: Duration) -> Vec<CacheKey> {
    let keys: Vec<_> = (0..n).map(|i| key(&format!("p{i}"), "q")).collect();
    for k in &keys {
        if c.lookup(k, now).await.is_none() {
            c.insert(k.clone(), c.ticket(k), rows(600), now, ttl);
        }
    }
    c.ssd().unwrap().flush();
    keys
}

#[tokio::test]
async fn what_dram_lets_go_is_served_from_ssd_and_promoted() {
    let dir = TempDir::new("promote");
    // Room for one 600-byte entry per shard: most of 200 keys spill.
    let c = tiered(&dir, 1024, 1 << 24);
    let now = Instant::now();
    let keys = fill(&c, 200, now, TTL).await;
    let (in_dram, _) = c.usage();
    assert!(in_dram <= SHARDS as u64);
    let written = ssd_stat(&c, |s| &s.writes);
    assert!(
        written >= 200 - in_dram,
        "{written} written, {in_dram} in DRAM"
    );
    // Every key is answered again, without going upstream.
    for k in &keys {
        let got = c.lookup(k, now).await.expect("served by a tier");
        assert_eq!(got.rows().unwrap().data.len(), 600);
    }
    assert!(ssd_stat(&c, |s| &s.hits) >= 200 - in_dram);
    assert_eq!(c.stats.misses.load(Ordering::Relaxed), 200);
    assert_eq!(c.stats.hits.load(Ordering::Relaxed), 200);
    // A key read often enough is promoted and then answered by DRAM.
    let hot = &keys[7];
    for _ in 0..20 {
        assert!(c.lookup(hot, now).await.is_some());
    }
    assert!(c.get(hot, now).is_some(), "hot key promoted to DRAM");
}

#[tokio::test]
async fn ssd_records_obey_the_same_coherence_checks() {
    let dir = TempDir::new("coherence");
    let c = tiered(&dir, 1024, 1 << 24);
    let now = Instant::now();
    let ttl = Duration::from_secs(10);
    let keys = fill(&c, 64, now, ttl).await;
    let on_ssd: Vec<_> = keys.iter().filter(|k| c.get(k, now).is_none()).collect();
    assert!(on_ssd.len() >= 40, "{} on SSD", on_ssd.len());
    let (a, b, d) = (on_ssd[0], on_ssd[1], on_ssd[2]);
    assert!(c.ssd().unwrap().get(&a.bytes).is_some());
    // Partition invalidation: the SSD record is a miss and gets deleted.
    c.invalidate_partition("ks", "t", b"p_not_there");
    let pk_of = |k: &CacheKey| {
        keys.iter()
            .position(|x| x.bytes == k.bytes)
            .map(|i| format!("p{i}"))
            .unwrap()
    };
    c.invalidate_partition("ks", "t", pk_of(a).as_bytes());
    assert!(c.lookup(a, now).await.is_none());
    c.ssd().unwrap().flush();
    assert!(
        c.ssd().unwrap().get(&a.bytes).is_none(),
        "invalid record deleted"
    );
    // Past max_staleness: a miss.
    assert!(c.lookup(b, now + ttl).await.is_none());
    // Table invalidation reaches every SSD record of the table.
    c.invalidate_table("ks", "t");
    assert!(c.lookup(d, now).await.is_none());
    let before = ssd_stat(&c, |s| &s.hits);
    for k in &on_ssd[3..] {
        assert!(c.lookup(k, now).await.is_none());
    }
    assert_eq!(ssd_stat(&c, |s| &s.hits), before);
    c.ssd().unwrap().flush();
    assert_eq!(
        ssd_stat(&c, |s| &s.entries),
        0,
        "all invalid records deleted"
    );
}

#[tokio::test]
async fn a_write_during_the_spill_is_not_lost_to_a_stale_ssd_record() {
    let dir = TempDir::new("race");
    let c = tiered(&dir, 1024, 1 << 24);
    let now = Instant::now();
    let k = key("a", "q");
    let old_ticket = c.ticket(&k);
    // The old entry sits on SSD (rejected by DRAM or evicted), then a write passes through.
    c.ssd().unwrap().put(
        k.bytes.as_slice().into(),
        old_ticket.0,
        now + TTL,
        Arc::new(rows(600)),
    );
    c.ssd().unwrap().flush();
    assert!(c.lookup(&k, now).await.is_some());
    c.get(&k, now); // whether promoted or not,
    c.invalidate_partition("ks", "t", b"a");
    assert!(
        c.lookup(&k, now).await.is_none(),
        "read-your-write across tiers"
    );
}

#[tokio::test]
async fn ssd_budget_holds_and_keeps_the_newest() {
    let dir = TempDir::new("ssdbudget");
    let budget = 40 * 1024;
    let c = tiered(&dir, 1024, budget);
    let now = Instant::now();
    let keys = fill(&c, 300, now, TTL).await;
    let bytes = ssd_stat(&c, |s| &s.bytes);
    assert!(bytes <= budget, "{bytes} > {budget}");
    assert!(ssd_stat(&c, |s| &s.evictions) > 200);
    let tier = c.ssd().unwrap();
    assert!(tier.get(&keys[299].bytes).is_some(), "newest kept");
    assert!(tier.get(&keys[0].bytes).is_none(), "oldest evicted");
}

#[tokio::test]
async fn results_too_large_for_dram_go_to_ssd() {
    let dir = TempDir::new("large");
    let c = tiered(&dir, 512, 1 << 24);
    let now = Instant::now();
    let k = key("big", "q");
    c.insert(k.clone(), c.ticket(&k), rows(2000), now, TTL);
    c.ssd().unwrap().flush();
    assert_eq!(c.stats.too_large.load(Ordering::Relaxed), 0);
    assert_eq!(
        c.lookup(&k, now).await.unwrap().rows().unwrap().data.len(),
        2000
    );
    // Too large for max_entry_bytes: cached nowhere.
    let k2 = key("huge", "q");
    c.insert(k2.clone(), c.ticket(&k2), rows(1 << 17), now, TTL);
    c.ssd().unwrap().flush();
    assert!(c.lookup(&k2, now).await.is_none());
    assert_eq!(c.stats.too_large.load(Ordering::Relaxed), 1);
}

#[test]
fn a_key_made_on_a_recycled_keys_bytes_is_the_same_key() {
    let fresh = key("p", "r");
    let (bytes, hash) = (fresh.bytes().to_vec(), fresh.hash);
    drop(fresh);
    key(&"x".repeat(300), &"y".repeat(200)).recycle();
    let again = key("p", "r");
    assert_eq!((again.bytes(), again.hash), (&bytes[..], hash));
    // Found by the same lookups as the key it equals.
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    let k = key("p", "r");
    c.insert(k.clone(), c.ticket(&k), rows(8), now, TTL);
    assert!(c.get(&again, now).is_some());
}

/// A partition key of table `ks.t` other than `pk` whose stripe is `pk`'s.
fn stripe_mate(pk: &str) -> String {
    let stripe = stripe_of("ks", "t", pk.as_bytes());
    (0..)
        .map(|i| format!("mate{i}"))
        .find(|m| stripe_of("ks", "t", m.as_bytes()) == stripe)
        .unwrap()
}

#[test]
fn a_write_to_another_partition_of_the_stripe_leaves_an_entry_valid_only_if_acknowledged_cleanly() {
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    let mate = stripe_mate("a");
    let (a, b) = (key("a", "q"), key(&mate, "q"));
    shaped(&c, &a, now);
    shaped(&c, &b, now);
    // A clean write to `b`: `a` was not served while it was in flight, and is again after.
    let w = c.write_started("ks", "t", mate.as_bytes(), None);
    assert!(
        c.get(&a, now).is_none(),
        "not served while a stripe mate's write is in flight"
    );
    c.write_acknowledged(w, &append_x);
    assert_eq!(
        c.get(&a, now).unwrap().rows().unwrap().data.len(),
        10,
        "a untouched"
    );
    assert_eq!(
        c.get(&b, now).unwrap().rows().unwrap().data.len(),
        11,
        "b patched"
    );
    // `a` was read between: it caught up, so a second clean write to `b` leaves it valid too,
    // and `a` itself can still be patched.
    let w = c.write_started("ks", "t", mate.as_bytes(), None);
    c.write_acknowledged(w, &append_x);
    assert!(c.get(&a, now).is_some());
    let w = c.write_started("ks", "t", b"a", None);
    c.write_acknowledged(w, &append_x);
    assert_eq!(
        c.get(&a, now).unwrap().rows().unwrap().data.len(),
        11,
        "a patched"
    );
    assert_eq!(c.get(&b, now).unwrap().rows().unwrap().data.len(), 12);
    // Two clean writes to `b` with no read of `a` between: `a` is one write too far behind.
    for _ in 0..2 {
        let w = c.write_started("ks", "t", mate.as_bytes(), None);
        c.write_acknowledged(w, &append_x);
    }
    assert!(c.get(&a, now).is_none());
    // A failed write, an invalidation or overlapping writes to `b` invalidate `a`.
    type Disturb = fn(&Cache, &str);
    let disturbances: [Disturb; 3] = [
        |c, m| c.write_failed(c.write_started("ks", "t", m.as_bytes(), None)),
        |c, m| c.invalidate_partition("ks", "t", m.as_bytes()),
        |c, m| {
            let w1 = c.write_started("ks", "t", m.as_bytes(), None);
            let w2 = c.write_started("ks", "t", m.as_bytes(), None);
            c.write_acknowledged(w1, &append_x);
            c.write_acknowledged(w2, &append_x);
        },
    ];
    for (i, disturb) in disturbances.iter().enumerate() {
        shaped(&c, &a, now);
        assert!(c.get(&a, now).is_some());
        disturb(&c, &mate);
        assert!(c.get(&a, now).is_none(), "disturbance {i}");
    }
}

#[test]
fn a_read_that_started_before_a_stripe_mates_clean_write_is_still_cached() {
    let c = Cache::new(1 << 20, 1 << 16);
    let now = Instant::now();
    let mate = stripe_mate("a");
    let a = key("a", "q");
    // The read of `a` goes upstream, a write to `b` starts and is acknowledged, the read's
    // result arrives: only `b` changed, so it is cached and served.
    let ticket = c.ticket(&a);
    let w = c.write_started("ks", "t", mate.as_bytes(), None);
    c.write_acknowledged(w, &append_x);
    c.insert(a.clone(), ticket, rows(10), now, TTL);
    assert!(c.get(&a, now).is_some());
    // A read of `a` that went upstream while the write to `b` was in flight is not (its
    // ticket is neither before nor after a whole write).
    let w = c.write_started("ks", "t", mate.as_bytes(), None);
    let ticket = c.ticket(&a);
    c.write_acknowledged(w, &append_x);
    c.invalidate_partition("ks", "t", b"a");
    let stale = c.stats.stale_fills.load(Ordering::Relaxed);
    c.insert(a.clone(), ticket, rows(10), now, TTL);
    assert_eq!(c.stats.stale_fills.load(Ordering::Relaxed), stale + 1);
    assert!(c.get(&a, now).is_none());
    // A read of `a` itself raced by a write to `a`: never cached, whatever the tags.
    let ticket = c.ticket(&a);
    let w = c.write_started("ks", "t", b"a", None);
    c.write_acknowledged(w, &append_x);
    c.insert(a.clone(), ticket, rows(10), now, TTL);
    assert!(c.get(&a, now).is_none());
}

#[test]
fn stripe_words_compare_by_generation_and_tag() {
    let part = 0x1234_5678_9abc_def0_u64;
    let other = part ^ (1 << 50);
    let word = |gen: u64, tag: u64| (gen << TAG_BITS) | tag;
    assert!(stripe_fresh(part, word(7, 0), word(7, 0)));
    assert!(stripe_fresh(part, word(7, 0), word(9, tag_of(other))));
    assert!(
        !stripe_fresh(part, word(7, 0), word(9, tag_of(part))),
        "its own write"
    );
    assert!(
        !stripe_fresh(part, word(7, 0), word(9, 0)),
        "not a clean acknowledgement"
    );
    assert!(
        !stripe_fresh(part, word(7, 0), word(8, tag_of(other))),
        "a write in flight"
    );
    assert!(
        !stripe_fresh(part, word(7, 0), word(11, tag_of(other))),
        "two writes"
    );
    assert_ne!(tag_of(part), tag_of(other));
    assert_ne!(tag_of(0), 0);
}
