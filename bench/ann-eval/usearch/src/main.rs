include!("../../common.rs");
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

fn main() {
    evaluate(
        "usearch M=16 efc=100 serial-insert",
        &[16, 32, 64, 128],
        |base| {
            let opts = IndexOptions {
                dimensions: DIM,
                metric: MetricKind::L2sq,
                quantization: ScalarKind::F32,
                connectivity: 16,
                expansion_add: 100,
                expansion_search: 64,
                multi: false,
            };
            let idx = Index::new(&opts).unwrap();
            idx.reserve(base.len()).unwrap();
            for (i, v) in base.iter().enumerate() {
                idx.add(i as u64, v).unwrap();
            }
            idx
        },
        |idx, q, ef| {
            idx.change_expansion_search(ef);
            idx.search(q, 10)
                .unwrap()
                .keys
                .iter()
                .map(|k| *k as usize)
                .collect()
        },
    );
}
