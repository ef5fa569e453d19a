'use strict';
// Connect-time metadata: the hosts, keyspaces and tables the driver reads when it connects, and
// the table metadata it reads after a CREATE TABLE.
const assert = require('node:assert/strict');
const { suite, host, port } = require('./harness');

const s = suite(__filename);

s.test('the driver sees one node, the contact point, with system.local\'s facts', async () => {
  const hosts = s.client.hosts.values();
  assert.equal(hosts.length, 1, `hosts: ${s.client.hosts.keys()}`);
  const h = hosts[0];
  assert.equal(h.address, `${host}:${port}`);
  assert.equal(h.isUp(), true);
  const local = (await s.client.execute(
    'SELECT data_center, rack, host_id, release_version, partitioner, tokens FROM system.local')).first();
  assert.equal(h.datacenter, local.data_center);
  assert.equal(h.rack, local.rack);
  assert.equal(h.hostId.toString(), local.host_id.toString());
  assert.equal(h.cassandraVersion, local.release_version);
  assert.equal(local.partitioner, 'org.apache.cassandra.dht.Murmur3Partitioner');
  assert.ok(h.tokens.length > 0, 'tokens');
  // The token map the driver built from them routes every key to that node.
  const replicas = s.client.getReplicas(s.ks, Buffer.from([0, 0, 0, 42]));
  assert.deepEqual(replicas.map((r) => r.address), [h.address]);
});

s.test('the driver read every keyspace with its replication at connect', async () => {
  const keyspaces = s.client.metadata.keyspaces;
  for (const name of ['system', 'system_schema', s.ks]) {
    assert.ok(keyspaces[name], `keyspace ${name} in ${Object.keys(keyspaces)}`);
  }
  const mine = keyspaces[s.ks];
  assert.equal(mine.strategy, 'org.apache.cassandra.locator.SimpleStrategy');
  assert.equal(String(mine.strategyOptions.replication_factor), '1');
  assert.equal(mine.durableWrites, true);
  const local = await s.client.metadata.getTable('system', 'local');
  assert.deepEqual(local.partitionKeys.map((c) => c.name), ['key']);
});

s.test('table metadata after CREATE TABLE has keys, order, kinds and types', async () => {
  await s.ddl(`CREATE TABLE meta (a int, b text, c timeuuid, d bigint, v map<text, frozen<list<int>>>,
    st set<inet> static, PRIMARY KEY ((a, b), c, d)) WITH CLUSTERING ORDER BY (c DESC, d ASC)
    AND comment = 'made by the node suite'`);
  const t = await s.client.metadata.getTable(s.ks, 'meta');
  assert.ok(t, 'table meta in the metadata');
  assert.deepEqual(t.partitionKeys.map((c) => c.name), ['a', 'b']);
  assert.deepEqual(t.clusteringKeys.map((c) => c.name), ['c', 'd']);
  assert.deepEqual(t.clusteringOrder, ['DESC', 'ASC']);
  assert.equal(t.comment, 'made by the node suite');
  const types = Object.fromEntries(t.columns.map((c) => [c.name, c.type]));
  const { dataTypes } = require('cassandra-driver').types;
  assert.equal(types.a.code, dataTypes.int);
  assert.equal(types.b.code, dataTypes.text);
  assert.equal(types.c.code, dataTypes.timeuuid);
  assert.equal(types.d.code, dataTypes.bigint);
  assert.equal(types.v.code, dataTypes.map);
  assert.equal(types.v.info[1].code, dataTypes.list);
  assert.equal(types.v.info[1].options.frozen, true);
  assert.equal(types.st.code, dataTypes.set);
  assert.equal(types.st.info.code, dataTypes.inet);
  const st = t.columns.find((c) => c.name === 'st');
  assert.equal(st.isStatic, true);
  // A table that is not there is null, not an error.
  const tables = await s.client.metadata.getTable(s.ks, 'no_such_table');
  assert.equal(tables, null);
});

s.test('ALTER TABLE and CREATE TYPE reach the driver\'s metadata', async () => {
  await s.ddl('CREATE TABLE altered (k int PRIMARY KEY, v int)');
  assert.deepEqual((await s.client.metadata.getTable(s.ks, 'altered')).columns.map((c) => c.name), ['k', 'v']);
  await s.ddl('ALTER TABLE altered ADD (extra list<text>, more boolean)',
    'CREATE TYPE point (x double, y double, label frozen<list<text>>)');
  // The driver dropped its cached table on the SCHEMA_CHANGE event (it waited for schema
  // agreement before the ALTER returned): it reads the table again.
  const t = await s.client.metadata.getTable(s.ks, 'altered');
  assert.deepEqual(t.columns.map((c) => c.name).sort(), ['extra', 'k', 'more', 'v']);
  const { dataTypes } = require('cassandra-driver').types;
  const extra = t.columns.find((c) => c.name === 'extra');
  assert.equal(extra.type.code, dataTypes.list);
  assert.equal(extra.type.info.code, dataTypes.text);
  const udt = await s.client.metadata.getUdt(s.ks, 'point');
  assert.ok(udt, 'type point');
  assert.deepEqual(udt.fields.map((f) => f.name), ['x', 'y', 'label']);
  assert.deepEqual(udt.fields.map((f) => f.type.code), [dataTypes.double, dataTypes.double, dataTypes.list]);
});
