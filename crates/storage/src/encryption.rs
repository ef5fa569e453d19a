//! Encryption at rest: the key file, the AES-256-GCM cipher that seals table blocks and journal
//! items, and the key check of a data directory.
//!
//! fjall and lsm-tree are patched (vendor/README.md) to hand every table block (after
//! compression) and every journal item to a process-wide [`fjall::encryption::BlockCipher`];
//! [`Cipher`] is Peregrine's. What it writes:
//!
//! ```text
//! sealed := version:u8 (=1) key_id:u32 LE nonce:[u8; 12] ciphertext tag:[u8; 16]
//! ```
//!
//! The version byte and key id are the AEAD's associated data, so neither can be swapped
//! without the tag failing. The key id names the key of the [`KeySet`] that sealed it: new data
//! is sealed under the current key (the highest id), and any key of the set opens what older
//! keys sealed, which is what key rotation needs.
//!
//! Nonces: 4 random bytes drawn when the cipher is made, then a 64-bit counter that starts at
//! the wall clock in nanoseconds and goes up by one per seal. A (key, nonce) pair then never
//! repeats across restarts unless the clock goes back further than the seals made since; the
//! random part covers that and two processes sharing a key. (Random 96-bit nonces alone are
//! limited to 2^32 seals per key, which a busy journal reaches in hours.)
//!
//! # Key file
//! ```text
//! # comments and blank lines are ignored
//! 1 <64 hex digits: a 256-bit key>
//! 2 <64 hex digits>              # the highest id is the current key
//! ```
//! Rotation appends a line with a higher id and restarts the server; old lines stay until every
//! file sealed under them has been rewritten (docs/operations.md).
//!
//! # Key check
//! `<data_dir>/encryption.check` holds a known text sealed under the current key. Opening with
//! encryption enabled opens it first: a wrong key or a key file without its key id refuses to
//! start with a message saying so (before the journal or any table is read). Opening with
//! encryption disabled refuses a directory that has one.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

// ring, not aws-lc: the same AES-256-GCM, about twice as fast here (crates/storage/Cargo.toml).
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};

use crate::StorageError;

/// The format version byte that starts every sealed buffer.
const VERSION: u8 = 1;
/// Version byte and key id: the associated data.
const HEADER_LEN: usize = 5;
const TAG_LEN: usize = 16;
/// Bytes a sealed buffer adds to its plaintext.
pub const OVERHEAD: usize = HEADER_LEN + NONCE_LEN + TAG_LEN;
/// The key check's file name in a data directory, and what it seals.
pub const CHECK_FILE: &str = "encryption.check";
const CHECK_TEXT: &[u8] = b"peregrine encryption check v1";

/// `encryption_at_rest`: the keys that seal and open what the store writes.
#[derive(Clone)]
pub struct KeySet {
    /// Where the keys were read from (named in errors).
    pub source: PathBuf,
    /// `(id, key)` in ascending id order; the last is current.
    keys: Vec<(u32, [u8; 32])>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys themselves.
        let ids: Vec<u32> = self.keys.iter().map(|(id, _)| *id).collect();
        write!(f, "KeySet({}, ids {ids:?})", self.source.display())
    }
}

impl KeySet {
    /// Reads a key file (format in the module docs).
    pub fn load(path: &Path) -> Result<KeySet, StorageError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            StorageError::Encryption(format!("cannot read key file {}: {e}", path.display()))
        })?;
        let keys = parse_key_file(&text)
            .map_err(|e| StorageError::Encryption(format!("key file {}: {e}", path.display())))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if let Ok(meta) = std::fs::metadata(path) {
                if meta.permissions().mode() & 0o077 != 0 {
                    tracing::warn!(
                        "key file {} is readable by other users (mode {:o}): `chmod 600` it",
                        path.display(),
                        meta.permissions().mode() & 0o777
                    );
                }
            }
        }
        Ok(KeySet {
            source: path.to_path_buf(),
            keys,
        })
    }

    /// A key set from `(id, key)` pairs (tests, tools); the highest id is current.
    pub fn from_keys(source: &str, keys: &[(u32, [u8; 32])]) -> Result<KeySet, StorageError> {
        let mut keys = keys.to_vec();
        keys.sort_by_key(|(id, _)| *id);
        if keys.is_empty() || keys.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(StorageError::Encryption(
                "a key set needs at least one key and distinct ids".into(),
            ));
        }
        Ok(KeySet {
            source: PathBuf::from(source),
            keys,
        })
    }

    /// The id new data is sealed under.
    pub fn current_id(&self) -> u32 {
        self.keys.last().map_or(0, |(id, _)| *id)
    }
}

