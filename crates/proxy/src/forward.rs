//! One request to the upstream: the pool of the client's (role, protocol version, keyspace),
//! one deadline (`request_timeout`) over connecting, sending and an UNPREPARED repair, and the
//! mapping of failures without an upstream answer to the errors drivers expect
//! (ReadTimeout / WriteTimeout, Unavailable, Overloaded, ServerError).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use proto::error::{DbError, WriteType};
use proto::frame::ProtocolVersion;
use proto::request::{Consistency, Prepare, Request};
use proto::response::{Response, ResponseExtras, ResultBody, Rows};
use server::ConnState;

use crate::upstream::{Connection, Pool, UpstreamError};
use crate::{Ctx, PoolKey, PreparedInfo, ProxyBackend};

/// The rows of a forwarded answer, decoded where a decision needs them (topology, schema
/// questions, a cache fill): a Rows result comes back from the upstream as its RESULT body as
/// received (`ResultBody::Encoded`, see `Connection::request_traced`). `None` for any other
/// answer, or rows that do not decode.
pub(crate) fn decoded_rows(resp: &Response, version: ProtocolVersion) -> Option<Rows> {
    match resp {
        Response::Result(ResultBody::Rows(rows)) => Some(rows.clone()),
        Response::Result(ResultBody::Encoded(body)) => {
            Rows::decode_result(version, body.clone()).ok()
        }
        _ => None,
    }
}

impl ProxyBackend {
    pub(crate) fn pool(&self, conn: &ConnState, keyspace: Option<&str>) -> Arc<Pool> {
        let role = conn.role();
        let key: PoolKey = (role.clone(), conn.version(), keyspace.map(Arc::from));
        // At most `upstream::MAX_POOLS`, the least recently used forgotten first.
        self.pools.get_or_insert_with(&key, || {
            let creds = role.as_deref().and_then(|r| {
                self.logins
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(r)
                    .map(|(c, _)| c.clone())
            });
            Pool::new(
                self.hosts.clone(),
                conn.version(),
                keyspace.map(str::to_string),
                creds,
                self.settings.clone(),
            )
        })
    }

    pub(crate) fn forget_pool(&self, conn: &ConnState, keyspace: Option<&str>) {
        let key: PoolKey = (conn.role(), conn.version(), keyspace.map(Arc::from));
        self.pools.remove(&key);
    }

    /// Sends `req` on a connection of the pool for `keyspace`; re-prepares once on UNPREPARED
    /// for a statement the proxy knows. `write` chooses WriteTimeout over ReadTimeout.
    pub(crate) async fn forward(
        &self,
        conn: &ConnState,
        ctx: &Ctx,
        keyspace: Option<&str>,
        req: &Request,
        write: bool,
    ) -> Response {
        // The whole request, connecting and an UNPREPARED retry included, within
        // `request_timeout`.
        let deadline = Instant::now() + self.request_timeout;
        let pool = self.pool(conn, keyspace);
        let connecting = match pool.get_live(conn.id()) {
            Ok(c) => Ok(Ok(c)),
            // Boxed, as the other rare steps below: the future of every forwarded request
            // (and the front end's task holding it) stays small.
            Err(slot) => {
                tokio::time::timeout(self.request_timeout, Box::pin(pool.fill(slot))).await
            }
        };
        let up = match connecting {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return self.upstream_error(e, req, write),
            Err(_) => {
                let e = UpstreamError::Connect {
                    addr: self
                        .hosts
                        .first()
                        .copied()
                        .unwrap_or(([0, 0, 0, 0], 0).into()),
                    reason: format!(
                        "no connection within request_timeout ({}ms)",
                        self.request_timeout.as_millis()
                    ),
                };
                return self.upstream_error(e, req, write);
            }
        };
        let mut resp = match self.send(&up, req, deadline, ctx).await {
            Ok(r) => r,
            Err(e) => return self.upstream_error(e, req, write),
        };
        if let Response::Error(DbError::Unprepared { id, .. }) = &resp {
            if let Some(info) = self.prepared_info(id) {
                let v5 = conn.version() >= ProtocolVersion::V5;
                // v4 PREPARE uses the connection's keyspace, which must be the statement's.
                if v5 || info.keyspace.as_deref() == pool.keyspace() {
                    self.metrics
                        .unprepared_retries
                        .fetch_add(1, Ordering::Relaxed);
                    let again = self.reprepare_and_send(&up, &info, v5, req, deadline, ctx);
                    resp = match Box::pin(again).await {
                        Ok(r) => r,
                        Err(e) => return self.upstream_error(e, req, write),
                    };
                }
            }
        }
        if let Response::Result(ResultBody::SetKeyspace(_)) = &resp {
            // Some statement switched a shared connection's keyspace: stop using it.
            up.retire();
        }
        if let Response::Result(ResultBody::SchemaChange(_)) = &resp {
            Box::pin(self.await_schema_agreement(&up)).await;
        }
        resp
    }

