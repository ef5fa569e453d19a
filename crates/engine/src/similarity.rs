//! Vector similarity as Cassandra 5.0 computes it: the CQL functions `similarity_cosine`,
//! `similarity_euclidean` and `similarity_dot_product` (Cassandra's `VectorFcts`), and the
//! scores the vector index ranks by (`vector_index`).
//!
//! Cassandra 5.0.9 evaluates these with jvector 1.0.2's scalar `DefaultVectorUtilSupport`
//! (Java 17 has no Panama vector path there). Float addition is not associative, so the
//! summation order below is that code's, read off its bytecode, which makes results equal to
//! Cassandra's bit for bit rather than merely close:
//! - dot product: the `len % 8` leading elements one by one, then blocks of 32 as four sums of
//!   8 products each added to the total, then blocks of 8;
//! - squared distance: blocks of 8 summed then added, then the tail one by one;
//! - cosine: one pass of f32 sums, the division done in f64.
//!
//! Scores map into [0, 1]-ish ranges as jvector's `VectorSimilarityFunction` does:
//! cosine `(1 + cos) / 2`, euclidean `1 / (1 + d²)`, dot product `(1 + a·b) / 2` (not clamped).
//! Cosine refuses an all-zero vector (Cassandra: "doesn't support all-zero vectors").

use proto::types::ColumnType;

/// The three similarity functions Cassandra knows (also the SAI `similarity_function` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Similarity {
    Cosine,
    Euclidean,
    DotProduct,
}

impl Similarity {
    /// The function a CQL name stands for (`similarity_cosine`, case-insensitive).
    pub fn from_function(name: &str) -> Option<Similarity> {
        match name.to_ascii_lowercase().as_str() {
            "similarity_cosine" => Some(Similarity::Cosine),
            "similarity_euclidean" => Some(Similarity::Euclidean),
            "similarity_dot_product" => Some(Similarity::DotProduct),
            _ => None,
        }
    }

    /// The SAI option value (`COSINE`, `EUCLIDEAN`, `DOT_PRODUCT`, case-insensitive).
    pub fn from_option(value: &str) -> Option<Similarity> {
        match value.to_ascii_uppercase().as_str() {
            "COSINE" => Some(Similarity::Cosine),
            "EUCLIDEAN" => Some(Similarity::Euclidean),
            "DOT_PRODUCT" => Some(Similarity::DotProduct),
            _ => None,
        }
    }

    /// The CQL function name.
    pub fn function_name(self) -> &'static str {
        match self {
            Similarity::Cosine => "similarity_cosine",
            Similarity::Euclidean => "similarity_euclidean",
            Similarity::DotProduct => "similarity_dot_product",
        }
    }

    /// The score of two vectors of one length, higher is more similar, as Cassandra returns
    /// it. Cosine of an all-zero vector has no value: callers refuse it (see [`score_checked`]).
    pub fn score(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Similarity::Cosine => (1.0 + cosine(a, b)) / 2.0,
            Similarity::Euclidean => 1.0 / (1.0 + square_distance(a, b)),
            Similarity::DotProduct => (1.0 + dot_product(a, b)) / 2.0,
        }
    }
}

/// [`Similarity::score`] with Cassandra's refusal of all-zero vectors for cosine.
pub fn score_checked(f: Similarity, a: &[f32], b: &[f32]) -> Result<f32, String> {
    let zero = |v: &[f32]| v.iter().all(|x| *x == 0.0);
    if f == Similarity::Cosine && (zero(a) || zero(b)) {
        return Err(format!(
            "Function system.{} doesn't support all-zero vectors.",
            f.function_name()
        ));
    }
    Ok(f.score(a, b))
}

fn sum8(a: &[f32], b: &[f32], at: usize) -> f32 {
    let mut s = a[at] * b[at];
    for k in 1..8 {
        s += a[at + k] * b[at + k];
    }
    s
}

/// `a · b` in jvector's summation order.
pub fn dot_product(a: &[f32], b: &[f32]) -> f32 {
    let len = a.len().min(b.len());
    let mut res = 0f32;
    let mut i = 0;
    while i < len % 8 {
        res += b[i] * a[i];
        i += 1;
    }
    if len < 8 {
        return res;
    }
    while i + 31 < len {
        res += sum8(a, b, i);
        res += sum8(a, b, i + 8);
        res += sum8(a, b, i + 16);
        res += sum8(a, b, i + 24);
        i += 32;
    }
    while i + 7 < len {
        res += sum8(a, b, i);
        i += 8;
    }
    res
}