/// The `(id, key)` pairs of a key file's text, ascending by id; why it is unusable otherwise.
/// Never panics, whatever the text (fuzzed: fuzz/fuzz_targets/key_file.rs).
pub fn parse_key_file(text: &str) -> Result<Vec<(u32, [u8; 32])>, String> {
    let mut keys: Vec<(u32, [u8; 32])> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let n = n + 1;
        let mut words = line.split_whitespace();
        let (Some(id), Some(hex), None) = (words.next(), words.next(), words.next()) else {
            return Err(format!(
                "line {n}: expected `<id> <64 hex digits>` (a key id and a 256-bit key)"
            ));
        };
        let id: u32 = match id.parse() {
            Ok(id) if id > 0 => id,
            _ => {
                return Err(format!(
                    "line {n}: the key id must be a number from 1 to 4294967295"
                ))
            }
        };
        let key = decode_hex_key(hex)
            .ok_or_else(|| format!("line {n}: key {id} is not 64 hex digits (256 bits)"))?;
        if keys.iter().any(|(other, _)| *other == id) {
            return Err(format!("line {n}: key id {id} appears twice"));
        }
        keys.push((id, key));
    }
    if keys.is_empty() {
        return Err("no key in it (expected lines `<id> <64 hex digits>`)".into());
    }
    keys.sort_by_key(|(id, _)| *id);
    Ok(keys)
}

fn decode_hex_key(hex: &str) -> Option<[u8; 32]> {
    let digits = hex.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        key[i] = (hi * 16 + lo) as u8;
    }
    Some(key)
}

/// AES-256-GCM over a [`KeySet`] (format in the module docs).
pub struct Cipher {
    keys: Vec<(u32, LessSafeKey)>,
    current: usize,
    source: PathBuf,
    nonce_prefix: [u8; 4],
    counter: AtomicU64,
}

impl Cipher {
    pub fn new(set: &KeySet) -> Result<Cipher, StorageError> {
        let mut keys = Vec::with_capacity(set.keys.len());
        for (id, key) in &set.keys {
            let unbound = UnboundKey::new(&AES_256_GCM, key)
                .map_err(|_| StorageError::Encryption(format!("key {id} is unusable")))?;
            keys.push((*id, LessSafeKey::new(unbound)));
        }
        let mut nonce_prefix = [0u8; 4];
        SystemRandom::new()
            .fill(&mut nonce_prefix)
            .map_err(|_| StorageError::Encryption("no randomness for nonces".into()))?;
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Ok(Cipher {
            current: keys.len().saturating_sub(1),
            keys,
            source: set.source.clone(),
            nonce_prefix,
            counter: AtomicU64::new(clock),
        })
    }

    /// The id of the key a sealed buffer names, if it has a readable header.
    pub fn key_id_of(sealed: &[u8]) -> Option<u32> {
        match sealed {
            [VERSION, a, b, c, d, ..] => Some(u32::from_le_bytes([*a, *b, *c, *d])),
            _ => None,
        }
    }

