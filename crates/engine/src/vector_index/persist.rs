//! The on-disk form of a [`VectorIndex`]: [`save`](VectorIndex::save), [`spill`](VectorIndex::spill),
//! [`merge_segments`](VectorIndex::merge_segments) and [`load`](VectorIndex::load), the key map's
//! format and the graph files it names (see the parent module's "Persistence" and "Memory").

use super::{
    key_cost, lib, GraphVector, Inner, SearchGate, Segment, Slot, VectorIndex, VectorIndexConfig,
    VectorIndexError, SEARCH_THREADS,
};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::RwLock;

const KEYS_FILE: &str = "keys.bin";
/// `PGVIDX03`: the key map names a list of graph files and whether they are served from
/// disk (`PGVIDX02` named one graph file; such a save is rebuilt from the table).
const KEYS_MAGIC: &[u8; 8] = b"PGVIDX03";

impl Inner {
    /// The files of the segments, as a key map names them.
    fn saved_files(&self) -> Vec<SavedFile> {
        self.segments
            .iter()
            .map(|s| SavedFile {
                name: s.file.clone(),
                len: s.len,
                crc: s.crc,
            })
            .collect()
    }
}

impl VectorIndex {
    /// From now on serves the index from saved files under `dir`: saves it (the in-memory
    /// graph becomes the first segment, memory-mapped, and its heap is freed), and every later
    /// [`save`](Self::save) writes the rows indexed since as a segment of their own. Only the
    /// key maps and the rows since the last save stay on the heap.
    pub fn spill(&self, dir: &Path, covers: u64) -> Result<(), VectorIndexError> {
        self.write()?.on_disk = true;
        self.save(dir, covers)
    }

    /// Writes the index to `dir` (created if missing) so that a crash at any point leaves the
    /// previous save or this one, whole: the graph goes to a file of its own, fsynced, then the
    /// key map (settings, `covers`, the graph files' names, lengths and checksums, and every
    /// key with its label and vector hash) is renamed into place, which commits the save;
    /// graph files it does not name are removed after. `covers` is the caller's, returned by
    /// [`load`](Self::load).
    ///
    /// In memory, the graph is copied to memory under the read lock (writes wait only for
    /// that copy) and written out after it, so a save needs the graph's size again in memory
    /// while it runs. On disk ([`spill`](Self::spill)), the rows indexed since the last save
    /// are written as one more segment, under the write lock (writes and searches wait for
    /// that file), and served mapped from then on; earlier segments are not rewritten.
    pub fn save(&self, dir: &Path, covers: u64) -> Result<(), VectorIndexError> {
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        if self.read().on_disk {
            return self.save_on_disk(dir, covers);
        }
        let inner = self.read();
        let mut graph = vec![0u8; inner.graph.serialized_length()];
        inner.graph.save_to_buffer(&mut graph).map_err(lib)?;
        let map = KeyMap::of(&inner);
        drop(inner);
        let name = graph_file_name();
        write_synced(&dir.join(&name), &[&graph])?;
        let file = SavedFile {
            len: graph.len() as u64,
            crc: crc32fast::hash(&graph),
            name,
        };
        drop(graph);
        commit(dir, &self.config, covers, false, &[file], &map)
    }

    fn save_on_disk(&self, dir: &Path, covers: u64) -> Result<(), VectorIndexError> {
        let mut inner = self.write()?;
        if inner.graph.size() > 0 {
            let file = write_graph(&inner.graph, dir)?;
            let segment = view_segment(&self.config, dir, file)?;
            inner.segments.push(segment);
            // The delta's heap goes with it.
            inner.graph = usearch::Index::new(&self.config.options()).map_err(lib)?;
        }
        let files = inner.saved_files();
        let map = KeyMap::of(&inner);
        drop(inner);
        commit(dir, &self.config, covers, true, &files, &map)
    }

