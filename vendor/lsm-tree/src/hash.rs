/// Generates a 64-bit hash using xxh3.
pub fn hash64(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Generates a 128-bit hash using xxh3.
///
/// PATCH (Peregrine, speed; see vendor/README.md): inputs past xxh3's short paths (240
/// bytes: every data block) go to `twox-hash`, which picks AVX2 at run time; `xxhash-rust`
/// picks its vector code at compile time (SSE2 in a portable build) and runs twice the
/// instructions over a block. Same digest (both are XXH3-128; tested below).
pub fn hash128(bytes: &[u8]) -> u128 {
    if bytes.len() > XXH3_MIDSIZE_MAX {
        twox_hash::XxHash3_128::oneshot(bytes)
    } else {
        xxhash_rust::xxh3::xxh3_128(bytes)
    }
}

/// xxh3's largest input hashed without its stripe loop (PATCH, see `hash128`).
const XXH3_MIDSIZE_MAX: usize = 240;

/// [`hash64`] for inputs of any length, those past 240 bytes by `twox-hash` (PATCH, see
/// `hash128`): fjall's journal checksums each batch with it.
#[doc(hidden)]
#[must_use]
pub fn hash64_any(bytes: &[u8]) -> u64 {
    if bytes.len() > XXH3_MIDSIZE_MAX {
        twox_hash::XxHash3_64::oneshot(bytes)
    } else {
        xxhash_rust::xxh3::xxh3_64(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_log::test;

    #[test]
    fn test_hash64() {
        assert_eq!(16_959_823_422_411_450_475, hash64(&[0, 0, 0]));
        assert_eq!(8_004_557_073_989_523_290, hash64(&[0, 0, 1]));
    }

    /// PATCH (Peregrine, speed): the digests of `twox-hash` (long inputs, AVX2 where the CPU
    /// has it) are `xxhash-rust`'s, at every length around xxh3's path boundaries and the
    /// stripe and block sizes, one-shot and streamed in uneven pieces.
    #[test]
    #[expect(clippy::indexing_slicing, clippy::cast_possible_truncation)]
    fn long_inputs_hash_as_xxhash_rust_does() -> std::io::Result<()> {
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let data: Vec<u8> = (0..20_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let lengths = (0..=1_100).chain([1_024, 4_095, 4_096, 4_097, 4_200, 8_192, 16_411, 20_000]);
        for len in lengths {
            let input = &data[..len];
            assert_eq!(hash128(input), xxhash_rust::xxh3::xxh3_128(input), "{len}");
            assert_eq!(
                hash64_any(input),
                xxhash_rust::xxh3::xxh3_64(input),
                "{len}"
            );
            let mut w = crate::checksum::ChecksummedWriter::new(std::io::sink());
            for piece in input.chunks(1 + len % 97) {
                std::io::Write::write_all(&mut w, piece)?;
            }
            assert_eq!(
                w.checksum().into_u128(),
                xxhash_rust::xxh3::xxh3_128(input),
                "{len} streamed"
            );
        }
        Ok(())
    }

    #[test]
    fn test_hash128() {
        assert_eq!(
            321_827_061_816_535_117_015_859_907_874_601_773_163,
            hash128(&[0, 0, 0])
        );
        assert_eq!(
            154_036_699_985_066_753_773_347_827_765_470_844_762,
            hash128(&[0, 0, 1])
        );
    }
}
