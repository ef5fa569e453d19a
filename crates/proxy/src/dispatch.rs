//! The [`Backend`] implementation: each request routed by kind.
//!
//! A cacheable EXECUTE is looked up in the DRAM tier on the connection's reader task
//! (`handle_now`); everything else runs in `handle`: QUERY and PREPARE are classified
//! (`classify`), EXECUTE and BATCH use what was remembered at PREPARE (`PreparedInfo`), reads
//! fill the cache and writes invalidate or patch it before their answer goes back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use proto::error::DbError;
use proto::request::{
    Batch, BatchKind, BatchStatement, Consistency, Execute, Prepare, Query, QueryParams, RawValue,
    Request, Values,
};
use proto::response::{Response, ResultBody};
use server::{Backend, ConnState, Now, Reply, RequestFlags};

use crate::classify::{classify, Class, TableRef};
use crate::login::PASSWORD_AUTHENTICATOR;
use crate::patch::{canonical_type, PatchingWrite};
use crate::stale::upstream_failure;
use crate::upstream::UpstreamError;
use crate::{
    bypasses_cache, cache, partition_key, write_partition_key, CacheRead, Ctx, PreparedInfo,
    ProxyBackend,
};

/// Most prepared statements remembered; past it the map is cleared (drivers re-prepare on
/// UNPREPARED).
const MAX_PREPARED: usize = 100_000;

/// Background cache refreshes waiting or in flight at once; a hot entry whose refresh is
/// skipped asks again on its next hit.
const MAX_REFRESHES: usize = 256;

/// Background refreshes go upstream together, at the next multiple of this since start-up.
/// A trickle of single reads costs Cassandra several times the CPU per read of the same reads
/// in bursts (its request threads spin before they park), and that CPU is taken from whatever
/// shares its cores.
const REFRESH_TICK: Duration = Duration::from_millis(50);

/// What `handle_now` made for an EXECUTE that missed DRAM, carried to `handle`
/// ([`Backend::Carry`]) so that it is not made again: its cache key (making one is ~750
/// instructions, 5% of a miss) and its statement's facts (a lookup).
pub struct Made {
    key: cache::CacheKey,
    info: Arc<PreparedInfo>,
}

impl ProxyBackend {
    /// One request of an established connection, with its flags in `ctx`.
    /// `made`: what `handle_now` made for this request, if anything.
    async fn dispatch(
        &self,
        conn: &ConnState,
        ctx: &Ctx,
        req: Request,
        made: Option<Made>,
    ) -> Response {
        if let Request::AuthResponse(token) = req {
            if !self.auth_required() {
                return Response::Error(DbError::protocol(
                    "Unexpected AUTH_RESPONSE: the upstream does not require authentication",
                ));
            }
            return Box::pin(self.login(conn, token)).await;
        }
        if self.auth_required() && conn.role().is_none() {
            return Response::Error(DbError::protocol(format!(
                "Unexpected message {:?}, expecting SASL_RESPONSE",
                req.opcode()
            )));
        }
        // All but EXECUTE (the cache's reads) boxed: the front end boxes this future for every
        // request and copies it as it goes, so it stays the size of an EXECUTE's.
        match req {
            Request::Query(q) => Box::pin(self.query(conn, ctx, q)).await,
            Request::Prepare(p) => Box::pin(self.prepare(conn, ctx, p)).await,
            Request::Execute(x) => self.execute(conn, ctx, x, made).await,
            Request::Batch(b) => Box::pin(self.batch(conn, ctx, b)).await,
            Request::AuthResponse(_)
            | Request::Startup(_)
            | Request::Options
            | Request::Register(_) => Response::Error(DbError::protocol(
                "Unexpected message: handled by the connection, not the backend",
            )),
        }
    }

