//! The `peregrine` binary: `serve` (the CQL server; also the default with no subcommand),
//! `bench` (the load generator, from the `bench` crate), `nodetool` (Cassandra's nodetool
//! against a server's admin endpoint: `nodetool`; the log levels it changes: `logging`) and
//! `migrate` (copies keyspaces between standalone Peregrine and Cassandra, from the `migrate`
//! crate: `migrate_cmd`).
//!
//! With `--upstream host:port[,...]` (or `upstream:` in the config file) `serve` runs in proxy
//! mode (the `proxy` crate) in front of a Cassandra cluster instead of on the embedded engine.
//! This crate only wires them: it parses the command line over the config file, builds the
//! backend (`local::LocalBackend` or `proxy::ProxyBackend`) and hands it to the front
//! end (`server::run`); it holds no protocol, storage or proxy logic of its own.
//!
//! Logs go to stderr through `tracing` (filter with `RUST_LOG`, default `info`). SIGINT or
//! SIGTERM stops the server cleanly: it stops accepting, lets in-flight requests finish for up to
//! `request_timeout`, flushes the engine and exits 0. A second signal exits at once.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use local::LocalBackend;
use proxy::ProxyBackend;
use server::Config;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

mod alloc;
mod logging;
mod migrate_cmd;
mod nodetool;

#[derive(Parser)]
#[command(
    name = "peregrine",
    version,
    about = "A Cassandra-compatible database: one binary speaking the CQL native protocol",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// `serve` options, accepted without the subcommand too.
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the CQL server (the default).
    Serve(ServeArgs),
    /// Run a benchmark against a CQL endpoint.
    Bench(Box<bench::BenchArgs>),
    /// Cassandra's nodetool against a server's admin endpoint:
    /// `nodetool [-h HOST] [-p PORT] [-u USER -pw PASSWORD] <command> [args]`.
    #[command(disable_help_flag = true)]
    Nodetool {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Copy keyspaces (schema and rows, with write times and TTLs) between standalone
    /// Peregrine and a Cassandra cluster, either way; resumable, verified at the end.
    Migrate(migrate_cmd::MigrateArgs),
}

#[derive(Args, Clone, Default)]
struct ServeArgs {
    /// YAML configuration file (every key optional; see docs/configuration.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Address to listen on; overrides `listen` in the file.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Data directory; overrides `data_dir` in the file.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Proxy mode: the Cassandra nodes to forward to, `host:port[,host:port...]`; overrides
    /// `upstream` in the file.
    #[arg(long, value_name = "ADDRS", value_delimiter = ',')]
    upstream: Vec<SocketAddr>,
    /// Proxy mode: SSD cache tier directory; overrides `proxy.cache_dir`.
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Proxy mode: the other proxies' CQL addresses, `host:port[,...]`; overrides `proxy.peers`.
    #[arg(long, value_name = "ADDRS", value_delimiter = ',')]
    proxy_peers: Vec<SocketAddr>,
    /// Address of the admin endpoint (`/metrics`, `peregrine nodetool`); overrides
    /// `admin_listen`.
    #[arg(long, value_name = "ADDR")]
    admin_listen: Option<SocketAddr>,
}

