// PATCH (Peregrine, encryption at rest; see vendor/README.md): not in upstream lsm-tree.

//! Encryption of blocks at rest.
//!
//! A [`BlockCipher`] installed with [`set_cipher`] seals every block a table (or a blob
//! file's meta) writes from then on, after compression: data, index, filter and meta blocks
//! alike. A sealed block is marked by [`ENCRYPTED_FLAG`] in its header's block-type byte, so
//! plain blocks written before a cipher was installed stay readable, and a sealed block read
//! without a cipher fails with [`crate::Error::Encryption`] instead of being decoded as
//! garbage. The block checksum covers the sealed bytes (integrity is checkable without the
//! key); the cipher's own authentication tag covers the plaintext.
//!
//! The cipher is process-wide rather than per tree: threading it through every block reader
//! (tables, block indexes, scanners, iterators) would touch dozens of signatures, and the one
//! user of this patch opens one key set per process. It is read under a lock only where a
//! block is written and where a sealed block is read from disk (never on a block-cache hit,
//! never for a plain block).

use std::sync::{Arc, RwLock};

/// Seals and opens byte buffers (an AEAD with its key set).
///
/// The sealed form is the cipher's own business (typically a key id, a nonce, the ciphertext
/// and its tag), so rotation and the choice of algorithm stay outside this crate.
pub trait BlockCipher: Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe {
    /// Appends the sealed form of `plain` to `out`.
    ///
    /// # Errors
    /// Why it cannot be sealed (the cipher failed).
    fn encrypt(&self, plain: &[u8], out: &mut Vec<u8>) -> Result<(), String>;

    /// Opens `sealed` where it lies: on success the plaintext is `sealed[range]` for the range
    /// returned (the cipher's header and tag around it are left as they were or overwritten).
    /// This is what a block read uses: no buffer is allocated or copied besides the one read
    /// from disk.
    ///
    /// # Errors
    /// Why it cannot be opened: a key it names is unknown, or authentication failed. The bytes
    /// of `sealed` are then unspecified.
    fn decrypt_in_place(&self, sealed: &mut [u8]) -> Result<std::ops::Range<usize>, String>;

    /// The plaintext of `sealed`, in a buffer of its own.
    ///
    /// # Errors
    /// As [`BlockCipher::decrypt_in_place`].
    fn decrypt(&self, sealed: &[u8]) -> Result<Vec<u8>, String> {
        let mut buf = sealed.to_vec();
        let range = self.decrypt_in_place(&mut buf)?;
        buf.truncate(range.end);
        buf.drain(..range.start);
        Ok(buf)
    }
}

/// The bit set in a block header's block-type byte when the block's data is sealed.
pub const ENCRYPTED_FLAG: u8 = 0x80;

static CIPHER: RwLock<Option<Arc<dyn BlockCipher>>> = RwLock::new(None);

/// Installs (or with `None` removes) the cipher that seals blocks written from now on and opens
/// sealed blocks read from now on. Install it before opening a tree.
pub fn set_cipher(cipher: Option<Arc<dyn BlockCipher>>) {
    *CIPHER.write().unwrap_or_else(std::sync::PoisonError::into_inner) = cipher;
}

/// The installed cipher, if any.
#[must_use]
pub fn cipher() -> Option<Arc<dyn BlockCipher>> {
    CIPHER
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Opens a sealed block's data in place with the installed cipher: the plaintext is
/// `sealed[range]` for the range returned.
pub(crate) fn open_sealed_in_place(sealed: &mut [u8]) -> crate::Result<std::ops::Range<usize>> {
    let Some(cipher) = cipher() else {
        return Err(crate::Error::Encryption(
            "the block is encrypted and no encryption key is configured".into(),
        ));
    };
    let range = cipher
        .decrypt_in_place(sealed)
        .map_err(crate::Error::Encryption)?;
    if range.start > range.end || range.end > sealed.len() {
        return Err(crate::Error::Encryption(
            "the cipher answered a plaintext range outside the block".into(),
        ));
    }
    Ok(range)
}
