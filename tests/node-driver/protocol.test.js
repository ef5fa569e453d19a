'use strict';
// The protocol versions the driver speaks to Cassandra: v3 and v4 (the Node driver has no
// protocol v5 for Cassandra: its v5 support is DSE-only, see types.protocolVersion), chosen
// explicitly, and negotiated from the driver's default.
const assert = require('node:assert/strict');
const { suite, newClient, cassandra } = require('./harness');

const { protocolVersion } = cassandra.types;
const s = suite(__filename);

s.test('protocol v3 and v4 each connect, prepare, write and read a large value', async () => {
  await s.ddl('CREATE TABLE proto (k int PRIMARY KEY, b blob)');
  for (const version of [protocolVersion.v3, protocolVersion.v4]) {
    const client = newClient({ keyspace: s.ks, protocolOptions: { maxVersion: version } });
    try {
      await client.connect();
      assert.equal(client.controlConnection.protocolVersion, version);
      const big = Buffer.alloc(300000, `v${version}-`);
      await client.execute('INSERT INTO proto (k, b) VALUES (?, ?)', [version, big], { prepare: true });
      const row = (await client.execute('SELECT b FROM proto WHERE k = ?', [version], { prepare: true })).first();
      assert.ok(big.equals(row.b), `v${version}: read ${row.b.length} bytes back`);
      assert.ok(await client.metadata.getTable(s.ks, 'proto'), `v${version}: table metadata`);
    } finally {
      await client.shutdown();
    }
  }
});

s.test('the driver negotiates v4 from its default without a warning', async () => {
  // s.client connected with the default options; the harness fails the test on any warning
  // logged while it negotiated (before) or now.
  assert.equal(s.client.controlConnection.protocolVersion, protocolVersion.v4);
  const rs = await s.client.execute('SELECT release_version FROM system.local');
  assert.match(rs.first().release_version, /^\d+\.\d+/);
});
