//! The start-up check of the data files (fjall's SSTables): damage is never found first by the
//! read that happens to touch it.
//!
//! fjall records, in the tree's version (manifest), an xxh3-128 checksum of every table file as
//! it was written (`lsm_tree::Table::checksum`). [`check`] reads every live table file of the
//! data keyspace once, sequentially, and compares: a file whose bytes changed (zeros, a flipped
//! byte, a truncation, a missing file) is named with its size, where it first differs from
//! what it should be cannot be known from one checksum, so the report gives the table id, its
//! level and the key range it holds instead. The caller refuses to start on any damage.

use std::io::Read;
use std::path::Path;

use fjall::AbstractTree;

/// `data_file_check`: whether start-up verifies the data files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataFileCheck {
    /// Every live table file is read and its checksum compared (the default).
    #[default]
    Full,
    /// No check: damage shows only when a read touches it (a server error naming the checksum
    /// mismatch).
    Off,
}

/// Verifies every live table file of `tree`; answers one line per damaged file.
pub(crate) fn check(tree: &fjall::AnyTree) -> Vec<String> {
    let version = tree.current_version();
    let mut damaged = Vec::new();
    for (level, run_tables) in version
        .iter_levels()
        .enumerate()
        .map(|(i, l)| (i, l.iter().flat_map(|run| run.iter()).collect::<Vec<_>>()))
    {
        for table in run_tables {
            let path: &Path = &table.path;
            let expected = table.checksum().into_u128();
            let what = format!(
                "data file {} (table {} at level {level}, keys {:?} to {:?})",
                path.display(),
                table.id(),
                hex(table.metadata.key_range.min()),
                hex(table.metadata.key_range.max()),
            );
            match hash_file(path) {
                Ok((got, _)) if got == expected => {}
                Ok((_, len)) if len != table.metadata.file_size => damaged.push(format!(
                    "{what}: {len} bytes where {} were written (truncated or extended)",
                    table.metadata.file_size
                )),
                Ok((got, len)) => damaged.push(format!(
                    "{what}: its {len} bytes do not match the checksum recorded when it was written (xxh3 {got:032x}, expected {expected:032x}): bytes changed on disk"
                )),
                Err(e) => damaged.push(format!("{what}: cannot be read: {e}")),
            }
        }
    }
    damaged
}

fn hash_file(path: &Path) -> std::io::Result<(u128, u64)> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok((hasher.digest128(), len));
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
}

/// A key as hex, at most 32 bytes of it (keys are the engine's binary encoding).
fn hex(key: &[u8]) -> String {
    let shown: String = key.iter().take(32).map(|b| format!("{b:02x}")).collect();
    if key.len() > 32 {
        format!("{shown}...")
    } else {
        shown
    }
}

/// Run when fjall cannot open the store: every table file whose trailer (the archive's table
/// of contents, at its end) cannot be read, one line each: a truncated or overwritten end.
pub(crate) fn unreadable_trailers(data_dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(keyspaces) = std::fs::read_dir(data_dir.join("keyspaces")) else {
        return out;
    };
    let mut files: Vec<_> = keyspaces
        .flatten()
        .filter_map(|k| std::fs::read_dir(k.path().join("tables")).ok())
        .flat_map(|d| d.flatten().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    for path in files {
        if let Err(e) = sfa::Reader::new(&path) {
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            out.push(format!(
                "data file {} ({len} bytes): its trailer cannot be read ({e:?}): the file was truncated or its end overwritten",
                path.display()
            ));
        }
    }
    out
}
