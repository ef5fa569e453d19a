// Copyright (c) 2024-present, fjall-rs
// This source code is licensed under both the Apache 2.0 and MIT License
// (found in the LICENSE-* files in the repository)

use super::entry::{serialize_marker_item, Entry};
use crate::{
    batch::item::Item as BatchItem, file::fsync_directory, journal::recovery::JournalId,
    keyspace::InternalKeyspaceId,
};
use lsm_tree::{CompressionType, SeqNo, ValueType};
use std::{
    fs::{File, OpenOptions},
    hash::Hasher,
    io::{BufWriter, Seek, Write},
    path::{Path, PathBuf},
};

// TODO: this should be a database configuration
pub const PRE_ALLOCATED_BYTES: u64 = 64 * 1_024 * 1_024;

pub const JOURNAL_BUFFER_BYTES: usize = 8 * 1_024;

pub struct Writer {
    pub(crate) path: PathBuf,
    file: BufWriter<File>,
    buf: Vec<u8>,
    is_buffer_dirty: bool,

    compression: CompressionType,
    compression_threshold: usize,

    // PATCH (Peregrine, encryption at rest; see vendor/README.md): the cipher installed when
    // the journal file was opened seals every item entry (`Tag::SealedItem`).
    cipher: Option<std::sync::Arc<dyn lsm_tree::encryption::BlockCipher>>,
    sealed: Vec<u8>,
}

/// The persist mode allows setting the durability guarantee of previous writes
#[derive(Copy, Clone, Debug, Eq, PartialEq)]
pub enum PersistMode {
    /// Flushes data to OS buffers. This allows the OS to write out data in case of an
    /// application crash.
    ///
    /// When this function returns, data is **not** guaranteed to be persisted in case
    /// of a power loss event or OS crash.
    Buffer,

    /// Flushes data using `fdatasync`.
    ///
    /// Use if you know that `fdatasync` is sufficient for your file system and/or operating system.
    SyncData,

    /// Flushes data + metadata using `fsync`.
    SyncAll,
}

impl Writer {
    pub fn set_compression(&mut self, comp: CompressionType, threshold: usize) {
        self.compression = comp;
        self.compression_threshold = threshold;
    }

    pub fn pos(&mut self) -> crate::Result<u64> {
        self.file.stream_position().map_err(Into::into)
    }

    pub fn len(&self) -> crate::Result<u64> {
        Ok(self.file.get_ref().metadata()?.len())
    }

    pub fn rotate(&mut self) -> crate::Result<(PathBuf, PathBuf)> {
        self.persist(PersistMode::SyncAll)?;

        log::debug!(
            "Sealing active journal at {}, len={}B",
            self.path.display(),
            self.path
                .metadata()
                .inspect_err(|e| {
                    log::error!(
                        "Failed to get file metadata of journal file at {}: {e:?}",
                        self.path.display()
                    );
                })?
                .len(),
        );

        let prev_path = self.path.clone();

        let folder = self
            .path
            .parent()
            .expect("should have parent")
            .to_path_buf();

        let Some(basename) = self
            .path
            .file_name()
            .expect("should be valid file name")
            .to_str()
            .expect("should be valid utf-8")
            .strip_suffix(".jnl")
        else {
            log::error!("Invalid journal file name: {}", self.path.display());
            return Err(crate::Error::JournalRecovery(
                crate::JournalRecoveryError::InvalidFileName,
            ));
        };

        let journal_id = basename.parse::<JournalId>().map_err(|_| {
            log::error!("Invalid journal file name: {}", self.path.display());
            crate::Error::JournalRecovery(crate::JournalRecoveryError::InvalidFileName)
        })?;

        let new_path = folder.join(format!("{}.jnl", journal_id + 1));
        log::debug!("Rotating active journal to {}", new_path.display());

        let comp = self.compression;
        let compt = self.compression_threshold;
        *self = Self::create_new(new_path.clone())?;
        self.set_compression(comp, compt);

        // IMPORTANT: fsync folder on Unix
        fsync_directory(&folder)?;

        Ok((prev_path, new_path))
    }