    /// On disk: merges the newest segments into one while their files together take at most
    /// `max_bytes` (at least two of them), keeping only their live rows under the same labels,
    /// so that the small segments that clean shutdowns and saves of small deltas leave do not
    /// pile up (each costs every search a walk). The merged graph is built in memory from the
    /// vectors the segments hold (at most `max_bytes` of them, outside the index's lock),
    /// written and mapped, then swapped in and committed under `covers`. Returns how many
    /// segments went into it (0: nothing to merge).
    pub fn merge_segments(
        &self,
        dir: &Path,
        covers: u64,
        max_bytes: u64,
    ) -> Result<usize, VectorIndexError> {
        let (names, rows) = {
            let inner = self.read();
            if !inner.on_disk {
                return Ok(0);
            }
            let (mut first, mut total) = (inner.segments.len(), 0);
            while first > 0 && total + inner.segments[first - 1].len <= max_bytes {
                first -= 1;
                total += inner.segments[first].len;
            }
            let merged = &inner.segments[first..];
            if merged.len() < 2 {
                return Ok(0);
            }
            let mut rows = Vec::new();
            for &label in inner.keys.keys() {
                if let Some(seg) = merged.iter().find(|s| s.graph.contains(label)) {
                    // Read and added in the graph's own form (unit length under cosine, the
                    // signed bytes under `I8`), so nothing is quantized twice.
                    if let Some(v) = GraphVector::of(&self.config, &seg.graph, label)? {
                        rows.push((label, v));
                    }
                }
            }
            let names: Vec<String> = merged.iter().map(|s| s.file.clone()).collect();
            (names, rows)
        };
        let graph = usearch::Index::new(&self.config.options()).map_err(lib)?;
        graph
            .reserve_capacity_and_threads(rows.len().max(1), SEARCH_THREADS)
            .map_err(lib)?;
        for (label, v) in &rows {
            v.add(&graph, *label)?;
        }
        drop(rows);
        let file = write_graph(&graph, dir)?;
        drop(graph);
        let path = dir.join(&file.name);
        let segment = view_segment(&self.config, dir, file)?;
        let mut inner = self.write()?;
        // Saves come after (they append), never between: the merged ones are where they were.
        let Some(first) = inner.segments.iter().position(|s| s.file == names[0]) else {
            let _ = std::fs::remove_file(&path);
            return Ok(0);
        };
        let same = inner.segments[first..]
            .iter()
            .zip(&names)
            .all(|(s, n)| &s.file == n)
            && inner.segments.len() >= first + names.len();
        if !same {
            let _ = std::fs::remove_file(&path);
            return Ok(0);
        }
        inner
            .segments
            .splice(first..first + names.len(), std::iter::once(segment));
        let files = inner.saved_files();
        // Rows indexed since the last save are in no file: the key map leaves them out (a
        // catch-up after a crash re-indexes them).
        let map = KeyMap::of_saved(&inner);
        drop(inner);
        commit(dir, &self.config, covers, true, &files, &map)?;
        Ok(names.len())
    }

