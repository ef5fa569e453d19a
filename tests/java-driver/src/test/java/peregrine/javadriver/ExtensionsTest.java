package peregrine.javadriver;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.ColumnDefinition;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.servererrors.DefaultWriteType;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.servererrors.ReadTimeoutException;
import com.datastax.oss.driver.api.core.servererrors.SyntaxError;
import com.datastax.oss.driver.api.core.servererrors.WriteTimeoutException;
import com.datastax.oss.driver.api.core.type.DataType;
import com.datastax.oss.driver.api.core.type.DataTypes;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every Peregrine extension of issue 17 (docs/extensions.md) through the unchanged Java driver, at
 * protocol v4 and v5: {@code DELETE ... RETURNING} (row, range, IN, column, conditional, refused in
 * a BATCH, and competing deleters and writers: every value returned exactly once), ScyllaDB's
 * service level statements (result columns and types, errors and their classes and messages,
 * {@code LIST EFFECTIVE SERVICE LEVEL OF}, the {@code timeout} option answering Cassandra's read
 * and write timeouts, on a server of the test's own with logins: {@link OwnServer}), the scan lane's {@code peregrine-scan-rate} custom payload key (a rate that holds, bad values
 * refused), and the predicate filters issue 17 asks for, which are Cassandra's own syntax.
 *
 * <p>The extensions are standalone Peregrine's: against Cassandra or the proxy (which forwards them
 * to Cassandra) those tests are skipped, detected by Cassandra's syntax error. The predicate
 * filter test runs everywhere: it is plain CQL and must answer as Cassandra does.
 */
@ExtendWith(CqlExtension.class)
class ExtensionsTest {
    private static String t;
    private static boolean standalone;

    @BeforeAll
    static void createTable(Cql cql) {
        t = cql.table("ext");
        cql.session.execute("CREATE TABLE " + t + " (k int, c int, v int, w text, s int static, PRIMARY KEY (k, c))");
        try {
            cql.session.execute("DELETE FROM " + t + " WHERE k = -1 RETURNING *");
            standalone = true;
        } catch (SyntaxError e) {
            standalone = false;
        }
    }

    /** Logins on, as ScyllaDB's service levels need roles: started on first use, see {@link #authed}. */
    private static final String AUTH_YAML = "authenticator: PasswordAuthenticator\n"
            + "authorizer: CassandraAuthorizer\nrole_manager: CassandraRoleManager\n";
    private static OwnServer auth;
    private static final Map<String, CqlSession> authed = new HashMap<>();

    /**
     * A superuser's session at {@code version} on this class's own server with logins (levels
     * attach to roles, and roles need logins; test-all's shared server runs without them).
     */
    private static CqlSession authed(String version) throws Exception {
        peregrineOnly();
        if (auth == null) {
            auth = OwnServer.start(AUTH_YAML);
        }
        return authed.computeIfAbsent(version, v -> auth.session("cassandra", "cassandra", v));
    }

    @AfterAll
    static void stopOwnServer() {
        authed.values().forEach(CqlSession::close);
        if (auth != null) {
            auth.close();
        }
    }

    private static void peregrineOnly() {
        Assumptions.assumeTrue(standalone, "the endpoint is not standalone Peregrine (RETURNING is a syntax error)");
    }

    private static int key(String version) {
        return version.equals("V4") ? 4 : 5;
    }

    private static List<String> columns(ResultSet rs) {
        List<String> out = new ArrayList<>();
        for (ColumnDefinition d : rs.getColumnDefinitions()) {
            out.add(d.getName().asInternal());
        }
        return out;
    }

    private static List<DataType> types(ResultSet rs) {
        List<DataType> out = new ArrayList<>();
        for (ColumnDefinition d : rs.getColumnDefinitions()) {
            out.add(d.getType());
        }
        return out;
    }

    private static void fill(CqlSession s, int k) {
        s.execute("DELETE FROM " + t + " WHERE k = " + k);
        PreparedStatement ins = s.prepare("INSERT INTO " + t + " (k, c, v, w) VALUES (?, ?, ?, ?)");
        for (int c = 1; c <= 4; c++) {
            s.execute(ins.bind(k, c, c * 10, "w" + c));
        }
        s.execute("UPDATE " + t + " SET s = 7 WHERE k = " + k);
    }

    private static <E extends Throwable> E fails(Class<E> kind, CqlSession s, String cql, String message) {
        E e = assertThrows(kind, () -> s.execute(cql), cql);
        assertEquals(message, e.getMessage(), cql);
        return e;
    }

    // ---- DELETE ... RETURNING ------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void deleteReturningRowsRangesInListsAndColumns(String version, Cql cql) {
        peregrineOnly();
        CqlSession s = cql.at(version);
        int k = key(version);
        fill(s, k);

