package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BatchType;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Batches, lightweight transactions, counters, TTL and write timestamps. */
@ExtendWith(CqlExtension.class)
class WritesTest {
    private static String kv;
    private static String counters;
    private static PreparedStatement insert;
    private static PreparedStatement readPartition;

    @BeforeAll
    static void createTables(Cql cql) {
        kv = cql.table("writes");
        counters = cql.table("counters");
        cql.session.execute("CREATE TABLE " + kv + " (pk text, ck int, v text, n int, PRIMARY KEY (pk, ck))");
        cql.session.execute("CREATE TABLE " + counters + " (pk text PRIMARY KEY, hits counter, misses counter)");
        insert = cql.session.prepare("INSERT INTO " + kv + " (pk, ck, v) VALUES (?, ?, ?)");
        readPartition = cql.session.prepare("SELECT ck, v FROM " + kv + " WHERE pk = ?");
    }

    private static List<String> partition(Cql cql, String pk) {
        List<String> out = new ArrayList<>();
        for (Row r : cql.session.execute(readPartition.bind(pk))) {
            out.add(r.getInt("ck") + "=" + r.getString("v"));
        }
        return out;
    }

    @Test
    void loggedBatchAcrossPartitions(Cql cql) {
        BatchStatement batch = BatchStatement.newInstance(BatchType.LOGGED)
                .add(insert.bind("logged-a", 1, "x"))
                .add(insert.bind("logged-b", 1, "y"))
                .add(SimpleStatement.newInstance("INSERT INTO " + kv + " (pk, ck, v) VALUES ('logged-a', 2, 'z')"))
                .add(SimpleStatement.newInstance("UPDATE " + kv + " SET v = ? WHERE pk = ? AND ck = ?", "w", "logged-b", 2));
        ResultSet rs = cql.session.execute(batch);
        assertTrue(rs.wasApplied());
        assertEquals(List.of("1=x", "2=z"), partition(cql, "logged-a"));
        assertEquals(List.of("1=y", "2=w"), partition(cql, "logged-b"));
    }

    /**
     * Statements in a batch share one timestamp: the DELETE and the INSERT of ck=2 tie and the
     * tombstone wins; ck=9, written earlier with an older timestamp, is deleted.
     */
    @Test
    void unloggedBatchWithDeletesAndOneTimestamp(Cql cql) {
        cql.session.execute(insert.bind("unlogged", 9, "old").setQueryTimestamp(1_500_000_000_000_000L));
        BatchStatement batch = BatchStatement.builder(BatchType.UNLOGGED)
                .addStatement(insert.bind("unlogged", 1, "a"))
                .addStatement(insert.bind("unlogged", 2, "b"))
                .addStatement(insert.bind("unlogged", 3, "c"))
                .addStatement(SimpleStatement.newInstance("DELETE FROM " + kv + " WHERE pk = 'unlogged' AND ck IN (2, 9)"))
                .setQueryTimestamp(1_600_000_000_000_000L)
                .build();
        cql.session.execute(batch);
        assertEquals(List.of("1=a", "3=c"), partition(cql, "unlogged"));
        Row r = cql.session.execute("SELECT writetime(v) FROM " + kv + " WHERE pk = 'unlogged' AND ck = 3").one();
        assertNotNull(r);
        assertEquals(1_600_000_000_000_000L, r.getLong(0), "writetime = the batch's query timestamp");
    }

    @Test
    void lightweightTransactions(Cql cql) {
        PreparedStatement ifNotExists = cql.session.prepare(
                "INSERT INTO " + kv + " (pk, ck, v) VALUES (?, ?, ?) IF NOT EXISTS");
        ResultSet first = cql.session.execute(ifNotExists.bind("lwt", 1, "first"));
        assertTrue(first.wasApplied(), "first INSERT IF NOT EXISTS applies");

        ResultSet second = cql.session.execute(ifNotExists.bind("lwt", 1, "second"));
        assertFalse(second.wasApplied(), "second INSERT IF NOT EXISTS does not apply");
        Row existing = second.one();
        assertNotNull(existing, "a not-applied LWT returns the existing row");
        assertEquals("first", existing.getString("v"), "the existing row's value");

        ResultSet notApplied = cql.session.execute(SimpleStatement.newInstance(
                "UPDATE " + kv + " SET v = 'nope' WHERE pk = 'lwt' AND ck = 1 IF v = ?", "other"));
        assertFalse(notApplied.wasApplied(), "UPDATE IF v = 'other' does not apply");
        assertEquals("first", notApplied.one().getString("v"));

        ResultSet applied = cql.session.execute(SimpleStatement.newInstance(
                "UPDATE " + kv + " SET v = 'updated' WHERE pk = 'lwt' AND ck = 1 IF v = ?", "first"));
        assertTrue(applied.wasApplied(), "UPDATE IF v = 'first' applies");
        assertEquals(List.of("1=updated"), partition(cql, "lwt"));

        assertTrue(cql.session.execute("DELETE FROM " + kv + " WHERE pk = 'lwt' AND ck = 1 IF EXISTS").wasApplied());
        assertFalse(cql.session.execute("DELETE FROM " + kv + " WHERE pk = 'lwt' AND ck = 1 IF EXISTS").wasApplied());
        assertEquals(List.of(), partition(cql, "lwt"));
    }

