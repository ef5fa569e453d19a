'use strict';
// Every native CQL type, collections frozen and not, tuples and UDTs frozen and not, through
// prepared statements (bind markers) and through literals, and nulls.
const assert = require('node:assert/strict');
const { suite, cassandra } = require('./harness');

const { types } = cassandra;
const s = suite(__filename);

// [column, CQL type, value in the driver's type for it]. Values sit at the edges of their ranges.
const columns = () => [
  ['i', 'int', -2147483648],
  ['bi', 'bigint', types.Long.fromString('9223372036854775807')],
  ['si', 'smallint', -32768],
  ['ti', 'tinyint', 127],
  ['vi', 'varint', types.Integer.fromString('-1234567890123456789012345678901234567890')],
  ['de', 'decimal', types.BigDecimal.fromString('-123456789012.3456789')],
  ['f', 'float', 3.25],
  ['d', 'double', -1.0e300],
  ['t', 'text', 'héllo wörld ✓'],
  ['a', 'ascii', 'plain ascii'],
  ['b', 'blob', Buffer.from([0, 1, 2, 0xfe, 0xff])],
  ['bo', 'boolean', true],
  ['u', 'uuid', types.Uuid.random()],
  ['tu', 'timeuuid', types.TimeUuid.fromDate(new Date('2024-02-29T23:59:58.123Z'))],
  ['ts', 'timestamp', new Date('2024-02-29T23:59:58.123Z')],
  ['dt', 'date', types.LocalDate.fromString('1969-07-20')],
  ['tm', 'time', types.LocalTime.fromString('13:14:15.123456789')],
  ['du', 'duration', new types.Duration(-14, -3, types.Long.fromString('-5000000123'))],
  ['ip4', 'inet', types.InetAddress.fromString('192.0.2.7')],
  ['ip6', 'inet', types.InetAddress.fromString('2001:db8::1')],
  ['l', 'list<int>', [3, 1, 2, 1]],
  ['s', 'set<text>', ['a', 'b', 'c']],
  ['m', 'map<text, int>', { x: 1, y: -2 }],
  ['fl', 'frozen<list<text>>', ['z', 'a']],
  ['fs', 'frozen<set<bigint>>', [types.Long.fromInt(-5), types.Long.fromInt(0), types.Long.fromInt(7)]],
  ['fm', 'frozen<map<int, text>>', { 1: 'one', 2: 'two' }],
  ['tp', 'tuple<int, text, frozen<list<int>>>', new types.Tuple(42, 'answer', [1, 2])],
  ['ud', 'addr', { street: '1 Main St', zip: 12345 }],
  ['fud', 'frozen<addr>', { street: '2 Side St', zip: 0 }],
  ['nested', 'map<text, frozen<list<frozen<addr>>>>', { home: [{ street: '3 Elm', zip: 1 }, { street: '4 Oak', zip: 2 }] }],
];

/** Values as comparable plain data: the driver's types by their string forms. */
function plain(v) {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v)) return `0x${v.toString('hex')}`;
  if (v instanceof Date) return v.toISOString();
  if (v instanceof types.Tuple) return { tuple: v.values().map(plain) };
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === 'object' && v.constructor === Object) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  }
  if (typeof v === 'object') return `${v.constructor.name}:${v.toString()}`;
  return v;
}

async function createTypesTable(table) {
  await s.ddl('CREATE TYPE IF NOT EXISTS addr (street text, zip int)',
    `CREATE TABLE ${table} (k int PRIMARY KEY, ${columns().map(([n, t]) => `${n} ${t}`).join(', ')})`);
}

