//! Calendar helpers of the time functions: a timestamp, date or timeuuid as milliseconds since
//! the epoch, a day count in `date`'s wire form, a `duration` value's parts, and `floor` over
//! timestamps, dates and times (`TimeFcts`, `Duration.floorTimestamp` / `floorTime`).

use proto::types::{ColumnType, Value};
use proto::value::decode_value;

use super::format_duration;
use super::uuid::timeuuid_millis;
use crate::temporal::{add_months, year_month};

pub(super) const MILLIS_PER_DAY: i64 = 86_400_000;
pub(super) const NANOS_PER_MILLI: i64 = 1_000_000;
const NANOS_PER_DAY: i64 = 86_400_000_000_000;
/// `date` values are days since the epoch offset by 2^31 (the wire form).
pub(super) const DATE_EPOCH: i64 = 1 << 31;

pub(super) fn i64_of(b: &[u8]) -> Result<i64, String> {
    let a: [u8; 8] = b
        .try_into()
        .map_err(|_| format!("Expected 8 or 0 byte long ({})", b.len()))?;
    Ok(i64::from_be_bytes(a))
}

/// Milliseconds since the epoch of a timestamp, date, timeuuid (or bigint) value.
pub(super) fn millis_of(ty: &ColumnType, b: &[u8]) -> Result<i64, String> {
    match ty {
        ColumnType::Date => {
            let a: [u8; 4] = b
                .try_into()
                .map_err(|_| format!("Expected 4 byte long for date ({})", b.len()))?;
            Ok((i64::from(u32::from_be_bytes(a)) - DATE_EPOCH) * MILLIS_PER_DAY)
        }
        ColumnType::Timeuuid => timeuuid_millis(b),
        _ => i64_of(b),
    }
}

/// `SimpleDateSerializer.timeInMillisToDay`: whole days, truncated toward zero (a timestamp of
/// -1 ms is 1970-01-01 there too).
pub(super) fn date_from_millis(ms: i64) -> [u8; 4] {
    let days = ms / MILLIS_PER_DAY + DATE_EPOCH;
    (days.clamp(0, u32::MAX as i64) as u32).to_be_bytes()
}

pub(crate) fn duration_of(b: &[u8]) -> Result<(i32, i32, i64), String> {
    match decode_value(&ColumnType::Duration, b).map_err(|e| e.to_string())? {
        Value::Duration {
            months,
            days,
            nanos,
        } => Ok((months, days, nanos)),
        _ => Err("Invalid duration value".into()),
    }
}

/// `TimeFcts` floor functions (Duration.floorTimestamp / floorTime).
pub(super) fn floor(arg0: &ColumnType, vals: &[&[u8]]) -> Result<Vec<u8>, String> {
    let (months, days, nanos) = duration_of(vals[1])?;
    let dur = format_duration(months, days, nanos);
    if months < 0 || days < 0 || nanos < 0 {
        return Err("Negative durations are not supported by the floor function".into());
    }
    match arg0 {
        ColumnType::Time => {
            if months != 0 || days != 0 || nanos > NANOS_PER_DAY {
                return Err("For time values, the floor can only be computed for durations smaller that a day".into());
            }
            let t = i64_of(vals[0])?;
            let out = if nanos == 0 { t } else { t - t % nanos };
            Ok(out.to_be_bytes().to_vec())
        }
        ColumnType::Date => {
            if nanos != 0 {
                return Err(format!("The floor on date values cannot be computed for the {dur} duration as precision is below 1 day"));
            }
            let t = millis_of(arg0, vals[0])?;
            let start = match vals.get(2) {
                Some(s) => millis_of(arg0, s)?,
                None => 0,
            };
            let ms = floor_timestamp(t, months, days, nanos, start)?;
            Ok(date_from_millis(ms).to_vec())
        }
        _ => {
            if nanos % NANOS_PER_MILLI != 0 {
                return Err(format!("The floor cannot be computed for the {dur} duration as precision is below 1 millisecond"));
            }
            let t = millis_of(arg0, vals[0])?;
            let start = match vals.get(2) {
                Some(s) => i64_of(s)?,
                None => 0,
            };
            Ok(floor_timestamp(t, months, days, nanos, start)?
                .to_be_bytes()
                .to_vec())
        }
    }
}

fn floor_timestamp(t: i64, months: i32, days: i32, nanos: i64, start: i64) -> Result<i64, String> {
    if start > t {
        return Err("The floor function starting time is greater than the provided time".into());
    }
    let dur_ms = i64::from(days)
        .saturating_mul(MILLIS_PER_DAY)
        .saturating_add(nanos / NANOS_PER_MILLI);
    if months == 0 {
        if dur_ms == 0 {
            return Ok(t);
        }
        return Ok(t - (t.wrapping_sub(start)) % dur_ms);
    }
    let (y, m) = year_month(t);
    let (sy, sm) = year_month(start);
    let in_months = (y - sy) * 12 + (m - sm);
    let mut multiplier = in_months / i64::from(months);
    let mut cal = add_months(start, multiplier * i64::from(months));
    if days == 0 && nanos == 0 {
        return Ok(cal);
    }
    let mut floor = cal.saturating_add(multiplier.saturating_mul(dur_ms));
    while floor > t && multiplier > 0 {
        multiplier -= 1;
        cal = add_months(cal, -i64::from(months));
        floor = cal.saturating_add(multiplier.saturating_mul(dur_ms));
    }
    Ok(start.max(floor))
}
