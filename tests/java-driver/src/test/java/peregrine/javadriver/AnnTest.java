package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.data.CqlVector;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.type.DataTypes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 12 through driver 4 at v4 and v5: {@code ORDER BY v ANN OF ? LIMIT ?} on an SAI vector
 * index (euclidean), prepared with a bound {@link CqlVector} and limit, alone, within a partition
 * and beside another SAI predicate, with the similarity score selected; and Cassandra 5.0.9's
 * refusals. The expected order is computed here from the rows (the table is small, so both
 * Cassandra and Peregrine answer exactly).
 */
@ExtendWith(CqlExtension.class)
class AnnTest {
    private static String t;
    /** The rows: k in 0..3, c in 0..4, v = [k, c, k + c], tag even/odd by c. */
    private static final List<float[]> ROWS = new ArrayList<>();

    @BeforeAll
    static void createIndexedTable(Cql cql) throws InterruptedException {
        t = cql.table("ann");
        cql.session.execute("CREATE TABLE " + t + " (k int, c int, v vector<float, 3>, tag text, PRIMARY KEY (k, c))");
        cql.session.execute("CREATE CUSTOM INDEX ann_v ON " + t + " (v) USING 'StorageAttachedIndex'"
                + " WITH OPTIONS = {'similarity_function': 'euclidean'}");
        cql.session.execute("CREATE CUSTOM INDEX ann_tag ON " + t + " (tag) USING 'StorageAttachedIndex'");
        PreparedStatement insert = cql.session.prepare("INSERT INTO " + t + " (k, c, v, tag) VALUES (?, ?, ?, ?)");
        for (int k = 0; k < 4; k++) {
            for (int c = 0; c < 5; c++) {
                ROWS.add(new float[] {k, c, k, c, k + c});
                cql.session.execute(insert.bind(k, c, CqlVector.newInstance((float) k, (float) c, (float) (k + c)),
                        c % 2 == 0 ? "even" : "odd"));
            }
        }
        // Cassandra builds an index in the background even on an empty table: wait until an ANN
        // query is answered.
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (true) {
            try {
                cql.session.execute("SELECT k FROM " + t + " ORDER BY v ANN OF [0.0, 0.0, 0.0] LIMIT 1");
                break;
            } catch (RuntimeException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    /** Cassandra's euclidean similarity: 1 / (1 + squared distance), in float. */
    private static float similarity(float[] row, float[] q) {
        float d = 0;
        for (int i = 0; i < 3; i++) {
            float x = row[2 + i] - q[i];
            d += x * x;
        }
        return 1 / (1 + d);
    }

    /** "k/c" of the rows `keep` accepts, nearest first, at most `limit`. */
    private static List<String> nearest(float[] q, int limit, java.util.function.Predicate<float[]> keep) {
        return ROWS.stream()
                .filter(keep)
                .sorted(Comparator.comparingDouble((float[] r) -> -similarity(r, q)))
                .limit(limit)
                .map(r -> (int) r[0] + "/" + (int) r[1])
                .toList();
    }

    private static List<String> keys(Iterable<Row> rows) {
        List<String> out = new ArrayList<>();
        rows.forEach(r -> out.add(r.getInt("k") + "/" + r.getInt("c")));
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void preparedAnnQueriesAnswerTheNearestRowsInOrder(String version, Cql cql) {
        CqlSession s = cql.at(version);
        float[] q = {1.1f, 2.3f, 3.05f};
        CqlVector<Float> vq = CqlVector.newInstance(q[0], q[1], q[2]);

        PreparedStatement all = s.prepare("SELECT k, c, similarity_euclidean(v, ?) AS score FROM " + t
                + " ORDER BY v ANN OF ? LIMIT ?");
        assertEquals(DataTypes.vectorOf(DataTypes.FLOAT, 3), all.getVariableDefinitions().get(0).getType());
        assertEquals(DataTypes.INT, all.getVariableDefinitions().get(2).getType());
        List<Row> rows = s.execute(all.bind(vq, vq, 5)).all();
        assertEquals(nearest(q, 5, r -> true), keys(rows));
        for (Row r : rows) {
            float[] row = ROWS.get(r.getInt("k") * 5 + r.getInt("c"));
            assertEquals(similarity(row, q), r.getFloat("score"), 1e-6f);
        }

        PreparedStatement inPartition = s.prepare("SELECT k, c FROM " + t + " WHERE k = ? ORDER BY v ANN OF ? LIMIT 3");
        assertEquals(nearest(q, 3, r -> r[0] == 2), keys(s.execute(inPartition.bind(2, vq))));

        PreparedStatement tagged = s.prepare("SELECT k, c FROM " + t + " WHERE tag = ? ORDER BY v ANN OF ? LIMIT ?");
        List<String> even = keys(s.execute(tagged.bind("even", vq, 4)));
        assertEquals(nearest(q, 4, r -> ((int) r[1]) % 2 == 0), even);
        Set<String> distinct = new HashSet<>(even);
        assertEquals(even.size(), distinct.size(), "no row twice");
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void refusalsCarryCassandrasMessages(String version, Cql cql) {
        CqlSession s = cql.at(version);
        String[][] cases = {
            {"SELECT k FROM " + t + " ORDER BY v ANN OF [1.0, 2.0, 3.0]",
                "Top-K queries must have a limit specified and the limit must be less than the query page size"},
            {"SELECT k FROM " + t + " ORDER BY v ANN OF [1.0, 2.0] LIMIT 3",
                "Invalid vector literal for v of type vector<float, 3>; expected 3 elements, but given 2"},
            {"SELECT k FROM " + t + " ORDER BY v ANN OF [1.0, 2.0, 3.0] LIMIT 1001",
                "Use of ANN OF in an ORDER BY clause requires a LIMIT that is not greater than 1000. LIMIT was 1001"},
            {"SELECT k FROM " + t + " ORDER BY tag ANN OF [1.0, 2.0, 3.0] LIMIT 3",
                "Unexpected receiver type 'text'; only list and vector are expected"},
        };
        for (String[] c : cases) {
            InvalidQueryException e = assertThrows(InvalidQueryException.class, () -> s.execute(c[0]), c[0]);
            assertEquals(c[1], e.getMessage(), c[0]);
        }
    }
}