        // One row, `*` in SELECT *'s order, with the static column.
        ResultSet rs = s.execute(s.prepare("DELETE FROM " + t + " WHERE k = ? AND c = ? RETURNING *").bind(k, 2));
        assertEquals(List.of("k", "c", "s", "v", "w"), columns(rs));
        assertEquals(List.of(DataTypes.INT, DataTypes.INT, DataTypes.INT, DataTypes.INT, DataTypes.TEXT), types(rs));
        Row r = rs.one();
        assertEquals(List.of(k, 2, 7, 20, "w2"), List.of(r.getInt(0), r.getInt(1), r.getInt(2), r.getInt(3), r.getString(4)));
        assertEquals(null, rs.one());
        assertEquals(0, s.execute("SELECT * FROM " + t + " WHERE k = ? AND c = 2", k).all().size(), "deleted");
        assertEquals(0, s.execute(s.prepare("DELETE FROM " + t + " WHERE k = ? AND c = ? RETURNING *").bind(k, 2))
                .all().size(), "a second delete returns nothing");

        // A column delete returns the values read before it and keeps the row.
        long wt = s.execute("SELECT writetime(v) FROM " + t + " WHERE k = ? AND c = 3", k).one().getLong(0);
        rs = s.execute(SimpleStatement.newInstance(
                "DELETE v FROM " + t + " WHERE k = ? AND c = ? RETURNING v AS old, w, writetime(v)", k, 3));
        assertEquals(List.of("old", "w", "writetime(v)"), columns(rs));
        assertEquals(DataTypes.BIGINT, types(rs).get(2));
        r = rs.one();
        assertEquals(30, r.getInt("old"));
        assertEquals("w3", r.getString("w"));
        assertEquals(wt, r.getLong(2));
        Row kept = s.execute("SELECT v, w FROM " + t + " WHERE k = ? AND c = 3", k).one();
        assertTrue(kept.isNull("v"));
        assertEquals("w3", kept.getString("w"));

        // IN on the clustering key: every row that was there, none made up for c = 9.
        rs = s.execute(s.prepare("DELETE FROM " + t + " WHERE k = ? AND c IN ? RETURNING c").bind(k, List.of(1, 3, 9)));
        List<Integer> cs = new ArrayList<>();
        rs.forEach(x -> cs.add(x.getInt("c")));
        assertEquals(List.of(1, 3), cs);

