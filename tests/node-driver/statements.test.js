'use strict';
// Prepared statements, paging, batches, lightweight transactions, TTL and writetime.
const assert = require('node:assert/strict');
const { suite, cassandra } = require('./harness');

const { types } = cassandra;
const s = suite(__filename);
const prepare = { prepare: true };

s.test('prepared statements with positional and named bind markers', async () => {
  await s.ddl('CREATE TABLE prep (k int, c int, v text, PRIMARY KEY (k, c))');
  for (let c = 0; c < 5; c++) {
    await s.client.execute('INSERT INTO prep (k, c, v) VALUES (?, ?, ?)', [1, c, `v${c}`], prepare);
  }
  const rs = await s.client.execute('SELECT v FROM prep WHERE k = :key AND c >= :lo', { key: 1, lo: 3 }, prepare);
  assert.deepEqual(rs.rows.map((r) => r.v), ['v3', 'v4']);
  assert.deepEqual(rs.columns.map((c) => [c.name, c.type.code]), [['v', types.dataTypes.varchar]]);
  // An unset value leaves the cell; a null deletes it, and a row written by UPDATE (no row
  // marker) with no cell left is gone.
  await s.client.execute('UPDATE prep SET v = \'kept\' WHERE k = 2 AND c = 0');
  await s.client.execute('UPDATE prep SET v = ? WHERE k = ? AND c = ?', [types.unset, 2, 0], prepare);
  assert.equal((await s.client.execute('SELECT v FROM prep WHERE k = 2 AND c = 0')).first().v, 'kept');
  await s.client.execute('UPDATE prep SET v = ? WHERE k = ? AND c = ?', [null, 2, 0], prepare);
  assert.equal((await s.client.execute('SELECT v FROM prep WHERE k = 2 AND c = 0')).rowLength, 0);
});

s.test('paging: small pages, every page, and resuming from a page state', async () => {
  await s.ddl('CREATE TABLE paged (k int, c int, v int, PRIMARY KEY (k, c))');
  const queries = [];
  for (let c = 0; c < 95; c++) {
    queries.push({ query: 'INSERT INTO paged (k, c, v) VALUES (?, ?, ?)', params: [7, c, c * c] });
  }
  await s.client.batch(queries, { prepare: true, logged: false });
  for (let k = 100; k < 123; k++) {
    await s.client.execute('INSERT INTO paged (k, c, v) VALUES (?, 0, 0)', [k], prepare);
  }
  // Every page through the driver's async iteration.
  const seen = [];
  const all = await s.client.execute('SELECT c, v FROM paged WHERE k = ?', [7], { prepare: true, fetchSize: 10 });
  for await (const row of all) {
    assert.equal(row.v, row.c * row.c);
    seen.push(row.c);
  }
  assert.deepEqual(seen, [...Array(95).keys()]);
  // Page by page by hand: at most 10 rows a page; the page state resumes right after the page.
  let pageState;
  let next = 0;
  let pages = 0;
  do {
    const rs = await s.client.execute('SELECT c FROM paged WHERE k = ?', [7], { prepare: true, fetchSize: 10, pageState });
    assert.ok(rs.rowLength <= 10, `page ${pages} has ${rs.rowLength} rows`);
    for (const row of rs.rows) {
      assert.equal(row.c, next++);
    }
    pageState = rs.pageState;
    pages++;
    assert.ok(pages <= 20, 'more than 20 pages for 95 rows');
  } while (pageState);
  assert.equal(next, 95);
  assert.ok(pages >= 10, `${pages} pages`);
  // eachRow with autoPage across partitions: every partition exactly once.
  const counts = new Map();
  await new Promise((resolve, reject) => {
    s.client.eachRow('SELECT k FROM paged', [], { prepare: true, fetchSize: 7, autoPage: true },
      (n, row) => counts.set(row.k, (counts.get(row.k) || 0) + 1),
      (err) => (err ? reject(err) : resolve()));
  });
  assert.equal(counts.size, 24);
  assert.equal(counts.get(7), 95);
  assert.equal(counts.get(122), 1);
  // The table scan resumed page by page from page states crossing partition boundaries gives
  // the rows of one whole query, in the same (token) order.
  const whole = (await s.client.execute('SELECT k, c FROM paged', [], { prepare: true, fetchSize: 1000 }))
    .rows.map((r) => `${r.k}/${r.c}`);
  const resumed = [];
  pageState = undefined;
  for (pages = 0; pages < 100; pages++) {
    const rs = await s.client.execute('SELECT k, c FROM paged', [], { prepare: true, fetchSize: 7, pageState });
    resumed.push(...rs.rows.map((r) => `${r.k}/${r.c}`));
    pageState = rs.pageState;
    if (!pageState) break;
  }
  assert.equal(whole.length, 95 + 23);
  assert.deepEqual(resumed, whole);
});