    pub fn create_new<P: Into<PathBuf>>(path: P) -> crate::Result<Self> {
        let path = path.into();

        let file = File::create_new(&path).inspect_err(|e| {
            log::error!("Failed to create journal file at {}: {e:?}", path.display());
        })?;

        file.set_len(PRE_ALLOCATED_BYTES).inspect_err(|e| {
            log::error!(
                "Failed to set journal file size to {PRE_ALLOCATED_BYTES}B at {}: {e:?}",
                path.display(),
            );
        })?;

        file.sync_all().inspect_err(|e| {
            log::error!("Failed to fsync journal file at {}: {e:?}", path.display());
        })?;

        Ok(Self {
            path,
            file: BufWriter::new(file),
            buf: Vec::new(),
            is_buffer_dirty: false,
            compression: CompressionType::None,
            compression_threshold: 0,
            cipher: lsm_tree::encryption::cipher(),
            sealed: Vec::new(),
        })
    }

    pub fn from_file<P: AsRef<Path>>(path: P) -> crate::Result<Self> {
        let path = path.as_ref();

        if !path.try_exists()? {
            let file = OpenOptions::new()
                .create_new(true)
                .write(true)
                .open(path)
                .inspect_err(|e| {
                    log::error!("Failed to create journal file at {}: {e:?}", path.display());
                })?;

            file.set_len(PRE_ALLOCATED_BYTES).inspect_err(|e| {
                log::error!(
                    "Failed to set journal file size to {PRE_ALLOCATED_BYTES}B at {}: {e:?}",
                    path.display(),
                );
            })?;

            file.sync_all().inspect_err(|e| {
                log::error!("Failed to fsync journal file at {}: {e:?}", path.display());
            })?;

            return Ok(Self {
                path: path.into(),
                file: BufWriter::with_capacity(JOURNAL_BUFFER_BYTES, file),
                buf: Vec::new(),
                is_buffer_dirty: false,
                compression: CompressionType::None,
                compression_threshold: 0,
                cipher: lsm_tree::encryption::cipher(),
                sealed: Vec::new(),
            });
        }

        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .inspect_err(|e| {
                log::error!("Failed to open journal file at {}: {e:?}", path.display());
            })?;

        Ok(Self {
            path: path.into(),
            file: BufWriter::with_capacity(JOURNAL_BUFFER_BYTES, file),
            buf: Vec::new(),
            is_buffer_dirty: false,
            compression: CompressionType::None,
            compression_threshold: 0,
            cipher: lsm_tree::encryption::cipher(),
            sealed: Vec::new(),
        })
    }

    // PATCH (Peregrine, fsync outside the journal lock; see vendor/README.md)
    /// Writes the buffered bytes to the OS and returns a second handle to the journal file, to
    /// be synced once the journal lock is released: every writer waits for that lock, and an
    /// fsync held under it (tens to hundreds of ms under a write load) stalled them all.
    pub(crate) fn flush_for_sync(&mut self) -> std::io::Result<File> {
        self.flush_buffer()?;
        self.file.get_ref().try_clone()
    }

    /// Writes the buffered bytes to the OS (PATCH: shared by `persist` and `flush_for_sync`).
    fn flush_buffer(&mut self) -> std::io::Result<()> {
        if self.is_buffer_dirty {
            self.file.flush().inspect_err(|e| {
                log::error!(
                    "Failed to flush journal IO buffers at {}: {e:?}",
                    self.path.display(),
                );
            })?;
            self.is_buffer_dirty = false;
        }
        Ok(())
    }

    /// Persists the journal file.
    pub(crate) fn persist(&mut self, mode: PersistMode) -> std::io::Result<()> {
        log::trace!(
            "Persisting journal at {} with mode={mode:?}",
            self.path.display(),
        );

        self.flush_buffer()?;

        match mode {
            PersistMode::SyncAll => self.file.get_mut().sync_all().inspect_err(|e| {
                log::error!(
                    "Failed to fsync journal file at {}: {e:?}",
                    self.path.display(),
                );
            }),
            PersistMode::SyncData => self.file.get_mut().sync_data().inspect_err(|e| {
                log::error!(
                    "Failed to fsyncdata journal file at {}: {e:?}",
                    self.path.display(),
                );
            }),
            PersistMode::Buffer => Ok(()),
        }
    }

