package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.data.TupleValue;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.TupleType;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 10's relations at v4 and v5: multi-column relations with one bind marker, IN on the
 * partition key with ORDER BY, token relations, ALLOW FILTERING on each column kind, SELECT
 * DISTINCT with static columns and PER PARTITION LIMIT, paged. Partitions 40..43 belong to the
 * V4 run and 50..53 to the V5 run; each has rows (a, b) for a in 1..2, b in 1..3.
 */
@ExtendWith(CqlExtension.class)
class RelationsTest {
    private static String t;

    @BeforeAll
    static void fill(Cql cql) {
        t = cql.table("rel");
        cql.session.execute("CREATE TABLE " + t + " (k int, a int, b int, v text, st int static, m map<text, int>,"
                + " tags set<text>, PRIMARY KEY (k, a, b))");
        PreparedStatement insert = cql.session.prepare("INSERT INTO " + t + " (k, a, b, v, st, m, tags) VALUES (?, ?, ?, ?, ?, ?, ?)");
        for (int base : new int[] {40, 50}) {
            for (int k = base; k < base + 4; k++) {
                for (int a = 1; a <= 2; a++) {
                    for (int b = 1; b <= 3; b++) {
                        cql.session.execute(insert.bind(k, a, b, k + ":" + a + ":" + b, k * 10, Map.of("a", a, "b", b),
                                Set.of("t" + b)));
                    }
                }
            }
        }
    }

    private static int base(String version) {
        return version.equals("V4") ? 40 : 50;
    }