    async fn query(&self, conn: &ConnState, ctx: &Ctx, q: Query) -> Response {
        let ks = q
            .params
            .keyspace
            .clone()
            .or_else(|| conn.keyspace().map(|k| k.to_string()));
        let class = classify(&q.query, ks.as_deref());
        let req = Request::Query(q);
        match &class {
            Class::Local(which) => {
                return self
                    .local_read(conn, ctx, *which, ks.as_deref(), &req, None)
                    .await
            }
            Class::Use(name) => return self.use_keyspace(conn, name).await,
            _ => {}
        }
        let conn_ks = conn.keyspace();
        let resp = self
            .forward(conn, ctx, conn_ks.as_deref(), &req, class.is_write())
            .await;
        match &class {
            Class::Write { tables, .. } => {
                for t in tables {
                    self.cache.invalidate_table(&t.keyspace, &t.table);
                }
            }
            _ => self.after_statement(&class, &resp),
        }
        resp
    }

    async fn use_keyspace(&self, conn: &ConnState, name: &str) -> Response {
        let pool = self.pool(conn, Some(name));
        match pool.get(conn.id()).await {
            Ok(_) => Response::Result(ResultBody::SetKeyspace(name.to_string())),
            Err(e) => {
                if matches!(e, UpstreamError::Rejected(_)) {
                    self.forget_pool(conn, Some(name));
                }
                let req = Request::Query(Query {
                    query: String::new(),
                    params: QueryParams::default(),
                });
                self.upstream_error(e, &req, false)
            }
        }
    }

    async fn prepare(&self, conn: &ConnState, ctx: &Ctx, p: Prepare) -> Response {
        let ks = p
            .keyspace
            .clone()
            .or_else(|| conn.keyspace().map(|k| k.to_string()));
        let pool_ks = conn.keyspace();
        let query = p.query.clone();
        let resp = self
            .forward(conn, ctx, pool_ks.as_deref(), &Request::Prepare(p), false)
            .await;
        if let Response::Result(ResultBody::Prepared(prep)) = &resp {
            let class = classify(&query, ks.as_deref());
            let cols = &prep.bind_metadata.columns;
            let pk_idx: Vec<usize> = prep
                .bind_metadata
                .pk_indexes
                .iter()
                .map(|&i| i as usize)
                .collect();
            let pk = match pk_idx.first().and_then(|&i| cols.get(i)) {
                Some(c) if pk_idx.iter().all(|&i| i < cols.len()) => {
                    let canonical = pk_idx.iter().all(|&i| canonical_type(&cols[i].ty));
                    Some((
                        TableRef {
                            keyspace: c.keyspace.clone(),
                            table: c.table.clone(),
                        },
                        pk_idx.clone(),
                        canonical,
                    ))
                }
                _ => None,
            };
            let cache_read = match (&class, &pk) {
                (
                    Class::Select {
                        cacheable: true,
                        eq_binds,
                        ..
                    },
                    Some((t, idx, _)),
                ) if self.cache.enabled()
                    && !self.excluded(t)
                    && idx
                        .iter()
                        .all(|&i| eq_binds.contains(&(cols[i].name.clone(), i))) =>
                {
                    Some(t.clone())
                }
                _ => None,
            };
            let result_names: Vec<String> = prep
                .result_metadata
                .columns
                .iter()
                .map(|c| c.name.clone())
                .collect();
            let (read_shape, write_patch) = self
                .patch_shapes(conn, &query, &class, &pk, &cache_read, cols, &result_names)
                .await;
            let info = PreparedInfo {
                query,
                keyspace: ks,
                class,
                pk,
                cache_read: cache_read.map(|t| CacheRead {
                    staleness: self.staleness(&t),
                    serves_stale: self.serves_stale(&t),
                    key_prefix: cache::TablePrefix::new(&t.keyspace, &t.table),
                }),
                result_names,
                read_shape,
                write_patch,
            };
            let mut map = self
                .prepared
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            if map.len() >= MAX_PREPARED {
                map.clear();
            }
            map.insert(prep.id.clone(), Arc::new(info));
        }
        resp
    }