    @Test
    void counters(Cql cql) {
        cql.session.execute("UPDATE " + counters + " SET hits = hits + 5 WHERE pk = 'c'");
        cql.session.execute("UPDATE " + counters + " SET hits = hits - 2, misses = misses + 1 WHERE pk = 'c'");
        PreparedStatement add = cql.session.prepare("UPDATE " + counters + " SET hits = hits + ? WHERE pk = ?");
        cql.session.execute(add.bind(10L, "c"));
        cql.session.execute(BatchStatement.newInstance(BatchType.COUNTER)
                .add(add.bind(100L, "c"))
                .add(add.bind(-7L, "d"))
                .add(SimpleStatement.newInstance("UPDATE " + counters + " SET misses = misses + 3 WHERE pk = 'd'")));
        Row c = cql.session.execute("SELECT hits, misses FROM " + counters + " WHERE pk = 'c'").one();
        Row d = cql.session.execute("SELECT hits, misses FROM " + counters + " WHERE pk = 'd'").one();
        assertNotNull(c);
        assertNotNull(d);
        assertEquals(113L, c.getLong("hits"));
        assertEquals(1L, c.getLong("misses"));
        assertEquals(-7L, d.getLong("hits"));
        assertEquals(3L, d.getLong("misses"));
    }

    @Test
    void ttlAndWritetime(Cql cql) {
        cql.session.execute("INSERT INTO " + kv + " (pk, ck, v, n) VALUES ('ttl', 1, 'a', 1) USING TTL 100 AND TIMESTAMP 1234567890123");
        Row r = cql.session.execute("SELECT ttl(v), writetime(v) FROM " + kv + " WHERE pk = 'ttl' AND ck = 1").one();
        assertNotNull(r);
        int ttl = r.getInt(0);
        assertTrue(ttl > 80 && ttl <= 100, "ttl(v) = " + ttl);
        assertEquals(1234567890123L, r.getLong(1), "writetime(v) = USING TIMESTAMP");

        PreparedStatement withTtl = cql.session.prepare("UPDATE " + kv + " USING TTL ? SET n = ? WHERE pk = 'ttl' AND ck = ?");
        cql.session.execute(withTtl.bind(50, 7, 2).setQueryTimestamp(1_700_000_000_000_000L));
        r = cql.session.execute("SELECT ttl(n), writetime(n), ttl(v), v FROM " + kv + " WHERE pk = 'ttl' AND ck = 2").one();
        assertNotNull(r);
        assertTrue(r.getInt(0) > 30 && r.getInt(0) <= 50, "bound ttl(n) = " + r.getInt(0));
        assertEquals(1_700_000_000_000_000L, r.getLong(1), "writetime(n) = the statement's query timestamp");
        assertTrue(r.isNull(2) && r.isNull(3), "v untouched by the UPDATE");

        // Without USING TIMESTAMP the driver sends its own client timestamp (microseconds).
        long before = TimeUnit.MILLISECONDS.toMicros(System.currentTimeMillis());
        cql.session.execute(insert.bind("ttl", 3, "now"));
        long after = TimeUnit.MILLISECONDS.toMicros(System.currentTimeMillis());
        long wt = cql.session.execute("SELECT writetime(v) FROM " + kv + " WHERE pk = 'ttl' AND ck = 3").one().getLong(0);
        assertTrue(wt >= before - 1_000_000 && wt <= after + 1_000_000, "writetime " + wt + " not in [" + before + ", " + after + "]");
    }

    @Test
    void expiredRowsDisappear(Cql cql) throws InterruptedException {
        // TTL 5: long enough that a loaded machine still reads the row before it expires (TTL 1
        // failed once in test-all under load); then wait for the expiry, not a fixed sleep.
        cql.session.execute("INSERT INTO " + kv + " (pk, ck, v) VALUES ('expire', 1, 'gone soon') USING TTL 5");
        cql.session.execute(insert.bind("expire", 2, "stays"));
        assertEquals(2, partition(cql, "expire").size());
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (partition(cql, "expire").size() > 1 && System.nanoTime() < deadline) {
            Thread.sleep(200);
        }
        assertEquals(List.of("2=stays"), partition(cql, "expire"));
        assertNull(cql.session.execute("SELECT v FROM " + kv + " WHERE pk = 'expire' AND ck = 1").one(), "expired row");
    }
}