    /// Writes the item entry serialized in `self.buf` (sealed when a cipher is set) and adds
    /// the bytes written to `hasher`; returns their count (PATCH, see `cipher`).
    fn write_item_entry(
        &mut self,
        hasher: &mut xxhash_rust::xxh3::Xxh3,
    ) -> Result<usize, crate::Error> {
        let Some(cipher) = &self.cipher else {
            self.file.write_all(&self.buf)?;
            hasher.update(&self.buf);
            return Ok(self.buf.len());
        };
        self.sealed.clear();
        self.sealed.extend_from_slice(&[0; 5]);
        cipher
            .encrypt(&self.buf, &mut self.sealed)
            .map_err(|e| crate::Error::Storage(lsm_tree::Error::Encryption(e)))?;
        let len = u32::try_from(self.sealed.len() - 5).map_err(|_| {
            crate::Error::Storage(lsm_tree::Error::Encryption("journal item too large".into()))
        })?;
        self.sealed[0] = super::entry::Tag::SealedItem.into();
        #[expect(clippy::indexing_slicing)]
        self.sealed[1..5].copy_from_slice(&len.to_le_bytes());
        self.file.write_all(&self.sealed)?;
        hasher.update(&self.sealed);
        Ok(self.sealed.len())
    }

    /// Writes a batch start marker to the journal
    fn write_start(&mut self, item_count: u32, seqno: SeqNo) -> Result<usize, crate::Error> {
        debug_assert!(self.buf.is_empty());

        Entry::Start { item_count, seqno }.encode_into(&mut self.buf)?;

        self.file.write_all(&self.buf)?;

        Ok(self.buf.len())
    }

    /// Writes a batch end marker to the journal
    fn write_end(&mut self, checksum: u64) -> Result<usize, crate::Error> {
        debug_assert!(self.buf.is_empty());

        Entry::End(checksum).encode_into(&mut self.buf)?;

        self.file.write_all(&self.buf)?;

        Ok(self.buf.len())
    }

    pub(crate) fn write_raw(
        &mut self,
        keyspace_id: InternalKeyspaceId,
        key: &[u8],
        value: &[u8],
        value_type: ValueType,
        seqno: u64,
    ) -> crate::Result<usize> {
        self.is_buffer_dirty = true;

        let mut hasher = xxhash_rust::xxh3::Xxh3::default();
        let mut byte_count = 0;

        self.buf.clear();
        byte_count += self.write_start(1, seqno)?;
        self.buf.clear();

        let compression = self.compression_for(value.len());
        serialize_marker_item(
            &mut self.buf,
            keyspace_id,
            key,
            value,
            value_type,
            compression,
        )?;

        byte_count += self.write_item_entry(&mut hasher)?;

        self.buf.clear();
        let checksum = hasher.finish();
        byte_count += self.write_end(checksum)?;

        Ok(byte_count)
    }

    // PATCH (Peregrine, speed; see vendor/README.md): the compression of a journal item
    // whose value is `value_len` bytes, one rule for single items and batches (written
    // twice upstream, and a third time by the batch's cipher-less path).
    fn compression_for(&self, value_len: usize) -> CompressionType {
        if self.compression_threshold > 0 && value_len >= self.compression_threshold {
            self.compression
        } else {
            CompressionType::None
        }
    }

    pub(crate) fn write_clear(
        &mut self,
        keyspace_id: InternalKeyspaceId,
        seqno: SeqNo,
    ) -> crate::Result<usize> {
        self.is_buffer_dirty = true;

        let mut hasher = xxhash_rust::xxh3::Xxh3::default();
        let mut byte_count = 0;

        self.buf.clear();
        byte_count += self.write_start(1, seqno)?;
        self.buf.clear();

        Entry::Clear { keyspace_id }.encode_into(&mut self.buf)?;
        self.file.write_all(&self.buf)?;
        hasher.update(&self.buf);
        byte_count += self.buf.len();

        self.buf.clear();
        let checksum = hasher.finish();
        byte_count += self.write_end(checksum)?;

        Ok(byte_count)
    }

