//! Time-based (version 1) and random (version 4) UUIDs: the 100 ns timestamp inside a timeuuid,
//! the smallest and largest timeuuid of a millisecond (`minTimeuuid` / `maxTimeuuid`), and fresh
//! ones for `now()` and `uuid()` made from the clock the caller passes in.

/// 100 ns intervals between 1582-10-15 (the UUID epoch) and 1970-01-01.
const UUID_EPOCH_OFFSET: i64 = 0x01B2_1DD2_1381_4000;

fn uuid_time(b: &[u8]) -> Result<i64, String> {
    if b.len() != 16 {
        return Err(format!("UUID should be 16 or 0 bytes ({})", b.len()));
    }
    if b[6] >> 4 != 1 {
        return Err("Invalid version for TimeUUID type.".into());
    }
    let t = (u64::from(b[6] & 0x0f) << 56)
        | (u64::from(b[7]) << 48)
        | (u64::from(b[4]) << 40)
        | (u64::from(b[5]) << 32)
        | u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    Ok(t as i64)
}

/// `TimeUUID.unixTimestamp`: the 100 ns count cut to microseconds, moved to the Unix epoch, then
/// cut to milliseconds toward zero (Java's division), so a time before 1970 rounds up:
/// 1605-12-21 18:20:39.8999 reads .900, as Cassandra 5.0.9 reads it (seed 63, `CAST(pk0 AS
/// timestamp)`).
pub(crate) fn timeuuid_millis(b: &[u8]) -> Result<i64, String> {
    Ok((uuid_time(b)? / 10 - UUID_EPOCH_OFFSET / 10) / 1000)
}

fn uuid_from_time(t: i64, lsb: u64) -> [u8; 16] {
    let t = t as u64;
    let mut u = [0u8; 16];
    u[0..4].copy_from_slice(&((t & 0xFFFF_FFFF) as u32).to_be_bytes());
    u[4..6].copy_from_slice(&(((t >> 32) & 0xFFFF) as u16).to_be_bytes());
    u[6..8].copy_from_slice(&((((t >> 48) & 0x0FFF) as u16) | 0x1000).to_be_bytes());
    u[8..16].copy_from_slice(&lsb.to_be_bytes());
    u
}

/// `minTimeuuid` / `maxTimeuuid`: the smallest / largest timeuuid of that millisecond, with
/// Cassandra's fixed clock-and-node bytes (0x80.. for min, 0x7f.. for max).
pub(super) fn timeuuid_bound(ms: i64, max: bool) -> [u8; 16] {
    if max {
        let t = ms
            .saturating_add(1)
            .saturating_mul(10_000)
            .saturating_sub(1)
            .saturating_add(UUID_EPOCH_OFFSET);
        uuid_from_time(t, 0x7f7f_7f7f_7f7f_7f7f)
    } else {
        let t = ms.saturating_mul(10_000).saturating_add(UUID_EPOCH_OFFSET);
        uuid_from_time(t, 0x8080_8080_8080_8080)
    }
}

static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn random_u64(now_micros: i64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i64(now_micros);
    h.write_u64(SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.finish()
}

/// A version 1 UUID for `now_micros`; the low bits of the 100 ns count and the clock sequence
/// come from a process-wide counter so two calls in one microsecond still differ.
pub(crate) fn timeuuid_now(now_micros: i64) -> [u8; 16] {
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = now_micros
        .saturating_mul(10)
        .saturating_add(UUID_EPOCH_OFFSET)
        .saturating_add((seq % 10) as i64);
    let clock = ((seq >> 4) & 0x3FFF) | 0x8000;
    let node = random_u64(0) & 0xFFFF_FFFF_FFFF | 0x0100_0000_0000;
    uuid_from_time(t, (clock << 48) | node)
}

pub(crate) fn random_uuid(now_micros: i64) -> [u8; 16] {
    let mut u = [0u8; 16];
    u[0..8].copy_from_slice(&random_u64(now_micros).to_be_bytes());
    u[8..16].copy_from_slice(&random_u64(now_micros ^ 0x5555).to_be_bytes());
    u[6] = (u[6] & 0x0F) | 0x40;
    u[8] = (u[8] & 0x3F) | 0x80;
    u
}
