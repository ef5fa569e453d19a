package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.cql.BoundStatementBuilder;
import com.datastax.oss.driver.api.core.cql.ColumnDefinition;
import com.datastax.oss.driver.api.core.cql.ColumnDefinitions;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.data.CqlDuration;
import com.datastax.oss.driver.api.core.data.TupleValue;
import com.datastax.oss.driver.api.core.data.UdtValue;
import com.datastax.oss.driver.api.core.type.DataType;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.TupleType;
import com.datastax.oss.driver.api.core.type.UserDefinedType;
import com.datastax.oss.driver.api.core.type.reflect.GenericType;
import com.datastax.oss.driver.api.core.uuid.Uuids;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Every native type, collections, a tuple and a UDT bound into a prepared INSERT and read back. */
@ExtendWith(CqlExtension.class)
class TypesTest {
    private static final String COLUMNS = "id, c_bigint, c_text, c_ascii, c_blob, c_boolean, c_double, c_float,"
            + " c_decimal, c_varint, c_uuid, c_timeuuid, c_timestamp, c_date, c_time, c_inet, c_smallint,"
            + " c_tinyint, c_duration, c_list, c_set, c_map, c_tuple, c_udt, c_frozen_list, c_frozen_set,"
            + " c_frozen_map, c_udt_list";

    private static final GenericType<Map<Integer, Set<String>>> FROZEN_MAP =
            GenericType.mapOf(GenericType.INTEGER, GenericType.setOf(String.class));

    private static PreparedStatement insert;
    private static PreparedStatement select;
    private static UserDefinedType address;
    private static TupleType tuple;

    @BeforeAll
    static void createTable(Cql cql) {
        cql.session.execute("CREATE TYPE " + cql.table("address") + " (street text, zip int, phones frozen<list<text>>)");
        cql.session.execute("CREATE TABLE " + cql.table("all_types") + " ("
                + " id int PRIMARY KEY, c_bigint bigint, c_text text, c_ascii ascii, c_blob blob, c_boolean boolean,"
                + " c_double double, c_float float, c_decimal decimal, c_varint varint, c_uuid uuid,"
                + " c_timeuuid timeuuid, c_timestamp timestamp, c_date date, c_time time, c_inet inet,"
                + " c_smallint smallint, c_tinyint tinyint, c_duration duration,"
                + " c_list list<int>, c_set set<text>, c_map map<text, int>, c_tuple tuple<int, text, double>,"
                + " c_udt frozen<address>, c_frozen_list frozen<list<int>>, c_frozen_set frozen<set<uuid>>,"
                + " c_frozen_map frozen<map<int, frozen<set<text>>>>, c_udt_list list<frozen<address>>)");
        String marks = COLUMNS.replaceAll("[a-z_]+", "?");
        insert = cql.session.prepare("INSERT INTO " + cql.table("all_types") + " (" + COLUMNS + ") VALUES (" + marks + ")");
        select = cql.session.prepare("SELECT " + COLUMNS + " FROM " + cql.table("all_types") + " WHERE id = ?");
        address = (UserDefinedType) insert.getVariableDefinitions().get("c_udt").getType();
        tuple = (TupleType) insert.getVariableDefinitions().get("c_tuple").getType();
    }

