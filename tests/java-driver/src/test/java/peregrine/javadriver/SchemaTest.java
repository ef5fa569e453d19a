package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.metadata.schema.ClusteringOrder;
import com.datastax.oss.driver.api.core.metadata.schema.ColumnMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.KeyspaceMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.TableMetadata;
import com.datastax.oss.driver.api.core.type.DataType;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.UserDefinedType;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * DDL through the driver and the schema metadata it reads back from system_schema (refreshed
 * after each DDL response and on SCHEMA_CHANGE events). Runs in its own keyspace, dropped last.
 */
@ExtendWith(CqlExtension.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SchemaTest {
    private static String ks;
    private static ResultSet created;

    @BeforeAll
    static void createKeyspace(Cql cql) {
        ks = cql.keyspace + "_schema";
        created = cql.session.execute("CREATE KEYSPACE " + ks
                + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    }

    @AfterAll
    static void dropKeyspace(Cql cql) {
        cql.session.execute("DROP KEYSPACE IF EXISTS " + ks);
    }

    private static KeyspaceMetadata keyspace(CqlSession session) {
        return session.getMetadata().getKeyspace(ks).orElseThrow(() -> new AssertionError("no metadata for keyspace " + ks));
    }

    private static TableMetadata table(CqlSession session, String name) {
        return keyspace(session).getTable(name).orElseThrow(() -> new AssertionError("no metadata for table " + ks + "." + name));
    }

    @Test
    @Order(1)
    void keyspaceMetadataShowsReplication(Cql cql) {
        // False when the driver's schema refresh after the DDL failed, not only on disagreement.
        assertTrue(created.getExecutionInfo().isSchemaInAgreement(), "schema in agreement after CREATE KEYSPACE");
        assertTrue(cql.session.checkSchemaAgreement(), "checkSchemaAgreement");
        KeyspaceMetadata k = keyspace(cql.session);
        Map<String, String> replication = k.getReplication();
        assertTrue(replication.get("class").endsWith("SimpleStrategy"), "replication: " + replication);
        assertEquals("1", replication.get("replication_factor"), "replication: " + replication);
        assertTrue(k.isDurableWrites());
    }

    @Test
    @Order(2)
    void tableMetadataShowsKeysColumnsAndOrder(Cql cql) {
        cql.session.execute("CREATE TYPE " + ks + ".point (x double, y double, label text)");
        ResultSet rs = cql.session.execute("CREATE TABLE " + ks + ".events ("
                + " a int, b text, c timestamp, d bigint, e text, f map<text, int>, g frozen<point>, s int static,"
                + " PRIMARY KEY ((a, b), c, d))"
                + " WITH CLUSTERING ORDER BY (c DESC, d ASC) AND comment = 'java driver'");
        assertTrue(rs.getExecutionInfo().isSchemaInAgreement(), "schema agreement after CREATE TABLE");
        assertTrue(cql.session.checkSchemaAgreement(), "checkSchemaAgreement");

        UserDefinedType point = keyspace(cql.session).getUserDefinedType("point")
                .orElseThrow(() -> new AssertionError("no metadata for type point"));
        assertEquals(List.of("x", "y", "label"), names(point.getFieldNames()));
        assertEquals(List.of(DataTypes.DOUBLE, DataTypes.DOUBLE, DataTypes.TEXT), point.getFieldTypes());

        TableMetadata t = table(cql.session, "events");
        assertEquals(List.of("a", "b"), t.getPartitionKey().stream().map(c -> c.getName().asInternal()).collect(Collectors.toList()));
        assertEquals(List.of(DataTypes.INT, DataTypes.TEXT), t.getPartitionKey().stream().map(ColumnMetadata::getType).collect(Collectors.toList()));
        List<String> clustering = new ArrayList<>();
        for (Map.Entry<ColumnMetadata, ClusteringOrder> e : t.getClusteringColumns().entrySet()) {
            clustering.add(e.getKey().getName().asInternal() + " " + e.getValue());
        }
        assertEquals(List.of("c DESC", "d ASC"), clustering);
        assertEquals(List.of("a", "b", "c", "d"), t.getPrimaryKey().stream().map(c -> c.getName().asInternal()).collect(Collectors.toList()));

        Map<String, DataType> types = t.getColumns().values().stream()
                .collect(Collectors.toMap(c -> c.getName().asInternal(), ColumnMetadata::getType));
        assertEquals(8, types.size(), "columns: " + types);
        assertEquals(DataTypes.TIMESTAMP, types.get("c"));
        assertEquals(DataTypes.BIGINT, types.get("d"));
        assertEquals(DataTypes.TEXT, types.get("e"));
        assertEquals(DataTypes.mapOf(DataTypes.TEXT, DataTypes.INT), types.get("f"));
        assertEquals(point.copy(true), types.get("g"));
        assertEquals(DataTypes.INT, types.get("s"));
        assertTrue(t.getColumn("s").orElseThrow().isStatic(), "s is static");
        assertFalse(t.getColumn("e").orElseThrow().isStatic(), "e is not static");
        assertEquals("java driver", t.getOptions().get(CqlIdentifier.fromCql("comment")));
    }

    /** The clustering order the metadata shows is the order rows come back in. */
    @Test
    @Order(3)
    void rowsComeBackInTheDeclaredClusteringOrder(Cql cql) {
        var insert = cql.session.prepare("INSERT INTO " + ks + ".events (a, b, c, d, e) VALUES (1, 'p', ?, ?, ?)");
        long[][] keys = {{1000, 2}, {3000, 1}, {1000, 1}, {2000, 5}, {3000, 3}, {2000, -4}};
        for (long[] k : keys) {
            cql.session.execute(insert.bind(Instant.ofEpochMilli(k[0]), k[1], k[0] + "/" + k[1]));
        }
        cql.session.execute("UPDATE " + ks + ".events SET s = 42 WHERE a = 1 AND b = 'p'");
        List<String> got = new ArrayList<>();
        for (Row r : cql.session.execute("SELECT c, d, e, s FROM " + ks + ".events WHERE a = 1 AND b = 'p'")) {
            assertEquals(42, r.getInt("s"), "static column on every row");
            got.add(r.getString("e"));
            assertEquals(r.getInstant("c").toEpochMilli() + "/" + r.getLong("d"), r.getString("e"));
        }
        assertEquals(List.of("3000/1", "3000/3", "2000/-4", "2000/5", "1000/1", "1000/2"), got);
    }

    @Test
    @Order(4)
    void alterTableIsVisibleInMetadata(Cql cql) {
        cql.session.execute("ALTER TABLE " + ks + ".events ADD h list<int>");
        ColumnMetadata h = table(cql.session, "events").getColumn("h")
                .orElseThrow(() -> new AssertionError("column h missing after ALTER TABLE ADD"));
        assertEquals(DataTypes.listOf(DataTypes.INT), h.getType());
        cql.session.execute("ALTER TABLE " + ks + ".events DROP e");
        assertTrue(table(cql.session, "events").getColumn("e").isEmpty(), "column e still there after ALTER TABLE DROP");
    }

    /** DDL from another client reaches this session's metadata through a pushed SCHEMA_CHANGE event. */
    @Test
    @Order(5)
    void schemaChangeEventsFromAnotherSession(Cql cql) throws InterruptedException {
        try (CqlSession other = cql.open(null)) {
            other.execute("CREATE TABLE " + ks + ".from_other (k int PRIMARY KEY, v text)");
        }
        long deadline = System.nanoTime() + 20_000_000_000L;
        Optional<TableMetadata> t = Optional.empty();
        while (System.nanoTime() < deadline && (t = keyspace(cql.session).getTable("from_other")).isEmpty()) {
            Thread.sleep(100);
        }
        assertTrue(t.isPresent(), "table created by another session never appeared in this session's metadata");
        assertEquals(DataTypes.TEXT, t.get().getColumn("v").orElseThrow().getType());
    }

    @Test
    @Order(6)
    void dropsAreVisibleInMetadata(Cql cql) {
        cql.session.execute("DROP TABLE " + ks + ".from_other");
        assertTrue(keyspace(cql.session).getTable("from_other").isEmpty(), "table still in metadata after DROP TABLE");
        cql.session.execute("DROP TABLE " + ks + ".events");
        cql.session.execute("DROP TYPE " + ks + ".point");
        assertTrue(keyspace(cql.session).getUserDefinedType("point").isEmpty(), "type still in metadata after DROP TYPE");
        cql.session.execute("DROP KEYSPACE " + ks);
        assertTrue(cql.session.getMetadata().getKeyspace(ks).isEmpty(), "keyspace still in metadata after DROP KEYSPACE");
        assertTrue(cql.session.checkSchemaAgreement(), "checkSchemaAgreement");
    }

    private static List<String> names(List<CqlIdentifier> ids) {
        return ids.stream().map(CqlIdentifier::asInternal).collect(Collectors.toList());
    }
}
