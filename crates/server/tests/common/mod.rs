//! A raw-bytes CQL client and a mock backend for black-box tests of the real server, started
//! in-process on 127.0.0.1:0.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use proto::error::DbError;
use proto::frame::{
    decode_envelope, encode_envelope, Compression, Envelope, Opcode, ProtocolVersion,
};
use proto::request::{Consistency, Query, QueryParams, Request, Values};
use proto::response::{Response, ResultBody, SchemaChange, SchemaChangeTarget, SchemaChangeType};
use proto::segment::{decode_segment, encode_segments, EnvelopeAssembler};
use server::{Backend, Config, ConnState, Reply, RequestFlags};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Answers by query text:
/// - `delay:<micros>`: sleeps, then Void
/// - `use:<ks>`: SetKeyspace(ks)
/// - `keyspace?`: Invalid error whose message is the connection's current keyspace (or `-`)
/// - `create:<ks>`: SchemaChange(Created keyspace ks)
/// - `size:<n>`: Invalid error with an n-byte message (n < 65536)
/// - `big...`: Void (for large requests)
/// - `panic`: panics
/// - `panic now`: panics in `handle_now` (on the connection's reader)
/// - `now`: Void, answered in `handle_now`
/// - `panic here`: panics in `handle_here` (on the connection's reader)
/// - `here`: Void, answered in `handle_here`
/// - anything else: Void
#[derive(Default)]
pub struct Mock {
    pub shut_down: AtomicBool,
}

impl Backend for Mock {
    type Carry = ();

    async fn handle(&self, conn: &ConnState, req: Request, _: (), _flags: RequestFlags) -> Reply {
        Reply::from(self.answer(conn, req).await)
    }

    fn handle_now(
        &self,
        _conn: &ConnState,
        req: Request,
        _flags: &RequestFlags,
    ) -> server::Now<()> {
        match &req {
            Request::Query(q) if q.query == "panic now" => {
                panic!("mock backend asked to panic now")
            }
            Request::Query(q) if q.query == "now" => {
                server::Now::Answered(Response::Result(ResultBody::Void))
            }
            _ => server::Now::Later(req, ()),
        }
    }

    #[allow(clippy::result_large_err)]
    fn handle_here(
        &self,
        _: &ConnState,
        req: Request,
        _: (),
        _: &RequestFlags,
    ) -> Result<Reply, (Request, ())> {
        match &req {
            Request::Query(q) if q.query == "panic here" => {
                panic!("mock backend asked to panic here")
            }
            Request::Query(q) if q.query == "here" => Ok(Response::Result(ResultBody::Void).into()),
            _ => Err((req, ())),
        }
    }

    async fn shutdown(&self) {
        self.shut_down.store(true, Ordering::SeqCst);
    }
}

impl Mock {
    async fn answer(&self, conn: &ConnState, req: Request) -> Response {
        let Request::Query(q) = req else {
            return Response::Error(DbError::invalid("mock only answers QUERY"));
        };
        let text = q.query.as_str();
        if let Some(us) = text.strip_prefix("delay:") {
            let us: u64 = us.parse().unwrap_or(0);
            tokio::time::sleep(Duration::from_micros(us)).await;
            Response::Result(ResultBody::Void)
        } else if let Some(ks) = text.strip_prefix("use:") {
            Response::Result(ResultBody::SetKeyspace(ks.to_string()))
        } else if text == "keyspace?" {
            let ks = conn.keyspace();
            Response::Error(DbError::invalid(ks.as_deref().unwrap_or("-")))
        } else if let Some(ks) = text.strip_prefix("create:") {
            Response::Result(ResultBody::SchemaChange(SchemaChange {
                change: SchemaChangeType::Created,
                target: SchemaChangeTarget::Keyspace(ks.to_string()),
            }))
        } else if let Some(n) = text.strip_prefix("size:") {
            let n: usize = n.parse().unwrap_or(0);
            Response::Error(DbError::invalid("x".repeat(n)))
        } else if text == "panic" {
            panic!("mock backend asked to panic");
        } else {
            Response::Result(ResultBody::Void)
        }
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub shutdown: CancellationToken,
    pub handle: JoinHandle<()>,
    pub backend: Arc<Mock>,
}

pub async fn start(config: Config) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let backend = Arc::new(Mock::default());
    let handle = tokio::spawn(server::run(
        config,
        listener,
        backend.clone(),
        shutdown.clone(),
    ));
    TestServer {
        addr,
        shutdown,
        handle,
        backend,
    }
}

pub async fn start_default() -> TestServer {
    start(Config::default()).await
}

/// A decoded response envelope.
#[derive(Debug)]
pub struct Frame {
    pub version: ProtocolVersion,
    pub flags: u8,
    pub stream: i16,
    pub opcode: Opcode,
    pub body: Bytes,
}

impl Frame {
    /// `(code, message)` of an ERROR body.
    pub fn error(&self) -> (i32, String) {
        assert_eq!(self.opcode, Opcode::Error, "expected ERROR, got {self:?}");
        let mut b = self.body.clone();
        let code = b.get_i32();
        (code, read_string(&mut b))
    }
}

pub fn read_string(b: &mut Bytes) -> String {
    let n = b.get_u16() as usize;
    String::from_utf8(b.split_to(n).to_vec()).unwrap()
}