    async fn execute(
        &self,
        conn: &ConnState,
        ctx: &Ctx,
        x: Execute,
        made: Option<Made>,
    ) -> Response {
        let (made_key, info) = match made {
            Some(Made { key, info }) => (Some(key), info),
            None => match self.prepared_info(&x.id) {
                Some(info) => (None, info),
                None => return Response::Error(DbError::unprepared(x.id)),
            },
        };
        let ks = info.keyspace.clone();
        if let Class::Local(which) = info.class {
            let req = Request::Execute(x);
            let read = self.local_read(conn, ctx, which, ks.as_deref(), &req, Some(&info));
            return Box::pin(read).await;
        }
        if let (Some(read), false) = (&info.cache_read, bypasses_cache(&ctx.flags)) {
            if let Some(key) = made_key.or_else(|| self.cache_key(conn, &x, &info)) {
                // `handle_now` already missed DRAM for this request.
                if let Some(hit) = self.cache.lookup_ssd(&key, Instant::now).await {
                    return Response::Result(ResultBody::Encoded(hit.body));
                }
                let (resp, unused_key) = self.read_and_fill(conn, ctx, &info, read, key, x).await;
                if let (Response::Error(e), Some(key)) = (&resp, unused_key) {
                    if upstream_failure(e) && read.serves_stale {
                        // Only a result no write or schema change seen here invalidated.
                        let current = self.cache.ticket(&key);
                        if let Some(rows) = self.stale.get(key.bytes(), current) {
                            tracing::debug!("upstream failed ({e}); served a stale result");
                            self.metrics.stale_served.fetch_add(1, Ordering::Relaxed);
                            return Response::Result(ResultBody::Rows((*rows).clone()));
                        }
                    }
                }
                return resp;
            }
        }
        let x = match Box::pin(self.execute_patching(conn, ctx, &info, x)).await {
            Ok(resp) => return resp,
            Err(x) => x,
        };
        let write = info.class.is_write();
        let req = Request::Execute(x);
        let resp = self.forward(conn, ctx, ks.as_deref(), &req, write).await;
        if let Request::Execute(x) = &req {
            self.invalidate_prepared(&info, &x.params.values, &resp);
        }
        resp
    }

    /// Reads a cacheable EXECUTE upstream and offers its result to the cache (and to the
    /// stale store of `serve_stale_on_upstream_error` tables), with a ticket taken before the
    /// read went out. For a miss and for a background refresh alike. The key comes back when
    /// no result was offered (an error, for the serve-stale lookup).
    async fn read_and_fill(
        &self,
        conn: &ConnState,
        ctx: &Ctx,
        info: &PreparedInfo,
        read: &CacheRead,
        key: cache::CacheKey,
        x: Execute,
    ) -> (Response, Option<cache::CacheKey>) {
        let ticket = self.cache.ticket(&key);
        let started = Instant::now();
        let req = Request::Execute(x);
        let resp = self
            .forward(conn, ctx, info.keyspace.as_deref(), &req, false)
            .await;
        // The upstream's RESULT body as received is what the cache keeps and what the client
        // gets; only its metadata is decoded (a patch needs the cells of the row).
        let value = match &resp {
            Response::Result(ResultBody::Encoded(body)) => {
                match cache::Cached::from_body(body, conn.version()) {
                    Ok(value) => value,
                    Err(e) => {
                        tracing::debug!("upstream rows not cached: {e}");
                        return (resp, Some(key));
                    }
                }
            }
            _ => return (resp, Some(key)),
        };
        if read.serves_stale {
            if let Some(rows) = value.rows() {
                self.stale
                    .put(Box::from(key.bytes()), ticket, (*rows).clone());
            }
        }
        let body = value.body.clone();
        self.cache.insert_cached(
            key,
            ticket,
            value,
            started,
            read.staleness,
            info.read_shape.clone(),
        );
        (Response::Result(ResultBody::Encoded(body)), None)
    }

    /// Invalidation after a prepared statement ran: its partition when the statement is a
    /// single write whose partition key is bound, else its tables.
    fn invalidate_prepared(&self, info: &PreparedInfo, values: &Values, resp: &Response) {
        match &info.class {
            Class::Write { tables, single } => {
                if let (true, Some((t, idx, true))) = (*single, &info.pk) {
                    if let Some(pk) = partition_key(values, idx) {
                        self.cache.invalidate_partition(&t.keyspace, &t.table, &pk);
                        return;
                    }
                }
                for t in tables {
                    self.cache.invalidate_table(&t.keyspace, &t.table);
                }
                if let Some((t, _, _)) = &info.pk {
                    self.cache.invalidate_table(&t.keyspace, &t.table);
                }
            }
            other => self.after_statement(other, resp),
        }
    }

