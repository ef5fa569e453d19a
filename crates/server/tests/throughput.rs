//! A smoke check of the request path's speed against the mock backend (no engine).
//! Ignored by default: `cargo test --release -p server --test throughput -- --ignored --nocapture`.

mod common;

use std::time::Instant;

use bytes::BytesMut;
use common::*;
use proto::frame::{Opcode, ProtocolVersion};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn pipelined_queries_per_second() {
    let s = start_default().await;
    const CONNS: usize = 4;
    const PER_CONN: usize = 100_000;
    const WINDOW: usize = 256;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CONNS {
        let addr = s.addr;
        tasks.push(tokio::spawn(async move {
            let mut c = Client::ready(addr, ProtocolVersion::V4, false).await;
            let frame = c.encode(0, &query("SELECT v FROM t WHERE k = 1"));
            let (mut sent, mut got) = (0usize, 0usize);
            while got < PER_CONN {
                let mut batch = BytesMut::new();
                while sent < PER_CONN && sent - got < WINDOW {
                    let mut f = frame.clone();
                    f[2..4].copy_from_slice(&((sent % 32768) as i16).to_be_bytes());
                    batch.extend_from_slice(&f);
                    sent += 1;
                }
                if !batch.is_empty() {
                    c.send_raw(&batch).await;
                }
                let f = c.recv().await.unwrap();
                assert_eq!(f.opcode, Opcode::Result);
                got += 1;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    let total = (CONNS * PER_CONN) as f64;
    println!(
        "{total} requests in {secs:.2}s: {:.0} requests/s (client and server share 2 threads)",
        total / secs
    );
}
