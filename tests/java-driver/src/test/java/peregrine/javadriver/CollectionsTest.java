package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.data.TupleValue;
import com.datastax.oss.driver.api.core.data.UdtValue;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.TupleType;
import com.datastax.oss.driver.api.core.type.UserDefinedType;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 9's data model through the driver at v4 and v5: non-frozen collections updated element by
 * element with bind markers, frozen and nested collections, UDTs (frozen, non-frozen with field
 * updates, inside collections), tuples and static columns. Each version writes its own partition
 * key (4 or 5, times ten for a second row) so the two runs cannot see each other's rows.
 */
@ExtendWith(CqlExtension.class)
class CollectionsTest {
    private static String coll;
    private static String statics;

    @BeforeAll
    static void createTables(Cql cql) {
        coll = cql.table("coll");
        statics = cql.table("coll_statics");
        cql.session.execute("CREATE TYPE " + cql.table("pt") + " (x int, y int, tag text)");
        cql.session.execute("CREATE TABLE " + coll + " (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>,"
                + " fl frozen<list<int>>, nested map<text, frozen<list<int>>>, u pt, fu frozen<pt>,"
                + " mu map<text, frozen<pt>>, t tuple<int, text, frozen<set<int>>>)");
        cql.session.execute("CREATE TABLE " + statics + " (k int, c int, s text static, v int, PRIMARY KEY (k, c))");
    }

    private static int key(String version) {
        return version.equals("V4") ? 4 : 5;
    }