/// `|a - b|²` in jvector's summation order.
pub fn square_distance(a: &[f32], b: &[f32]) -> f32 {
    let len = a.len().min(b.len());
    let mut res = 0f32;
    let mut i = 0;
    while i + 8 <= len {
        let d = |k: usize| a[i + k] - b[i + k];
        let mut s = d(0) * d(0);
        for k in 1..8 {
            s += d(k) * d(k);
        }
        res += s;
        i += 8;
    }
    while i < len {
        let d = a[i] - b[i];
        res += d * d;
        i += 1;
    }
    res
}

/// Cosine of the angle between `a` and `b` (NaN for a zero vector).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    cosine_of(dot, na, nb)
}

/// Cosine from the dot product and both sums of squares, the division in f64 as jvector does.
fn cosine_of(dot: f32, na: f32, nb: f32) -> f32 {
    (f64::from(dot) / (f64::from(na) * f64::from(nb)).sqrt()) as f32
}

/// One query vector scored against many stored ones (an ANN query's re-rank): the same bits
/// as [`Similarity::score`]`(stored, query)`, but under cosine the query's sum of squares is
/// summed once rather than per candidate (each vector's sum is its own sequential f32 sum,
/// so hoisting it changes no bit), and the stored vector is read from its serialized bytes
/// without being copied out.
pub struct QueryScorer {
    similarity: Similarity,
    query: Vec<f32>,
    /// `Σ q²` in [`cosine`]'s order.
    query_squares: f32,
}

impl QueryScorer {
    pub fn new(similarity: Similarity, query: Vec<f32>) -> QueryScorer {
        let query_squares = query.iter().fold(0f32, |s, y| s + y * y);
        QueryScorer {
            similarity,
            query,
            query_squares,
        }
    }

    pub fn query(&self) -> &[f32] {
        &self.query
    }

    /// The score of a serialized `vector<float, n>` against the query, for ranking the rows
    /// of an ANN query: `None` when the bytes are not a float vector, or are one no vector
    /// index holds (a NaN, infinite or beyond-1e17 component: stored before the index
    /// existed, which Cassandra's build skips, so the row is never among its ANN results). A
    /// zero vector under cosine scores NaN (the caller drops it likewise).
    pub fn score_serialized(&self, raw: &[u8]) -> Option<f32> {
        let bounded = |x: f32| x.abs() <= crate::vector_index::MAX_COMPONENT;
        if self.similarity != Similarity::Cosine || raw.len() != 4 * self.query.len() {
            let v = floats(raw)?;
            return v
                .iter()
                .all(|x| bounded(*x))
                .then(|| self.similarity.score(&v, &self.query));
        }
        let (mut dot, mut na, mut ok) = (0f32, 0f32, true);
        for (c, y) in raw.chunks_exact(4).zip(&self.query) {
            let x = f32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            dot += x * y;
            na += x * x;
            ok &= bounded(x);
        }
        ok.then(|| (1.0 + cosine_of(dot, na, self.query_squares)) / 2.0)
    }
}