    /// The key `handle_now` looks `x` up by in DRAM, with its statement's facts; `None` when
    /// it is not looked up there.
    fn dram_key(&self, conn: &ConnState, x: &Execute, flags: &RequestFlags) -> Option<Made> {
        if bypasses_cache(flags) || (self.auth_required() && conn.role().is_none()) {
            return None;
        }
        let info = self.prepared_info(&x.id)?;
        let key = self.cache_key(conn, x, &info)?;
        Some(Made { key, info })
    }

    /// The cache key of an EXECUTE of a cacheable read, or `None` when this execution is not
    /// cacheable (serial read, named or null key values, a fixed `now`).
    fn cache_key(
        &self,
        conn: &ConnState,
        x: &Execute,
        info: &PreparedInfo,
    ) -> Option<cache::CacheKey> {
        let prefix = &info.cache_read.as_ref()?.key_prefix;
        let p = &x.params;
        if matches!(
            p.consistency,
            Consistency::Serial | Consistency::LocalSerial
        ) || p.now_in_seconds.is_some()
        {
            return None;
        }
        let (_, idx, _) = info.pk.as_ref()?;
        let Values::Positional(values) = &p.values else {
            return None;
        };
        let value_bytes: usize = values
            .iter()
            .map(|v| match v {
                RawValue::Bytes(b) => b.len() + 5,
                RawValue::Null | RawValue::Unset => 1,
            })
            .sum();
        let mut key = cache::KeyWriter::new(prefix, 2 * value_bytes + 64 + x.id.len());
        write_partition_key(&p.values, idx, key.buf())?;
        key.end_partition_key();
        let req = key.buf();
        let push = cache::put_prefixed;
        conn.with_role(|role| push(req, role.unwrap_or("").as_bytes()));
        req.push(conn.version().as_u8());
        req.push(u8::from(p.skip_metadata));
        push(req, &x.id);
        push(req, x.result_metadata_id.as_deref().unwrap_or(&[]));
        req.extend_from_slice(&p.page_size.unwrap_or(-1).to_be_bytes());
        push(req, p.paging_state.as_deref().unwrap_or(&[]));
        for v in values {
            match v {
                RawValue::Null => req.push(0),
                RawValue::Unset => req.push(1),
                RawValue::Bytes(b) => {
                    req.push(2);
                    push(req, b);
                }
            }
        }
        Some(key.finish(conn.version()))
    }

    async fn batch(&self, conn: &ConnState, ctx: &Ctx, b: Batch) -> Response {
        let ks = b
            .keyspace
            .clone()
            .or_else(|| conn.keyspace().map(|k| k.to_string()));
        // Know every statement first: an unknown id is answered UNPREPARED like EXECUTE.
        let mut infos = Vec::with_capacity(b.statements.len());
        for s in &b.statements {
            match s {
                BatchStatement::Query { query, .. } => {
                    infos.push(Err(classify(query, ks.as_deref())))
                }
                BatchStatement::Prepared { id, .. } => match self.prepared_info(id) {
                    Some(info) => infos.push(Ok(info)),
                    None => return Response::Error(DbError::unprepared(id.clone())),
                },
            }
        }
        // Prepared writes that can patch start before the batch goes upstream, as an EXECUTE
        // would (all statements of a batch share its timestamp). Two in one partition: the
        // second start moves the stripe past the first's, so both only invalidate.
        let mut patching: Vec<Option<PatchingWrite>> = b
            .statements
            .iter()
            .zip(&infos)
            .map(|(s, info)| match (s, info) {
                (BatchStatement::Prepared { values, .. }, Ok(info))
                    if !matches!(b.kind, BatchKind::Counter) =>
                {
                    self.start_patching_write(info, values, b.default_timestamp)
                }
                _ => None,
            })
            .collect();
        let conn_ks = conn.keyspace();
        let req = Request::Batch(b);
        let resp = self
            .forward(conn, ctx, conn_ks.as_deref(), &req, true)
            .await;
        let Request::Batch(b) = &req else {
            return resp;
        };
        for ((s, info), write) in b.statements.iter().zip(&infos).zip(&mut patching) {
            if let Some(w) = write.take() {
                self.finish_patching_write(w, &resp);
                continue;
            }
            match (s, info) {
                (BatchStatement::Prepared { values, .. }, Ok(info)) => {
                    self.invalidate_prepared(info, values, &resp)
                }
                (_, Err(Class::Write { tables, .. })) => {
                    for t in tables {
                        self.cache.invalidate_table(&t.keyspace, &t.table);
                    }
                }
                _ => self.cache.invalidate_all(),
            }
        }
        resp
    }
}