    private static Row read(CqlSession s, String columns, int k) {
        Row r = s.execute(s.prepare("SELECT " + columns + " FROM " + coll + " WHERE k = ?").bind(k)).one();
        assertNotNull(r, "row " + k);
        return r;
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void listElementUpdates(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version);
        s.execute(s.prepare("INSERT INTO " + coll + " (k, l) VALUES (?, ?)").bind(k, List.of(1, 2, 3)));
        s.execute(s.prepare("UPDATE " + coll + " SET l = l + ? WHERE k = ?").bind(List.of(4, 2), k));
        s.execute(s.prepare("UPDATE " + coll + " SET l = ? + l WHERE k = ?").bind(List.of(0), k));
        assertEquals(List.of(0, 1, 2, 3, 4, 2), read(s, "l", k).getList("l", Integer.class), "after append and prepend");
        s.execute(s.prepare("UPDATE " + coll + " SET l[?] = ? WHERE k = ?").bind(1, 10, k));
        assertEquals(List.of(0, 10, 2, 3, 4, 2), read(s, "l", k).getList("l", Integer.class), "after l[1] = 10");
        s.execute(s.prepare("UPDATE " + coll + " SET l = l - ? WHERE k = ?").bind(List.of(2, 0), k));
        assertEquals(List.of(10, 3, 4), read(s, "l", k).getList("l", Integer.class), "after removing every 2 and 0");
        s.execute(s.prepare("DELETE l[?] FROM " + coll + " WHERE k = ?").bind(0, k));
        assertEquals(List.of(3, 4), read(s, "l", k).getList("l", Integer.class), "after DELETE l[0]");

        PreparedStatement setAt = s.prepare("UPDATE " + coll + " SET l[?] = ? WHERE k = ?");
        InvalidQueryException e = assertThrows(InvalidQueryException.class, () -> s.execute(setAt.bind(5, 1, k)));
        assertEquals("List index 5 out of bound, list has size 2", e.getMessage());
        e = assertThrows(InvalidQueryException.class, () -> s.execute(setAt.bind(0, 1, k * 10)));
        assertEquals("Attempted to set an element on a list which is null", e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void setAndMapElementUpdates(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version) + 100;
        s.execute(s.prepare("UPDATE " + coll + " SET s = s + ?, m = m + ? WHERE k = ?")
                .bind(Set.of("b", "a", "c"), Map.of("one", 1, "two", 2), k));
        s.execute(s.prepare("UPDATE " + coll + " SET s = s - ? WHERE k = ?").bind(Set.of("b", "zz"), k));
        s.execute(s.prepare("UPDATE " + coll + " SET m[?] = ? WHERE k = ?").bind("three", 3, k));
        s.execute(s.prepare("UPDATE " + coll + " SET m[?] = ? WHERE k = ?").bind("one", 11, k));
        s.execute(s.prepare("DELETE m[?] FROM " + coll + " WHERE k = ?").bind("two", k));
        Row r = read(s, "s, m", k);
        assertEquals(List.of("a", "c"), List.copyOf(r.getSet("s", String.class)), "set in comparator order");
        Map<String, Integer> expected = new LinkedHashMap<>();
        expected.put("one", 11);
        expected.put("three", 3);
        assertEquals(expected, r.getMap("m", String.class, Integer.class));

        s.execute(s.prepare("UPDATE " + coll + " SET m = m - ? WHERE k = ?").bind(Set.of("one"), k));
        Row e = s.execute(s.prepare("SELECT m[?] AS three, m['one'] AS one, s['a'] AS a FROM " + coll + " WHERE k = ?")
                .bind("three", k)).one();
        assertNotNull(e);
        assertEquals(3, e.getInt("three"));
        assertTrue(e.isNull("one"), "m['one'] after removing key one");
        assertEquals("a", e.getString("a"), "s['a'] selects the element");

        // Removing the last elements leaves no collection, and a row written by UPDATE alone has no
        // row marker: with its last cells gone the row is gone.
        s.execute(s.prepare("UPDATE " + coll + " SET m = m - ?, s = s - ? WHERE k = ?").bind(Set.of("three"), Set.of("a", "c"), k));
        assertNull(s.execute(s.prepare("SELECT s, m FROM " + coll + " WHERE k = ?").bind(k)).one(), "row without cells or marker");
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void frozenAndNestedCollections(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version);
        Map<String, List<Integer>> nested = new LinkedHashMap<>();
        nested.put("b", List.of(2, 2));
        nested.put("a", List.of());
        s.execute(s.prepare("INSERT INTO " + coll + " (k, fl, nested) VALUES (?, ?, ?)").bind(k, List.of(3, 1, 3), nested));
        s.execute(s.prepare("UPDATE " + coll + " SET nested[?] = ? WHERE k = ?").bind("c", List.of(-1), k));
        Row r = read(s, "fl, nested", k);
        assertEquals(List.of(3, 1, 3), r.getList("fl", Integer.class));
        Map<String, List<Integer>> got = r.getMap("nested", String.class, (Class<List<Integer>>) (Class<?>) List.class);
        assertEquals(List.of("a", "b", "c"), List.copyOf(got.keySet()));
        assertEquals(List.of(), got.get("a"));
        assertEquals(List.of(2, 2), got.get("b"));
        assertEquals(List.of(-1), got.get("c"));

        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("UPDATE " + coll + " SET fl[0] = 1 WHERE k = ?"));
        assertEquals("Invalid operation (fl[0] = 1) for frozen collection column fl", e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void udtsFrozenNonFrozenAndInCollections(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version);
        PreparedStatement insert = s.prepare("INSERT INTO " + coll + " (k, u, fu, mu) VALUES (?, ?, ?, ?)");
        UserDefinedType pt = (UserDefinedType) insert.getVariableDefinitions().get("u").getType();
        assertEquals("pt", pt.getName().asInternal());
        assertEquals(cql.keyspace, pt.getKeyspace().asInternal());
        assertEquals(List.of("x", "y", "tag"), pt.getFieldNames().stream().map(n -> n.asInternal()).toList());
        assertEquals(pt, insert.getVariableDefinitions().get("fu").getType());
        assertEquals(DataTypes.mapOf(DataTypes.TEXT, pt), insert.getVariableDefinitions().get("mu").getType());

        UdtValue a = pt.newValue(1, 2, "a");
        s.execute(insert.bind(k, a, pt.newValue(3, null, "b"), Map.of("z", pt.newValue(9, 9, null), "y", a)));
        s.execute(s.prepare("UPDATE " + coll + " SET u.x = ?, u.tag = ? WHERE k = ?").bind(100, "changed", k));
        s.execute(s.prepare("DELETE u.y FROM " + coll + " WHERE k = ?").bind(k));
        s.execute(s.prepare("UPDATE " + coll + " SET mu[?] = ? WHERE k = ?").bind("x", pt.newValue(0, 0, "x"), k));

        Row r = read(s, "u, u.x, fu, fu.tag, mu", k);
        UdtValue u = r.getUdtValue("u");
        assertEquals(100, u.getInt("x"));
        assertTrue(u.isNull("y"), "u.y deleted");
        assertEquals("changed", u.getString("tag"));
        assertEquals(100, r.getInt("u.x"));
        assertEquals(3, r.getUdtValue("fu").getInt("x"));
        assertTrue(r.getUdtValue("fu").isNull("y"));
        assertEquals("b", r.getString("fu.tag"));
        Map<String, UdtValue> mu = r.getMap("mu", String.class, UdtValue.class);
        assertEquals(List.of("x", "y", "z"), List.copyOf(mu.keySet()));
        assertEquals("a", mu.get("y").getString("tag"));
        assertEquals(9, mu.get("z").getInt("y"));
        assertTrue(mu.get("z").isNull("tag"));

        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("UPDATE " + coll + " SET fu.x = 1 WHERE k = ?"));
        assertEquals("Invalid operation (fu.x = 1) for frozen UDT column fu", e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void tuplesWithNullsAndCollections(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version);
        PreparedStatement insert = s.prepare("INSERT INTO " + coll + " (k, t) VALUES (?, ?)");
        TupleType tt = (TupleType) insert.getVariableDefinitions().get("t").getType();
        assertEquals(List.of(DataTypes.INT, DataTypes.TEXT, DataTypes.frozenSetOf(DataTypes.INT)), tt.getComponentTypes());
        s.execute(insert.bind(k, tt.newValue(7, null, Set.of(3, 1))));
        TupleValue t = read(s, "t", k).getTupleValue("t");
        assertEquals(7, t.getInt(0));
        assertTrue(t.isNull(1));
        assertEquals(Set.of(1, 3), t.getSet(2, Integer.class));
        // A tuple literal with a bind marker inside.
        s.execute(s.prepare("UPDATE " + coll + " SET t = (?, 'lit', {5}) WHERE k = ?").bind(-7, k));
        t = read(s, "t", k).getTupleValue("t");
        assertEquals(-7, t.getInt(0));
        assertEquals("lit", t.getString(1));
        assertEquals(Set.of(5), t.getSet(2, Integer.class));
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void staticColumnsAreSharedByThePartition(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = key(version);
        PreparedStatement insert = s.prepare("INSERT INTO " + statics + " (k, c, s, v) VALUES (?, ?, ?, ?)");
        s.execute(insert.bind(k, 1, "first", 10));
        s.execute(insert.bind(k, 2, "second", 20));
        // A static-only write needs no clustering key; the partition then has a static row of its own.
        s.execute(s.prepare("UPDATE " + statics + " SET s = ? WHERE k = ?").bind("static only", k * 10));
        List<Row> rows = s.execute(s.prepare("SELECT c, s, v FROM " + statics + " WHERE k = ?").bind(k)).all();
        assertEquals(2, rows.size());
        for (Row r : rows) {
            assertEquals("second", r.getString("s"), "the last write of the static column, on every row");
        }
        Row only = s.execute(s.prepare("SELECT c, s, v FROM " + statics + " WHERE k = ?").bind(k * 10)).one();
        assertNotNull(only, "a partition with only its static row shows one row");
        assertTrue(only.isNull("c") && only.isNull("v"));
        assertEquals("static only", only.getString("s"));

        s.execute(s.prepare("DELETE s FROM " + statics + " WHERE k = ?").bind(k));
        Row one = s.execute(s.prepare("SELECT s, v FROM " + statics + " WHERE k = ? AND c = 1").bind(k)).one();
        assertTrue(one.isNull("s") && one.getInt("v") == 10, "static deleted, row kept");
        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("SELECT s FROM " + statics + " WHERE k = ? AND c = 1"));
        assertEquals("Cannot restrict clustering columns when selecting only static columns", e.getMessage());
        e = assertThrows(InvalidQueryException.class,
                () -> s.execute(s.prepare("UPDATE " + statics + " SET v = ? WHERE k = ?").bind(1, k)));
        assertEquals("Some clustering keys are missing: c", e.getMessage());
    }
}