    /// Reads an index saved by [`save`](Self::save) with the same settings, and the `covers`
    /// number it was saved with. Any mismatch or damage is [`VectorIndexError::Unusable`]:
    /// rebuild from the table then. An index saved on disk, or whose graph file is larger
    /// than `memory_limit` bytes, is served from its files (as after [`spill`](Self::spill));
    /// any other is loaded into memory.
    pub fn load(
        dir: &Path,
        config: VectorIndexConfig,
        memory_limit: usize,
    ) -> Result<(VectorIndex, u64), VectorIndexError> {
        let unusable = |reason: &str| VectorIndexError::Unusable {
            dir: dir.to_path_buf(),
            reason: reason.to_string(),
        };
        let keys_path = dir.join(KEYS_FILE);
        let raw = std::fs::read(&keys_path).map_err(|source| VectorIndexError::Io {
            path: keys_path.clone(),
            source,
        })?;
        let (Some(magic), Some(crc)) = (raw.get(..8), raw.get(8..12)) else {
            return Err(unusable("key map truncated"));
        };
        if magic != KEYS_MAGIC {
            return Err(unusable("key map has an unknown format"));
        }
        let body = &raw[12..];
        if crc32fast::hash(body).to_be_bytes() != crc {
            return Err(unusable("key map checksum mismatch"));
        }
        let mut r = Cursor { b: body, pos: 0 };
        let fp = r.bytes().ok_or_else(|| unusable("key map truncated"))?;
        if fp != config.fingerprint().as_bytes() {
            return Err(unusable("saved with other index settings"));
        }
        let (Some(covers), Some(on_disk), Some(nfiles)) = (r.u64(), r.take(1), r.u64()) else {
            return Err(unusable("key map truncated"));
        };
        let mut files = Vec::new();
        for _ in 0..nfiles {
            let (Some(name), Some(len), Some(crc)) = (r.bytes(), r.u64(), r.u64()) else {
                return Err(unusable("key map truncated"));
            };
            let name = std::str::from_utf8(name)
                .ok()
                .filter(|n| n.starts_with("graph-") && !n.contains(['/', '\\']))
                .ok_or_else(|| unusable("key map names no graph file"))?;
            let (got_len, got_crc) = file_crc(&dir.join(name))?;
            if got_len != len || u64::from(got_crc) != crc {
                return Err(unusable("graph file does not match its key map"));
            }
            files.push(SavedFile {
                name: name.to_string(),
                len,
                crc: got_crc,
            });
        }
        let (Some(next_label), Some(count)) = (r.u64(), r.u64()) else {
            return Err(unusable("key map truncated"));
        };
        let mut labels = HashMap::new();
        let mut keys = HashMap::new();
        let mut key_bytes = 0;
        for _ in 0..count {
            let (Some(label), Some(hash), Some(pk)) = (r.u64(), r.u64(), r.bytes()) else {
                return Err(unusable("key map truncated"));
            };
            labels.insert(pk.to_vec(), Slot { label, hash });
            keys.insert(label, pk.to_vec());
            key_bytes += key_cost(pk);
        }
        if labels.len() != keys.len() {
            return Err(unusable("key map repeats a key or a label"));
        }
        let total: u64 = files.iter().map(|f| f.len).sum();
        let on_disk = on_disk != [0] || files.len() != 1 || total > memory_limit as u64;
        let graph = usearch::Index::new(&config.options()).map_err(lib)?;
        let mut segments = Vec::new();
        if on_disk {
            for f in files {
                segments.push(view_segment(&config, dir, f)?);
            }
        } else {
            let path = dir.join(&files[0].name);
            let path = path.to_str().ok_or_else(|| unusable("path is not UTF-8"))?;
            graph
                .load(path)
                .map_err(|e| unusable(&format!("graph unreadable: {e}")))?;
            let capacity = graph.capacity().max(graph.size());
            graph
                .reserve_capacity_and_threads(capacity, SEARCH_THREADS)
                .map_err(lib)?;
            if graph.size() != keys.len() || graph.dimensions() != config.dimension {
                return Err(unusable("graph and key map disagree"));
            }
        }
        // Every live key's vector is in a graph (a segment also holds dead ones).
        if on_disk
            && !keys
                .keys()
                .all(|l| segments.iter().any(|s| s.graph.contains(*l)))
        {
            return Err(unusable("graph files and key map disagree"));
        }
        let index = VectorIndex {
            config,
            inner: RwLock::new(Inner {
                graph,
                segments,
                on_disk,
                labels,
                keys,
                next_label,
                key_bytes,
            }),
            gate: SearchGate::default(),
        };
        Ok((index, covers))
    }
}

/// A graph file a key map names.
struct SavedFile {
    name: String,
    len: u64,
    crc: u32,
}

/// The key map as a save writes it: every key with its label and vector hash.
struct KeyMap {
    entries: Vec<u8>,
    next_label: u64,
    count: u64,
}

impl KeyMap {
    fn of(inner: &Inner) -> KeyMap {
        Self::of_where(inner, |_| true)
    }

    /// The keys whose vectors are in saved files (not in the in-memory delta).
    fn of_saved(inner: &Inner) -> KeyMap {
        Self::of_where(inner, |label| {
            !inner.on_disk || !inner.graph.contains(label)
        })
    }

    fn of_where(inner: &Inner, keep: impl Fn(u64) -> bool) -> KeyMap {
        let mut entries = Vec::new();
        let mut count = 0u64;
        for (pk, slot) in inner.labels.iter().filter(|(_, s)| keep(s.label)) {
            count += 1;
            entries.extend_from_slice(&slot.label.to_be_bytes());
            entries.extend_from_slice(&slot.hash.to_be_bytes());
            put_bytes(&mut entries, pk);
        }
        KeyMap {
            entries,
            next_label: inner.next_label,
            count,
        }
    }
}

