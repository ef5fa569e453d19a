package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.data.CqlDuration;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.InetAddress;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 9's write forms at v4 and v5: counters, {@code USING TTL ? AND TIMESTAMP ?} with
 * {@code writetime()}/{@code ttl()} (also of collections), {@code INSERT JSON ?} with
 * {@code DEFAULT UNSET}/{@code DEFAULT NULL} and {@code SELECT JSON}, the driver's unset values,
 * and the less common scalar types bound as keys and values (their typed order as clustering
 * columns, equality through bind markers).
 */
@ExtendWith(CqlExtension.class)
class WriteFormsTest {
    private static String kv;
    private static String counters;
    private static String typed;

    @BeforeAll
    static void createTables(Cql cql) {
        kv = cql.table("wf_kv");
        counters = cql.table("wf_counters");
        typed = cql.table("wf_typed");
        cql.session.execute("CREATE TABLE " + kv + " (k int, c int, v text, n int, tags set<text>, m map<int, text>,"
                + " PRIMARY KEY (k, c))");
        cql.session.execute("CREATE TABLE " + counters + " (k int PRIMARY KEY, a counter, b counter)");
        cql.session.execute("CREATE TABLE " + typed + " (k int, d decimal, vi varint, si smallint, ti tinyint,"
                + " dt date, tm time, ip inet, du duration, PRIMARY KEY (k, d, vi, si, ti, dt, tm, ip))");
    }