    /** The types the server reports for the bind markers and result columns, as CQL declared them. */
    @Test
    void preparedMetadataHasTheDeclaredTypes(Cql cql) {
        ColumnDefinitions vars = insert.getVariableDefinitions();
        assertEquals(28, vars.size());
        assertEquals(List.of(0), insert.getPartitionKeyIndices(), "partition key indices of the INSERT");
        assertEquals(List.of(0), select.getPartitionKeyIndices(), "partition key indices of the SELECT");
        Map<String, DataType> expected = new LinkedHashMap<>();
        expected.put("id", DataTypes.INT);
        expected.put("c_bigint", DataTypes.BIGINT);
        expected.put("c_text", DataTypes.TEXT);
        expected.put("c_ascii", DataTypes.ASCII);
        expected.put("c_blob", DataTypes.BLOB);
        expected.put("c_boolean", DataTypes.BOOLEAN);
        expected.put("c_double", DataTypes.DOUBLE);
        expected.put("c_float", DataTypes.FLOAT);
        expected.put("c_decimal", DataTypes.DECIMAL);
        expected.put("c_varint", DataTypes.VARINT);
        expected.put("c_uuid", DataTypes.UUID);
        expected.put("c_timeuuid", DataTypes.TIMEUUID);
        expected.put("c_timestamp", DataTypes.TIMESTAMP);
        expected.put("c_date", DataTypes.DATE);
        expected.put("c_time", DataTypes.TIME);
        expected.put("c_inet", DataTypes.INET);
        expected.put("c_smallint", DataTypes.SMALLINT);
        expected.put("c_tinyint", DataTypes.TINYINT);
        expected.put("c_duration", DataTypes.DURATION);
        expected.put("c_list", DataTypes.listOf(DataTypes.INT));
        expected.put("c_set", DataTypes.setOf(DataTypes.TEXT));
        expected.put("c_map", DataTypes.mapOf(DataTypes.TEXT, DataTypes.INT));
        expected.put("c_tuple", DataTypes.tupleOf(DataTypes.INT, DataTypes.TEXT, DataTypes.DOUBLE));
        expected.put("c_frozen_list", DataTypes.frozenListOf(DataTypes.INT));
        expected.put("c_frozen_set", DataTypes.frozenSetOf(DataTypes.UUID));
        expected.put("c_frozen_map", DataTypes.frozenMapOf(DataTypes.INT, DataTypes.frozenSetOf(DataTypes.TEXT)));
        for (Map.Entry<String, DataType> e : expected.entrySet()) {
            assertEquals(e.getValue(), vars.get(e.getKey()).getType(), "bind marker type of " + e.getKey());
            assertEquals(e.getValue(), select.getResultSetDefinitions().get(e.getKey()).getType(), "result type of " + e.getKey());
        }
        assertEquals(cql.keyspace, address.getKeyspace().asInternal());
        assertEquals("address", address.getName().asInternal());
        assertEquals(List.of(DataTypes.TEXT, DataTypes.INT, DataTypes.frozenListOf(DataTypes.TEXT)), address.getFieldTypes());
        assertEquals(DataTypes.listOf(address), vars.get("c_udt_list").getType());
        // Every column of the SELECT, in order, with its table.
        int i = 0;
        for (ColumnDefinition d : select.getResultSetDefinitions()) {
            assertEquals(vars.get(i).getName(), d.getName(), "result column " + i);
            assertEquals(cql.keyspace, d.getKeyspace().asInternal());
            assertEquals("all_types", d.getTable().asInternal());
            i++;
        }
    }

    @Test
    void typicalValuesRoundTrip(Cql cql) throws Exception {
        Values v = new Values();
        v.id = 1;
        v.bigint = 1234567890123L;
        v.text = "héllo wörld ✓";
        v.ascii = "plain ascii";
        v.blob = new byte[] {0, 1, 2, (byte) 0xfe, (byte) 0xff};
        v.bool = true;
        v.dbl = Math.PI;
        v.flt = 3.25f;
        v.decimal = new BigDecimal("-12345.678901234567890");
        v.varint = new BigInteger("123456789012345678901234567890");
        v.uuid = UUID.randomUUID();
        v.timeuuid = Uuids.timeBased();
        v.timestamp = Instant.ofEpochMilli(1_700_000_123_456L);
        v.date = LocalDate.of(1969, 7, 20);
        v.time = LocalTime.of(13, 45, 12, 123_456_789);
        v.inet = InetAddress.getByName("192.168.10.20");
        v.smallint = (short) -1234;
        v.tinyint = (byte) 100;
        v.duration = CqlDuration.newInstance(1, 2, 3_000_000_000L);
        v.list = List.of(3, 1, 2, 1);
        v.set = new LinkedHashSet<>(List.of("b", "a", "c"));
        v.map = new LinkedHashMap<>(Map.of("one", 1, "two", 2, "three", 3));
        v.tuple = tuple.newValue(7, "seven", 7.5);
        v.udt = address.newValue("1 Main St", 12345, List.of("555-1234", "555-9876"));
        v.frozenList = List.of(5, 4, 5);
        v.frozenSet = Set.of(UUID.randomUUID(), UUID.randomUUID());
        v.frozenMap = Map.of(1, Set.of("x", "y"), 2, Set.of());
        v.udtList = List.of(address.newValue("a", 1, List.of()), address.newValue("b", 2, List.of("p")));
        roundTrip(cql, v);
    }

