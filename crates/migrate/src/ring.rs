//! The Murmur3 token ring split into contiguous ranges.
//!
//! Cassandra's Murmur3Partitioner gives every partition a token in `(i64::MIN, i64::MAX]`
//! (it never produces `i64::MIN`), so ranges `(start, end]` with the first starting at
//! `i64::MIN` and the last ending at `i64::MAX` cover every partition exactly once. A
//! partition lies wholly in one range, which is what makes a range the unit of copying,
//! resuming and verifying.

use std::fmt;

/// The tokens `t` with `start < t <= end`: `WHERE token(pk) > start AND token(pk) <= end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenRange {
    pub start: i64,
    pub end: i64,
}

impl fmt::Display for TokenRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}]", self.start, self.end)
    }
}

/// The whole ring split into `n` ranges of (nearly) equal width, in token order. `n` is at
/// least 1; the widths differ by at most one token.
pub fn split(n: u32) -> Vec<TokenRange> {
    let n = i128::from(n.max(1));
    let lo = i128::from(i64::MIN);
    let width = i128::from(i64::MAX) - lo; // the number of tokens in (MIN, MAX]
    (0..n)
        .map(|i| TokenRange {
            start: bound(lo + width * i / n),
            end: bound(lo + width * (i + 1) / n),
        })
        .collect()
}

fn bound(t: i128) -> i64 {
    i64::try_from(t).expect("a split point lies on the ring")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_range_is_the_whole_ring() {
        assert_eq!(
            split(1),
            vec![TokenRange {
                start: i64::MIN,
                end: i64::MAX
            }]
        );
        assert_eq!(split(0), split(1));
    }

    #[test]
    fn ranges_are_contiguous_and_cover_the_ring() {
        for n in [2, 3, 4, 7, 16, 1000] {
            let r = split(n);
            assert_eq!(r.len(), n as usize);
            assert_eq!(r[0].start, i64::MIN);
            assert_eq!(r.last().unwrap().end, i64::MAX);
            for w in r.windows(2) {
                assert_eq!(w[0].end, w[1].start, "gap or overlap in {n} ranges");
            }
            let widths: Vec<i128> = r
                .iter()
                .map(|x| i128::from(x.end) - i128::from(x.start))
                .collect();
            let (min, max) = (widths.iter().min().unwrap(), widths.iter().max().unwrap());
            assert!(max - min <= 1, "uneven split of {n}: {min}..{max}");
        }
    }

    #[test]
    fn two_ranges_meet_near_zero() {
        let r = split(2);
        assert_eq!(r[0].end, -1);
        assert_eq!(r[1].start, -1);
    }
}
