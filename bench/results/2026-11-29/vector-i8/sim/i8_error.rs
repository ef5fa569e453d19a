use std::io::Read;
fn fvecs(p: &str) -> Vec<Vec<f32>> {
    let mut b = Vec::new();
    std::fs::File::open(p).unwrap().read_to_end(&mut b).unwrap();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let d = i32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as usize;
        i += 4;
        out.push((0..d).map(|j| f32::from_le_bytes(b[i + 4 * j..i + 4 * j + 4].try_into().unwrap())).collect());
        i += 4 * d;
    }
    out
}
fn q8(v: &[f32]) -> Vec<i8> {
    let max = v.iter().fold(0f64, |m, x| m.max(f64::from(x.abs())));
    let s = 127.0 / max;
    v.iter().map(|x| (f64::from(*x) * s).round() as i8).collect()
}
fn q8u(v: &[f32]) -> Vec<i8> { // usearch cast
    let mag = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    v.iter().map(|x| (f64::from(*x) * 127.0 / mag).clamp(-127.0, 127.0) as i8).collect()
}
fn cos(a: &[f32], b: &[f32]) -> f32 {
    let (mut ab, mut a2, mut b2) = (0f32, 0f32, 0f32);
    for i in 0..a.len() { ab += a[i] * b[i]; a2 += a[i] * a[i]; b2 += b[i] * b[i]; }
    ab / (a2.sqrt() * b2.sqrt())
}
fn cos8(a: &[i8], b: &[i8]) -> f32 {
    let (mut ab, mut a2, mut b2) = (0i32, 0i32, 0i32);
    for i in 0..a.len() { let (x, y) = (a[i] as i32, b[i] as i32); ab += x * y; a2 += x * x; b2 += y * y; }
    ab as f32 / ((a2 as f32).sqrt() * (b2 as f32).sqrt())
}
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usearch_cast = args.get(1).is_some_and(|a| a == "u");
    let base = fvecs(&format!("{}/.cache/peregrine/vectors/base.fvecs", std::env::var("HOME").unwrap()));
    let qs = fvecs(&format!("{}/.cache/peregrine/vectors/query.fvecs", std::env::var("HOME").unwrap()));
    let base = &base[..20000];
    let qf = if usearch_cast { q8u } else { q8 };
    let b8: Vec<Vec<i8>> = base.iter().map(|v| qf(v)).collect();
    let k = 10;
    let deltas = [0.0f32, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.02, 1.0];
    let overs = [1usize, 2, 3];
    let mut hits = vec![vec![0usize; deltas.len()]; overs.len()];
    let mut reads = vec![vec![0usize; deltas.len()]; overs.len()];
    let mut maxerr = 0f32; let mut sumerr = 0f64; let mut nerr = 0;
    for q in &qs {
        let q8v = qf(q);
        let mut ex: Vec<(f32, usize)> = base.iter().enumerate().map(|(i, v)| (cos(q, v), i)).collect();
        ex.sort_by(|a, b| b.0.total_cmp(&a.0));
        let truth: Vec<usize> = ex[..k].iter().map(|x| x.1).collect();
        let mut ap: Vec<(f32, usize)> = b8.iter().enumerate().map(|(i, v)| (cos8(&q8v, v), i)).collect();
        ap.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (s, i) in &ap[..30] { let e = (s - cos(q, &base[*i])).abs() / 2.0; maxerr = maxerr.max(e); sumerr += e as f64; nerr += 1; }
        for (oi, o) in overs.iter().enumerate() {
            let cands = &ap[..k * o];
            let kth = cands[k - 1].0;
            for (di, d) in deltas.iter().enumerate() {
                // score units are (1+cos)/2 : delta in score = delta*2 in cos
                let read: Vec<usize> = cands.iter().filter(|(s, _)| *s >= kth - 2.0 * d).map(|x| x.1).collect();
                reads[oi][di] += read.len();
                let mut rr: Vec<(f32, usize)> = read.iter().map(|&i| (cos(q, &base[i]), i)).collect();
                rr.sort_by(|a, b| b.0.total_cmp(&a.0));
                hits[oi][di] += rr[..k.min(rr.len())].iter().filter(|x| truth.contains(&x.1)).count();
            }
        }
    }
    let n = qs.len() as f64;
    println!("score err: max {maxerr} mean {}", sumerr / nerr as f64);
    for (oi, o) in overs.iter().enumerate() {
        for (di, d) in deltas.iter().enumerate() {
            println!("over {o} delta {d}: recall {:.4} reads/query {:.2}", hits[oi][di] as f64 / (n * k as f64), reads[oi][di] as f64 / n);
        }
    }
}
