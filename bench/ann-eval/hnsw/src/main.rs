include!("../../common.rs");
use hnsw_rs::prelude::*;

fn main() {
    evaluate(
        "hnsw_rs M=16 efc=100 serial-insert",
        &[16, 32, 64, 128],
        |base| {
            let h: Hnsw<f32, DistL2> = Hnsw::new(16, base.len(), 16, 100, DistL2 {});
            for (i, v) in base.iter().enumerate() {
                h.insert((v, i));
            }
            h
        },
        |h, q, ef| h.search(q, 10, ef).iter().map(|n| n.d_id).collect(),
    );
}
