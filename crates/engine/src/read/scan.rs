//! How a read finds its partitions: the partitions named by key (and the one of a point
//! read), a token range scanned in order, an index's candidates, and the rules that end such
//! a read early (a GROUP BY's group between named partitions, a legacy static index's miss).

use super::*;

impl SelectRun<'_> {
    /// The token bounds of a range read, as values.
    pub(super) fn tokens_of(
        &self,
        engine: &Engine,
        start: &Option<TokenBound>,
        end: &Option<TokenBound>,
    ) -> [Option<(i64, bool)>; 2] {
        let t = &self.plan.table;
        let of = |b: &Option<TokenBound>| engine.ring_bound(t, b.as_ref()?, self.vals).ok()?;
        [of(start), of(end)]
    }

    /// An indexed read: the index's candidates within the token range, visited a partition
    /// at a time (only the candidate rows of it, each checked against the filters).
    pub(super) fn scan_index(
        &mut self,
        engine: &Engine,
        scan: &IndexScan,
        start: &Option<TokenBound>,
        end: &Option<TokenBound>,
    ) -> Result<(), EngineError> {
        let t = &self.plan.table;
        // The plan may predate the build's end (a prepared statement): ask the live schema.
        let live = engine.schema.get();
        let idx = live
            .table(&t.keyspace, &t.name)
            .and_then(|t| t.indexes.iter().find(|i| i.id == scan.index_id));
        if let Some(idx) = idx.filter(|i| !i.built) {
            return Err(crate::index::not_available(engine.node(), idx.is_sai()));
        }
        let (lo, hi) = self.token_span(engine, start, end)?;
        let resume_partition = self
            .resume_key
            .as_ref()
            .and_then(|k| keys::decode_key(k).map(|d| k[..d.prefix_len].to_vec()));
        let candidates = crate::index::scan::candidates(
            self.store,
            t.id,
            scan,
            self.vals,
            resume_partition.as_deref(),
            self.now.secs,
        )?;
        let mut group: Option<Candidates> = None;
        for key in candidates {
            let key = key?;
            // An index entry is a row read from storage too (a stale one leads to no row):
            // the pacer and a budget (`lane::within_budget`) count it.
            crate::lane::row_read();
            if key < lo || key >= hi {
                continue;
            }
            let Some(d) = keys::decode_key(&key) else {
                continue;
            };
            let prefix = &key[..d.prefix_len];
            if let Some(g) = group.take_if(|g| g.prefix != prefix) {
                if self.index_partition(g)? == Flow::Stop {
                    return Ok(());
                }
            }
            let g = group.get_or_insert_with(|| Candidates {
                prefix: prefix.to_vec(),
                pk: d.pk.clone(),
                token: d.token,
                rows: Some(Vec::new()),
            });
            match (&mut g.rows, d.is_header) {
                (rows, true) => *rows = None,
                (Some(rows), false) => rows.push(d.clustering.to_vec()),
                (None, false) => {}
            }
        }
        if let Some(g) = group {
            self.index_partition(g)?;
        }
        Ok(())
    }

    fn index_partition(&mut self, c: Candidates) -> Result<Flow, EngineError> {
        self.only_rows = c.rows;
        let flow = self.partition(&c.prefix, &c.pk, c.token, None, None);
        self.only_rows = None;
        flow
    }

    /// Between two partitions named by key: a GROUP BY's group ends with its partition, and
    /// Cassandra, which reads each partition as a command of its own, reads no further one
    /// once LIMIT or the page is reached, so a GROUP BY function that would fail on the next
    /// partition's rows (floor() of a time before its starting time) is never evaluated (a
    /// range read groups the next partition's first row first, and fails). Whether to stop.
    fn group_ends_with_partition(&mut self) -> Result<bool, EngineError> {
        let grouped =
            matches!(&self.plan.selection, Selection::Aggregates(a) if a.group_by.is_some());
        if !grouped || self.group.is_none() {
            return Ok(false);
        }
        self.close_group()?;
        let page_full = self.page.is_some_and(|p| self.sink.rows as u64 >= p);
        Ok((self.remaining == Some(0) || page_full) && self.admit() != Flow::Go)
    }

    /// Whether Cassandra's lookup of a legacy index on a static column misses the partition's
    /// entry (see `build::where_clause::legacy_static_index_read`): the clustering filter's
    /// first interval starts above the bottom of the clustering order, or a page resumes after
    /// a row of the partition (the next page's filter starts there).
    fn static_index_misses(&self, parts: &[crate::exec::PartitionRef]) -> bool {
        let resumes_in_rows = |p: &crate::exec::PartitionRef| {
            self.resume_key
                .as_ref()
                .is_some_and(|k| k.len() > p.prefix.len() && k.starts_with(&p.prefix))
        };
        self.plan.legacy_static_index
            && (self.ranges.first().is_some_and(|(s, _)| !s.is_empty())
                || parts.iter().any(resumes_in_rows))
    }

    /// The storage keys of the table between two token bounds: `[lo, hi)`.
    pub(super) fn token_span(
        &self,
        engine: &Engine,
        start: &Option<TokenBound>,
        end: &Option<TokenBound>,
    ) -> Result<(Vec<u8>, Vec<u8>), EngineError> {
        let t = &self.plan.table;
        let table_start = keys::table_prefix(t.id);
        let mut lo = table_start.clone();
        let mut hi = keys::prefix_end(&table_start);
        if let Some(b) = start {
            if let Some((tok, inclusive)) = engine.ring_bound(t, b, self.vals)? {
                lo = if inclusive {
                    keys::token_prefix(t.id, tok)
                } else {
                    keys::after_token(t.id, tok)
                };
            }
        }
        if let Some(b) = end {
            if let Some((tok, inclusive)) = engine.ring_bound(t, b, self.vals)? {
                hi = if inclusive {
                    keys::after_token(t.id, tok)
                } else {
                    keys::token_prefix(t.id, tok)
                };
            }
        }
        Ok((lo, hi))
    }

    /// Partitions named by their keys (`=` / `IN` on the partition key).
    pub(super) fn scan_keys(
        &mut self,
        engine: &Engine,
        sel: &[KeyValues],
        token: &[Option<TokenBound>; 2],
    ) -> Result<(), EngineError> {
        // A clustering filter that selects nothing (`c > 2 AND c < 1`, `c IN ()`) reads
        // nothing: Cassandra answers so before it checks the keys (an empty key is refused
        // only then), unless it fetches static columns by named rows.
        if self.ranges.is_empty() && !self.plan.empty_names_read {
            named_partitions(&self.plan.table, sel, self.vals, false)?;
            return Ok(());
        }
        let mut parts = partitions(&self.plan.table, sel, self.vals)?;
        if self.static_index_misses(&parts) {
            return Ok(());
        }
        if token.iter().any(Option::is_some) {
            parts = engine.within_token_bounds(&self.plan.table, token, &parts, self.vals)?;
        }
        self.last_listed = parts.last().map(|p| p.prefix.clone());
        let first = match &self.resume_key {
            Some(k) => parts
                .iter()
                .position(|p| k.starts_with(&p.prefix))
                .unwrap_or(parts.len()),
            None => 0,
        };
        for p in &parts[first..] {
            if self.group_ends_with_partition()? {
                break;
            }
            // Each partition is a command of its own, with its own count and warning.
            self.tally.reset();
            let limits = self.limits();
            let flow = self.partition(&p.prefix, &p.pk, p.token, None, None)?;
            self.partition_warning(&p.pk, limits);
            if flow == Flow::Stop {
                break;
            }
        }
        Ok(())
    }

    /// The one partition and row of a point read (`point`): the partition key is bound and
    /// checked as [`partitions`] checks it, and the row's storage key (the partition prefix,
    /// then the clustering) is built in place once; the partition is visited as
    /// [`SelectRun::scan_keys`] visits each of its own.
    pub(super) fn point(&mut self, sel: &[KeyValues]) -> Result<(), EngineError> {
        let (t, vals) = (&*self.plan.table, self.vals);
        let (Some(col), [KeyValues::Eq(src)]) = (t.partition_key().next(), sel) else {
            return Err(EngineError::server("a point read of no single partition"));
        };
        let pk = single_partition_key(col, src, vals, true)?;
        let tok = token::token(&pk);
        let mut key = POINT_KEY.take();
        key.clear();
        keys::partition_prefix_into(&mut key, t.id, tok, &pk);
        let prefix_len = key.len();
        key.push(1);
        for (kv, c) in self.plan.clustering.eq.iter().zip(t.clustering()) {
            if let KeyValues::Eq(src) = kv {
                let v = resolve_key_ref(src, vals, &c.name)?;
                keys::encode_component(&mut key, &c.ty, &v, c.desc);
            }
        }
        #[cfg(test)]
        POINT_READS.set(POINT_READS.get() + 1);
        self.one_partition = true;
        self.tally.reset();
        let limits = self.limits();
        let visited = self.partition(&key[..prefix_len], &pk, tok, None, Some(&key));
        POINT_KEY.set(key);
        visited?;
        self.partition_warning(&pk, limits);
        Ok(())
    }

    /// A token range: one ordered scan; each partition's items are gathered (up to a bound)
    /// and visited from memory. A larger partition is visited with its own storage reads and
    /// the scan restarts after it.
    pub(super) fn scan_range(
        &mut self,
        engine: &Engine,
        start: &Option<TokenBound>,
        end: &Option<TokenBound>,
    ) -> Result<(), EngineError> {
        const BUFFERED_ITEMS: usize = 1024;
        let (mut lo, hi) = self.token_span(engine, start, end)?;
        if let Some(k) = &self.resume_key {
            if let Some(d) = keys::decode_key(k) {
                let p = &k[..d.prefix_len];
                if p > lo.as_slice() {
                    lo = p.to_vec();
                }
            }
        }
        let store = self.store;
        let mut cursor = lo;
        'scan: while cursor < hi {
            let mut iter = store.scan(
                Bound::Included(cursor.as_slice()),
                Bound::Excluded(hi.as_slice()),
                false,
            );
            let mut buf: Vec<storage::KvPair> = Vec::new();
            let mut current: Option<(Vec<u8>, Vec<u8>, i64)> = None;
            loop {
                let item = iter.next().transpose()?;
                let same = match (&item, &current) {
                    (Some((k, _)), Some((p, _, _))) => k.starts_with(p),
                    _ => false,
                };
                if same {
                    if buf.len() < BUFFERED_ITEMS {
                        if let Some(it) = item {
                            buf.push(it);
                        }
                        continue;
                    }
                    // Too large to hold: visit it from storage, resume after it.
                    let (p, pk, tok) = current.take().unwrap_or_default();
                    drop(iter);
                    if self.partition(&p, &pk, tok, None, None)? == Flow::Stop {
                        break 'scan;
                    }
                    cursor = keys::prefix_end(&p);
                    continue 'scan;
                }
                if let Some((p, pk, tok)) = current.take() {
                    if self.partition(&p, &pk, tok, Some(&buf), None)? == Flow::Stop {
                        break 'scan;
                    }
                    buf.clear();
                }
                let Some((k, v)) = item else { break 'scan };
                let Some(d) = keys::decode_key(&k) else {
                    break 'scan;
                };
                current = Some((k[..d.prefix_len].to_vec(), d.pk, d.token));
                buf.push((k, v));
            }
        }
        Ok(())
    }
}
