//! Stand-alone driver for the bench crate while `peregrine bench` is being wired up:
//! `cargo run -p bench --release --example bench -- run --workload c --duration 10s`.

use clap::Parser;

#[derive(Parser)]
#[command(name = "bench")]
struct Cli {
    #[command(flatten)]
    bench: bench::BenchArgs,
}

fn main() -> anyhow::Result<()> {
    bench::main(Cli::parse().bench)
}