s.test('logged, unlogged and counter batches', async () => {
  await s.ddl('CREATE TABLE bt (k int, c int, v text, PRIMARY KEY (k, c))',
    'CREATE TABLE bc (k int PRIMARY KEY, hits counter, misses counter)');
  for (const [k, logged] of [[1, true], [2, false]]) {
    await s.client.batch([
      { query: 'INSERT INTO bt (k, c, v) VALUES (?, ?, ?)', params: [k, 1, 'one'] },
      `INSERT INTO bt (k, c, v) VALUES (${k}, 2, 'two')`,
      { query: 'UPDATE bt SET v = ? WHERE k = ? AND c = ?', params: ['three', k, 3] },
      { query: 'DELETE FROM bt WHERE k = ? AND c = ?', params: [k + 10, 1] },
    ], { prepare: true, logged });
    const n = (await s.client.execute('SELECT count(*) AS n FROM bt WHERE k = ?', [k], prepare)).first().n;
    assert.equal(n.toNumber(), 3, `logged=${logged}`);
  }
  for (let i = 0; i < 2; i++) {
    await s.client.batch([
      { query: 'UPDATE bc SET hits = hits + ? WHERE k = ?', params: [types.Long.fromInt(5), 1] },
      'UPDATE bc SET misses = misses - 1, hits = hits + 1 WHERE k = 1',
      'UPDATE bc SET hits = hits + 1 WHERE k = 2',
    ], { prepare: true, counter: true });
  }
  const row = (await s.client.execute('SELECT hits, misses FROM bc WHERE k = 1')).first();
  assert.equal(row.hits.toString(), '12');
  assert.equal(row.misses.toString(), '-2');
  await assert.rejects(s.client.batch(['UPDATE bc SET hits = hits + 1 WHERE k = 1'], { logged: true }),
    (err) => err instanceof cassandra.errors.ResponseError && err.code === types.responseErrorCodes.invalid);
});

s.test('lightweight transactions: applied and not, with the current values', async () => {
  await s.ddl('CREATE TABLE lwt (k int PRIMARY KEY, v text, n int)');
  let rs = await s.client.execute('INSERT INTO lwt (k, v, n) VALUES (1, \'first\', 10) IF NOT EXISTS');
  assert.equal(rs.wasApplied(), true);
  rs = await s.client.execute('INSERT INTO lwt (k, v, n) VALUES (?, ?, ?) IF NOT EXISTS', [1, 'second', 20], prepare);
  assert.equal(rs.wasApplied(), false);
  assert.deepEqual({ ...rs.first() }, { '[applied]': false, k: 1, n: 10, v: 'first' });
  assert.deepEqual(rs.columns.map((c) => c.name), ['[applied]', 'k', 'n', 'v']);
  rs = await s.client.execute('UPDATE lwt SET v = \'third\' WHERE k = 1 IF n = ?', [11], prepare);
  assert.equal(rs.wasApplied(), false);
  assert.deepEqual({ ...rs.first() }, { '[applied]': false, n: 10 });
  rs = await s.client.execute('UPDATE lwt SET v = \'third\' WHERE k = 1 IF n = 10 AND v = \'first\'');
  assert.equal(rs.wasApplied(), true);
  assert.deepEqual(rs.columns.map((c) => c.name), ['[applied]']);
  rs = await s.client.execute('DELETE FROM lwt WHERE k = 2 IF EXISTS');
  assert.equal(rs.wasApplied(), false);
  rs = await s.client.batch([
    'UPDATE lwt SET n = 11 WHERE k = 1 IF v = \'third\'',
    'INSERT INTO lwt (k, v) VALUES (1, \'batched\')',
  ], { logged: true });
  assert.equal(rs.wasApplied(), true);
  const row = (await s.client.execute('SELECT v, n FROM lwt WHERE k = 1')).first();
  assert.deepEqual([row.v, row.n], ['batched', 11]);
});

s.test('TTL counts down and writetime is the timestamp written', async () => {
  await s.ddl('CREATE TABLE ttlt (k int PRIMARY KEY, v text, w int)');
  await s.client.execute('INSERT INTO ttlt (k, v) VALUES (?, ?) USING TTL ? AND TIMESTAMP ?',
    [1, 'x', 3600, types.Long.fromString('1700000000000000')], prepare);
  await s.client.execute('UPDATE ttlt USING TIMESTAMP 1700000000000001 SET w = 5 WHERE k = 1');
  const row = (await s.client.execute(
    'SELECT ttl(v) AS tv, writetime(v) AS wv, writetime(w) AS ww, ttl(w) AS tw FROM ttlt WHERE k = 1')).first();
  assert.ok(row.tv > 3500 && row.tv <= 3600, `ttl(v) = ${row.tv}`);
  assert.equal(row.wv.toString(), '1700000000000000');
  assert.equal(row.ww.toString(), '1700000000000001');
  assert.equal(row.tw, null);
  // The driver's client-side timestamp (protocol v3+) is now, in microseconds.
  await s.client.execute('INSERT INTO ttlt (k, v) VALUES (2, \'now\')');
  const wt = (await s.client.execute('SELECT writetime(v) AS w FROM ttlt WHERE k = 2')).first().w;
  assert.ok(Math.abs(Number(wt.toString()) / 1000 - Date.now()) < 60000, `writetime ${wt}`);
  // TTL 1 expires: poll for the row to go (bounded), never a fixed sleep.
  await s.client.execute('INSERT INTO ttlt (k, v) VALUES (3, \'brief\') USING TTL 1');
  const deadline = Date.now() + 10000;
  while ((await s.client.execute('SELECT k FROM ttlt WHERE k = 3')).rowLength > 0) {
    assert.ok(Date.now() < deadline, 'a row with TTL 1 is still there after 10 s');
    await new Promise((r) => setTimeout(r, 100));
  }
});
