//! The deterministic-enough native functions that can appear as terms: `now()`, `uuid()`,
//! `currentTimestamp()` and friends, `toTimestamp(now())`. Evaluated when the statement runs.

use crate::EngineError;
use cql::ast::Term;
use proto::types::ColumnType;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static CLOCK_SEQ: AtomicU64 = AtomicU64::new(0);

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// A version 1 (time-based) UUID for now, unique within this process.
pub fn timeuuid_now() -> [u8; 16] {
    // 100 ns intervals since 1582-10-15.
    let seq = CLOCK_SEQ.fetch_add(1, Ordering::Relaxed);
    let t = (now_micros() as u64) * 10 + 0x01B2_1DD2_1381_4000 + (seq % 10);
    let mut u = [0u8; 16];
    u[0..4].copy_from_slice(&((t & 0xFFFF_FFFF) as u32).to_be_bytes());
    u[4..6].copy_from_slice(&(((t >> 32) & 0xFFFF) as u16).to_be_bytes());
    u[6..8].copy_from_slice(&((((t >> 48) & 0x0FFF) as u16) | 0x1000).to_be_bytes());
    let clock = (seq >> 4) as u16 & 0x3FFF | 0x8000;
    u[8..10].copy_from_slice(&clock.to_be_bytes());
    u[10..16].copy_from_slice(&[0x02, 0x50, 0x52, 0x47, 0x4e, 0x45]);
    u
}

pub fn random_uuid() -> [u8; 16] {
    // Seeded from the clock and a counter through splitmix64; v4 layout.
    let mut x = now_micros() as u64 ^ CLOCK_SEQ.fetch_add(1, Ordering::Relaxed).rotate_left(32);
    let mut next = || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut u = [0u8; 16];
    u[0..8].copy_from_slice(&next().to_be_bytes());
    u[8..16].copy_from_slice(&next().to_be_bytes());
    u[6] = (u[6] & 0x0F) | 0x40;
    u[8] = (u[8] & 0x3F) | 0x80;
    u
}

/// Milliseconds of a version 1 UUID's timestamp.
pub fn timeuuid_millis(u: &[u8]) -> Option<i64> {
    if u.len() != 16 {
        return None;
    }
    let t = ((u[6] as u64 & 0x0F) << 56)
        | ((u[7] as u64) << 48)
        | ((u[4] as u64) << 40)
        | ((u[5] as u64) << 32)
        | u32::from_be_bytes([u[0], u[1], u[2], u[3]]) as u64;
    Some(((t as i64) - 0x01B2_1DD2_1381_4000) / 10_000)
}

/// Evaluates a function term for a receiver of type `ty`.
pub fn call_const(
    ty: &ColumnType,
    name: &str,
    args: &[Term],
) -> Result<Option<Vec<u8>>, EngineError> {
    let lname = name.to_ascii_lowercase();
    let v: Vec<u8> = match (lname.as_str(), args) {
        ("now", []) => timeuuid_now().to_vec(),
        ("uuid", []) => random_uuid().to_vec(),
        ("currenttimestamp", []) => (now_micros() / 1000).to_be_bytes().to_vec(),
        ("currenttimeuuid", []) => timeuuid_now().to_vec(),
        ("currentdate", []) => {
            let days = now_micros().div_euclid(86_400_000_000);
            ((days + (1i64 << 31)) as u32).to_be_bytes().to_vec()
        }
        ("currenttime", []) => (now_micros().rem_euclid(86_400_000_000) * 1000)
            .to_be_bytes()
            .to_vec(),
        ("totimestamp" | "tounixtimestamp", [arg]) => {
            let inner = crate::literal::const_term(&ColumnType::Timeuuid, arg)?
                .ok_or_else(|| EngineError::invalid("null argument to toTimestamp"))?;
            let ms =
                timeuuid_millis(&inner).ok_or_else(|| EngineError::invalid("Invalid timeuuid"))?;
            ms.to_be_bytes().to_vec()
        }
        _ => {
            return Err(EngineError::invalid(format!(
                "Unknown function {name} called with {} arguments",
                args.len()
            )))
        }
    };
    let ok = match lname.as_str() {
        "now" | "currenttimeuuid" => matches!(ty, ColumnType::Timeuuid | ColumnType::Uuid),
        "uuid" => matches!(ty, ColumnType::Uuid),
        "currenttimestamp" | "totimestamp" => matches!(ty, ColumnType::Timestamp),
        "tounixtimestamp" => matches!(ty, ColumnType::Bigint),
        "currentdate" => matches!(ty, ColumnType::Date),
        "currenttime" => matches!(ty, ColumnType::Time),
        _ => false,
    };
    if !ok {
        return Err(EngineError::invalid(format!(
            "Type error: {name}() cannot be passed as argument of type {}",
            crate::types::cql_type_name(ty)
        )));
    }
    Ok(Some(v))
}
