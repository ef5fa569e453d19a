//! The checkpoint file that makes a migration resumable.
//!
//! A text file, appended to and synced after every finished range, so a migration killed at
//! any moment loses at most the ranges it was copying:
//!
//! ```text
//! peregrine-migrate 1 ranges=16
//! done "ks"."t" 3
//! ```
//!
//! The first line pins the split (`--ranges`): a range index means nothing under another
//! split, so a file written with another count is refused rather than reinterpreted. A last
//! line cut short by the kill is ignored (that range is copied again, which is harmless: see
//! the crate docs on idempotence).

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::Error;

const MAGIC: &str = "peregrine-migrate 1";

/// Which (table, range) pairs are finished, and the open file new ones are appended to.
pub struct Checkpoint {
    path: PathBuf,
    file: File,
    done: HashSet<(String, usize)>,
}

impl Checkpoint {
    /// Opens (or creates) the checkpoint at `path` for a split into `ranges` ranges.
    pub fn open(path: &Path, ranges: u32) -> Result<Checkpoint, Error> {
        let io = |e: std::io::Error| Error::State {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let mut text = String::new();
        if path.exists() {
            File::open(path)
                .and_then(|mut f| f.read_to_string(&mut text))
                .map_err(io)?;
        }
        let header = format!("{MAGIC} ranges={ranges}");
        let mut done = HashSet::new();
        let complete = text.ends_with('\n');
        let mut lines: Vec<&str> = text.lines().collect();
        if !complete {
            lines.pop(); // a line the kill cut short
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        match lines.first() {
            None => {
                if !text.is_empty() {
                    // Only a cut-short header: start the file again.
                    file.set_len(0).map_err(io)?;
                }
                file.write_all(format!("{header}\n").as_bytes())
                    .and_then(|()| file.sync_data())
                    .map_err(io)?;
            }
            Some(first) if *first == header => {}
            Some(first) => {
                return Err(Error::State {
                    path: path.to_path_buf(),
                    reason: format!(
                        "it was written for another split (\"{first}\", this run is \"{header}\"): run with the same --ranges, or delete the file to start over"
                    ),
                })
            }
        }
        if !complete && !lines.is_empty() {
            // Cut the torn line off, so the next append starts on a line of its own.
            let keep = text.rfind('\n').map_or(0, |i| i + 1);
            file.set_len(keep as u64).map_err(io)?;
        }
        for line in lines.iter().skip(1) {
            if line.is_empty() {
                continue;
            }
            let parsed = line
                .strip_prefix("done ")
                .and_then(|rest| rest.rsplit_once(' '))
                .and_then(|(table, i)| Some((table.to_string(), i.parse::<usize>().ok()?)));
            match parsed {
                Some(entry) => {
                    done.insert(entry);
                }
                None => {
                    return Err(Error::State {
                        path: path.to_path_buf(),
                        reason: format!("cannot read the line \"{line}\""),
                    })
                }
            }
        }
        Ok(Checkpoint {
            path: path.to_path_buf(),
            file,
            done,
        })
    }

    /// Whether range `index` of `table` (its quoted `"ks"."t"` name) is finished.
    pub fn is_done(&self, table: &str, index: usize) -> bool {
        self.done.contains(&(table.to_string(), index))
    }

    /// How many ranges are recorded as finished.
    pub fn done_count(&self) -> usize {
        self.done.len()
    }

    /// Records range `index` of `table` as finished, durably, before returning.
    pub fn mark_done(&mut self, table: &str, index: usize) -> Result<(), Error> {
        self.file
            .write_all(format!("done {table} {index}\n").as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| Error::State {
                path: self.path.clone(),
                reason: e.to_string(),
            })?;
        self.done.insert((table.to_string(), index));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("migrate-state-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn finished_ranges_survive_a_reopen() {
        let p = temp("reopen");
        let mut c = Checkpoint::open(&p, 8).unwrap();
        c.mark_done("\"ks\".\"t\"", 3).unwrap();
        c.mark_done("\"ks\".\"a b\"", 0).unwrap();
        drop(c);
        let c = Checkpoint::open(&p, 8).unwrap();
        assert!(c.is_done("\"ks\".\"t\"", 3));
        assert!(c.is_done("\"ks\".\"a b\"", 0));
        assert!(!c.is_done("\"ks\".\"t\"", 4));
        assert_eq!(c.done_count(), 2);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn a_torn_last_line_is_ignored_and_appending_goes_on() {
        let p = temp("torn");
        std::fs::write(
            &p,
            format!("{MAGIC} ranges=4\ndone \"ks\".\"t\" 1\ndone \"ks\".\"t"),
        )
        .unwrap();
        let mut c = Checkpoint::open(&p, 4).unwrap();
        assert_eq!(c.done_count(), 1);
        c.mark_done("\"ks\".\"t\"", 2).unwrap();
        drop(c);
        let c = Checkpoint::open(&p, 4).unwrap();
        assert!(c.is_done("\"ks\".\"t\"", 1) && c.is_done("\"ks\".\"t\"", 2));
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn another_split_is_refused() {
        let p = temp("split");
        drop(Checkpoint::open(&p, 4).unwrap());
        let e = Checkpoint::open(&p, 8).err().unwrap();
        assert!(e.to_string().contains("same --ranges"), "{e}");
        std::fs::remove_file(&p).unwrap();
    }
}
