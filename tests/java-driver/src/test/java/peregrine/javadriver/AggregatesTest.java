package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.ColumnDefinitions;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.type.DataType;
import com.datastax.oss.driver.api.core.type.DataTypes;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 10's GROUP BY and aggregates at v4 and v5: groups on partition and clustering prefixes
 * paged two at a time (a group is never split across pages), LIMIT on groups, aggregates over
 * each numeric type and over empty input with their result types, and plain columns beside
 * aggregates (the first row's values). Each version has its own partitions ("V4-a", "V5-a", ...).
 */
@ExtendWith(CqlExtension.class)
class AggregatesTest {
    private static String sales;

    @BeforeAll
    static void fill(Cql cql) {
        sales = cql.table("agg_sales");
        cql.session.execute("CREATE TABLE " + sales + " (shop text, day int, item int, qty int, price decimal,"
                + " w double, big bigint, vi varint, ts timestamp, note text, PRIMARY KEY (shop, day, item))");
        PreparedStatement insert = cql.session.prepare("INSERT INTO " + sales
                + " (shop, day, item, qty, price, w, big, vi, ts, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        for (String version : List.of("V4", "V5")) {
            for (int day = 1; day <= 3; day++) {
                for (int item = 1; item <= 3; item++) {
                    cql.session.execute(row(insert, version + "-a", day, item));
                }
            }
            for (int item = 1; item <= 2; item++) {
                cql.session.execute(row(insert, version + "-b", 1, item));
            }
        }
    }

    /** qty = 10 * day + item; the other numbers follow from it. */
    private static BoundStatement row(PreparedStatement insert, String shop, int day, int item) {
        int qty = 10 * day + item;
        return insert.bind(shop, day, item, qty, new BigDecimal(qty + ".5"), qty * 0.5, qty * 1_000_000_000_000L,
                BigInteger.valueOf(qty).shiftLeft(64), Instant.ofEpochSecond(qty), "n" + qty);
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void groupByClusteringPrefixPagesWholeGroups(String version, Cql cql) {
        CqlSession s = cql.at(version);
        PreparedStatement byDay = s.prepare("SELECT shop, day, count(*) AS n, sum(qty), max(item), item, note FROM " + sales
                + " WHERE shop = ? GROUP BY shop, day");
        ResultSet rs = s.execute(byDay.bind(version + "-a").setPageSize(2));
        List<List<Row>> pages = Cql.pages(rs);
        List<String> got = new ArrayList<>();
        for (Row r : pages.stream().flatMap(List::stream).toList()) {
            got.add(r.getInt("day") + ":" + r.getLong("n") + ":" + r.getInt(3) + ":" + r.getInt(4) + ":" + r.getInt("item")
                    + ":" + r.getString("note"));
        }
        // item and note are the group's first row's values.
        assertEquals(List.of("1:3:36:3:1:n11", "2:3:66:3:1:n21", "3:3:96:3:1:n31"), got);
        assertEquals(2, pages.get(0).size(), "groups in the first page");
        assertEquals(1, pages.get(1).size(), "groups in the second page");
        ColumnDefinitions defs = rs.getColumnDefinitions();
        assertEquals(DataTypes.BIGINT, defs.get("n").getType());
        assertEquals(DataTypes.INT, defs.get(3).getType(), "sum(int) is an int");
        assertEquals("system.sum(qty)", defs.get(3).getName().asInternal());

        // A page of one group at a time, over two partitions, and LIMIT counting groups.
        PreparedStatement byShop = s.prepare("SELECT shop, count(*), min(day), max(qty) FROM " + sales
                + " WHERE shop IN ? GROUP BY shop");
        pages = Cql.pages(s.execute(byShop.bind(List.of(version + "-b", version + "-a")).setPageSize(1)));
        List<String> shops = new ArrayList<>();
        for (List<Row> page : pages) {
            assertTrue(page.size() <= 1, "one group per page");
            for (Row r : page) {
                shops.add(r.getString("shop") + ":" + r.getLong(1) + ":" + r.getInt(2) + ":" + r.getInt(3));
            }
        }
        assertEquals(List.of(version + "-a:9:1:33", version + "-b:2:1:12"), shops, "IN partitions in key order");
        List<Row> limited = s.execute(s.prepare("SELECT day, count(*) FROM " + sales
                + " WHERE shop = ? GROUP BY day LIMIT 2").bind(version + "-a").setPageSize(1)).all();
        assertEquals(2, limited.size());
        assertEquals(2, limited.get(1).getInt("day"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void aggregatesOverEachTypeAndTheirResultTypes(String version, Cql cql) {
        CqlSession s = cql.at(version);
        Row r = s.execute(s.prepare("SELECT count(*), count(qty), min(qty), max(qty), sum(qty), avg(qty), sum(price),"
                + " avg(price), min(w), avg(w), sum(big), avg(vi), max(ts), min(note) FROM " + sales + " WHERE shop = ?")
                .bind(version + "-a")).one();
        assertNotNull(r);
        assertEquals(9L, r.getLong(0));
        assertEquals(9L, r.getLong(1));
        assertEquals(11, r.getInt(2));
        assertEquals(33, r.getInt(3));
        assertEquals(198, r.getInt(4));
        assertEquals(22, r.getInt(5), "avg of ints is an int (truncated)");
        assertEquals(new BigDecimal("202.5"), r.getBigDecimal(6));
        assertEquals(new BigDecimal("22.5"), r.getBigDecimal(7));
        assertEquals(5.5, r.getDouble(8));
        assertEquals(11.0, r.getDouble(9));
        assertEquals(198_000_000_000_000L, r.getLong(10));
        assertEquals(BigInteger.valueOf(22).shiftLeft(64), r.getBigInteger(11));
        assertEquals(Instant.ofEpochSecond(33), r.getInstant(12));
        assertEquals("n11", r.getString(13));
        List<DataType> types = new ArrayList<>();
        r.getColumnDefinitions().forEach(d -> types.add(d.getType()));
        assertEquals(List.of(DataTypes.BIGINT, DataTypes.BIGINT, DataTypes.INT, DataTypes.INT, DataTypes.INT, DataTypes.INT,
                DataTypes.DECIMAL, DataTypes.DECIMAL, DataTypes.DOUBLE, DataTypes.DOUBLE, DataTypes.BIGINT, DataTypes.VARINT,
                DataTypes.TIMESTAMP, DataTypes.TEXT), types);
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void aggregatesOverNoRows(String version, Cql cql) {
        CqlSession s = cql.at(version);
        Row r = s.execute(s.prepare("SELECT count(*), min(qty), max(note), sum(qty), avg(qty), sum(price), avg(w), shop FROM "
                + sales + " WHERE shop = ?").bind(version + "-none")).one();
        assertNotNull(r, "aggregates over no rows still give one row");
        assertEquals(0L, r.getLong(0));
        assertTrue(r.isNull(1) && r.isNull(2), "min/max of nothing are null");
        assertEquals(0, r.getInt(3));
        assertEquals(0, r.getInt(4));
        assertEquals(BigDecimal.ZERO, r.getBigDecimal(5));
        assertEquals(0.0, r.getDouble(6));
        assertTrue(r.isNull("shop"), "a plain column beside aggregates over no rows is null");

        // GROUP BY over no rows gives no groups at all.
        assertNull(s.execute(s.prepare("SELECT day, count(*) FROM " + sales + " WHERE shop = ? GROUP BY day")
                .bind(version + "-none")).one());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void groupByErrors(String version, Cql cql) {
        CqlSession s = cql.at(version);
        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("SELECT item, count(*) FROM " + sales + " WHERE shop = ? GROUP BY item"));
        assertEquals("Group by currently only support groups of columns following their declared order in the PRIMARY KEY",
                e.getMessage());
        e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("SELECT count(*) FROM " + sales + " WHERE shop = ? GROUP BY qty"));
        assertEquals("Group by is currently only supported on the columns of the PRIMARY KEY, got qty", e.getMessage());
    }
}