    private static int key(String version) {
        return version.equals("V4") ? 4 : 5;
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void countersWithBoundDeltas(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version);
        PreparedStatement add = s.prepare("UPDATE " + counters + " SET a = a + ?, b = b - ? WHERE k = ?");
        s.execute(add.bind(5L, 1L, k));
        s.execute(add.bind(-2L, -10L, k));
        s.execute(add.bind(Long.MAX_VALUE, 0L, k));
        Row r = s.execute(s.prepare("SELECT a, b FROM " + counters + " WHERE k = ?").bind(k)).one();
        assertNotNull(r);
        assertEquals(Long.MAX_VALUE + 3, r.getLong("a"), "counter arithmetic wraps like a Java long");
        assertEquals(9L, r.getLong("b"));
        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("INSERT INTO " + counters + " (k, a) VALUES (?, ?)"));
        assertEquals("INSERT statements are not allowed on counter tables, use UPDATE instead", e.getMessage());
        e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("UPDATE " + counters + " SET a = 1 WHERE k = ?"));
        assertEquals("Cannot set the value of counter column a (counters can only be incremented/decremented, not set)",
                e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void boundTtlAndTimestampWithWritetime(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version);
        PreparedStatement insert = s.prepare("INSERT INTO " + kv + " (k, c, v, tags) VALUES (?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?");
        s.execute(insert.bind(k, 1, "a", Set.of("x", "y"), 1000, 1_600_000_000_000_000L));
        PreparedStatement update = s.prepare("UPDATE " + kv + " USING TIMESTAMP ? SET n = ?, tags = tags + ? WHERE k = ? AND c = ?");
        s.execute(update.bind(1_600_000_000_000_005L, 42, Set.of("z"), k, 1));
        Row r = s.execute(s.prepare("SELECT writetime(v), ttl(v), writetime(n), ttl(n), writetime(tags),"
                + " maxwritetime(tags), ttl(tags) FROM " + kv + " WHERE k = ? AND c = ?").bind(k, 1)).one();
        assertNotNull(r);
        assertEquals(1_600_000_000_000_000L, r.getLong(0));
        assertTrue(r.getInt(1) > 900 && r.getInt(1) <= 1000, "ttl(v) = " + r.getInt(1));
        assertEquals(1_600_000_000_000_005L, r.getLong(2));
        assertTrue(r.isNull(3), "n has no TTL");
        assertEquals(List.of(1_600_000_000_000_000L, 1_600_000_000_000_000L, 1_600_000_000_000_005L),
                r.getList(4, Long.class), "writetime of each set element");
        assertEquals(1_600_000_000_000_005L, r.getLong(5), "maxwritetime(tags)");
        List<Integer> ttls = r.getList(6, Integer.class);
        assertEquals(3, ttls.size(), "ttl of each element: " + ttls);
        assertTrue(ttls.get(0) > 900 && ttls.get(1) > 900 && ttls.get(2) == null, "ttl(tags) = " + ttls);

        // An older timestamp loses to the newer cell; the TTL of 0 means none.
        s.execute(insert.bind(k, 1, "older", null, 0, 1_500_000_000_000_000L));
        Row after = s.execute(s.prepare("SELECT v, ttl(v) FROM " + kv + " WHERE k = ? AND c = ?").bind(k, 1)).one();
        assertEquals("a", after.getString("v"));
        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.execute(insert.bind(k, 2, "neg", null, -1, 1L)));
        assertEquals("A TTL must be greater or equal to 0, but was -1", e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void insertJsonAndSelectJson(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version) + 10;
        PreparedStatement json = s.prepare("INSERT INTO " + kv + " JSON ?");
        s.execute(json.bind("{\"k\": " + k + ", \"c\": 1, \"v\": \"hello\", \"n\": 7, \"tags\": [\"b\", \"a\"],"
                + " \"m\": {\"2\": \"two\", \"1\": \"one\"}}"));
        Row r = s.execute(s.prepare("SELECT JSON v, n, tags, m FROM " + kv + " WHERE k = ? AND c = 1").bind(k)).one();
        assertNotNull(r);
        assertEquals("[json]", r.getColumnDefinitions().get(0).getName().asInternal());
        assertEquals("{\"v\": \"hello\", \"n\": 7, \"tags\": [\"a\", \"b\"], \"m\": {\"1\": \"one\", \"2\": \"two\"}}",
                r.getString(0));

        // DEFAULT UNSET leaves the omitted columns as they were; DEFAULT NULL (the default) clears them.
        s.execute(s.prepare("INSERT INTO " + kv + " JSON ? DEFAULT UNSET").bind("{\"k\": " + k + ", \"c\": 1, \"n\": 8}"));
        r = s.execute(s.prepare("SELECT v, n FROM " + kv + " WHERE k = ? AND c = 1").bind(k)).one();
        assertEquals("hello", r.getString("v"));
        assertEquals(8, r.getInt("n"));
        s.execute(json.bind("{\"k\": " + k + ", \"c\": 1, \"n\": 9}"));
        r = s.execute(s.prepare("SELECT JSON k, c, v, n AS num FROM " + kv + " WHERE k = ? AND c = 1").bind(k)).one();
        assertEquals("{\"k\": " + k + ", \"c\": 1, \"v\": null, \"num\": 9}", r.getString(0));

        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.execute(json.bind("{\"k\": " + k + ", \"c\": 1, \"nope\": 1}")));
        assertEquals("JSON values map contains unrecognized column: nope", e.getMessage());
    }

    /** The driver sends "unset" for a bind marker given no value (v4+): the column keeps its value. */
    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void unsetValuesLeaveColumnsAlone(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version) + 20;
        PreparedStatement insert = s.prepare("INSERT INTO " + kv + " (k, c, v, n) VALUES (?, ?, ?, ?)");
        s.execute(insert.bind(k, 1, "kept", 1));
        s.execute(insert.boundStatementBuilder().setInt(0, k).setInt(1, 1).unset(2).setInt(3, 2).build());
        s.execute(insert.bind(k, 1).setInt("n", 3)); // fewer values than markers: the rest are unset
        Row r = s.execute(s.prepare("SELECT v, n FROM " + kv
                + " WHERE k = ? AND c = 1").bind(k)).one();
        assertEquals("kept", r.getString("v"));
        assertEquals(3, r.getInt("n"));

        PreparedStatement update = s.prepare("UPDATE " + kv + " USING TTL ? SET v = ? WHERE k = ? AND c = ?");
        s.execute(update.boundStatementBuilder().unset(0).setString(1, "no ttl").setInt(2, k).setInt(3, 1).build());
        assertTrue(s.execute(s.prepare("SELECT ttl(v) FROM " + kv + " WHERE k = ? AND c = 1").bind(k)).one().isNull(0),
                "an unset TTL is no TTL");
        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.execute(update.boundStatementBuilder().setInt(0, 1).setString(1, "x").unset(2).setInt(3, 1).build()));
        assertEquals("Invalid unset value for column k", e.getMessage());
    }

    /**
     * duration, date, time, smallint, tinyint, varint, decimal and inet through bind markers: as
     * clustering columns they come back in their types' order, and a bound value finds its row.
     */
    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void lessCommonTypesAsKeysAndValues(String version, Cql cql) throws Exception {
        CqlSession s = cql.at(version);
        int k = key(version);
        PreparedStatement insert = s.prepare("INSERT INTO " + typed + " (k, d, vi, si, ti, dt, tm, ip, du) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
        BigDecimal[] decimals = {new BigDecimal("10.5"), new BigDecimal("-1E+3"), new BigDecimal("2.25"), new BigDecimal("0.000001")};
        for (int i = 0; i < decimals.length; i++) {
            s.execute(insert.bind(k, decimals[i], BigInteger.valueOf(i - 2).shiftLeft(70), (short) (-i), (byte) i,
                    LocalDate.of(1900 + i * 100, 2, 28), LocalTime.ofNanoOfDay(i * 1_000_000_001L),
                    InetAddress.getByName("10.0.0." + i), CqlDuration.newInstance(-i, -i, -i * 1000L)));
        }
        List<String> order = new ArrayList<>();
        for (Row r : s.execute(s.prepare("SELECT d FROM " + typed + " WHERE k = ?").bind(k))) {
            order.add(r.getBigDecimal("d").toString());
        }
        assertEquals(List.of("-1E+3", "0.000001", "2.25", "10.5"), order, "decimal clustering order is numeric");

        PreparedStatement point = s.prepare("SELECT vi, si, ti, dt, tm, ip, du FROM " + typed
                + " WHERE k = ? AND d = ? AND vi = ? AND si = ? AND ti = ? AND dt = ? AND tm = ? AND ip = ?");
        Row r = s.execute(point.bind(k, new BigDecimal("2.250"), BigInteger.valueOf(0), (short) -2, (byte) 2,
                LocalDate.of(2100, 2, 28), LocalTime.ofNanoOfDay(2_000_000_002L), InetAddress.getByName("10.0.0.2"))).one();
        assertNotNull(r, "2.250 is the clustering value 2.25");
        assertEquals(BigInteger.ZERO, r.getBigInteger("vi"));
        assertEquals((short) -2, r.getShort("si"));
        assertEquals((byte) 2, r.getByte("ti"));
        assertEquals(LocalDate.of(2100, 2, 28), r.getLocalDate("dt"));
        assertEquals(LocalTime.of(0, 0, 2, 2), r.getLocalTime("tm"));
        assertEquals(InetAddress.getByName("10.0.0.2"), r.getInetAddress("ip"));
        assertEquals(CqlDuration.newInstance(-2, -2, -2000), r.getCqlDuration("du"));

        Row lit = s.execute(s.prepare("SELECT d, vi, du FROM " + typed + " WHERE k = ? AND d = 10.50 AND vi = -2361183241434822606848"
                + " AND si = 0 AND ti = 0 AND dt = '1900-02-28' AND tm = '00:00:00' AND ip = '10.0.0.0'").bind(k)).one();
        assertNotNull(lit, "the same row through literals");
        assertEquals(BigInteger.valueOf(-2).shiftLeft(70), lit.getBigInteger("vi"));
        assertEquals(CqlDuration.newInstance(0, 0, 0), lit.getCqlDuration("du"));

        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.execute("CREATE TABLE " + cql.table("wf_bad") + " (k int, du duration, PRIMARY KEY (k, du))"));
        assertEquals("duration type is not supported for PRIMARY KEY column 'du'", e.getMessage());
    }
}