    /// The UNPREPARED repair: prepares `info`'s statement again on `up`, then sends `req`
    /// again; the PREPARE's answer when it is not Prepared.
    async fn reprepare_and_send(
        &self,
        up: &Connection,
        info: &PreparedInfo,
        v5: bool,
        req: &Request,
        deadline: Instant,
        ctx: &Ctx,
    ) -> Result<Response, UpstreamError> {
        let prep = Request::Prepare(Prepare {
            query: info.query.clone(),
            keyspace: if v5 { info.keyspace.clone() } else { None },
        });
        match self.send(up, &prep, deadline, &Ctx::default()).await? {
            Response::Result(ResultBody::Prepared(_)) => self.send(up, req, deadline, ctx).await,
            other => Ok(other),
        }
    }

    /// One round trip on `up`, answered by `deadline` at the latest.
    pub(crate) async fn send(
        &self,
        up: &Connection,
        req: &Request,
        deadline: Instant,
        ctx: &Ctx,
    ) -> Result<Response, UpstreamError> {
        let started = Instant::now();
        if started >= deadline {
            self.metrics
                .upstream_timeouts
                .fetch_add(1, Ordering::Relaxed);
            return Err(UpstreamError::Timeout {
                addr: up.addr(),
                timeout: self.request_timeout,
            });
        }
        self.metrics
            .upstream_requests
            .fetch_add(1, Ordering::Relaxed);
        let r = up
            .request_traced(
                req,
                ctx.client_body(req),
                deadline,
                deadline.saturating_duration_since(started),
                &ctx.flags,
            )
            .await
            .map(|d| {
                if d.tracing_id.is_some() || !d.warnings.is_empty() || !d.custom_payload.is_empty()
                {
                    *ctx.extras.lock().unwrap_or_else(PoisonError::into_inner) = ResponseExtras {
                        tracing_id: d.tracing_id,
                        warnings: d.warnings,
                        custom_payload: d.custom_payload,
                    };
                }
                d.response
            });
        self.metrics.observe(up.addr(), started.elapsed());
        if let Err(e) = &r {
            self.metrics.upstream_errors.fetch_add(1, Ordering::Relaxed);
            if matches!(e, UpstreamError::Timeout { .. }) {
                self.metrics
                    .upstream_timeouts
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        r
    }

    /// Maps a failure without an upstream answer to the error a driver expects.
    pub(crate) fn upstream_error(&self, e: UpstreamError, req: &Request, write: bool) -> Response {
        let consistency = match req {
            Request::Query(q) => q.params.consistency,
            Request::Execute(x) => x.params.consistency,
            Request::Batch(b) => b.consistency,
            _ => Consistency::One,
        };
        let message = e.to_string();
        Response::Error(match e {
            UpstreamError::Timeout { .. } if write => DbError::WriteTimeout {
                message: format!("Operation timed out - received only 0 responses ({message})"),
                consistency,
                received: 0,
                block_for: 1,
                write_type: if matches!(req, Request::Batch(_)) {
                    WriteType::Batch
                } else {
                    WriteType::Simple
                },
                contentions: None,
            },
            UpstreamError::Timeout { .. } => DbError::ReadTimeout {
                message: format!("Operation timed out - received only 0 responses ({message})"),
                consistency,
                received: 0,
                block_for: 1,
                data_present: false,
            },
            UpstreamError::Connect { .. } => DbError::Unavailable {
                message: format!(
                    "Cannot achieve consistency level {consistency}: no upstream node is reachable ({message})"
                ),
                consistency,
                required: 1,
                alive: 0,
            },
            UpstreamError::Busy { .. } => DbError::Overloaded { message },
            UpstreamError::Rejected(e) => e,
            UpstreamError::AuthRequired { class, .. } => {
                *self.auth_class.write().unwrap_or_else(PoisonError::into_inner) = Some(class);
                DbError::server(format!(
                    "{message}; the proxy learnt this after the connection started: reconnect to log in"
                ))
            }
            UpstreamError::Closed { .. } => DbError::server(format!(
                "{message}; the request may or may not have been applied"
            )),
            UpstreamError::Protocol { .. } => DbError::server(message),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use std::time::Duration;

    use proto::request::{Query, QueryParams};
    use server::{Backend, Config, RequestFlags};

    use crate::upstream::Settings;

    #[tokio::test]
    async fn a_request_never_outlives_request_timeout() {
        // An upstream that accepts TCP but never answers (a stopped process), a connect
        // timeout far longer than the request timeout: the answer still comes in time.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut config = Config {
            upstream: vec![listener.local_addr().unwrap()],
            request_timeout: Duration::from_millis(300),
            ..Config::default()
        };
        config.proxy.connect_timeout = Duration::from_millis(100);
        let backend = ProxyBackend::connect(&config).await;
        let backend = ProxyBackend {
            settings: Settings {
                connect_timeout: Duration::from_secs(30),
                ..backend.settings.clone()
            },
            ..backend
        };
        let conn = ConnState::new(
            1,
            ProtocolVersion::V4,
            SocketAddr::from(([127, 0, 0, 1], 1)),
            None,
            Vec::new(),
        );
        let started = Instant::now();
        let q = Request::Query(Query {
            query: "SELECT * FROM ks.t WHERE k = 1".into(),
            params: QueryParams::default(),
        });
        let resp = backend
            .handle(&conn, q, None, RequestFlags::default())
            .await
            .response;
        let took = started.elapsed();
        assert!(
            matches!(resp, Response::Error(DbError::Unavailable { .. })),
            "{resp:?}"
        );
        assert!(took < Duration::from_secs(2), "took {took:?}");
        drop(listener);
    }
}
