'use strict';
// Server errors reach the application as the driver's ResponseError with Cassandra's codes;
// driver-side refusals (a value of the wrong type) are the driver's own errors; the client stays
// usable after each.
const assert = require('node:assert/strict');
const { suite, cassandra } = require('./harness');

const { responseErrorCodes: codes } = cassandra.types;
const s = suite(__filename);

s.test('syntax, unknown table, wrong type and already-exists errors have their codes', async () => {
  await s.ddl('CREATE TABLE errs (k int PRIMARY KEY, v text)');
  const cases = [
    ['SELEKT * FROM errs', codes.syntaxError],
    ['SELECT * FROM no_such_table', codes.invalid],
    ['SELECT * FROM no_such_keyspace.errs', codes.invalid],
    ['INSERT INTO errs (k, v) VALUES (\'not an int\', \'x\')', codes.invalid],
    ['INSERT INTO errs (k, nope) VALUES (1, \'x\')', codes.invalid],
    ['SELECT * FROM errs WHERE v = \'x\'', codes.invalid],
    ['CREATE TABLE errs (k int PRIMARY KEY)', codes.alreadyExists],
  ];
  for (const [stmt, code] of cases) {
    for (const prepare of [false, true]) {
      await assert.rejects(s.client.execute(stmt, [], { prepare }), (err) => {
        assert.ok(err instanceof cassandra.errors.ResponseError, `${stmt}: ${err}`);
        assert.equal(err.code, code, `${stmt} (prepare ${prepare}): code 0x${err.code.toString(16)} ${err.message}`);
        assert.ok(err.message.length > 0);
        return true;
      });
    }
  }
  await assert.rejects(s.client.execute('CREATE TABLE errs (k int PRIMARY KEY)'), (err) => {
    assert.equal(err.keyspace, s.ks);
    assert.equal(err.table, 'errs');
    return true;
  });
  // A bound value of the wrong type is refused by the driver's encoder before it is sent.
  await assert.rejects(s.client.execute('INSERT INTO errs (k, v) VALUES (?, ?)', ['one', 'x'], { prepare: true }),
    TypeError);
  // Too few values for the markers: the server refuses it.
  await assert.rejects(s.client.execute('INSERT INTO errs (k, v) VALUES (?, ?)', [1], { prepare: true }));
  await s.client.execute('INSERT INTO errs (k, v) VALUES (1, \'still fine\')');
  assert.equal((await s.client.execute('SELECT v FROM errs WHERE k = 1')).first().v, 'still fine');
});

s.test('a statement prepared on a dropped table answers an error, not rows', async () => {
  await s.ddl('CREATE TABLE gone (k int PRIMARY KEY, v int)');
  await s.client.execute('INSERT INTO gone (k, v) VALUES (?, ?)', [1, 1], { prepare: true });
  await s.ddl('DROP TABLE gone');
  // Cassandra drops the prepared statement with its table: the driver gets UNPREPARED, its
  // re-prepare fails, and it reports that host's error wrapped in NoHostAvailableError.
  await assert.rejects(s.client.execute('INSERT INTO gone (k, v) VALUES (?, ?)', [1, 2], { prepare: true }), (err) => {
    const inner = err instanceof cassandra.errors.NoHostAvailableError ? Object.values(err.innerErrors)[0] : err;
    assert.ok(inner instanceof cassandra.errors.ResponseError, `${err}`);
    assert.ok([codes.invalid, codes.unprepared].includes(inner.code), `code 0x${inner.code.toString(16)}: ${inner.message}`);
    return true;
  });
});