s.test('every type round-trips through a prepared statement', async () => {
  await createTypesTable('types_rt');
  const cols = columns();
  const names = cols.map(([n]) => n);
  await s.client.execute(
    `INSERT INTO types_rt (k, ${names.join(', ')}) VALUES (?, ${names.map(() => '?').join(', ')})`,
    [1, ...cols.map(([, , v]) => v)], { prepare: true });
  const row = (await s.client.execute(`SELECT ${names.join(', ')} FROM types_rt WHERE k = ?`, [1],
    { prepare: true })).first();
  for (const [name, type, value] of cols) {
    assert.deepEqual(plain(row[name]), plain(value), `${name} ${type}`);
  }
  // The driver decodes each to its own type.
  assert.ok(row.bi instanceof types.Long && row.vi instanceof types.Integer && row.de instanceof types.BigDecimal);
  assert.ok(row.u instanceof types.Uuid && row.tu instanceof types.TimeUuid && row.ts instanceof Date);
  assert.ok(row.dt instanceof types.LocalDate && row.tm instanceof types.LocalTime && row.du instanceof types.Duration);
  assert.ok(row.ip4 instanceof types.InetAddress && row.tp instanceof types.Tuple);
});

s.test('every type reads back null from a row with only its key', async () => {
  await createTypesTable('types_null');
  await s.client.execute('INSERT INTO types_null (k) VALUES (2)');
  const row = (await s.client.execute('SELECT * FROM types_null WHERE k = 2')).first();
  for (const [name, type] of columns()) {
    assert.equal(row[name], null, `${name} ${type}`);
  }
});

s.test('CQL literals of each kind read back as the driver\'s values', async () => {
  await createTypesTable('types_lit');
  await s.client.execute(`INSERT INTO types_lit (k, i, vi, de, d, t, b, bo, u, ts, dt, tm, du, ip6, l, s, m, tp, ud)
    VALUES (3, 7, 123456789012345678901234567890, 0.000001, 1.5e-7, 'it''s', 0xcafe, false,
            123e4567-e89b-12d3-a456-426614174000, '2020-01-02T03:04:05.678Z', '2000-02-29', '01:02:03.000000004',
            1y2mo3w4d5h6m7s8ms9us10ns, '2001:db8::ff', [1, 2], {'q'}, {'k': 9}, (1, 'x', [3]),
            {street: 'lit', zip: 5})`);
  const row = (await s.client.execute('SELECT * FROM types_lit WHERE k = 3')).first();
  const want = {
    i: 7,
    vi: types.Integer.fromString('123456789012345678901234567890'),
    de: types.BigDecimal.fromString('0.000001'),
    d: 1.5e-7,
    t: 'it\'s',
    b: Buffer.from([0xca, 0xfe]),
    bo: false,
    u: types.Uuid.fromString('123e4567-e89b-12d3-a456-426614174000'),
    ts: new Date('2020-01-02T03:04:05.678Z'),
    dt: types.LocalDate.fromString('2000-02-29'),
    tm: types.LocalTime.fromString('01:02:03.000000004'),
    du: new types.Duration(14, 25, types.Long.fromString(String(((5 * 60 + 6) * 60 + 7) * 1e9 + 8e6 + 9e3 + 10))),
    ip6: types.InetAddress.fromString('2001:db8::ff'),
    l: [1, 2],
    s: ['q'],
    m: { k: 9 },
    tp: new types.Tuple(1, 'x', [3]),
    ud: { street: 'lit', zip: 5 },
  };
  for (const [name, value] of Object.entries(want)) {
    assert.deepEqual(plain(row[name]), plain(value), name);
  }
});

s.test('a tuple through bind markers inside its literal', async (t) => {
  await s.ddl('CREATE TABLE tuples (k int PRIMARY KEY, tp tuple<int, text>)');
  await s.expectBug(t, async () => {
    await s.client.execute('INSERT INTO tuples (k, tp) VALUES (?, (?, ?))', [1, 42, 'answer'], { prepare: true });
    const row = (await s.client.execute('SELECT tp FROM tuples WHERE k = 1')).first();
    assert.deepEqual(plain(row.tp), plain(new types.Tuple(42, 'answer')));
  });
});