    fn seal(&self, plain: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let (id, key) = self.keys.get(self.current).ok_or("no key")?;
        let mut nonce = [0u8; NONCE_LEN];
        nonce[..4].copy_from_slice(&self.nonce_prefix);
        nonce[4..].copy_from_slice(&self.counter.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        out.reserve(plain.len() + OVERHEAD);
        let header_at = out.len();
        out.push(VERSION);
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&nonce);
        let body_at = out.len();
        out.extend_from_slice(plain);
        let (head, body) = out.split_at_mut(body_at);
        let aad = Aad::from(&head[header_at..header_at + HEADER_LEN]);
        let tag = key
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), aad, body)
            .map_err(|_| "AES-256-GCM sealing failed".to_string())?;
        out.extend_from_slice(tag.as_ref());
        Ok(())
    }

    /// The plaintext of `sealed`, in a buffer of its own. Never panics, whatever the bytes
    /// (fuzzed: fuzz/fuzz_targets/sealed_open.rs).
    pub fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, String> {
        fjall::encryption::BlockCipher::decrypt(self, sealed)
    }

    /// Opens `sealed` where it lies (no allocation, no copy: what a block read from disk
    /// needs); the plaintext is then `sealed[range]` for the range returned. Never panics,
    /// whatever the bytes.
    pub fn open_in_place(&self, sealed: &mut [u8]) -> Result<Range<usize>, String> {
        if sealed.len() < OVERHEAD {
            return Err(format!(
                "encrypted data of {} bytes is shorter than its header and tag",
                sealed.len()
            ));
        }
        let id = match Cipher::key_id_of(sealed) {
            Some(id) => id,
            None => return Err(format!("unknown encryption format version {}", sealed[0])),
        };
        let Some((_, key)) = self.keys.iter().find(|(k, _)| *k == id) else {
            return Err(format!(
                "data sealed under key id {id}, which the key file {} does not hold (put the key back: it is needed until every file sealed under it has been rewritten)",
                self.source.display()
            ));
        };
        let (head, body) = sealed.split_at_mut(HEADER_LEN + NONCE_LEN);
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&head[HEADER_LEN..]);
        let aad = Aad::from(&head[..HEADER_LEN]);
        let len = key
            .open_in_place(Nonce::assume_unique_for_key(nonce), aad, body)
            .map_err(|_| {
                format!(
                    "data sealed under key id {id} does not authenticate with key {id} of {}: a wrong key, or the bytes were changed",
                    self.source.display()
                )
            })?
            .len();
        Ok(HEADER_LEN + NONCE_LEN..HEADER_LEN + NONCE_LEN + len)
    }
}

impl fjall::encryption::BlockCipher for Cipher {
    fn encrypt(&self, plain: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        self.seal(plain, out)
    }

    fn decrypt_in_place(&self, sealed: &mut [u8]) -> Result<Range<usize>, String> {
        self.open_in_place(sealed)
    }
}

/// Checks the data directory `dir` against the configured keys before anything in it is read,
/// writes or renews its key check, and installs the cipher (process-wide, see the patch) that
/// seals and opens what fjall writes from now on.
pub(crate) fn prepare(dir: &Path, keys: Option<&KeySet>) -> Result<(), StorageError> {
    let check = dir.join(CHECK_FILE);
    let existing = match std::fs::read(&check) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(StorageError::Encryption(format!(
                "cannot read {}: {e}",
                check.display()
            )))
        }
    };
    let Some(keys) = keys else {
        if existing.is_some() {
            return Err(StorageError::Encryption(format!(
                "the data directory {} is encrypted ({} is there) and encryption_at_rest is not enabled: set `encryption_at_rest: {{enabled: true, key_file: ...}}` with its key file (docs/configuration.md)",
                dir.display(),
                check.display()
            )));
        }
        fjall::encryption::set_cipher(None);
        return Ok(());
    };
    let cipher = Arc::new(Cipher::new(keys)?);
    let renew = match &existing {
        Some(sealed) => {
            let plain = cipher.open(sealed).map_err(|e| {
                StorageError::Encryption(format!(
                    "the key file {} does not open the data directory {}: {e}; the server does not start (the key check is {})",
                    keys.source.display(),
                    dir.display(),
                    check.display()
                ))
            })?;
            if plain != CHECK_TEXT {
                return Err(StorageError::Encryption(format!(
                    "{} holds an unexpected key check",
                    check.display()
                )));
            }
            Cipher::key_id_of(sealed) != Some(keys.current_id())
        }
        None => {
            if has_data(dir) {
                tracing::warn!(
                    "encryption at rest enabled on the unencrypted data directory {}: new files are sealed under key {}; files written before stay in clear until compaction rewrites them (`nodetool compact` forces it)",
                    dir.display(),
                    keys.current_id()
                );
            }
            true
        }
    };
    if renew {
        write_check(dir, &cipher)?;
    }
    fjall::encryption::set_cipher(Some(cipher));
    Ok(())
}