    @Test
    void edgeValuesRoundTrip(Cql cql) throws Exception {
        Values v = new Values();
        v.id = 2;
        v.bigint = Long.MIN_VALUE;
        v.text = "";
        v.ascii = "";
        v.blob = new byte[0];
        v.bool = false;
        v.dbl = Double.NaN;
        v.flt = Float.NEGATIVE_INFINITY;
        v.decimal = new BigDecimal(BigInteger.ONE, -5); // 1E+5: a negative scale
        v.varint = BigInteger.TWO.pow(100).negate();
        v.uuid = new UUID(0, 0);
        v.timeuuid = Uuids.startOf(0);
        v.timestamp = Instant.parse("1900-01-01T00:00:00.001Z");
        v.date = LocalDate.of(1, 1, 1);
        v.time = LocalTime.of(23, 59, 59, 999_999_999);
        v.inet = InetAddress.getByName("2001:db8::8a2e:370:7334");
        v.smallint = Short.MAX_VALUE;
        v.tinyint = Byte.MIN_VALUE;
        v.duration = CqlDuration.newInstance(-14, -3, -1);
        v.list = List.of(Integer.MIN_VALUE, Integer.MAX_VALUE);
        v.set = Set.of("only");
        v.map = Map.of("", 0);
        v.tuple = tuple.newValue(null, "", null);
        v.udt = address.newValue(null, -1, null);
        v.frozenList = List.of();
        v.frozenSet = Set.of();
        v.frozenMap = Map.of();
        v.udtList = List.of(address.newValue("", 0, List.of("")));
        roundTrip(cql, v);
    }

    /** Unset columns read back as null; empty frozen collections are values, not null. */
    @Test
    void nullsRoundTrip(Cql cql) {
        cql.session.execute(insert.boundStatementBuilder()
                .setInt("id", 3).setToNull("c_text").setToNull("c_udt").setToNull("c_tuple")
                .setList("c_frozen_list", List.of(), Integer.class)
                .build());
        Row row = cql.session.execute(select.bind(3)).one();
        assertNotNull(row, "row 3");
        for (ColumnDefinition d : row.getColumnDefinitions()) {
            String name = d.getName().asInternal();
            if (name.equals("id") || name.equals("c_frozen_list")) {
                continue;
            }
            assertTrue(row.isNull(name), name + " should be null, got " + row.getObject(name));
        }
        assertTrue(!row.isNull("c_frozen_list") && row.getList("c_frozen_list", Integer.class).isEmpty(),
                "empty frozen list: " + row.getObject("c_frozen_list"));
    }

    /**
     * Sets and map keys come back in the order of their element type's comparator (signed for
     * int, so -1 first), whatever order the client sent them in; lists keep the client's order.
     */
    @Test
    void collectionsComeBackInComparatorOrder(Cql cql) {
        cql.session.execute("CREATE TABLE IF NOT EXISTS " + cql.table("ordered") + " (k int PRIMARY KEY,"
                + " s set<text>, si set<int>, m map<int, text>, fs frozen<set<int>>, fm frozen<map<text, int>>, l list<int>)");
        PreparedStatement ps = cql.session.prepare("INSERT INTO " + cql.table("ordered") + " (k, s, si, m, fs, fm, l) VALUES (1, ?, ?, ?, ?, ?, ?)");
        Map<Integer, String> m = new LinkedHashMap<>();
        m.put(3, "c");
        m.put(-1, "a");
        m.put(2, "b");
        Map<String, Integer> fm = new LinkedHashMap<>();
        fm.put("b", 2);
        fm.put("a", 1);
        cql.session.execute(ps.bind(new LinkedHashSet<>(List.of("b", "a", "c")), new LinkedHashSet<>(List.of(3, -1, 2)), m,
                new LinkedHashSet<>(List.of(3, -1, 2)), fm, List.of(3, -1, 2)));
        Row r = cql.session.execute("SELECT s, si, m, fs, fm, l FROM " + cql.table("ordered") + " WHERE k = 1").one();
        assertNotNull(r);
        assertEquals(List.of("a", "b", "c"), List.copyOf(r.getSet("s", String.class)), "set<text> order");
        assertEquals(List.of(-1, 2, 3), List.copyOf(r.getSet("si", Integer.class)), "set<int> order");
        assertEquals(List.of(-1, 2, 3), List.copyOf(r.getMap("m", Integer.class, String.class).keySet()), "map<int, text> key order");
        assertEquals(List.of(-1, 2, 3), List.copyOf(r.getSet("fs", Integer.class)), "frozen<set<int>> order");
        assertEquals(List.of("a", "b"), List.copyOf(r.getMap("fm", String.class, Integer.class).keySet()), "frozen<map<text, int>> key order");
        assertEquals(List.of(3, -1, 2), r.getList("l", Integer.class), "list<int> keeps the client's order");
    }