    private static List<String> vs(ResultSet rs) {
        List<String> out = new ArrayList<>();
        for (Row r : rs) {
            out.add(r.getString("v"));
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void multiColumnRelationsWithOneBindMarker(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = base(version);
        PreparedStatement after = s.prepare("SELECT v FROM " + t + " WHERE k = ? AND (a, b) > ?");
        TupleType ab = (TupleType) after.getVariableDefinitions().get(1).getType();
        assertEquals(DataTypes.tupleOf(DataTypes.INT, DataTypes.INT), ab);
        assertEquals(List.of(k + ":1:3", k + ":2:1", k + ":2:2", k + ":2:3"), vs(s.execute(after.bind(k, ab.newValue(1, 2)))));

        PreparedStatement in = s.prepare("SELECT v FROM " + t + " WHERE k = ? AND (a, b) IN ?");
        assertEquals(DataTypes.listOf(DataTypes.tupleOf(DataTypes.INT, DataTypes.INT)), in.getVariableDefinitions().get(1).getType());
        List<TupleValue> keys = List.of(ab.newValue(2, 1), ab.newValue(1, 3), ab.newValue(9, 9));
        assertEquals(List.of(k + ":1:3", k + ":2:1"), vs(s.execute(in.bind(k, keys))), "IN rows in clustering order");

        PreparedStatement slice = s.prepare("SELECT v FROM " + t + " WHERE k = ? AND (a, b) >= (?, ?) AND (a) < (?)");
        assertEquals(List.of(k + ":1:2", k + ":1:3"), vs(s.execute(slice.bind(k, 1, 2, 2))));
        PreparedStatement mixed = s.prepare("SELECT v FROM " + t + " WHERE k = ? AND a IN ? AND b > ?");
        assertEquals(List.of(k + ":1:3", k + ":2:3"), vs(s.execute(mixed.bind(k, List.of(2, 1), 2))));
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void inOnThePartitionKeyPagedAndWithOrderBy(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = base(version);
        // The driver always pages, and Cassandra sorts IN partitions by ORDER BY only unpaged.
        InvalidQueryException e = assertThrows(InvalidQueryException.class, () -> s.execute(s.prepare("SELECT v FROM " + t
                + " WHERE k IN ? AND a = 1 ORDER BY b DESC").bind(List.of(k + 2, k)).setPageSize(100)));
        assertEquals("Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either"
                + " remove the ORDER BY or the IN and sort client side, or disable paging for this query", e.getMessage());

        // ORDER BY may skip a clustering column an equality restricts.
        assertEquals(List.of(k + ":2:3", k + ":2:2", k + ":2:1"), vs(s.execute(s.prepare("SELECT v FROM " + t
                + " WHERE k = ? AND a = ? ORDER BY b DESC").bind(k, 2))));
        assertEquals(List.of(k + ":2:3", k + ":2:1"), vs(s.execute(s.prepare("SELECT v FROM " + t
                + " WHERE k = ? AND a IN (1, 2) AND b IN (1, 3) ORDER BY a DESC, b DESC LIMIT 2").bind(k))));
        e = assertThrows(InvalidQueryException.class, () -> s.prepare("SELECT v FROM " + t
                + " WHERE k = ? AND a > 0 ORDER BY b DESC"));
        assertEquals("Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY",
                e.getMessage());

        PreparedStatement byPartition = s.prepare("SELECT v FROM " + t + " WHERE k IN ? AND a = 2");
        List<List<Row>> pages = Cql.pages(s.execute(byPartition.bind(List.of(k + 3, k + 1)).setPageSize(2)));
        List<String> paged = new ArrayList<>();
        for (List<Row> page : pages) {
            assertTrue(page.size() <= 2, "page of " + page.size());
            page.forEach(r -> paged.add(r.getString("v")));
        }
        assertEquals(List.of((k + 1) + ":2:1", (k + 1) + ":2:2", (k + 1) + ":2:3", (k + 3) + ":2:1", (k + 3) + ":2:2",
                (k + 3) + ":2:3"), paged, "IN partitions in key order, paged");
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void tokenRelations(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = base(version);
        long token = s.execute(s.prepare("SELECT token(k) FROM " + t + " WHERE k = ? LIMIT 1").bind(k)).one().getLong(0);
        PreparedStatement range = s.prepare("SELECT k, token(k) FROM " + t + " WHERE token(k) >= ? AND token(k) <= ? PER PARTITION LIMIT 1");
        assertEquals(DataTypes.BIGINT, range.getVariableDefinitions().get(0).getType());
        List<Row> rows = s.execute(range.bind(token, token)).all();
        assertEquals(1, rows.size());
        assertEquals(k, rows.get(0).getInt("k"));
        // The whole ring split in two halves by token: every partition once, in token order.
        List<Long> tokens = new ArrayList<>();
        for (Row r : s.execute(s.prepare("SELECT token(k) FROM " + t + " WHERE token(k) <= ? PER PARTITION LIMIT 1").bind(0L))) {
            tokens.add(r.getLong(0));
        }
        for (Row r : s.execute(s.prepare("SELECT token(k) FROM " + t + " WHERE token(k) > ? PER PARTITION LIMIT 1").bind(0L))) {
            tokens.add(r.getLong(0));
        }
        assertTrue(tokens.size() >= 8, "partitions: " + tokens.size());
        List<Long> sorted = new ArrayList<>(tokens);
        sorted.sort(null);
        assertEquals(sorted, tokens, "token order");
        assertEquals(tokens.size(), Set.copyOf(tokens).size(), "no partition twice");
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void allowFilteringOnEachColumnKind(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = base(version);
        String inMine = " WHERE k IN (" + k + ", " + (k + 1) + ") AND ";
        assertEquals(List.of(k + ":2:3"), vs(s.execute(s.prepare("SELECT v FROM " + t + " WHERE k = ? AND v = ? ALLOW FILTERING")
                .bind(k, k + ":2:3"))), "regular column");
        assertEquals(List.of((k + 1) + ":1:1", (k + 1) + ":1:2"), vs(s.execute(s.prepare("SELECT v FROM " + t + inMine
                + "st = ? AND a = 1 AND b < 3 ALLOW FILTERING").bind((k + 1) * 10))), "static column and clustering slice");
        assertEquals(List.of(k + ":1:2", k + ":2:2", (k + 1) + ":1:2", (k + 1) + ":2:2"), vs(s.execute(s.prepare(
                "SELECT v FROM " + t + inMine + "b = ? ALLOW FILTERING").bind(2))), "clustering column");
        assertEquals(List.of(k + ":1:3", k + ":2:2", k + ":2:3"), vs(s.execute(s.prepare("SELECT v FROM " + t
                + " WHERE k = ? AND b >= ? AND v > ? ALLOW FILTERING").bind(k, 2, k + ":1:2"))), "clustering slice after a gap");
        assertEquals(List.of(k + ":1:3", k + ":2:3"), vs(s.execute(s.prepare("SELECT v FROM " + t
                + " WHERE k = ? AND tags CONTAINS ? ALLOW FILTERING").bind(k, "t3"))), "CONTAINS");
        assertEquals(6, s.execute(s.prepare("SELECT v FROM " + t + " WHERE k = ? AND m CONTAINS KEY ? ALLOW FILTERING")
                .bind(k, "b")).all().size(), "CONTAINS KEY");
        assertEquals(List.of(k + ":2:1", k + ":2:2", k + ":2:3"), vs(s.execute(s.prepare("SELECT v FROM " + t
                + " WHERE k = ? AND m[?] = ? ALLOW FILTERING").bind(k, "a", 2))), "map entry");

        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("SELECT v FROM " + t + " WHERE k = ? AND v = ?"));
        assertEquals("Cannot execute this query as it might involve data filtering and thus may have unpredictable performance."
                + " If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING", e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void distinctWithStaticsAndPerPartitionLimitPaged(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = base(version);
        List<Integer> ks = List.of(k + 3, k, k + 1, k + 2);
        List<String> distinct = new ArrayList<>();
        for (Row r : s.execute(s.prepare("SELECT DISTINCT k, st FROM " + t + " WHERE k IN ?").bind(ks).setPageSize(3))) {
            distinct.add(r.getInt("k") + "=" + r.getInt("st"));
        }
        assertEquals(List.of(k + "=" + k * 10, (k + 1) + "=" + (k + 1) * 10, (k + 2) + "=" + (k + 2) * 10,
                (k + 3) + "=" + (k + 3) * 10), distinct);

        List<List<Row>> pages = Cql.pages(s.execute(s.prepare("SELECT v FROM " + t + " WHERE k IN ? PER PARTITION LIMIT 2")
                .bind(ks).setPageSize(3)));
        List<String> got = new ArrayList<>();
        for (List<Row> page : pages) {
            assertTrue(page.size() <= 3, "page of " + page.size());
            page.forEach(r -> got.add(r.getString("v")));
        }
        List<String> expected = new ArrayList<>();
        for (int p = k; p < k + 4; p++) {
            expected.add(p + ":1:1");
            expected.add(p + ":1:2");
        }
        assertEquals(expected, got);
        assertEquals(List.of(k + ":1:1", k + ":1:2", (k + 1) + ":1:1"), vs(s.execute(s.prepare("SELECT v FROM " + t
                + " WHERE k IN ? PER PARTITION LIMIT 2 LIMIT 3").bind(ks).setPageSize(2))));

        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("SELECT DISTINCT k, v FROM " + t));
        assertEquals("SELECT DISTINCT queries must only request partition key columns and/or static columns (not v)", e.getMessage());
    }
}