/// Whether fjall has written anything in `dir` (a journal or a keyspace folder).
fn has_data(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(|e| e.ok()).any(|e| {
            let p = e.path();
            p.extension().is_some_and(|x| x == "jnl") || p.ends_with("keyspaces")
        })
    })
}

/// Writes the key check under the current key: a temporary file, fsynced, renamed over the old
/// one, the directory fsynced (a crash leaves the old check or the new, never half of one).
fn write_check(dir: &Path, cipher: &Cipher) -> Result<(), StorageError> {
    let io = |what: &str, e: std::io::Error| {
        StorageError::Encryption(format!("cannot {what} in {}: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| io("create the data directory", e))?;
    let mut sealed = Vec::new();
    cipher
        .seal(CHECK_TEXT, &mut sealed)
        .map_err(StorageError::Encryption)?;
    let tmp = dir.join(format!("{CHECK_FILE}.tmp"));
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(|e| io("write the key check", e))?;
        f.write_all(&sealed)
            .and_then(|()| f.sync_all())
            .map_err(|e| io("write the key check", e))?;
    }
    std::fs::rename(&tmp, dir.join(CHECK_FILE)).map_err(|e| io("write the key check", e))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("sync", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(keys: &[(u32, u8)]) -> KeySet {
        let keys: Vec<(u32, [u8; 32])> = keys.iter().map(|(id, b)| (*id, [*b; 32])).collect();
        KeySet::from_keys("test", &keys).unwrap()
    }

    #[test]
    fn seal_then_open_round_trips_and_names_the_key() {
        let c = Cipher::new(&set(&[(1, 7), (2, 9)])).unwrap();
        let mut out = Vec::new();
        c.seal(b"hello", &mut out).unwrap();
        assert_eq!(out.len(), 5 + OVERHEAD);
        assert_eq!(Cipher::key_id_of(&out), Some(2));
        assert!(!out.windows(5).any(|w| w == b"hello"));
        assert_eq!(c.open(&out).unwrap(), b"hello");
        // Two seals of the same text differ (unique nonces).
        let mut again = Vec::new();
        c.seal(b"hello", &mut again).unwrap();
        assert_ne!(out, again);
        // Opened in place (a block read): the plaintext is a range of the sealed buffer.
        let plain = c.open_in_place(&mut again).unwrap();
        assert_eq!(&again[plain], b"hello");
    }

    /// The sealed format, byte for byte: a fixed key, nonce and text give these bytes, whichever
    /// AES-GCM library seals them (written while aws-lc-rs sealed; the library may change, the
    /// bytes of existing stores may not; Python's `cryptography` (OpenSSL) seals the same bytes).
    /// Opening them is what an existing store's read does.
    #[test]
    fn the_sealed_bytes_are_pinned() {
        let mut c = Cipher::new(&set(&[(3, 0x42)])).unwrap();
        c.nonce_prefix = [0xa1, 0xa2, 0xa3, 0xa4];
        c.counter = AtomicU64::new(0x0807_0605_0403_0201);
        let text = b"a table block, sealed under key 3";
        let mut out = Vec::new();
        c.seal(text, &mut out).unwrap();
        let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            concat!(
                "0103000000",               // version 1, key id 3 (LE): the associated data
                "a1a2a3a40102030405060708", // nonce: random prefix, counter (LE)
                "88824947c604aaa2ce6ca9aaa94f415d2080755f93fd77deccd7b70f5b78b358c9", // ciphertext
                "0e209b309f977aebc53f47e1f84d1030"  // GCM tag
            )
        );
        assert_eq!(c.open(&out).unwrap(), text);
    }

    /// What aws-lc (the library that sealed stores before ring) seals opens, and the other way
    /// round, at the sizes blocks and journal items have.
    #[test]
    fn aws_lc_and_ring_read_each_other() {
        use aws_lc_rs::aead as old;
        let c = Cipher::new(&set(&[(1, 0x42)])).unwrap();
        let key =
            old::LessSafeKey::new(old::UnboundKey::new(&old::AES_256_GCM, &[0x42; 32]).unwrap());
        for len in [0, 1, 15, 16, 17, 100, 4096, 4711, 70_000] {
            let text: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            // Sealed by aws-lc in the store's layout (the code before the switch, with a
            // nonce of its own).
            let mut sealed = vec![VERSION, 1, 0, 0, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2];
            sealed.extend_from_slice(&text);
            let (head, body) = sealed.split_at_mut(HEADER_LEN + NONCE_LEN);
            let nonce = old::Nonce::try_assume_unique_for_key(&head[HEADER_LEN..]).unwrap();
            let tag = key
                .seal_in_place_separate_tag(nonce, old::Aad::from(&head[..HEADER_LEN]), body)
                .unwrap();
            sealed.extend_from_slice(tag.as_ref());
            assert_eq!(c.open(&sealed).unwrap(), text, "{len} B");
            // Sealed by the store, opened by aws-lc.
            let mut ours = Vec::new();
            c.seal(&text, &mut ours).unwrap();
            let (head, body) = ours.split_at_mut(HEADER_LEN + NONCE_LEN);
            let nonce = old::Nonce::try_assume_unique_for_key(&head[HEADER_LEN..]).unwrap();
            let opened = key
                .open_in_place(nonce, old::Aad::from(&head[..HEADER_LEN]), body)
                .unwrap();
            assert_eq!(opened, &text[..], "{len} B");
        }
    }

    #[test]
    fn a_wrong_key_a_missing_key_and_a_changed_byte_are_refused() {
        let c = Cipher::new(&set(&[(1, 7)])).unwrap();
        let mut out = Vec::new();
        c.seal(b"secret", &mut out).unwrap();
        let wrong = Cipher::new(&set(&[(1, 8)])).unwrap();
        assert!(wrong
            .open(&out)
            .unwrap_err()
            .contains("does not authenticate"));
        let other = Cipher::new(&set(&[(2, 7)])).unwrap();
        assert!(other.open(&out).unwrap_err().contains("does not hold"));
        let mut changed = out.clone();
        *changed.last_mut().unwrap() ^= 1;
        assert!(c.open(&changed).is_err());
        assert!(c.open_in_place(&mut changed).is_err());
        assert!(wrong.open_in_place(&mut out.clone()).is_err());
        // The key id is authenticated: relabelled under another key of the set, it fails.
        let both = Cipher::new(&set(&[(1, 7), (2, 7)])).unwrap();
        let mut relabelled = out.clone();
        relabelled[1] = 2;
        assert!(both.open(&relabelled).is_err());
        assert!(c.open(&out[..10]).is_err());
        assert!(c.open(&[]).is_err());
    }

    /// What the fuzz targets (fuzz/fuzz_targets/key_file.rs, sealed_open.rs) check, on a few
    /// thousand pseudo-random inputs in every test run.
    #[test]
    fn random_and_mutated_inputs_are_errors_not_panics() {
        let c = Cipher::new(&set(&[(1, 7), (2, 9)])).unwrap();
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut sealed = Vec::new();
        c.seal(b"a block of some length", &mut sealed).unwrap();
        for _ in 0..3000 {
            let len = (next() % 120) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            assert!(c.open(&bytes).is_err());
            let _ = parse_key_file(&String::from_utf8_lossy(&bytes));
            let mut changed = sealed.clone();
            let at = (next() as usize) % changed.len();
            changed[at] ^= 1 << (next() % 8);
            assert!(c.open(&changed).is_err());
            let _ = c.open(&sealed[..(next() as usize) % sealed.len()]);
        }
    }

    #[test]
    fn key_files_parse_and_bad_ones_say_which_line() {
        let a = "aa".repeat(32);
        let b = "0F".repeat(32);
        let keys = parse_key_file(&format!("# keys\n\n2 {b}\n1 {a}  # old\n")).unwrap();
        assert_eq!(keys, vec![(1, [0xaa; 32]), (2, [0x0f; 32])]);
        for (text, says) in [
            (String::new(), "no key"),
            (format!("1 {a}\n1 {b}\n"), "line 2: key id 1 appears twice"),
            (format!("0 {a}\n"), "line 1: the key id"),
            ("1 abcd\n".to_string(), "line 1: key 1 is not 64 hex digits"),
            (format!("1 {a} extra\n"), "line 1: expected"),
            (format!("1 {}zz\n", "aa".repeat(31)), "not 64 hex"),
        ] {
            let e = parse_key_file(&text).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }
}