    /** A frozen set is one value whatever order its elements were sent in, also as a primary key. */
    @Test
    void frozenSetKeyIgnoresTheElementOrderSent(Cql cql) {
        cql.session.execute("CREATE TABLE IF NOT EXISTS " + cql.table("by_set") + " (k frozen<set<int>> PRIMARY KEY, v text)");
        PreparedStatement insert = cql.session.prepare("INSERT INTO " + cql.table("by_set") + " (k, v) VALUES (?, ?)");
        PreparedStatement read = cql.session.prepare("SELECT v FROM " + cql.table("by_set") + " WHERE k = ?");
        cql.session.execute(insert.bind(new LinkedHashSet<>(List.of(3, -1, 2)), "first"));
        cql.session.execute(insert.bind(new LinkedHashSet<>(List.of(2, 3, -1)), "second"));
        Row r = cql.session.execute(read.bind(new LinkedHashSet<>(List.of(-1, 2, 3)))).one();
        assertNotNull(r, "no row for key {-1, 2, 3} after inserting {3, -1, 2} and {2, 3, -1}");
        assertEquals("second", r.getString("v"), "both inserts wrote the same key");
        assertEquals(1, cql.session.execute("SELECT k FROM " + cql.table("by_set")).all().size(), "rows in by_set");
    }

    /** Values sent without PREPARE (the driver picks codecs from the Java types) and IN ? with a list. */
    @Test
    void simpleStatementValuesAndInList(Cql cql) {
        String insertSome = "INSERT INTO " + cql.table("all_types") + " (id, c_text, c_bigint, c_list, c_map, c_uuid) VALUES (?, ?, ?, ?, ?, ?)";
        cql.session.execute(SimpleStatement.newInstance(insertSome, 4, "simple", 99L, List.of(9, 8), Map.of("k", 1), new UUID(1, 2)));
        cql.session.execute(SimpleStatement.newInstance(insertSome, 5, "other", 98L, List.of(), Map.of(), new UUID(3, 4)));
        Row row = cql.session.execute(SimpleStatement.newInstance(
                "SELECT c_text, c_bigint, c_list, c_map, c_uuid FROM " + cql.table("all_types") + " WHERE id = ?", 4)).one();
        assertNotNull(row);
        assertEquals("simple", row.getString("c_text"));
        assertEquals(99L, row.getLong("c_bigint"));
        assertEquals(List.of(9, 8), row.getList("c_list", Integer.class));
        assertEquals(Map.of("k", 1), row.getMap("c_map", String.class, Integer.class));
        assertEquals(new UUID(1, 2), row.getUuid("c_uuid"));

        PreparedStatement in = cql.session.prepare("SELECT id, c_text FROM " + cql.table("all_types") + " WHERE id IN ?");
        Set<Integer> ids = new HashSet<>();
        for (Row r : cql.session.execute(in.bind(List.of(5, 4, 404)))) {
            ids.add(r.getInt("id"));
        }
        assertEquals(Set.of(4, 5), ids);
    }