    // PATCH (Peregrine, speed; see vendor/README.md)
    /// [`Writer::write_batch`] for a commit that persists the journal right after it: the batch
    /// goes to the file in one `write`, past the `BufWriter` (whose copy of it would be written
    /// out at once by that persist anyway), after what the `BufWriter` still holds.
    pub(crate) fn write_batch_unbuffered<'a>(
        &mut self,
        items: impl Iterator<Item = &'a BatchItem>,
        batch_size: usize,
        seqno: SeqNo,
    ) -> crate::Result<usize> {
        if batch_size == 0 {
            return Ok(0);
        }
        if self.cipher.is_some() {
            return self.write_batch(items, batch_size, seqno);
        }
        self.flush_buffer()?;
        debug_assert!(self.file.buffer().is_empty());
        // NOTE: entries.len() is surely never > u32::MAX
        #[expect(clippy::cast_possible_truncation)]
        let item_count = batch_size as u32;
        self.write_batch_plain(items, item_count, seqno, true)
    }

    // PATCH (Peregrine, speed; see vendor/README.md)
    /// A batch without a cipher: its start, items and end serialized into `self.buf` (the
    /// items checksummed with one `xxh3_64` over their bytes) and written with one call, to
    /// the `BufWriter` or, `unbuffered`, to the file itself (the `BufWriter` then empty).
    fn write_batch_plain<'a>(
        &mut self,
        items: impl Iterator<Item = &'a BatchItem>,
        item_count: u32,
        seqno: SeqNo,
        unbuffered: bool,
    ) -> crate::Result<usize> {
        self.buf.clear();
        Entry::Start { item_count, seqno }.encode_into(&mut self.buf)?;
        let items_start = self.buf.len();
        for item in items {
            let compression = self.compression_for(item.value.len());
            serialize_marker_item(
                &mut self.buf,
                item.keyspace.id,
                &item.key,
                &item.value,
                item.value_type,
                compression,
            )?;
        }
        // PATCH (Peregrine, speed; see vendor/README.md): a batch past 240 bytes is hashed by
        // `twox-hash` (AVX2 chosen at run time), the same XXH3-64 digest.
        #[expect(clippy::indexing_slicing)]
        let checksum = lsm_tree::hash64_any(&self.buf[items_start..]);
        Entry::End(checksum).encode_into(&mut self.buf)?;
        if unbuffered {
            self.file.get_mut().write_all(&self.buf)?;
        } else {
            self.is_buffer_dirty = true;
            self.file.write_all(&self.buf)?;
        }
        let byte_count = self.buf.len();
        self.buf.clear();
        Ok(byte_count)
    }

    pub fn write_batch<'a>(
        &mut self,
        items: impl Iterator<Item = &'a BatchItem>,
        batch_size: usize,
        seqno: SeqNo,
    ) -> crate::Result<usize> {
        if batch_size == 0 {
            return Ok(0);
        }

        self.is_buffer_dirty = true;

        self.buf.clear();

        // NOTE: entries.len() is surely never > u32::MAX
        #[expect(clippy::cast_possible_truncation)]
        let item_count = batch_size as u32;

        // PATCH (Peregrine, speed; see vendor/README.md): without a cipher the items are
        // serialized one after another into the buffer, written at once and hashed in one
        // call (`xxh3_64` of the bytes equals the streaming hasher's digest of them), instead
        // of a streaming hasher (a 600-byte state set up and finished per batch) fed per item.
        if self.cipher.is_none() {
            return self.write_batch_plain(items, item_count, seqno, false);
        }

        let mut byte_count = 0;

        byte_count += self.write_start(item_count, seqno)?;
        self.buf.clear();

        let mut hasher = xxhash_rust::xxh3::Xxh3::default();

        for item in items {
            debug_assert!(self.buf.is_empty());

            let compression = self.compression_for(item.value.len());
            serialize_marker_item(
                &mut self.buf,
                item.keyspace.id,
                &item.key,
                &item.value,
                item.value_type,
                compression,
            )?;

            byte_count += self.write_item_entry(&mut hasher)?;

            self.buf.clear();
        }

        let checksum = hasher.finish();
        byte_count += self.write_end(checksum)?;

        Ok(byte_count)
    }
}