/// SUPPORTED body as `[(key, values)]`.
pub fn read_multimap(mut b: Bytes) -> Vec<(String, Vec<String>)> {
    let n = b.get_u16();
    (0..n)
        .map(|_| {
            let k = read_string(&mut b);
            let m = b.get_u16();
            (k, (0..m).map(|_| read_string(&mut b)).collect())
        })
        .collect()
}

pub struct Client {
    pub sock: TcpStream,
    pub version: ProtocolVersion,
    /// v4 body compression after READY.
    pub compression: Option<Compression>,
    /// v5 after READY: `Some(lz4)`.
    pub segments: Option<bool>,
    buf: BytesMut,
    queued: VecDeque<Envelope>,
    assembler: EnvelopeAssembler,
}

impl Client {
    pub async fn connect(addr: SocketAddr, version: ProtocolVersion) -> Client {
        Client {
            sock: TcpStream::connect(addr).await.unwrap(),
            version,
            compression: None,
            segments: None,
            buf: BytesMut::new(),
            queued: VecDeque::new(),
            assembler: EnvelopeAssembler::new(1 << 30),
        }
    }

    /// Connects and completes STARTUP (READY expected).
    pub async fn ready(addr: SocketAddr, version: ProtocolVersion, lz4: bool) -> Client {
        let mut c = Client::connect(addr, version).await;
        let f = c.startup(lz4).await;
        assert_eq!(f.opcode, Opcode::Ready, "{f:?}");
        c
    }

    pub async fn startup(&mut self, lz4: bool) -> Frame {
        let mut opts = vec![("CQL_VERSION".to_string(), "3.0.0".to_string())];
        if lz4 {
            opts.push(("COMPRESSION".to_string(), "lz4".to_string()));
        }
        self.send(0, &Request::Startup(opts)).await;
        let f = self.recv().await.expect("STARTUP answer");
        if f.opcode == Opcode::Ready {
            if self.version >= ProtocolVersion::V5 {
                self.segments = Some(lz4);
            } else if lz4 {
                self.compression = Some(Compression::Lz4);
            }
        }
        f
    }

    pub fn encode(&self, stream: i16, req: &Request) -> BytesMut {
        let mut body = BytesMut::new();
        req.encode_body(self.version, &mut body);
        let env = Envelope {
            version: self.version,
            flags: 0,
            stream,
            opcode: req.opcode(),
            body: body.freeze(),
        };
        let mut out = BytesMut::new();
        match self.segments {
            None => encode_envelope(&env, self.compression, &mut out),
            Some(compressed) => {
                let mut payload = BytesMut::new();
                encode_envelope(&env, None, &mut payload);
                encode_segments(&payload, compressed, &mut out);
            }
        }
        out
    }

    pub async fn send(&mut self, stream: i16, req: &Request) {
        let bytes = self.encode(stream, req);
        self.sock.write_all(&bytes).await.unwrap();
    }

    pub async fn query(&mut self, stream: i16, text: &str) {
        self.send(stream, &query(text)).await;
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).await.unwrap();
    }

    /// The next response, `None` at EOF. Fails the test after 10 s.
    pub async fn recv(&mut self) -> Option<Frame> {
        tokio::time::timeout(Duration::from_secs(10), self.recv_inner())
            .await
            .expect("timed out waiting for a response")
    }

    async fn recv_inner(&mut self) -> Option<Frame> {
        loop {
            if let Some(env) = self.queued.pop_front() {
                return Some(to_frame(env));
            }
            match self.segments {
                None => {
                    if let Some(env) =
                        decode_envelope(&mut self.buf, 1 << 30, self.compression).unwrap()
                    {
                        return Some(to_frame(env));
                    }
                }
                Some(compressed) => {
                    if let Some(seg) = decode_segment(&mut self.buf, compressed).unwrap() {
                        let mut out = Vec::new();
                        self.assembler.push(seg, &mut out).unwrap();
                        self.queued.extend(out);
                        continue;
                    }
                }
            }
            match self.sock.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// Reads raw bytes until EOF (or 5 s).
    pub async fn read_to_end(&mut self) -> Vec<u8> {
        let mut out = self.buf.split().to_vec();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.sock.read_to_end(&mut out)).await;
        out
    }

    /// True if the server closes the connection (EOF or reset) within 5 s.
    pub async fn closed(&mut self) -> bool {
        let mut b = [0u8; 1024];
        let wait = async {
            loop {
                match self.sock.read(&mut b).await {
                    Ok(0) | Err(_) => return true,
                    Ok(_) => {}
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .unwrap_or(false)
    }
}

fn to_frame(env: Envelope) -> Frame {
    Frame {
        version: env.version,
        flags: env.flags,
        stream: env.stream,
        opcode: env.opcode,
        body: env.body,
    }
}

pub fn query(text: &str) -> Request {
    Request::Query(Query {
        query: text.to_string(),
        params: QueryParams {
            consistency: Consistency::One,
            values: Values::None,
            skip_metadata: false,
            page_size: None,
            paging_state: None,
            serial_consistency: None,
            default_timestamp: None,
            keyspace: None,
            now_in_seconds: None,
        },
    })
}

/// A hand-built envelope (request direction).
pub fn raw_envelope(version: u8, stream: i16, opcode: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![version, 0];
    v.extend_from_slice(&stream.to_be_bytes());
    v.push(opcode);
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}