#[global_allocator]
static GLOBAL: alloc::Mimalloc = alloc::Mimalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Nodetool { args }) = &cli.command {
        return match nodetool::run(args) {
            Ok(out) => {
                print!("{out}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{}", e.report());
                ExitCode::from(e.exit_code())
            }
        };
    }
    // migrate's own output is its progress line and report: the in-process server of a data
    // directory logs warnings only, unless RUST_LOG says otherwise.
    let fallback = if matches!(cli.command, Some(Command::Migrate(_))) {
        "warn"
    } else {
        "info"
    };
    let default = tracing_subscriber::EnvFilter::try_from_default_env()
        .map(|f| f.to_string())
        .unwrap_or_else(|_| fallback.into());
    let (filter, reload) =
        tracing_subscriber::reload::Layer::new(tracing_subscriber::EnvFilter::new(&default));
    tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .init();
    server::admin::set_log_levels(Box::new(logging::Levels::new(&default, reload)));
    let result = match cli.command {
        Some(Command::Migrate(args)) => return migrate_cmd::run(args),
        Some(Command::Bench(args)) => bench::main(*args),
        Some(Command::Serve(args)) => serve(args),
        Some(Command::Nodetool { .. }) => Ok(()),
        None => serve(cli.serve),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peregrine: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = Config::load(args.config.as_deref())?;
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(dir) = args.data_dir {
        config.data_dir = dir;
    }
    if !args.upstream.is_empty() {
        config.upstream = args.upstream;
    }
    if let Some(dir) = args.cache_dir {
        config.proxy.cache_dir = Some(dir);
    }
    if !args.proxy_peers.is_empty() {
        config.proxy.peers = args.proxy_peers;
    }
    if args.admin_listen.is_some() {
        config.admin_listen = args.admin_listen;
    }
    config.validate()?;
    raise_open_files(&config);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("peregrine")
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        // The client port is bound now (a port in use fails the start before the store is
        // opened) but accepts connections only once the backend is ready, as Cassandra opens
        // its native port last: a client never waits on a connection the node cannot serve
        // yet (the data-file check can take seconds per GB).
        let socket = bind_client_port(config.listen)
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let addr = socket.local_addr()?;
        let open_client_port = move || {
            socket
                .listen(LISTEN_BACKLOG)
                .with_context(|| format!("cannot listen on {addr}"))
        };
        let admin = bind_admin(&config).await?;
        let shutdown = CancellationToken::new();
        tokio::spawn(watch_signals(shutdown.clone()));
        if config.upstream.is_empty() {
            let backend = Arc::new(LocalBackend::open(&config).with_context(|| {
                format!("cannot open the database in {}", config.data_dir.display())
            })?);
            let listener = open_client_port()?;
            println!(
                "peregrine listening on {addr} (data: {})",
                config.data_dir.display()
            );
            let events = server::EventBus::new();
            server::run_with_admin(config, listener, backend, shutdown, events, admin).await;
        } else {
            // The proxy reports the port it really listens on (`--listen 127.0.0.1:0` in tests).
            config.listen = addr;
            let backend = Arc::new(ProxyBackend::connect(&config).await);
            // Upstream SCHEMA_CHANGE events reach the proxy's clients through this bus.
            let events = server::EventBus::new();
            backend.relay_upstream_events(events.clone());
            // STATUS_CHANGE UP/DOWN for the other proxies (`--proxy-peers`).
            backend.watch_peers(events.clone());
            let upstream: Vec<String> = config.upstream.iter().map(|a| a.to_string()).collect();
            let listener = open_client_port()?;
            println!(
                "peregrine proxy listening on {addr} (upstream: {})",
                upstream.join(",")
            );
            server::run_with_admin(config, listener, backend, shutdown, events, admin).await;
        }
        tracing::info!("peregrine stopped");
        Ok(())
    })
}

/// The accept backlog of the client port (what the kernel queues before `accept`).
const LISTEN_BACKLOG: u32 = 1024;

/// The client port bound but not yet listening: connections to it are refused until
/// `listen`. SO_REUSEADDR as `TcpListener::bind` sets it, so a restart does not wait out
/// TIME_WAIT.
fn bind_client_port(addr: SocketAddr) -> std::io::Result<tokio::net::TcpSocket> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    Ok(socket)
}

/// Binds the admin endpoint: `admin_listen` if set (failing the start if it cannot be bound),
/// else nodetool's default port on loopback if it is free (another local server may hold it).
async fn bind_admin(config: &Config) -> anyhow::Result<Option<tokio::net::TcpListener>> {
    if !config.admin_enabled {
        return Ok(None);
    }
    let addr = config
        .admin_listen
        .unwrap_or(server::config::DEFAULT_ADMIN_LISTEN);
    match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => {
            println!("admin endpoint (nodetool, /metrics) on {}", l.local_addr()?);
            Ok(Some(l))
        }
        Err(e) if config.admin_listen.is_none() => {
            tracing::warn!(
                "no admin endpoint: cannot listen on the default {addr} ({e}); set admin_listen to run one"
            );
            Ok(None)
        }
        Err(e) => Err(e).with_context(|| format!("cannot listen on {addr} (admin_listen)")),
    }
}

/// Raises the open-file limit to the hard limit: every client connection is a descriptor, and
/// storage must still open files when connections reach `max_connections`. Warns when even the
/// hard limit is below what that needs.
fn raise_open_files(config: &Config) {
    // Storage files, the write-ahead log and upstream connections, beside the clients.
    let wanted = config.max_connections as u64 + 1024;
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) if limit < wanted => tracing::warn!(
            "the open-file limit is {limit}, below the {wanted} that max_connections ({}) and storage need: raise the hard limit (ulimit -Hn) or lower max_connections",
            config.max_connections
        ),
        Ok(limit) => tracing::debug!("open-file limit: {limit}"),
        Err(e) => tracing::warn!("cannot raise the open-file limit: {e}"),
    }
}

/// Cancels `shutdown` on the first SIGINT/SIGTERM; exits at once on the second.
async fn watch_signals(shutdown: CancellationToken) {
    wait_for_signal().await;
    tracing::info!("signal received, shutting down (send again to exit at once)");
    shutdown.cancel();
    wait_for_signal().await;
    tracing::warn!("second signal: exiting without a clean shutdown");
    std::process::exit(130);
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}