/// Writes `graph` to a fresh file of `dir` (USearch's `save`, straight to the file) and
/// fsyncs it.
fn write_graph(graph: &usearch::Index, dir: &Path) -> Result<SavedFile, VectorIndexError> {
    let name = graph_file_name();
    let path = dir.join(&name);
    let path_str = path.to_str().ok_or_else(|| VectorIndexError::Unusable {
        dir: dir.to_path_buf(),
        reason: "path is not UTF-8".into(),
    })?;
    graph.save(path_str).map_err(lib)?;
    std::fs::File::open(&path)
        .and_then(|f| f.sync_all())
        .map_err(io_error(&path))?;
    let (len, crc) = file_crc(&path)?;
    Ok(SavedFile { name, len, crc })
}

/// A fresh graph file name (never one an earlier save used).
fn graph_file_name() -> String {
    static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("graph-{nanos:016x}-{n}.usearch")
}

/// Writes the key map naming `files` and renames it into place (the commit of a save), then
/// removes the graph files it does not name (earlier saves', or a save a crash cut short).
fn commit(
    dir: &Path,
    config: &VectorIndexConfig,
    covers: u64,
    on_disk: bool,
    files: &[SavedFile],
    map: &KeyMap,
) -> Result<(), VectorIndexError> {
    let mut body = Vec::new();
    put_bytes(&mut body, config.fingerprint().as_bytes());
    body.extend_from_slice(&covers.to_be_bytes());
    body.push(u8::from(on_disk));
    body.extend_from_slice(&(files.len() as u64).to_be_bytes());
    for f in files {
        put_bytes(&mut body, f.name.as_bytes());
        body.extend_from_slice(&f.len.to_be_bytes());
        body.extend_from_slice(&u64::from(f.crc).to_be_bytes());
    }
    body.extend_from_slice(&map.next_label.to_be_bytes());
    body.extend_from_slice(&map.count.to_be_bytes());
    body.extend_from_slice(&map.entries);
    let keys_tmp = dir.join(format!("{KEYS_FILE}.tmp"));
    let crc = crc32fast::hash(&body).to_be_bytes();
    write_synced(&keys_tmp, &[KEYS_MAGIC, &crc, &body])?;
    let keys_path = dir.join(KEYS_FILE);
    std::fs::rename(&keys_tmp, &keys_path).map_err(io_error(&keys_tmp))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(dir))?;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let file = e.file_name();
            let file = file.to_string_lossy();
            if file.starts_with("graph-") && !files.iter().any(|f| f.name == file) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Ok(())
}