        // A range, then the whole partition.
        fill(s, k);
        rs = s.execute(s.prepare("DELETE FROM " + t + " WHERE k = ? AND c >= ? AND c < ? RETURNING c, v").bind(k, 2, 4));
        List<List<Integer>> got = new ArrayList<>();
        rs.forEach(x -> got.add(List.of(x.getInt(0), x.getInt(1))));
        assertEquals(List.of(List.of(2, 20), List.of(3, 30)), got);
        rs = s.execute(s.prepare("DELETE FROM " + t + " WHERE k = ? RETURNING c, s").bind(k));
        got.clear();
        rs.forEach(x -> got.add(List.of(x.getInt(0), x.getInt(1))));
        assertEquals(List.of(List.of(1, 7), List.of(4, 7)), got);
        assertEquals(0, s.execute("SELECT * FROM " + t + " WHERE k = ?", k).all().size());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void conditionalDeleteReturning(String version, Cql cql) {
        peregrineOnly();
        CqlSession s = cql.at(version);
        int k = key(version) + 10;
        fill(s, k);
        PreparedStatement cond = s.prepare("DELETE FROM " + t + " WHERE k = ? AND c = ? IF v = ? RETURNING v, w");

        // Not applied: nothing deleted, [applied] = false with the current values.
        ResultSet rs = s.execute(cond.bind(k, 4, 99));
        assertFalse(rs.wasApplied());
        assertEquals(List.of("[applied]", "v", "w"), columns(rs));
        assertEquals(DataTypes.BOOLEAN, types(rs).get(0));
        Row r = rs.one();
        assertFalse(r.getBoolean("[applied]"));
        assertEquals(40, r.getInt("v"));
        assertEquals("w4", r.getString("w"));
        assertEquals(1, s.execute("SELECT * FROM " + t + " WHERE k = ? AND c = 4", k).all().size(), "still there");

        // Applied: the row as it was, and gone.
        rs = s.execute(cond.bind(k, 4, 40));
        assertTrue(rs.wasApplied());
        r = rs.one();
        assertTrue(r.getBoolean("[applied]"));
        assertEquals(40, r.getInt("v"));
        assertEquals("w4", r.getString("w"));
        assertEquals(0, s.execute("SELECT * FROM " + t + " WHERE k = ? AND c = 4", k).all().size());

        // IF EXISTS on a missing row: one row, not applied, nulls.
        rs = s.execute("DELETE FROM " + t + " WHERE k = " + k + " AND c = 4 IF EXISTS RETURNING *");
        assertFalse(rs.wasApplied());
        assertEquals(List.of("[applied]", "k", "c", "s", "v", "w"), columns(rs));
        r = rs.one();
        for (int i = 1; i < 6; i++) {
            assertTrue(r.isNull(i), "column " + i);
        }
        rs = s.execute("DELETE FROM " + t + " WHERE k = " + k + " AND c = 1 IF EXISTS RETURNING v");
        assertTrue(rs.wasApplied());
        assertEquals(10, rs.one().getInt("v"));

        // Cassandra's restrictions on conditional deletes stay.
        fails(InvalidQueryException.class, s, "DELETE FROM " + t + " WHERE k = " + k + " AND c > 1 IF EXISTS RETURNING v",
                "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete"
                        + " non static columns");
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void returningIsRefusedInABatchAndStaysAnIdentifier(String version, Cql cql) {
        peregrineOnly();
        CqlSession s = cql.at(version);
        fails(InvalidQueryException.class, s,
                "BEGIN BATCH DELETE FROM " + t + " WHERE k = 1 AND c = 1 RETURNING * APPLY BATCH",
                "RETURNING is not supported in a BATCH (docs/extensions.md)");
        String r = cql.table("returning_" + version.toLowerCase());
        s.execute("CREATE TABLE IF NOT EXISTS " + r + " (returning int PRIMARY KEY, v int)");
        s.execute("INSERT INTO " + r + " (returning, v) VALUES (1, 2)");
        assertEquals(2, s.execute("SELECT v FROM " + r + " WHERE returning = 1").one().getInt(0));
        ResultSet rs = s.execute("DELETE FROM " + r + " WHERE returning = 1 RETURNING returning");
        assertEquals(List.of("returning"), columns(rs));
        assertEquals(1, rs.one().getInt(0));
    }

    /**
     * Two writers insert rows with values never used before (IF NOT EXISTS, so no write
     * overwrites one) while three deleters race on the same rows, one of them deleting whole
     * partitions: every value inserted comes back from exactly one delete or is still stored.
     */
    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void competingDeletersReturnEachValueExactlyOnce(String version, Cql cql) throws Exception {
        peregrineOnly();
        CqlSession s = cql.at(version);
        String race = cql.table("race_" + version.toLowerCase());
        s.execute("CREATE TABLE " + race + " (k int, c int, v int, PRIMARY KEY (k, c))");
        int rows = 8;
        int rounds = 120;
        PreparedStatement ins = s.prepare("INSERT INTO " + race + " (k, c, v) VALUES (?, ?, ?) IF NOT EXISTS");
        PreparedStatement delRow = s.prepare("DELETE FROM " + race + " WHERE k = ? AND c = ? RETURNING v");
        PreparedStatement delPart = s.prepare("DELETE FROM " + race + " WHERE k = ? RETURNING v");
        ConcurrentLinkedQueue<Integer> inserted = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Integer> returned = new ConcurrentLinkedQueue<>();
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(5);

        List<CompletableFuture<Void>> writers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            int wid = w;
            writers.add(CompletableFuture.runAsync(() -> {
                for (int i = 0; i < rounds; i++) {
                    for (int r = 0; r < rows; r++) {
                        int value = (wid * rounds + i) * rows + r;
                        if (s.execute(ins.bind(r % 2, r, value)).wasApplied()) {
                            inserted.add(value);
                        }
                    }
                }
            }, pool));
        }
        List<CompletableFuture<Void>> deleters = new ArrayList<>();
        for (int d = 0; d < 3; d++) {
            boolean partitions = d == 0;
            deleters.add(CompletableFuture.runAsync(() -> {
                while (!stop.get()) {
                    for (int r = 0; r < rows; r++) {
                        Statement<?> st = partitions && r < 2 ? delPart.bind(r % 2) : delRow.bind(r % 2, r);
                        for (Row x : s.execute(st)) {
                            returned.add(x.getInt("v"));
                        }
                    }
                }
            }, pool));
        }
        try {
            CompletableFuture.allOf(writers.toArray(new CompletableFuture[0])).get();
        } finally {
            stop.set(true);
            CompletableFuture.allOf(deleters.toArray(new CompletableFuture[0])).get();
            pool.shutdown();
        }

        List<Integer> left = new ArrayList<>();
        s.execute("SELECT v FROM " + race).forEach(x -> left.add(x.getInt(0)));
        Set<Integer> once = new HashSet<>(returned);
        assertEquals(returned.size(), once.size(), "a value was returned twice");
        for (int v : left) {
            assertFalse(once.contains(v), "value " + v + " was returned and is still stored");
        }
        List<Integer> all = new ArrayList<>(returned);
        all.addAll(left);
        all.sort(null);
        List<Integer> expected = new ArrayList<>(inserted);
        expected.sort(null);
        assertEquals(expected, all, "every inserted value is returned once or still stored");
        assertTrue(returned.size() > rows, "the deleters raced the writers (" + returned.size() + " returned)");
    }

