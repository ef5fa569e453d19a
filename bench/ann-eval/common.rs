// Shared by the three candidates: clustered gaussian vectors (100 centres, normalised; real
// embeddings cluster, uniform random vectors do not), a fixed seed, brute-force truth by L2.
pub const DIM: usize = 384;
pub struct Rng(u64);
impl Rng {
    pub fn new(s: u64) -> Self {
        Rng(s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn unif(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn gauss(&mut self) -> f32 {
        let u = self.unif().max(1e-7);
        let v = self.unif();
        (-2.0 * u.ln()).sqrt() * (6.2831853 * v).cos()
    }
}
pub fn data(n: usize, q: usize) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let mut r = Rng::new(42);
    let centers: Vec<Vec<f32>> = (0..100)
        .map(|_| (0..DIM).map(|_| r.gauss()).collect())
        .collect();
    let gen = |r: &mut Rng| {
        let c = &centers[(r.next() % 100) as usize];
        let mut v: Vec<f32> = c.iter().map(|x| x + 0.6 * r.gauss()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    };
    let base = (0..n).map(|_| gen(&mut r)).collect();
    let qs = (0..q).map(|_| gen(&mut r)).collect();
    (base, qs)
}
pub fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}
pub fn truth(base: &[Vec<f32>], qs: &[Vec<f32>], k: usize) -> Vec<Vec<usize>> {
    qs.iter()
        .map(|q| {
            let mut d: Vec<(f32, usize)> = base
                .iter()
                .enumerate()
                .map(|(i, b)| (l2(q, b), i))
                .collect();
            d.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
            d[..k].iter().map(|x| x.1).collect()
        })
        .collect()
}
pub fn recall(truth: &[Vec<usize>], got: &[Vec<usize>]) -> f64 {
    let mut hit = 0;
    for (t, g) in truth.iter().zip(got) {
        hit += g.iter().filter(|x| t.contains(x)).count();
    }
    hit as f64 / (truth.len() * truth[0].len()) as f64
}

/// Generates the data (N from the first argument, default 20,000), builds the candidate's
/// index with `build`, then for each `ef` measures recall@10 and single-thread queries/s of
/// `search(index, query, ef)` and prints one line.
pub fn evaluate<I>(
    name: &str,
    efs: &[usize],
    build: impl FnOnce(&[Vec<f32>]) -> I,
    search: impl Fn(&I, &[f32], usize) -> Vec<usize>,
) {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20000);
    let (base, qs) = data(n, 200);
    let t = truth(&base, &qs, 10);
    let t0 = std::time::Instant::now();
    let index = build(&base);
    let built = t0.elapsed().as_secs_f64();
    for &ef in efs {
        let t1 = std::time::Instant::now();
        let got: Vec<Vec<usize>> = qs.iter().map(|q| search(&index, q, ef)).collect();
        let qps = qs.len() as f64 / t1.elapsed().as_secs_f64();
        println!(
            "{name} n={n} build={built:.1}s ef={ef} recall@10={:.3} qps(1 thread)={qps:.0}",
            recall(&t, &got)
        );
    }
}