/// Maps the saved graph `file` of `dir` as a segment (USearch's `view`), with a search
/// context for each of [`SEARCH_THREADS`].
fn view_segment(
    config: &VectorIndexConfig,
    dir: &Path,
    file: SavedFile,
) -> Result<Segment, VectorIndexError> {
    let unusable = |reason: String| VectorIndexError::Unusable {
        dir: dir.to_path_buf(),
        reason,
    };
    let path = dir.join(&file.name);
    let path = path
        .to_str()
        .ok_or_else(|| unusable("path is not UTF-8".into()))?;
    let graph = usearch::Index::new(&config.options()).map_err(lib)?;
    // The view keeps the thread count reserved before it.
    graph
        .reserve_capacity_and_threads(0, SEARCH_THREADS)
        .map_err(lib)?;
    graph
        .view(path)
        .map_err(|e| unusable(format!("graph unreadable: {e}")))?;
    if graph.dimensions() != config.dimension {
        return Err(unusable("graph and key map disagree".into()));
    }
    Ok(Segment {
        file: file.name,
        len: file.len,
        crc: file.crc,
        graph,
    })
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> VectorIndexError {
    let path = path.to_path_buf();
    move |source| VectorIndexError::Io { path, source }
}

/// Creates `path` with `parts` and fsyncs it.
fn write_synced(path: &Path, parts: &[&[u8]]) -> Result<(), VectorIndexError> {
    let mut f = std::fs::File::create(path).map_err(io_error(path))?;
    for p in parts {
        f.write_all(p).map_err(io_error(path))?;
    }
    f.sync_all().map_err(io_error(path))
}

/// The length and CRC-32 of a file, read in chunks.
fn file_crc(path: &Path) -> Result<(u64, u32), VectorIndexError> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(io_error(path))?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io_error(path))?;
        if n == 0 {
            return Ok((len, h.finalize()));
        }
        h.update(&buf[..n]);
        len += n as u64;
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = u32::from_be_bytes(self.take(4)?.try_into().ok()?);
        self.take(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::similarity::Similarity;
    use crate::vector_index::tests::{data, pk};
    use crate::vector_index::{quantize_i8, Quantization};
    use std::path::PathBuf;

    /// An index spilled to disk answers as it did, then keeps taking writes in its delta:
    /// new rows are found, removed and replaced ones never come back from the segments, each
    /// save adds a segment and empties the delta, the heap shrinks, and a load (kill -9 or
    /// not) serves the same segments.
    #[test]
    fn spilled_index_serves_from_segments_plus_delta_exactly() {
        let dir = std::env::temp_dir().join(format!("pg-vidx-disk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (n, dim) = (3000, 32);
        let all = data(n + 600, 40, dim, 0xd15c);
        let cfg = VectorIndexConfig::new(dim, Similarity::Cosine);
        let index = VectorIndex::new(cfg.clone()).unwrap();
        for (i, v) in all[..n].iter().enumerate() {
            index.upsert(&pk(i), v).unwrap();
        }
        let queries = &all[n + 600..];
        let before: Vec<_> = queries
            .iter()
            .map(|q| index.search(q, 10).unwrap())
            .collect();
        let heap_before = index.memory_bytes();
        index.spill(&dir, 0).unwrap();
        assert!(index.is_on_disk());
        assert_eq!((index.segment_count(), index.in_memory_len()), (1, 0));
        let heap_after = index.memory_bytes();
        assert!(
            heap_after * 4 < heap_before,
            "heap {heap_before} -> {heap_after}"
        );
        let after: Vec<_> = queries
            .iter()
            .map(|q| index.search(q, 10).unwrap())
            .collect();
        assert_eq!(before, after, "the mapped graph is the graph");

        // Writes after the spill: 600 new rows, in two saves; rows 0..200 removed, 200..400
        // moved to the new rows' vectors (so they compete with them).
        let mut base: Vec<Option<Vec<f32>>> = all[..n].iter().cloned().map(Some).collect();
        for (i, v) in all[n..n + 300].iter().enumerate() {
            index.upsert(&pk(n + i), v).unwrap();
            base.push(Some(v.clone()));
        }
        index.save(&dir, 0).unwrap();
        assert_eq!((index.segment_count(), index.in_memory_len()), (2, 0));
        for (i, slot) in base.iter_mut().enumerate().take(200) {
            assert!(index.remove(&pk(i)).unwrap());
            *slot = None;
        }
        for i in 200..400 {
            let v = all[n + 300 + i - 200].clone();
            index.upsert(&pk(i), &v).unwrap();
            base[i] = Some(v);
        }
        for (i, v) in all[n + 500..n + 600].iter().enumerate() {
            index.upsert(&pk(n + 300 + i), v).unwrap();
            base.push(Some(v.clone()));
        }
        assert_eq!(index.len(), n + 400 - 200);
        assert_eq!(index.in_memory_len(), 300);
        let check = |index: &VectorIndex| {
            let mut hits = 0;
            for q in queries {
                let mut scored: Vec<(f32, usize)> = base
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| Some((Similarity::Cosine.score(q, v.as_ref()?), i)))
                    .collect();
                scored.sort_by(|a, b| b.0.total_cmp(&a.0));
                let truth: Vec<Vec<u8>> = scored[..10].iter().map(|(_, i)| pk(*i)).collect();
                let got = index.search(q, 10).unwrap();
                assert_eq!(got.len(), 10);
                assert!(got.windows(2).all(|w| w[0].score >= w[1].score));
                for h in &got {
                    let i = u32::from_be_bytes(h.primary_key[..].try_into().unwrap()) as usize;
                    let v = base[i].as_ref().expect("a removed row came back");
                    assert!(
                        (h.score - Similarity::Cosine.score(q, v)).abs() < 1e-4,
                        "row {i} ranked by a vector it no longer has"
                    );
                }
                hits += got
                    .iter()
                    .filter(|h| truth.contains(&h.primary_key))
                    .count();
            }
            // Each moved or new row is its own nearest neighbour.
            for i in [200, 399, n, n + 299, n + 300, n + 399] {
                let v = base[i].as_ref().unwrap();
                assert_eq!(index.search(v, 1).unwrap()[0].primary_key, pk(i), "row {i}");
            }
            hits as f64 / (10 * queries.len()) as f64
        };
        let recall = check(&index);
        assert!(recall >= 0.95, "recall@10 {recall}");
        // Loaded from the last save (as after a kill -9): the delta's 300 rows are not in it
        // (the caller's catch-up re-indexes them); the removals made before it are.
        let (loaded, _) = VectorIndex::load(&dir, cfg.clone(), usize::MAX).unwrap();
        assert!(loaded.is_on_disk() && loaded.segment_count() == 2);
        assert_eq!(loaded.len(), n + 300);
        index.save(&dir, 7).unwrap();
        let (loaded, covers) = VectorIndex::load(&dir, cfg.clone(), usize::MAX).unwrap();
        assert_eq!(
            (covers, loaded.segment_count(), loaded.len()),
            (7, 3, n + 200)
        );
        assert!(check(&loaded) >= 0.95);
        // Concurrent searches on the mapped segments, more than USearch's contexts.
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..2 * SEARCH_THREADS)
                .map(|t| {
                    let (loaded, q) = (&loaded, &queries[t % queries.len()]);
                    s.spawn(move || {
                        (0..5).all(|_| loaded.search(q, 10).is_ok_and(|h| h.len() == 10))
                    })
                })
                .collect();
            for h in handles {
                assert!(h.join().unwrap());
            }
        });
        // Filtered searches apply to every segment.
        let even = loaded
            .search_where(&queries[0], 10, |pk| pk[3] % 2 == 0)
            .unwrap();
        assert!(even.len() == 10 && even.iter().all(|h| h.primary_key[3] % 2 == 0));
        let graphs = || -> Vec<PathBuf> {
            std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("graph-"))
                .map(|e| e.path())
                .collect()
        };
        assert_eq!(graphs().len(), 3);
        // Merged: nothing when the files take more than allowed, else one segment of the
        // live rows under their labels, the same answers, and one file left.
        assert_eq!(loaded.merge_segments(&dir, 8, 1000).unwrap(), 0);
        loaded.upsert(&pk(n + 1000), &all[0]).unwrap();
        assert_eq!(loaded.merge_segments(&dir, 8, u64::MAX).unwrap(), 3);
        assert_eq!((loaded.segment_count(), loaded.in_memory_len()), (1, 1));
        assert!(loaded.remove(&pk(n + 1000)).unwrap());
        assert!(check(&loaded) >= 0.95);
        assert_eq!(graphs().len(), 1);
        let (merged, covers) = VectorIndex::load(&dir, cfg.clone(), usize::MAX).unwrap();
        assert_eq!(
            (covers, merged.segment_count(), merged.len()),
            (8, 1, n + 200)
        );
        assert!(check(&merged) >= 0.95);
        drop(merged);
        // A damaged graph file is refused.
        let graph = graphs().remove(0);
        let bytes = std::fs::read(&graph).unwrap();
        std::fs::write(&graph, &bytes[..bytes.len() / 2]).unwrap();
        assert!(matches!(
            VectorIndex::load(&dir, cfg.clone(), usize::MAX),
            Err(VectorIndexError::Unusable { .. })
        ));
        // Cleared (TRUNCATE): back in memory, empty.
        loaded.clear().unwrap();
        assert!(!loaded.is_on_disk() && loaded.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An `I8` graph's segments merge in their own form: the merged graph holds each row's
    /// bytes exactly as they were quantized at insert (not turned back into floats and
    /// quantized again), and a reload serves them.
    #[test]
    fn i8_segments_merge_without_requantizing() {
        let dir = std::env::temp_dir().join(format!("pg-vidx-i8-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let dim = 24;
        let all = data(400, 0, dim, 0x18);
        let mut cfg = VectorIndexConfig::new(dim, Similarity::Cosine);
        cfg.quantization = Quantization::I8;
        let index = VectorIndex::new(cfg.clone()).unwrap();
        for (i, v) in all[..200].iter().enumerate() {
            index.upsert(&pk(i), v).unwrap();
        }
        index.spill(&dir, 0).unwrap();
        for (i, v) in all.iter().enumerate().skip(200) {
            index.upsert(&pk(i), v).unwrap();
        }
        index.save(&dir, 0).unwrap();
        assert_eq!(index.segment_count(), 2);
        assert_eq!(index.merge_segments(&dir, 5, u64::MAX).unwrap(), 2);
        let (loaded, covers) = VectorIndex::load(&dir, cfg.clone(), usize::MAX).unwrap();
        assert_eq!((covers, loaded.segment_count(), loaded.len()), (5, 1, 400));
        for ix in [&index, &loaded] {
            let inner = ix.read();
            assert_eq!(inner.segments.len(), 1);
            for (i, v) in all.iter().enumerate() {
                let label = inner.labels[&pk(i)].label;
                let held = GraphVector::of(&cfg, &inner.segments[0].graph, label).unwrap();
                assert!(
                    matches!(held, Some(GraphVector::I8(b)) if b == quantize_i8(v)),
                    "row {i}"
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn save_load_and_view_round_trip_and_damage_is_refused() {
        let dir = std::env::temp_dir().join(format!("pg-vidx-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = VectorIndexConfig::new(8, Similarity::DotProduct);
        let index = VectorIndex::new(cfg.clone()).unwrap();
        let all = data(500, 5, 8, 7);
        for (i, v) in all[..500].iter().enumerate() {
            index.upsert(&pk(i), v).unwrap();
        }
        index.save(&dir, 42).unwrap();
        let (loaded, covers) = VectorIndex::load(&dir, cfg.clone(), usize::MAX).unwrap();
        assert_eq!(covers, 42);
        assert_eq!(loaded.len(), 500);
        assert!(loaded.holds(&pk(3), &all[3]).is_some() && loaded.holds(&pk(3), &all[4]).is_none());
        let four = loaded.holds(&pk(4), &all[4]).expect("saved with row 4");
        assert_eq!(loaded.retain(|l| l != four).unwrap(), 1);
        assert!(loaded.holds(&pk(4), &all[4]).is_none() && loaded.len() == 499);
        loaded.upsert(&pk(4), &all[4]).unwrap();
        for q in &all[500..] {
            assert_eq!(index.search(q, 10).unwrap(), loaded.search(q, 10).unwrap());
        }
        loaded.upsert(&pk(1000), &all[0]).unwrap();
        // Loaded under a smaller memory limit than its file: served from it, mapped.
        let (view, _) = VectorIndex::load(&dir, cfg.clone(), 1000).unwrap();
        assert!(view.is_on_disk() && view.segment_count() == 1 && view.in_memory_len() == 0);
        assert_eq!(
            view.search(&all[501], 3).unwrap(),
            index.search(&all[501], 3).unwrap()
        );
        drop(view);
        let other = VectorIndexConfig::new(8, Similarity::Cosine);
        assert!(matches!(
            VectorIndex::load(&dir, other, usize::MAX),
            Err(VectorIndexError::Unusable { .. })
        ));
        // A second save replaces the first whole: one graph file is left.
        index.save(&dir, 43).unwrap();
        let graphs = || -> Vec<PathBuf> {
            std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.to_string_lossy().ends_with(".usearch"))
                .collect()
        };
        assert_eq!(graphs().len(), 1);
        assert_eq!(
            VectorIndex::load(&dir, cfg.clone(), usize::MAX).unwrap().1,
            43
        );
        // What a kill -9 in the middle of a save leaves (the new graph file written, the new
        // key map not yet renamed into place): the last whole save loads, and the next save
        // removes the stray file.
        std::fs::write(dir.join("graph-ffff-0.usearch"), b"half a graph").unwrap();
        std::fs::write(dir.join(format!("{KEYS_FILE}.tmp")), b"PGVIDX03 half").unwrap();
        let (loaded, covers) = VectorIndex::load(&dir, cfg.clone(), usize::MAX).unwrap();
        assert_eq!((covers, loaded.len()), (43, 500));
        index.save(&dir, 44).unwrap();
        assert_eq!(graphs().len(), 1);
        assert_eq!(
            VectorIndex::load(&dir, cfg.clone(), usize::MAX).unwrap().1,
            44
        );
        // A graph file cut short (or not the one the key map names) is refused.
        let graph = graphs().remove(0);
        let bytes = std::fs::read(&graph).unwrap();
        std::fs::write(&graph, &bytes[..bytes.len() - 1]).unwrap();
        assert!(matches!(
            VectorIndex::load(&dir, cfg.clone(), usize::MAX),
            Err(VectorIndexError::Unusable { .. })
        ));
        std::fs::write(&graph, &bytes).unwrap();
        let keys = dir.join(KEYS_FILE);
        let mut raw = std::fs::read(&keys).unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        std::fs::write(&keys, &raw).unwrap();
        assert!(matches!(
            VectorIndex::load(&dir, cfg, usize::MAX),
            Err(VectorIndexError::Unusable { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
