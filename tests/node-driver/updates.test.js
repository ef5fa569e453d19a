'use strict';
// Collection and UDT updates through bind markers, and IN/LIMIT/ranges/ORDER BY with markers.
const assert = require('node:assert/strict');
const { suite } = require('./harness');

const s = suite(__filename);
const prepare = { prepare: true };

s.test('collection updates through bind markers', async () => {
  await s.ddl('CREATE TABLE colls (k int PRIMARY KEY, l list<int>, st set<text>, m map<text, int>)');
  await s.client.execute('INSERT INTO colls (k, l, st, m) VALUES (1, [2, 3], {\'b\'}, {\'x\': 1})');
  const steps = [
    ['UPDATE colls SET l = l + ? WHERE k = ?', [[4, 5], 1]],
    ['UPDATE colls SET l = ? + l WHERE k = ?', [[1], 1]],
    ['UPDATE colls SET l[?] = ? WHERE k = ?', [0, 10, 1]],
    ['UPDATE colls SET st = st + ? WHERE k = ?', [['a', 'c'], 1]],
    ['UPDATE colls SET st = st - ? WHERE k = ?', [['b'], 1]],
    ['UPDATE colls SET m[?] = ? WHERE k = ?', ['y', 2, 1]],
    ['UPDATE colls SET m = m + ? WHERE k = ?', [{ z: 3 }, 1]],
  ];
  for (const [stmt, params] of steps) {
    await s.client.execute(stmt, params, prepare);
  }
  const row = (await s.client.execute('SELECT l, st, m FROM colls WHERE k = ?', [1], prepare)).first();
  assert.deepEqual(row.l, [10, 2, 3, 4, 5]);
  assert.deepEqual(row.st, ['a', 'c']);
  assert.deepEqual({ ...row.m }, { x: 1, y: 2, z: 3 });
});

s.test('DELETE of a map entry and a list element by bind marker', async (t) => {
  await s.ddl('CREATE TABLE celems (k int PRIMARY KEY, l list<int>, m map<text, int>)');
  await s.client.execute('INSERT INTO celems (k, l, m) VALUES (1, [7, 8, 9], {\'x\': 1, \'y\': 2})');
  await s.expectBug(t, async () => {
    await s.client.execute('DELETE m[?] FROM celems WHERE k = ?', ['x', 1], prepare);
    await s.client.execute('DELETE l[?] FROM celems WHERE k = ?', [1, 1], prepare);
    const row = (await s.client.execute('SELECT l, m FROM celems WHERE k = 1')).first();
    assert.deepEqual(row.l, [7, 9]);
    assert.deepEqual({ ...row.m }, { y: 2 });
  });
});

s.test('one field of a non-frozen UDT set by bind marker', async (t) => {
  await s.ddl('CREATE TYPE IF NOT EXISTS addr (street text, zip int)', 'CREATE TABLE udtf (k int PRIMARY KEY, a addr)');
  await s.client.execute('INSERT INTO udtf (k, a) VALUES (1, {street: \'Main\', zip: 1})');
  await s.expectBug(t, async () => {
    await s.client.execute('UPDATE udtf SET a.zip = ? WHERE k = ?', [99, 1], prepare);
    const row = (await s.client.execute('SELECT a FROM udtf WHERE k = 1')).first();
    assert.deepEqual({ ...row.a }, { street: 'Main', zip: 99 });
  });
});

s.test('IN, LIMIT, clustering ranges and ORDER BY DESC with bind markers and paging', async () => {
  await s.ddl('CREATE TABLE ranges (k int, c int, v text, PRIMARY KEY (k, c))');
  for (let k = 1; k <= 3; k++) {
    for (let c = 0; c < 20; c++) {
      await s.client.execute('INSERT INTO ranges (k, c, v) VALUES (?, ?, ?)', [k, c, `${k}-${c}`], prepare);
    }
  }
  const all = async (stmt, params) => {
    const rows = [];
    for await (const row of await s.client.execute(stmt, params, { prepare: true, fetchSize: 6 })) {
      rows.push(row);
    }
    return rows;
  };
  assert.equal((await all('SELECT v FROM ranges WHERE k IN ?', [[1, 3]])).length, 40);
  assert.equal((await all('SELECT v FROM ranges WHERE k IN (?, ?) AND c >= ? AND c < ?', [2, 3, 5, 8])).length, 6);
  assert.equal((await all('SELECT v FROM ranges WHERE k = ? LIMIT ?', [2, 7])).length, 7);
  const desc = (await all('SELECT c FROM ranges WHERE k = ? AND c > ? ORDER BY c DESC', [1, 3])).map((r) => r.c);
  assert.deepEqual(desc, [...Array(16).keys()].map((i) => 19 - i));
});
