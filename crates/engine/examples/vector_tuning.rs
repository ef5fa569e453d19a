//! Graph settings against recall and CPU, on the index alone (issue 12's tuning; no server, no
//! storage): for each setting, builds an [`VectorIndex`] over the first `ROWS` vectors of an
//! fvecs file (process CPU seconds), then answers every query as `read/ann.rs` does (ask the
//! graph for `candidates(k)`, re-rank exactly those within `rerank_margin` of the `k`-th by
//! their serialized vectors with [`QueryScorer`]) `REPEAT` times (queries per CPU second), and
//! scores recall@k against brute force over the f32 vectors by the same exact score.
//!
//! ```text
//! cargo run --release -p engine --example vector_tuning -- BASE.fvecs QUERY.fvecs ROWS \
//!     [REPEAT] SETTING...
//! SETTING: comma-separated m=16,efc=128,ef=64,q=i8|f16|bf16|f32[,cand=2][,margin=0.003]
//! ```
//! `cand`/`margin` override the config's candidate factor and re-rank margin (the defaults are
//! the config's own: 2 and 0.003 for an i8 cosine graph, 1 and 0 otherwise).

use engine::similarity::{QueryScorer, Similarity};
use engine::vector_index::{Quantization, VectorIndex, VectorIndexConfig};
use std::time::Instant;

fn fvecs(path: &str, limit: usize) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= bytes.len() && out.len() < limit {
        let dim = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        at += 4;
        let v = bytes[at..at + 4 * dim]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        at += 4 * dim;
        out.push(v);
    }
    out
}

/// Process CPU seconds (user + system) from /proc/self/stat (10 ms ticks).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

struct Setting {
    text: String,
    config: VectorIndexConfig,
    cand: Option<usize>,
    margin: Option<f32>,
}

fn setting(text: &str, dim: usize) -> Setting {
    let mut config = VectorIndexConfig::for_column(
        &proto::types::ColumnType::Vector(Box::new(proto::types::ColumnType::Float), dim as u32),
        [],
        None,
    )
    .unwrap()
    .unwrap();
    let (mut cand, mut margin) = (None, None);
    for kv in text.split(',').filter(|s| !s.is_empty() && *s != "default") {
        let (k, v) = kv.split_once('=').expect("key=value");
        match k {
            "m" => config.connectivity = v.parse().unwrap(),
            "efc" => config.expansion_add = v.parse().unwrap(),
            "ef" => config.expansion_search = v.parse().unwrap(),
            "q" => {
                config.quantization = match v {
                    "f32" => Quantization::F32,
                    "f16" => Quantization::F16,
                    "bf16" => Quantization::BF16,
                    "i8" => Quantization::I8,
                    _ => panic!("q={v}"),
                }
            }
            "cand" => cand = Some(v.parse().unwrap()),
            "margin" => margin = Some(v.parse().unwrap()),
            _ => panic!("unknown {k}"),
        }
    }
    Setting {
        text: text.to_string(),
        config,
        cand,
        margin,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (base, queries, rows) = (&args[1], &args[2], args[3].parse::<usize>().unwrap());
    let (repeat, first_setting) = match args[4].parse::<usize>() {
        Ok(r) => (r, 5),
        Err(_) => (1, 4),
    };
    let k = 10;
    let base = fvecs(base, rows);
    let queries = fvecs(queries, usize::MAX);
    let dim = base[0].len();
    let serialized: Vec<Vec<u8>> = base
        .iter()
        .map(|v| v.iter().flat_map(|x| x.to_be_bytes()).collect())
        .collect();
    // Exact neighbours: the top k by Cassandra's cosine score over the stored vectors.
    let started = Instant::now();
    let truth: Vec<Vec<usize>> = queries
        .iter()
        .map(|q| {
            let scorer = QueryScorer::new(Similarity::Cosine, q.clone());
            let mut scored: Vec<(f32, usize)> = serialized
                .iter()
                .enumerate()
                .map(|(i, raw)| (scorer.score_serialized(raw).unwrap(), i))
                .collect();
            scored.select_nth_unstable_by(k, |a, b| b.0.total_cmp(&a.0));
            scored.truncate(k);
            scored.iter().map(|s| s.1).collect()
        })
        .collect();
    eprintln!(
        "{} rows, {} queries, {dim} dims; exact neighbours in {:.1} s",
        base.len(),
        queries.len(),
        started.elapsed().as_secs_f64()
    );
    println!("setting | build CPU s | queries per CPU s | recall@{k} | rows re-ranked per query | memory MB");
    for text in &args[first_setting..] {
        let s = setting(text, dim);
        let index = VectorIndex::new(s.config.clone()).unwrap();
        let c0 = cpu_seconds();
        for (i, v) in base.iter().enumerate() {
            index.upsert(&(i as u32).to_be_bytes(), v).unwrap();
        }
        let build = cpu_seconds() - c0;
        let want = s.cand.map_or(s.config.candidates(k), |c| c * k);
        let margin = s.margin.unwrap_or(s.config.rerank_margin());
        let mut found = 0usize;
        let mut reranked = 0usize;
        let c1 = cpu_seconds();
        for round in 0..repeat {
            for (qi, q) in queries.iter().enumerate() {
                let scorer = QueryScorer::new(Similarity::Cosine, q.clone());
                let hits = index.search(scorer.query(), want).unwrap();
                let close = hits.get(k - 1).map_or(hits.len(), |kth| {
                    hits.iter()
                        .take_while(|h| h.score >= kth.score - margin)
                        .count()
                });
                let mut exact: Vec<(f32, usize)> = hits[..close]
                    .iter()
                    .map(|h| {
                        let id = u32::from_be_bytes(h.primary_key[..4].try_into().unwrap());
                        let raw = &serialized[id as usize];
                        (scorer.score_serialized(raw).unwrap(), id as usize)
                    })
                    .collect();
                exact.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                exact.truncate(k);
                if round == 0 {
                    reranked += close;
                    found += exact
                        .iter()
                        .filter(|(_, id)| truth[qi].contains(id))
                        .count();
                }
            }
        }
        let query_cpu = cpu_seconds() - c1;
        println!(
            "{} | {build:.2} | {:.0} | {:.4} | {:.1} | {:.1}",
            s.text,
            (queries.len() * repeat) as f64 / query_cpu,
            found as f64 / (queries.len() * k) as f64,
            reranked as f64 / queries.len() as f64,
            index.memory_bytes() as f64 / 1e6
        );
    }
}