    // ---- peregrine-scan-rate ----------------------------------------------------------------------

    private static Map<String, ByteBuffer> rate(String value) {
        return Map.of("peregrine-scan-rate", ByteBuffer.wrap(value.getBytes(US_ASCII)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void scanRatePayloadLowersTheRateAndBadValuesAreRefused(String version, Cql cql) {
        peregrineOnly();
        CqlSession s = cql.at(version);
        String scan = cql.table("scan_" + version.toLowerCase());
        s.execute("CREATE TABLE " + scan + " (k int PRIMARY KEY, v int)");
        PreparedStatement ins = s.prepare("INSERT INTO " + scan + " (k, v) VALUES (?, ?)");
        for (int i = 0; i < 60; i++) {
            s.execute(ins.bind(i, i));
        }
        // 60 rows at 100 rows/s: at least 0.6 s however fast the server is.
        long start = System.nanoTime();
        ResultSet rs = s.execute(SimpleStatement.newInstance("SELECT * FROM " + scan).setCustomPayload(rate("100")));
        assertEquals(60, rs.all().size());
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(ms >= 590, "a 60-row scan at 100 rows/s took only " + ms + " ms");

        // count(*) over the table counts every row it reads; prepared statements carry it too.
        start = System.nanoTime();
        PreparedStatement count = s.prepare("SELECT count(*) FROM " + scan);
        assertEquals(60L, s.execute(count.bind().setCustomPayload(rate("200"))).one().getLong(0));
        ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(ms >= 290, "a 60-row count at 200 rows/s took only " + ms + " ms");

        // A point read is no scan: the key is accepted and does not pace it (at 1 row/s a paced
        // read of one row would take a second).
        start = System.nanoTime();
        assertEquals(5, s.execute(SimpleStatement.newInstance("SELECT v FROM " + scan + " WHERE k = 5")
                .setCustomPayload(rate("1"))).one().getInt(0));
        ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(ms < 900, "a point read with the key took " + ms + " ms");

        for (String bad : List.of("fast", "0", "", "4294967296", "-5")) {
            InvalidQueryException e = assertThrows(InvalidQueryException.class, () -> s.execute(
                    SimpleStatement.newInstance("SELECT * FROM " + scan).setCustomPayload(rate(bad))), bad);
            assertEquals("Invalid value '" + bad + "' for custom payload key 'peregrine-scan-rate': expected the rows per"
                    + " second a scan may read, as ASCII digits from 1 to 4294967295 (e.g. b'1000'); it can only lower the"
                    + " server's limit", e.getMessage());
        }
    }

    // ---- Predicate filters: Cassandra's syntax, so this runs against every endpoint --------------

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void predicateFiltersOnReadsUpdatesAndDeletes(String version, Cql cql) {
        CqlSession s = cql.at(version);
        String f = cql.table("filters_" + version.toLowerCase());
        s.execute("CREATE TABLE IF NOT EXISTS " + f
                + " (k int, c int, v int, w text, l list<int>, st int static, PRIMARY KEY (k, c))");
        PreparedStatement ins = s.prepare("INSERT INTO " + f + " (k, c, v, w, l) VALUES (?, ?, ?, ?, ?)");
        for (int k = 1; k <= 3; k++) {
            for (int c = 1; c <= 3; c++) {
                s.execute(ins.bind(k, c, k * 10 + c, c % 2 == 0 ? "even" : "odd", List.of(c, c + 1)));
            }
        }
        s.execute("UPDATE " + f + " SET st = 5 WHERE k = 2");

        // A batch read with a filter on regular and static columns, in one statement.
        PreparedStatement read = s.prepare("SELECT k, c, v FROM " + f
                + " WHERE k IN ? AND v > ? AND w = ? ALLOW FILTERING");
        List<List<Integer>> got = new ArrayList<>();
        s.execute(read.bind(List.of(1, 3), 11, "odd")).forEach(r -> got.add(List.of(r.getInt(0), r.getInt(1), r.getInt(2))));
        assertEquals(List.of(List.of(1, 3, 13), List.of(3, 1, 31), List.of(3, 3, 33)), got);
        got.clear();
        s.execute("SELECT k, c FROM " + f + " WHERE k IN (1, 2, 3) AND l CONTAINS 3 ALLOW FILTERING")
                .forEach(r -> got.add(List.of(r.getInt(0), r.getInt(1))));
        assertEquals(List.of(List.of(1, 2), List.of(1, 3), List.of(2, 2), List.of(2, 3), List.of(3, 2), List.of(3, 3)), got);
        assertEquals(3, s.execute("SELECT c FROM " + f + " WHERE k IN (1, 2) AND st = 5 ALLOW FILTERING").all().size());
        fails(InvalidQueryException.class, s, "SELECT * FROM " + f + " WHERE k IN (1, 2) AND v > 1",
                "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance."
                        + " If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING");

        // A guarded update: refused with the values seen, then applied.
        PreparedStatement upd = s.prepare("UPDATE " + f + " SET v = ? WHERE k = ? AND c = ? IF v = ? AND w IN ? AND l CONTAINS ?");
        ResultSet rs = s.execute(upd.bind(100, 1, 2, 12, List.of("odd"), 2));
        assertFalse(rs.wasApplied());
        assertEquals(List.of("[applied]", "v", "w", "l"), columns(rs), "the conditions' columns, in their order");
        Row r = rs.one();
        assertEquals(12, r.getInt("v"));
        assertEquals("even", r.getString("w"));
        assertEquals(List.of(2, 3), r.getList("l", Integer.class));
        assertTrue(s.execute(upd.bind(100, 1, 2, 12, List.of("odd", "even"), 2)).wasApplied());
        assertEquals(100, s.execute("SELECT v FROM " + f + " WHERE k = 1 AND c = 2").one().getInt(0));

        // Guarded deletes: a row by a regular column, a static column by a static condition.
        rs = s.execute("DELETE FROM " + f + " WHERE k = 3 AND c = 1 IF v > 40");
        assertFalse(rs.wasApplied());
        assertEquals(31, rs.one().getInt("v"));
        assertTrue(s.execute("DELETE FROM " + f + " WHERE k = 3 AND c = 1 IF v < 40 AND w = 'odd'").wasApplied());
        assertEquals(0, s.execute("SELECT * FROM " + f + " WHERE k = 3 AND c = 1").all().size());
        assertTrue(s.execute("DELETE st FROM " + f + " WHERE k = 2 IF st = 5").wasApplied());
        assertTrue(s.execute("SELECT st FROM " + f + " WHERE k = 2 LIMIT 1").one().isNull(0));
        fails(InvalidQueryException.class, s, "UPDATE " + f + " SET v = 1 WHERE k IN (1, 2) AND c = 1 IF v = 1",
                "IN on the partition key is not supported with conditional updates");
    }

    // ---- Service levels (ScyllaDB's syntax) -------------------------------------------------------

    private static List<List<Object>> table(ResultSet rs) {
        List<List<Object>> out = new ArrayList<>();
        int n = rs.getColumnDefinitions().size();
        for (Row r : rs) {
            List<Object> row = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                row.add(r.getObject(i));
            }
            out.add(row);
        }
        return out;
    }

    private static List<Object> row(Object... cells) {
        return java.util.Arrays.asList(cells);
    }

    /** Drops what a service level test made: levels switch the scheduler on for the whole server. */
    private static void dropLevels(CqlSession s, String... names) {
        for (String n : names) {
            s.execute("DROP SERVICE LEVEL IF EXISTS " + n);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void serviceLevelsCreateAlterListAttachAndDrop(String version) throws Exception {
        CqlSession s = authed(version);
        String v = version.toLowerCase();
        String oltp = "jd_oltp_" + v;
        String olap = "jd_olap_" + v;
        String role = "jd_web_" + v;
        s.execute("CREATE ROLE IF NOT EXISTS " + role);
        try {
            s.execute("CREATE SERVICE LEVEL " + oltp);
            s.execute("CREATE SERVICE_LEVEL IF NOT EXISTS " + olap.toUpperCase() + " WITH SHARES = 100");
            s.execute("CREATE SERVICE LEVEL IF NOT EXISTS " + olap + " WITH SHARES = 900"); // exists: no change
            s.execute("ALTER SERVICE LEVEL " + oltp + " WITH shares = 500 AND workload_type = 'interactive'");

            ResultSet rs = s.execute("LIST SERVICE LEVEL " + oltp);
            assertEquals(List.of("service_level", "timeout", "workload_type", "shares"), columns(rs));
            assertEquals(List.of(DataTypes.TEXT, DataTypes.DURATION, DataTypes.TEXT, DataTypes.INT), types(rs));
            assertEquals("QOS", rs.getColumnDefinitions().get(0).getKeyspace().asInternal());
            assertEquals("service_levels", rs.getColumnDefinitions().get(0).getTable().asInternal());
            assertEquals(List.of(row(oltp, null, "interactive", 500)), table(rs));
            assertEquals(List.of(), table(s.execute("LIST SERVICE LEVEL jd_nope")));

            rs = s.execute(s.prepare("LIST ALL SERVICE LEVELS").bind());
            assertEquals(List.of("service_level", "timeout", "workload_type", "shares",
                    "percentage of all service level shares"), columns(rs));
            // Rows by name; the percentage is of all the listed levels' shares.
            List<List<Object>> all = table(rs);
            int total = all.stream().mapToInt(r -> (Integer) r.get(3)).sum();
            List<Object> names = all.stream().map(r -> r.get(0)).collect(java.util.stream.Collectors.toList());
            List<Object> sorted = new ArrayList<>(names);
            sorted.sort(null);
            assertEquals(sorted, names);
            assertTrue(all.contains(row(olap, null, null, 100, String.format(java.util.Locale.ROOT, "%.2f%%", 100.0 * 100 / total))), all.toString());
            assertTrue(all.contains(row(oltp, null, "interactive", 500, String.format(java.util.Locale.ROOT, "%.2f%%", 100.0 * 500 / total))),
                    all.toString());

            s.execute("ATTACH SERVICE LEVEL " + olap + " TO " + role);
            rs = s.execute("LIST ATTACHED SERVICE LEVEL OF " + role);
            assertEquals(List.of("role", "service_level"), columns(rs));
            assertEquals("service_levels_attachments", rs.getColumnDefinitions().get(0).getTable().asInternal());
            assertEquals(List.of(row(role, olap)), table(rs));
            assertTrue(table(s.execute("LIST ALL ATTACHED SERVICE LEVELS")).contains(row(role, olap)));
            s.execute("ATTACH SERVICE LEVEL " + oltp + " TO '" + role + "'");
            assertEquals(List.of(row(role, oltp)), table(s.execute("LIST ATTACHED SERVICE LEVEL OF " + role)));
            s.execute("DETACH SERVICE LEVEL FROM " + role);
            assertEquals(List.of(), table(s.execute("LIST ATTACHED SERVICE LEVEL OF " + role)));
            s.execute("DETACH SERVICE LEVEL FROM " + role); // nothing attached: no error

            // Dropping a level detaches it.
            s.execute("ATTACH SERVICE LEVEL " + olap + " TO " + role);
            s.execute("DROP SERVICE LEVEL " + olap);
            s.execute("DROP SERVICE LEVEL IF EXISTS " + olap);
            assertEquals(List.of(), table(s.execute("LIST ATTACHED SERVICE LEVEL OF " + role)));
            assertEquals(List.of(), table(s.execute("LIST SERVICE LEVEL " + olap)));
        } finally {
            dropLevels(s, oltp, olap);
            s.execute("DROP ROLE IF EXISTS " + role);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void serviceLevelErrors(String version, Cql cql) {
        peregrineOnly();
        CqlSession s = cql.at(version);
        String lvl = "jd_err_" + version.toLowerCase();
        s.execute("CREATE SERVICE LEVEL " + lvl);
        try {
            fails(InvalidQueryException.class, s, "CREATE SERVICE LEVEL " + lvl, "The service level '" + lvl + "' already exists.");
            fails(InvalidQueryException.class, s, "ALTER SERVICE LEVEL jd_nope WITH shares = 5",
                    "The service level 'jd_nope' doesn't exist.");
            fails(InvalidQueryException.class, s, "DROP SERVICE LEVEL jd_nope", "Service Level jd_nope doesn't exists.");
            fails(InvalidQueryException.class, s, "ATTACH SERVICE LEVEL jd_nope TO cassandra",
                    "Service Level jd_nope doesn't exists.");
            fails(InvalidQueryException.class, s, "ATTACH SERVICE LEVEL " + lvl + " TO jd_ghost", "Role jd_ghost doesn't exist.");
            fails(InvalidQueryException.class, s, "DETACH SERVICE LEVEL FROM jd_ghost", "Role jd_ghost doesn't exist.");
            fails(InvalidQueryException.class, s, "CREATE SERVICE LEVEL \"$x\"",
                    "Names starting with '$' are reserved for internal tenants. Use a different name.");
            fails(InvalidQueryException.class, s, "CREATE SERVICE LEVEL jd_x WITH workload_type = 'fast'",
                    "Invalid workload type: fast");
            // ScyllaDB answers these option errors as syntax errors.
            for (String[] c : new String[][] {
                    {"shares = 0", "'SHARES' can only take values of 1-1000 (given 0)"},
                    {"shares = 1001", "'SHARES' can only take values of 1-1000 (given 1001)"},
                    {"shares = 'many'", "Invalid integer value many for 'shares'"},
                    {"speed = 1", "Unknown property 'speed'"}}) {
                SyntaxError e = assertThrows(SyntaxError.class, () -> s.execute("CREATE SERVICE LEVEL jd_x WITH " + c[0]));
                assertTrue(e.getMessage().contains(c[1]), e.getMessage());
            }
            assertThrows(SyntaxError.class, () -> s.execute("ALTER SERVICE LEVEL " + lvl));
            SyntaxError e = assertThrows(SyntaxError.class, () -> s.prepare("ATTACH SERVICE LEVEL ? TO cassandra"));
            assertTrue(e.getMessage().contains("Bind variables cannot be used for service levels or role names"), e.getMessage());
            assertEquals(List.of(), table(s.execute("LIST SERVICE LEVEL jd_x")), "nothing was created");
        } finally {
            dropLevels(s, lvl);
        }
    }

    /** Async requests still answer once a level exists (they then run on the scheduler's threads). */
    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void requestsRunWhileServiceLevelsExist(String version, Cql cql) throws Exception {
        peregrineOnly();
        CqlSession s = cql.at(version);
        String lvl = "jd_run_" + version.toLowerCase();
        int k = key(version) + 20;
        s.execute("CREATE SERVICE LEVEL " + lvl + " WITH shares = 10");
        try {
            fill(s, k);
            PreparedStatement read = s.prepare("SELECT v FROM " + t + " WHERE k = ? AND c = ?");
            List<CompletableFuture<AsyncResultSet>> all = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                all.add(s.executeAsync(read.bind(k, 1 + i % 4)).toCompletableFuture());
            }
            for (int i = 0; i < 200; i++) {
                assertEquals((1 + i % 4) * 10, all.get(i).get().one().getInt(0));
            }
        } finally {
            dropLevels(s, lvl);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void listEffectiveServiceLevelNamesEachOptionsLevel(String version) throws Exception {
        CqlSession s = authed(version);
        String v = version.toLowerCase();
        String fast = "jd_fast_" + v;
        String bulk = "jd_bulk_" + v;
        String web = "jd_eweb_" + v;
        String etl = "jd_eetl_" + v;
        s.execute("CREATE ROLE IF NOT EXISTS " + web);
        s.execute("CREATE ROLE IF NOT EXISTS " + etl);
        try {
            s.execute("CREATE SERVICE LEVEL " + fast + " WITH shares = 800 AND timeout = 2s AND workload_type = 'interactive'");
            s.execute("CREATE SERVICE LEVEL " + bulk + " WITH shares = 200 AND workload_type = 'batch'");
            s.execute("ATTACH SERVICE LEVEL " + fast + " TO " + web);
            ResultSet rs = s.execute("LIST EFFECTIVE SERVICE LEVEL OF " + web);
            assertEquals(List.of("service_level_option", "effective_service_level", "value"), columns(rs));
            assertEquals(List.of(DataTypes.TEXT, DataTypes.TEXT, DataTypes.TEXT), types(rs));
            assertEquals("QOS", rs.getColumnDefinitions().get(0).getKeyspace().asInternal());
            assertEquals("effective_service_level", rs.getColumnDefinitions().get(0).getTable().asInternal());
            assertEquals(List.of(row("workload_type", fast, "interactive"), row("timeout", fast, "2s"),
                    row("shares", fast, "800")), table(rs));
            // Granted etl (bulk): the lowest shares and batch over interactive come from bulk, the
            // timeout from fast (bulk has none).
            s.execute("ATTACH SERVICE LEVEL " + bulk + " TO " + etl);
            s.execute("GRANT " + etl + " TO " + web);
            assertEquals(List.of(row("workload_type", bulk, "batch"), row("timeout", fast, "2s"),
                    row("shares", bulk, "200")), table(s.execute("LIST EFFECTIVE SERVICE_LEVEL OF " + web)));
            assertEquals(java.time.Duration.ofSeconds(2), durationOf(s, fast));
            s.execute("ALTER SERVICE LEVEL " + fast + " WITH timeout = null");
            assertEquals(row("timeout", fast, null), table(s.execute("LIST EFFECTIVE SERVICE LEVEL OF " + web)).get(1));

            fails(InvalidQueryException.class, s, "LIST EFFECTIVE SERVICE LEVEL OF jd_ghost", "Role jd_ghost doesn't exist.");
            s.execute("DETACH SERVICE LEVEL FROM " + etl);
            s.execute("DETACH SERVICE LEVEL FROM " + web);
            fails(InvalidQueryException.class, s, "LIST EFFECTIVE SERVICE LEVEL OF " + web,
                    "Role " + web + " doesn't have assigned any service level");
            for (String[] c : new String[][] {
                    {"1d", "Timeout values cannot be expressed in days/months"},
                    {"10us", "Timeout values must be expressed in millisecond granularity"},
                    {"-1s", "Timeout values must be nonnegative"}}) {
                fails(InvalidQueryException.class, s, "ALTER SERVICE LEVEL " + fast + " WITH timeout = " + c[0], c[1]);
            }
        } finally {
            dropLevels(s, fast, bulk);
            s.execute("DROP ROLE IF EXISTS " + web);
            s.execute("DROP ROLE IF EXISTS " + etl);
        }
    }

    /** The timeout LIST SERVICE LEVEL shows, as a java.time.Duration. */
    private static java.time.Duration durationOf(CqlSession s, String level) {
        com.datastax.oss.driver.api.core.data.CqlDuration d =
                s.execute("LIST SERVICE LEVEL " + level).one().getCqlDuration("timeout");
        return java.time.Duration.ofNanos(d.getNanoseconds());
    }

    /**
     * The {@code timeout} option on a server of the test's own with logins (a level applies to a
     * logged-in role): a scan that would take 3 s is answered with a read timeout at the 1 s
     * deadline, {@code timeout = 0ms} times out writes (write type SIMPLE) and reads, NULL removes
     * it. The drivers' default retry policy does not retry these (0 of 1 replicas answered).
     */
    @Test
    void serviceLevelTimeoutAnswersReadAndWriteTimeouts() throws Exception {
        CqlSession admin = authed("V4");
        try {
            admin.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
            admin.execute("CREATE TABLE ks.big (k int PRIMARY KEY, v int)");
            PreparedStatement ins = admin.prepare("INSERT INTO ks.big (k, v) VALUES (?, ?)");
            for (int k = 0; k < 120; k++) {
                admin.execute(ins.bind(k, k));
            }
            admin.execute("CREATE ROLE slow WITH PASSWORD = 'pw' AND LOGIN = true");
            admin.execute("GRANT SELECT ON KEYSPACE ks TO slow");
            admin.execute("GRANT MODIFY ON KEYSPACE ks TO slow");
            admin.execute("CREATE SERVICE LEVEL tmo WITH timeout = 1s");
            admin.execute("ATTACH SERVICE LEVEL tmo TO slow");
            assertEquals(java.time.Duration.ofSeconds(1), durationOf(admin, "tmo"));
            SimpleStatement scan = SimpleStatement.newInstance("SELECT * FROM ks.big").setCustomPayload(rate("40"));
            for (String version : List.of("V4", "V5")) {
                admin.execute("ALTER SERVICE LEVEL tmo WITH timeout = 1s");
                try (CqlSession slow = auth.session("slow", "pw", version)) {
                    assertEquals(7, slow.execute("SELECT v FROM ks.big WHERE k = 7").one().getInt(0));
                    // 120 rows at 40 rows/s take at least 3 s: answered at the 1 s deadline instead
                    // (the margins leave room for a loaded machine).
                    long start = System.nanoTime();
                    ReadTimeoutException r = assertThrows(ReadTimeoutException.class, () -> slow.execute(scan));
                    long ms = (System.nanoTime() - start) / 1_000_000;
                    assertTrue(ms >= 1000 && ms < 2800, "answered after " + ms + " ms");
                    assertEquals(0, r.getReceived());
                    assertEquals(1, r.getBlockFor());
                    assertFalse(r.wasDataPresent());
                    // The admin has no level: no timeout.
                    assertEquals(120, admin.execute(SimpleStatement.newInstance("SELECT * FROM ks.big")
                            .setCustomPayload(rate("1000"))).all().size());

                    admin.execute("ALTER SERVICE LEVEL tmo WITH timeout = 0ms");
                    WriteTimeoutException w = assertThrows(WriteTimeoutException.class,
                            () -> slow.execute("INSERT INTO ks.big (k, v) VALUES (1000, 1)"));
                    assertEquals(DefaultWriteType.SIMPLE, w.getWriteType());
                    assertEquals(0, w.getReceived());
                    assertEquals(1, w.getBlockFor());
                    assertThrows(ReadTimeoutException.class,
                            () -> slow.execute(slow.prepare("SELECT v FROM ks.big WHERE k = ?").bind(7)));
                    // The timed-out write may still apply: a later delete shadows it whenever it lands.
                    admin.execute("DELETE FROM ks.big WHERE k = 1000");

                    admin.execute("ALTER SERVICE LEVEL tmo WITH timeout = null");
                    assertEquals(null, admin.execute("LIST SERVICE LEVEL tmo").one().getCqlDuration("timeout"));
                    assertEquals(120, slow.execute(SimpleStatement.newInstance("SELECT * FROM ks.big")
                            .setCustomPayload(rate("300"))).all().size());
                }
            }
        } finally {
            admin.execute("DROP SERVICE LEVEL IF EXISTS tmo");
            admin.execute("DROP ROLE IF EXISTS slow");
            admin.execute("DROP KEYSPACE IF EXISTS ks");
        }
    }
}
