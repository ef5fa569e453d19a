package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.ExecutionInfo;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Result paging: the driver's automatic paging, a paging state carried by hand, LIMIT, full scans. */
@ExtendWith(CqlExtension.class)
class PagingTest {
    static final int ROWS = 250;
    static final int OTHER_PARTITIONS = 5;
    static final int OTHER_ROWS = 30;

    private static PreparedStatement read;

    @BeforeAll
    static void fill(Cql cql) throws Exception {
        cql.session.execute("CREATE TABLE " + cql.table("paged") + " (pk int, ck int, v text, PRIMARY KEY (pk, ck))"
                + " WITH CLUSTERING ORDER BY (ck DESC)");
        PreparedStatement insert = cql.session.prepare("INSERT INTO " + cql.table("paged") + " (pk, ck, v) VALUES (?, ?, ?)");
        List<BoundStatement> writes = new ArrayList<>();
        for (int ck = 0; ck < ROWS; ck++) {
            writes.add(insert.bind(1, ck, "row-" + ck));
        }
        for (int pk = 2; pk < 2 + OTHER_PARTITIONS; pk++) {
            for (int ck = 0; ck < OTHER_ROWS; ck++) {
                writes.add(insert.bind(pk, ck, "p" + pk));
            }
        }
        AsyncTest.executeBounded(cql.session, writes, 64);
        read = cql.session.prepare("SELECT ck, v FROM " + cql.table("paged") + " WHERE pk = ?");
    }

    @Test
    void automaticPagingReturnsEveryRowInClusteringOrder(Cql cql) {
        ResultSet rs = cql.session.execute(read.bind(1).setPageSize(20));
        assertEquals(20, rs.getAvailableWithoutFetching(), "rows in the first page");
        assertTrue(!rs.isFullyFetched(), "more pages after the first");
        int expected = ROWS - 1;
        for (Row r : rs) {
            assertEquals(expected, r.getInt("ck"), "clustering order (ck DESC)");
            assertEquals("row-" + expected, r.getString("v"));
            expected--;
        }
        assertEquals(-1, expected, "rows read: " + (ROWS - 1 - expected));
        List<ExecutionInfo> pages = rs.getExecutionInfos();
        assertEquals((ROWS + 19) / 20, pages.size(), "pages fetched");
        assertNull(pages.get(pages.size() - 1).getPagingState(), "last page has no paging state");
    }

    /** A paging state taken from one response and sent back in a new statement resumes after it. */
    @Test
    void pagingStateResumesWhereThePageEnded(Cql cql) {
        ResultSet first = cql.session.execute(read.bind(1).setPageSize(37));
        List<Integer> got = new ArrayList<>();
        for (int n = first.getAvailableWithoutFetching(); n > 0; n--) {
            got.add(first.one().getInt("ck"));
        }
        assertEquals(37, got.size());
        ByteBuffer state = first.getExecutionInfo().getPagingState();
        assertNotNull(state, "paging state after the first page");

        ResultSet rest = cql.session.execute(read.bind(1).setPageSize(37).setPagingState(state));
        for (Row r : rest) {
            got.add(r.getInt("ck"));
        }
        assertEquals(ROWS, got.size());
        for (int i = 0; i < ROWS; i++) {
            assertEquals(ROWS - 1 - i, got.get(i), "row " + i);
        }
    }

    @Test
    void limitIsHonouredAcrossPages(Cql cql) {
        ResultSet rs = cql.session.execute(SimpleStatement.newInstance(
                "SELECT ck FROM " + cql.table("paged") + " WHERE pk = 1 LIMIT 45").setPageSize(20));
        List<Row> rows = rs.all();
        assertEquals(45, rows.size());
        assertEquals(ROWS - 1, rows.get(0).getInt("ck"));
        assertEquals(ROWS - 45, rows.get(44).getInt("ck"));
        assertEquals(3, rs.getExecutionInfos().size(), "pages for LIMIT 45 with page size 20");
    }

    /** A whole-table scan pages across partition boundaries without losing or repeating rows. */
    @Test
    void fullScanPagesAcrossPartitions(Cql cql) {
        ResultSet rs = cql.session.execute(SimpleStatement.newInstance(
                "SELECT pk, ck FROM " + cql.table("paged")).setPageSize(20));
        Map<Integer, Integer> perPartition = new HashMap<>();
        int total = 0;
        Integer lastPk = null;
        List<Integer> partitionsInOrder = new ArrayList<>();
        for (Row r : rs) {
            int pk = r.getInt("pk");
            perPartition.merge(pk, 1, Integer::sum);
            if (lastPk == null || lastPk != pk) {
                partitionsInOrder.add(pk);
                lastPk = pk;
            }
            total++;
        }
        assertEquals(ROWS + OTHER_PARTITIONS * OTHER_ROWS, total);
        assertEquals(ROWS, perPartition.get(1));
        for (int pk = 2; pk < 2 + OTHER_PARTITIONS; pk++) {
            assertEquals(OTHER_ROWS, perPartition.get(pk), "rows of partition " + pk);
        }
        assertEquals(1 + OTHER_PARTITIONS, partitionsInOrder.size(), "each partition comes back in one run: " + partitionsInOrder);
        // 400 rows: 20 full pages, and a server may answer one more, empty, page at the end.
        int pages = rs.getExecutionInfos().size();
        assertTrue(pages == total / 20 || pages == total / 20 + 1, "pages fetched: " + pages);
    }
}