impl Backend for ProxyBackend {
    type Carry = Option<Made>;

    /// A cacheable EXECUTE found in the DRAM tier is answered here, without a task.
    fn handle_now(&self, conn: &ConnState, req: Request, flags: &RequestFlags) -> Now<Self::Carry> {
        let Request::Execute(x) = &req else {
            return Now::Later(req, None);
        };
        let Some(Made { key, info }) = self.dram_key(conn, x, flags) else {
            return Now::Later(req, None);
        };
        match self.cache.get_with_refresh(&key, Instant::now()) {
            Some((hit, refresh)) => {
                self.cache.stats.hits.fetch_add(1, Ordering::Relaxed);
                let resp = Response::Result(ResultBody::Encoded(hit.body));
                if !refresh {
                    key.recycle();
                    return Now::Answered(resp);
                }
                if self.refreshes.fetch_add(1, Ordering::AcqRel) >= MAX_REFRESHES {
                    self.refreshes.fetch_sub(1, Ordering::AcqRel);
                    self.metrics
                        .refreshes_skipped
                        .fetch_add(1, Ordering::Relaxed);
                    self.cache.refresh_abandoned(&key);
                    return Now::Answered(resp);
                }
                Now::AnsweredThenRefresh(resp, req)
            }
            None => Now::Later(req, Some(Made { key, info })),
        }
    }

    /// The background refresh of a hot cache entry `handle_now` asked for: the read goes
    /// upstream again and its result replaces the entry (unless a write intervened).
    async fn refresh(&self, conn: &ConnState, req: Request) {
        struct InFlight<'a>(&'a AtomicUsize);
        impl Drop for InFlight<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _in_flight = InFlight(&self.refreshes);
        let tick = REFRESH_TICK.as_nanos();
        let since = self.started.elapsed().as_nanos();
        let wait = Duration::from_nanos((tick - since % tick) as u64);
        tokio::time::sleep(wait).await;
        let Request::Execute(x) = req else {
            return;
        };
        let Some(info) = self.prepared_info(&x.id) else {
            return;
        };
        let (Some(read), Some(key)) = (&info.cache_read, self.cache_key(conn, &x, &info)) else {
            return;
        };
        let (resp, _) = self
            .read_and_fill(conn, &Ctx::default(), &info, read, key, x)
            .await;
        match resp {
            Response::Error(e) => tracing::debug!("background refresh failed: {e}"),
            _ => {
                self.metrics.refreshes.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The tracing flag and the custom payload go upstream; the upstream's tracing session id,
    /// warnings and custom payload come back in front of the response.
    async fn handle(
        &self,
        conn: &ConnState,
        req: Request,
        made: Option<Made>,
        flags: RequestFlags,
    ) -> Reply {
        let ctx = Ctx::of_client(&req, flags);
        let response = self.dispatch(conn, &ctx, req, made).await;
        Reply {
            response,
            extras: ctx
                .extras
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
        }
    }

    fn authenticator(&self) -> Option<String> {
        self.auth_class
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|_| PASSWORD_AUTHENTICATOR.to_string())
    }

    async fn admin(&self, command: String, _args: serde_json::Value) -> server::admin::AdminResult {
        self.admin_command(&command)
    }

    fn audit_prepared(&self, id: &[u8]) -> Option<String> {
        self.prepared_info(id).map(|p| p.query.clone())
    }

    fn export_metrics(&self, out: &mut server::metrics::Exposition) {
        self.export_cache_metrics(out);
    }

    fn shutdown(&self) -> impl std::future::Future<Output = ()> + Send {
        if let Some(task) = self
            .relay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
        async {}
    }
}
