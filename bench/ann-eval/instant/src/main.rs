include!("../../common.rs");
use instant_distance::{Builder, Search};

#[derive(Clone)]
struct P(Vec<f32>);

impl instant_distance::Point for P {
    fn distance(&self, o: &Self) -> f32 {
        l2(&self.0, &o.0)
    }
}

fn main() {
    // instant-distance builds from a batch only (no insert or delete) and fixes ef_search at
    // build time (default 100): one measurement.
    evaluate(
        "instant-distance efc=100 batch-build(parallel)",
        &[100],
        |base| {
            let pts: Vec<P> = base.iter().cloned().map(P).collect();
            Builder::default()
                .ef_construction(100)
                .seed(1)
                .build(pts, (0..base.len()).collect::<Vec<usize>>())
        },
        |map, q, _| {
            let mut s = Search::default();
            map.search(&P(q.to_vec()), &mut s)
                .take(10)
                .map(|x| *x.value)
                .collect()
        },
    );
}