    private static void roundTrip(Cql cql, Values v) {
        BoundStatementBuilder b = insert.boundStatementBuilder()
                .setInt("id", v.id)
                .setLong("c_bigint", v.bigint)
                .setString("c_text", v.text)
                .setString("c_ascii", v.ascii)
                .setByteBuffer("c_blob", ByteBuffer.wrap(v.blob))
                .setBoolean("c_boolean", v.bool)
                .setDouble("c_double", v.dbl)
                .setFloat("c_float", v.flt)
                .setBigDecimal("c_decimal", v.decimal)
                .setBigInteger("c_varint", v.varint)
                .setUuid("c_uuid", v.uuid)
                .setUuid("c_timeuuid", v.timeuuid)
                .setInstant("c_timestamp", v.timestamp)
                .setLocalDate("c_date", v.date)
                .setLocalTime("c_time", v.time)
                .setInetAddress("c_inet", v.inet)
                .setShort("c_smallint", v.smallint)
                .setByte("c_tinyint", v.tinyint)
                .setCqlDuration("c_duration", v.duration)
                .setList("c_list", v.list, Integer.class)
                .setSet("c_set", v.set, String.class)
                .setMap("c_map", v.map, String.class, Integer.class)
                .setTupleValue("c_tuple", v.tuple)
                .setUdtValue("c_udt", v.udt)
                .setList("c_frozen_list", v.frozenList, Integer.class)
                .setSet("c_frozen_set", v.frozenSet, UUID.class)
                .setList("c_udt_list", v.udtList, UdtValue.class);
        b = b.set("c_frozen_map", v.frozenMap, FROZEN_MAP);
        cql.session.execute(b.build());

        ResultSet rs = cql.session.execute(select.bind(v.id));
        Row r = rs.one();
        assertNotNull(r, "row " + v.id);
        assertEquals(v.bigint, r.getLong("c_bigint"));
        assertEquals(v.text, r.getString("c_text"));
        assertEquals(v.ascii, r.getString("c_ascii"));
        ByteBuffer blob = r.getByteBuffer("c_blob");
        assertNotNull(blob, "blob (empty is a value, not null)");
        byte[] got = new byte[blob.remaining()];
        blob.duplicate().get(got);
        assertArrayEquals(v.blob, got);
        assertEquals(v.bool, r.getBoolean("c_boolean"));
        assertEquals(Double.doubleToRawLongBits(v.dbl), Double.doubleToRawLongBits(r.getDouble("c_double")));
        assertEquals(Float.floatToRawIntBits(v.flt), Float.floatToRawIntBits(r.getFloat("c_float")));
        assertEquals(v.decimal, r.getBigDecimal("c_decimal"), "decimal keeps its scale");
        assertEquals(v.varint, r.getBigInteger("c_varint"));
        assertEquals(v.uuid, r.getUuid("c_uuid"));
        assertEquals(v.timeuuid, r.getUuid("c_timeuuid"));
        assertEquals(v.timestamp, r.getInstant("c_timestamp"));
        assertEquals(v.date, r.getLocalDate("c_date"));
        assertEquals(v.time, r.getLocalTime("c_time"));
        assertEquals(v.inet, r.getInetAddress("c_inet"));
        assertEquals(v.smallint, r.getShort("c_smallint"));
        assertEquals(v.tinyint, r.getByte("c_tinyint"));
        assertEquals(v.duration, r.getCqlDuration("c_duration"));
        assertEquals(v.list, r.getList("c_list", Integer.class), "list keeps order and duplicates");
        assertEquals(v.set, r.getSet("c_set", String.class));
        assertEquals(v.map, r.getMap("c_map", String.class, Integer.class));
        assertEquals(v.tuple, r.getTupleValue("c_tuple"));
        assertEquals(v.udt, r.getUdtValue("c_udt"));
        assertEquals(v.frozenList, r.getList("c_frozen_list", Integer.class));
        assertEquals(v.frozenSet, r.getSet("c_frozen_set", UUID.class));
        assertEquals(v.frozenMap, r.get("c_frozen_map", FROZEN_MAP));
        assertEquals(v.udtList, r.getList("c_udt_list", UdtValue.class));
    }

    /** One row's values. */
    private static final class Values {
        int id;
        long bigint;
        String text;
        String ascii;
        byte[] blob;
        boolean bool;
        double dbl;
        float flt;
        BigDecimal decimal;
        BigInteger varint;
        UUID uuid;
        UUID timeuuid;
        Instant timestamp;
        LocalDate date;
        LocalTime time;
        InetAddress inet;
        short smallint;
        byte tinyint;
        CqlDuration duration;
        List<Integer> list;
        Set<String> set;
        Map<String, Integer> map;
        TupleValue tuple;
        UdtValue udt;
        List<Integer> frozenList;
        Set<UUID> frozenSet;
        Map<Integer, Set<String>> frozenMap;
        List<UdtValue> udtList;
    }
}
