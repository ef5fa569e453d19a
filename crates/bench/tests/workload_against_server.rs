//! Runs short YCSB workloads against a real CQL server and checks what was measured.
//!
//! The server comes from `PEREGRINE_BENCH_HOSTS` (comma-separated `host:port`); without it the
//! test prints why and passes, so `cargo test` works on a machine with no server.

use bench::runner::{self, ConnectConfig, Endpoint, LoadShape, SchemaConfig};
use bench::stats::Recorder;
use bench::workload::{OpKind, WorkloadSpec};
use std::sync::Arc;
use std::time::Duration;

const RECORDS: u64 = 2_000;

fn hosts() -> Option<Vec<String>> {
    let v = std::env::var("PEREGRINE_BENCH_HOSTS").ok()?;
    let hosts: Vec<String> = v
        .split(',')
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .collect();
    (!hosts.is_empty()).then_some(hosts)
}

fn shape(operations: u64, insert_start: u64) -> LoadShape {
    LoadShape {
        concurrency: 32,
        workers: 2,
        duration: None,
        operations: Some(operations),
        target_rate: None,
        warmup: Duration::ZERO,
        insert_start,
        validate: true,
        seed: 42,
        progress: false,
    }
}

fn share(total: &Recorder, kind: OpKind) -> f64 {
    total.ops[kind.index()].count() as f64 / total.total_count().max(1) as f64
}

fn assert_clean(total: &Recorder, what: &str) {
    assert!(total.total_count() > 0, "{what}: no operations completed");
    for k in OpKind::ALL {
        let op = &total.ops[k.index()];
        assert_eq!(
            op.error_count(),
            0,
            "{what}: {} errors: {:?} {:?}",
            k.name(),
            op.errors,
            op.error_samples
        );
        assert_eq!(
            op.validation_failures,
            0,
            "{what}: {} mismatches: {:?}",
            k.name(),
            op.error_samples
        );
        assert_eq!(op.not_found, 0, "{what}: {} reads found no row", k.name());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_workloads_run_with_the_configured_mix_and_no_errors() {
    let Some(hosts) = hosts() else {
        println!("skipped: set PEREGRINE_BENCH_HOSTS=host:port to run workloads against a server");
        return;
    };
    let endpoint = Endpoint {
        name: "under-test".into(),
        hosts,
        pids: Vec::new(),
    };
    let connect = ConnectConfig {
        connections: 2,
        request_timeout: Duration::from_secs(10),
        consistency: "one".into(),
        user: None,
        password: None,
    };
    let session = Arc::new(runner::connect(&endpoint, &connect).await.expect("connect"));
    let schema = SchemaConfig {
        keyspace: "peregrine_bench_it".into(),
        table: "usertable".into(),
        replication_factor: 1,
        drop_first: true,
    };

    // Load.
    let base = WorkloadSpec::ycsb('a', RECORDS).unwrap();
    let load = WorkloadSpec::load(base);
    runner::create_schema(&session, &schema, &load)
        .await
        .expect("schema");
    // The bench's own process stands in for a server process whose CPU is measured.
    let me = [std::process::id()];
    let r = runner::run(
        session.clone(),
        &schema,
        &load,
        &shape(RECORDS, 0),
        "load",
        &me,
    )
    .await
    .expect("load");
    assert_clean(&r.total, "load");
    let cpu = r
        .server_cpu_seconds
        .expect("CPU of the given process measured");
    assert!(
        cpu > 0.0 && cpu <= r.client_cpu_seconds + 0.05,
        "{cpu} vs {}",
        r.client_cpu_seconds
    );
    assert_eq!(r.total.ops[OpKind::Insert.index()].count(), RECORDS);
    assert_eq!(
        r.next_insert, RECORDS,
        "a following run continues after the load"
    );

    // A: 50/50 read/update; F: 50/50 read/read-modify-write; D: 95/5 read/insert; E: 95/5 scan/insert.
    let cases: [(char, OpKind, f64, u64); 4] = [
        ('a', OpKind::Read, 0.5, 4_000),
        ('f', OpKind::Read, 0.5, 2_000),
        ('d', OpKind::Read, 0.95, 4_000),
        ('e', OpKind::Scan, 0.95, 600),
    ];
    for (letter, kind, want, ops) in cases {
        let mut spec = WorkloadSpec::ycsb(letter, RECORDS).unwrap();
        spec.expected_new_keys =
            (ops as f64 * spec.proportions[OpKind::Insert.index()] * 2.0) as u64;
        let r = runner::run(
            session.clone(),
            &schema,
            &spec,
            &shape(ops, RECORDS),
            &letter.to_string(),
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("workload {letter}: {e:#}"));
        let what = format!("workload {letter}");
        assert_clean(&r.total, &what);
        assert_eq!(
            r.total.total_count(),
            ops,
            "{what}: every operation completes"
        );
        let got = share(&r.total, kind);
        assert!(
            (got - want).abs() < 0.05,
            "{what}: {} share {got:.3}, want {want}",
            kind.name()
        );
        for k in OpKind::ALL {
            if spec.proportions[k.index()] == 0.0 {
                assert_eq!(
                    r.total.ops[k.index()].count(),
                    0,
                    "{what}: unexpected {}",
                    k.name()
                );
            }
        }
        assert!(!r.timeline.is_empty());
        // `bench compare` starts each round's inserts here: after every key this run used.
        assert_eq!(
            r.next_insert,
            RECORDS + r.total.ops[OpKind::Insert.index()].count(),
            "{what}: the next run's first insert"
        );
    }
}
