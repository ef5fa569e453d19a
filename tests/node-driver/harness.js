'use strict';
// What every test file here shares: a client on a keyspace made for this file's run (unique name,
// dropped at the end), a record of every 'warning' and 'error' the driver logs (a test fails if
// the driver logged one while it ran: drivers degrade silently on what they cannot parse), and
// the known-bug list.
//
// The endpoint is CQL_HOST (default 127.0.0.1) and CQL_PORT (run.sh PORT [HOST]).
const assert = require('node:assert/strict');
const nodeTest = require('node:test');
const cassandra = require('cassandra-driver');

const host = process.env.CQL_HOST || '127.0.0.1';
const port = Number(process.env.CQL_PORT);
if (!Number.isInteger(port) || port <= 0) {
  throw new Error('CQL_PORT must be set to the endpoint\'s port (run.sh PORT [HOST])');
}

// Warnings and errors the driver logged, from every client made here.
const driverLog = [];

/** A client with this suite's settings; `options` are merged over them. */
function newClient(options = {}) {
  const client = new cassandra.Client({
    contactPoints: [`${host}:${port}`],
    localDataCenter: 'datacenter1',
    socketOptions: { connectTimeout: 15000, readTimeout: 15000 },
    queryOptions: { consistency: cassandra.types.consistencies.one },
    ...options,
  });
  client.on('log', (level, className, message, furtherInfo) => {
    if (level === 'warning' || level === 'error') {
      driverLog.push(`${level} ${className}: ${message}${furtherInfo ? ` ${furtherInfo}` : ''}`);
    }
  });
  return client;
}

// Bugs of standalone Peregrine that these tests find, by test name. Such a test uses expectBug:
// it still runs everywhere; against standalone Peregrine its failure is logged and not counted,
// and its passing fails it ("now passes": take it off this list).
const knownBugs = {};

/**
 * The client and keyspace of one test file: connects and creates the keyspace before its tests,
 * drops it and closes after them. `test(name, fn)` defines a test that also fails on driver logs.
 */
function suite(file) {
  const name = require('node:path').basename(file, '.test.js').replace(/\W/g, '_');
  const ks = `nodejs_${name}_${Date.now()}_${process.pid}`;
  const ctx = { ks, client: null, standalone: false };

  nodeTest.before(async () => {
    const admin = newClient();
    await admin.connect();
    await admin.execute(`CREATE KEYSPACE ${ks} WITH replication = `
      + '{\'class\': \'SimpleStrategy\', \'replication_factor\': 1}');
    await admin.shutdown();
    ctx.client = newClient({ keyspace: ks });
    await ctx.client.connect();
    // Standalone Peregrine has no gossip: its gossip_generation is 0, where a Cassandra node's is
    // its start time (Peregrine as a proxy shows its upstream's system.local).
    const local = await ctx.client.execute('SELECT gossip_generation FROM system.local');
    ctx.standalone = local.first().gossip_generation === 0;
  });

  nodeTest.after(async () => {
    const mark = driverLog.length;
    if (ctx.client) {
      await ctx.client.execute(`DROP KEYSPACE IF EXISTS ${ks}`);
      await ctx.client.shutdown();
    }
    assert.deepEqual(driverLog.slice(mark), [], 'the driver logged while dropping the keyspace and closing');
  });

  ctx.test = (title, fn) => nodeTest.test(title, async (t) => {
    const mark = driverLog.length;
    await fn(t);
    assert.deepEqual(driverLog.slice(mark), [], 'the driver logged warnings/errors during the test');
  });

  /** Runs fn; where test t is a known bug of this server, fn must fail and passing fails. */
  ctx.expectBug = async (t, fn) => {
    const title = t.name;
    const bug = knownBugs[title];
    if (!bug || !ctx.standalone) {
      await fn();
      return;
    }
    try {
      await fn();
    } catch (err) {
      console.log(`known Peregrine bug, still failing (${bug}): ${err.message}`);
      return;
    }
    assert.fail(`known bug now passes, take "${title}" off knownBugs: ${bug}`);
  };

  /** Runs DDL and waits until the driver sees schema agreement. */
  ctx.ddl = async (...stmts) => {
    for (const stmt of stmts) {
      await ctx.client.execute(stmt);
    }
    assert.equal(await ctx.client.metadata.checkSchemaAgreement(), true, 'schema agreement');
  };

  return ctx;
}

module.exports = { cassandra, newClient, suite, host, port, driverLog };
