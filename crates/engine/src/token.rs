//! Cassandra's `Murmur3Partitioner` token: MurmurHash3 x64_128 with Cassandra's quirk of
//! sign-extending the tail bytes (`(long) key.get(i)` in `MurmurHash.java`), first half of
//! the hash, `Long.MIN_VALUE` normalised to `Long.MAX_VALUE`.
//!
//! Byte-for-byte agreement with Cassandra is what makes `token()` in CQL, paging across
//! partitions and token-aware driver routing agree; `tests/vectors/murmur3_tokens.json`
//! (taken from a real Cassandra 5.0) pins it.

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

fn fmix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

fn block(data: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&data[i * 8..i * 8 + 8]);
    u64::from_le_bytes(b)
}

/// Sign-extended tail byte, as Java's `(long) byte` gives.
fn sx(b: u8) -> u64 {
    b as i8 as i64 as u64
}

/// Cassandra's MurmurHash.hash3_x64_128 with seed 0.
pub fn murmur3_x64_128(data: &[u8]) -> (u64, u64) {
    let len = data.len();
    let nblocks = len / 16;
    let (mut h1, mut h2) = (0u64, 0u64);
    for i in 0..nblocks {
        let mut k1 = block(data, i * 2);
        let mut k2 = block(data, i * 2 + 1);
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = &data[nblocks * 16..];
    let (mut k1, mut k2) = (0u64, 0u64);
    let rem = len & 15;
    if rem > 8 {
        for i in (8..rem).rev() {
            k2 ^= sx(tail[i]) << ((i - 8) * 8);
        }
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
    }
    if rem > 0 {
        for i in (0..rem.min(8)).rev() {
            k1 ^= sx(tail[i]) << (i * 8);
        }
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
    }
    h1 ^= len as u64;
    h2 ^= len as u64;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (h1, h2)
}

/// The Murmur3Partitioner token of a serialized partition key. An empty key (only a view's
/// partition key taken from a base clustering column can be empty) has the minimum token,
/// as in Cassandra, so it comes first in a scan.
pub fn token(partition_key: &[u8]) -> i64 {
    if partition_key.is_empty() {
        return i64::MIN;
    }
    let h = murmur3_x64_128(partition_key).0 as i64;
    if h == i64::MIN {
        i64::MAX
    } else {
        h
    }
}

/// Whether `token` lies within the token() bounds given beside a restriction of the whole
/// partition key (`k IN (1, 2) AND token(k) > 0`), as Cassandra 5.0.9's `TokenFilter` keeps
/// the keys named: each bound a token and whether it is inclusive. The minimum token is a
/// token like any other here (`token(k) <= -9223372036854775808` keeps no key); equal bounds
/// keep that token only when both are inclusive; a start after the end wraps around the ring
/// (`token(k) > 5 AND token(k) < 3` keeps every token but 3..=5), unlike a range read, where
/// such bounds read nothing.
pub(crate) fn in_key_token_filter(
    token: i64,
    start: Option<(i64, bool)>,
    end: Option<(i64, bool)>,
) -> bool {
    let after = |(s, inclusive): (i64, bool)| token > s || (inclusive && token == s);
    let before = |(e, inclusive): (i64, bool)| token < e || (inclusive && token == e);
    match (start, end) {
        (Some(s), Some(e)) if s.0 == e.0 => s.1 && e.1 && token == s.0,
        (Some(s), Some(e)) if s.0 > e.0 => after(s) || before(e),
        (s, e) => s.is_none_or(after) && e.is_none_or(before),
    }
}

/// Maps a token to an unsigned value with the same order, for storage keys.
pub fn token_to_ordered(t: i64) -> u64 {
    (t as u64) ^ (1 << 63)
}

/// A compound partition key's serialized form: for each component a u16 length,
/// the bytes, and a 0 end-of-component byte. A single-column key is just its bytes.
pub fn compose_partition_key(components: &[&[u8]]) -> Vec<u8> {
    if components.len() == 1 {
        return components[0].to_vec();
    }
    let mut out = Vec::with_capacity(components.iter().map(|c| c.len() + 3).sum());
    for c in components {
        out.extend_from_slice(&(c.len() as u16).to_be_bytes());
        out.extend_from_slice(c);
        out.push(0);
    }
    out
}

/// The components of a partition key, inline for up to four (a read splits its key once per
/// partition; most keys have one component).
pub type KeyParts<'a> = smallvec::SmallVec<[&'a [u8]; 4]>;

/// Splits a compound partition key back into its components.
pub fn split_partition_key(key: &[u8], n: usize) -> Option<KeyParts<'_>> {
    if n == 1 {
        return Some(smallvec::smallvec![key]);
    }
    let mut out = KeyParts::with_capacity(n);
    let mut rest = key;
    for _ in 0..n {
        if rest.len() < 2 {
            return None;
        }
        let len = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        if rest.len() < 2 + len + 1 {
            return None;
        }
        out.push(&rest[2..2 + len]);
        rest = &rest[3 + len..];
    }
    rest.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_token_filter_as_cassandra() {
        let f = in_key_token_filter;
        assert!(f(3, Some((0, false)), None));
        assert!(!f(0, Some((0, false)), None));
        assert!(f(0, Some((0, true)), Some((0, true))));
        assert!(!f(0, Some((0, true)), Some((0, false))));
        // A start after the end wraps around the ring.
        assert!(f(-7, Some((5, false)), Some((3, false))));
        assert!(f(9, Some((5, false)), Some((3, false))));
        assert!(!f(4, Some((5, false)), Some((3, false))));
        // The minimum token is no special bound here.
        assert!(!f(-3, None, Some((i64::MIN, true))));
        assert!(f(-3, Some((i64::MIN, false)), None));
    }

    #[test]
    fn known_cassandra_tokens() {
        // Widely published Murmur3Partitioner tokens (e.g. Cassandra docs and tests).
        assert_eq!(token(&1i32.to_be_bytes()), -4069959284402364209);
        assert_eq!(token(&2i32.to_be_bytes()), -3248873570005575792);
        // Murmur3Partitioner.getToken: an empty key has the minimum token.
        assert_eq!(token(b""), i64::MIN);
    }

    #[test]
    fn compound_keys_round_trip() {
        let k = compose_partition_key(&[b"ab", &[1, 2, 3]]);
        assert_eq!(k, vec![0, 2, b'a', b'b', 0, 0, 3, 1, 2, 3, 0]);
        let parts = split_partition_key(&k, 2).unwrap();
        assert_eq!(parts[..], [&b"ab"[..], &[1, 2, 3][..]]);
        assert!(split_partition_key(&k[..5], 2).is_none());
    }

    #[test]
    fn ordered_token_preserves_order() {
        let ts = [i64::MIN, -5, 0, 7, i64::MAX];
        for w in ts.windows(2) {
            assert!(token_to_ordered(w[0]) < token_to_ordered(w[1]));
        }
    }
}