/// The floats of a serialized `vector<float, n>` (`None` if the bytes are not one).
pub fn floats(raw: &[u8]) -> Option<Vec<f32>> {
    if !raw.len().is_multiple_of(4) {
        return None;
    }
    Some(
        raw.chunks_exact(4)
            .map(|c| f32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// The dimension of a `vector<float, n>` type, `None` for any other type.
pub fn float_dimension(ty: &ColumnType) -> Option<u32> {
    match ty {
        ColumnType::Vector(e, n) if **e == ColumnType::Float => Some(*n),
        _ => None,
    }
}

// ---- the CQL functions' typing (called from `fcts`) ---------------------------------------

const SIGNATURE: &str = "(vector<float, n>, vector<float, n>)";

/// The return type of a similarity function over `args` (types and argument texts), `None`
/// when `name` is not one of them. Messages are Cassandra 5.0.9's.
pub fn return_type(
    name: &str,
    args: &[(ColumnType, String)],
) -> Option<Result<ColumnType, String>> {
    let shown: Vec<String> = args
        .iter()
        .map(|(t, _)| crate::types::cql_type_name(t))
        .collect();
    return_type_shown(name, args, &shown)
}

/// [`return_type`], the refusal of an argument that is no float vector naming its type as
/// `shown` (Cassandra prints a frozen column, a cast or a literal collection `frozen<...>`).
pub fn return_type_shown(
    name: &str,
    args: &[(ColumnType, String)],
    shown: &[String],
) -> Option<Result<ColumnType, String>> {
    let f = Similarity::from_function(name)?;
    let fname = f.function_name();
    if let Some(m) = arity_refusal(name, args.len()) {
        return Some(Err(m));
    }
    if let Some(i) = args.iter().position(|(t, _)| float_dimension(t).is_none()) {
        let (t, n) = &args[i];
        let ty = shown
            .get(i)
            .cloned()
            .unwrap_or_else(|| crate::types::cql_type_name(t));
        return Some(Err(format!(
            "Function system.{fname} requires a float vector argument, but found argument {n} of type {ty}"
        )));
    }
    if float_dimension(&args[0].0) != float_dimension(&args[1].0) {
        return Some(Err(
            "All arguments must have the same vector dimensions".to_string()
        ));
    }
    Some(Ok(ColumnType::Float))
}

/// Cassandra's refusal of a call with other than two arguments, made before any argument is
/// typed (a marker among them included). `None`: two, or not these functions.
pub fn arity_refusal(name: &str, n: usize) -> Option<String> {
    let f = Similarity::from_function(name)?;
    (n != 2).then(|| {
        format!(
            "Invalid number of arguments for function system.{}{SIGNATURE}",
            f.function_name()
        )
    })
}

/// The type a bind marker takes: the other argument's, typed before it (`typed`: the
/// argument typed already, the first for the second, the second for a first argument whose
/// second is no marker or null); with none to take Cassandra refuses it (the `Err`). Whether
/// that type is a float vector is checked with the call ([`return_type`]), as Cassandra
/// checks it once inferred. `None`: not these functions.
pub fn bind_type(name: &str, typed: &[ColumnType]) -> Option<Result<ColumnType, String>> {
    let f = Similarity::from_function(name)?;
    Some(match typed.first() {
        Some(other) => Ok(other.clone()),
        None => Err(format!(
            "Cannot infer type of argument ? in call to function system.{}{SIGNATURE}: use type casts to disambiguate",
            f.function_name()
        )),
    })
}

/// The type a list literal with `len` elements takes as an argument: a float vector of its
/// length, so that a length differing from the other argument's is refused as Cassandra does.
pub fn list_literal_type(name: &str, len: usize) -> Option<ColumnType> {
    Similarity::from_function(name)?;
    Some(ColumnType::Vector(
        Box::new(ColumnType::Float),
        u32::try_from(len).ok()?,
    ))
}

/// Evaluates a similarity function (typed by [`return_type`]): null in, null out.
pub fn call(
    name: &str,
    a: Option<&[u8]>,
    b: Option<&[u8]>,
) -> Option<Result<Option<Vec<u8>>, String>> {
    let f = Similarity::from_function(name)?;
    let (Some(a), Some(b)) = (a, b) else {
        return Some(Ok(None));
    };
    let (Some(a), Some(b)) = (floats(a), floats(b)) else {
        return Some(Err("Invalid float vector value".into()));
    };
    Some(score_checked(f, &a, &b).map(|s| Some(s.to_be_bytes().to_vec())))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values are Cassandra 5.0.9's answers to the same calls (float bits).
    #[test]
    fn scores_match_cassandra() {
        // Compared as f64: the values are the driver's f64 readings of Cassandra's f32 results.
        let s = |f: Similarity, a: &[f32], b: &[f32]| f64::from(f.score(a, b));
        assert_eq!(
            s(Similarity::Cosine, &[1.0, 2.0], &[3.0, 4.0]),
            0.991_934_955_120_086_7
        );
        assert_eq!(s(Similarity::Cosine, &[-1.0, -2.0], &[1.0, 2.0]), 0.0);
        assert_eq!(s(Similarity::DotProduct, &[-1.0, -2.0], &[3.0, 4.0]), -5.0);
        assert_eq!(s(Similarity::DotProduct, &[0.0, 0.0], &[0.0, 0.0]), 0.5);
        assert_eq!(s(Similarity::Euclidean, &[0.0, 0.0], &[0.0, 0.0]), 1.0);
        assert_eq!(
            s(Similarity::Euclidean, &[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]),
            0.035_714_287_310_838_7
        );
        assert_eq!(
            s(Similarity::DotProduct, &[-1.5, 2.25, 0.1], &[1.0, 2.0, 3.0]),
            2.150_000_095_367_431_6
        );
        assert!(score_checked(Similarity::Cosine, &[1.0, 0.0], &[0.0, 0.0])
            .unwrap_err()
            .contains("doesn't support all-zero vectors"));
        assert_eq!(
            score_checked(Similarity::Euclidean, &[0.0], &[0.0]).unwrap(),
            1.0
        );
    }

    #[test]
    fn summation_order_covers_every_block_shape() {
        // Lengths around the 8 and 32 boundaries agree with a plain sum up to rounding.
        for len in [1, 7, 8, 9, 31, 32, 33, 40, 65, 384] {
            let a: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
            assert!(
                (f64::from(dot_product(&a, &b)) - plain).abs() < 1e-3,
                "{len}"
            );
            let sq: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from((x - y) * (x - y)))
                .sum();
            assert!(
                (f64::from(square_distance(&a, &b)) - sq).abs() < 1e-3,
                "{len}"
            );
        }
    }

    #[test]
    fn query_scorer_gives_the_bits_of_score() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for f in [
            Similarity::Cosine,
            Similarity::Euclidean,
            Similarity::DotProduct,
        ] {
            for len in [1, 3, 8, 33, 384] {
                let q: Vec<f32> = (0..len).map(|_| next()).collect();
                let scorer = QueryScorer::new(f, q.clone());
                for _ in 0..50 {
                    let v: Vec<f32> = (0..len).map(|_| next() * 3.0).collect();
                    let raw: Vec<u8> = v.iter().flat_map(|x| x.to_be_bytes()).collect();
                    let got = scorer.score_serialized(&raw).unwrap();
                    assert_eq!(got.to_bits(), f.score(&v, &q).to_bits(), "{f:?} {len}");
                }
            }
        }
        let scorer = QueryScorer::new(Similarity::Cosine, vec![1.0, 2.0]);
        assert_eq!(scorer.score_serialized(&[0; 5]), None);
        // A stored vector of another length (not one of the column's) scores as before.
        let raw: Vec<u8> = [3f32, 4.0, 5.0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        assert_eq!(
            scorer.score_serialized(&raw),
            Some(Similarity::Cosine.score(&[3.0, 4.0, 5.0], &[1.0, 2.0]))
        );
        assert!(scorer.score_serialized(&[0; 8]).unwrap().is_nan());
    }

    #[test]
    fn typing_follows_cassandra() {
        let v3 = ColumnType::Vector(Box::new(ColumnType::Float), 3);
        let v2 = ColumnType::Vector(Box::new(ColumnType::Float), 2);
        let ok = return_type(
            "similarity_cosine",
            &[(v3.clone(), "v".into()), (v3.clone(), "w".into())],
        );
        assert_eq!(ok, Some(Ok(ColumnType::Float)));
        let dims = return_type(
            "SIMILARITY_DOT_PRODUCT",
            &[(v3.clone(), "v".into()), (v2, "x".into())],
        );
        assert_eq!(
            dims,
            Some(Err(
                "All arguments must have the same vector dimensions".into()
            ))
        );
        let int = return_type(
            "similarity_cosine",
            &[(ColumnType::Int, "k".into()), (v3.clone(), "v".into())],
        );
        assert_eq!(int, Some(Err("Function system.similarity_cosine requires a float vector argument, but found argument k of type int".into())));
        let one = return_type("similarity_cosine", &[(v3.clone(), "v".into())]);
        assert_eq!(one, Some(Err("Invalid number of arguments for function system.similarity_cosine(vector<float, n>, vector<float, n>)".into())));
        assert_eq!(arity_refusal("similarity_dot_product", 2), None);
        assert!(arity_refusal("SIMILARITY_EUCLIDEAN", 3)
            .is_some_and(|m| m.contains("similarity_euclidean(vector")));
        assert_eq!(return_type("abs", &[]), None);
        assert_eq!(
            bind_type("similarity_cosine", std::slice::from_ref(&v3)),
            Some(Ok(v3))
        );
        assert!(matches!(bind_type("similarity_cosine", &[]), Some(Err(_))));
    }
}
