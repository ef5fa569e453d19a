package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.metadata.schema.IndexKind;
import com.datastax.oss.driver.api.core.metadata.schema.IndexMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.KeyspaceMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.TableMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.ViewMetadata;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.UserDefinedType;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 11 and issue 10's introspection through the driver: a secondary index and SAI indexes
 * queried with bind markers and small pages (v4 and v5), materialized views (only where the
 * endpoint enables them; otherwise Cassandra's refusal), DESCRIBE rows, and the driver's schema
 * metadata showing the table, its UDT column and its indexes. Partitions 40..43 are the V4 run's,
 * 50..53 the V5 run's; n = 100 * k + c, v = "V4-" / "V5-" and c % 2.
 */
@ExtendWith(CqlExtension.class)
class IndexesTest {
    private static String t;

    @BeforeAll
    static void createIndexedTable(Cql cql) throws InterruptedException {
        t = cql.table("idx");
        cql.session.execute("CREATE TYPE " + cql.table("idx_tag") + " (name text, weight int)");
        cql.session.execute("CREATE TABLE " + t + " (k int, c int, v text, n int, tags set<text>, label frozen<idx_tag>,"
                + " pair tuple<int, list<int>>, st int static, PRIMARY KEY (k, c)) WITH comment = 'indexed'");
        cql.session.execute("CREATE INDEX idx_v ON " + t + " (v)");
        cql.session.execute("CREATE CUSTOM INDEX idx_n ON " + t + " (n) USING 'StorageAttachedIndex'");
        cql.session.execute("CREATE CUSTOM INDEX idx_tags ON " + t + " (tags) USING 'StorageAttachedIndex'");
        // Cassandra builds indexes in the background; IndexInfo lists an index once it is built.
        PreparedStatement built = cql.session.prepare("SELECT index_name FROM system.\"IndexInfo\" WHERE table_name = ?");
        long deadline = System.nanoTime() + 60_000_000_000L;
        Set<String> names = new HashSet<>();
        while (names.size() < 3 && System.nanoTime() < deadline) {
            names.clear();
            cql.session.execute(built.bind(cql.keyspace)).forEach(r -> names.add(r.getString(0)));
            if (names.size() < 3) {
                Thread.sleep(100);
            }
        }
        assertEquals(Set.of("idx_v", "idx_n", "idx_tags"), names, "indexes built");
        PreparedStatement insert = cql.session.prepare("INSERT INTO " + t + " (k, c, v, n, tags) VALUES (?, ?, ?, ?, ?)");
        for (String version : List.of("V4", "V5")) {
            for (int k = base(version); k < base(version) + 4; k++) {
                for (int c = 1; c <= 5; c++) {
                    cql.session.execute(insert.bind(k, c, version + "-" + (c % 2), 100 * k + c, Set.of("t" + c, "all")));
                }
            }
        }
    }

    private static int base(String version) {
        return version.equals("V4") ? 40 : 50;
    }

    /** "k:c" of every row, page by page, checking that no page is larger than {@code pageSize}. */
    private static List<String> paged(CqlSession s, PreparedStatement ps, int pageSize, Object... values) {
        List<String> out = new ArrayList<>();
        for (List<Row> page : Cql.pages(s.execute(ps.bind(values).setPageSize(pageSize)))) {
            assertTrue(page.size() <= pageSize, "page of " + page.size() + " rows");
            page.forEach(r -> out.add(r.getInt("k") + ":" + r.getInt("c")));
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void secondaryIndexQueriesPaged(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int b = base(version);
        List<String> got = paged(s, s.prepare("SELECT k, c FROM " + t + " WHERE v = ?"), 2, version + "-1");
        assertEquals(12, got.size(), "rows: " + got);
        assertEquals(12, Set.copyOf(got).size(), "no row twice: " + got);
        Set<String> expected = new HashSet<>();
        for (int k = b; k < b + 4; k++) {
            for (int c : new int[] {1, 3, 5}) {
                expected.add(k + ":" + c);
            }
        }
        assertEquals(expected, Set.copyOf(got));
        assertEquals(List.of(b + ":2", b + ":4"), paged(s, s.prepare("SELECT k, c FROM " + t + " WHERE k = ? AND v = ?"), 1,
                b, version + "-0"), "with the partition key: clustering order");
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void saiRangeAndContainsQueriesPaged(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int b = base(version);
        int from = 100 * (b + 1) + 2;
        int to = 100 * (b + 2) + 2;
        List<String> got = paged(s, s.prepare("SELECT k, c FROM " + t + " WHERE n >= ? AND n < ?"), 2, from, to);
        assertEquals(Set.of((b + 1) + ":2", (b + 1) + ":3", (b + 1) + ":4", (b + 1) + ":5", (b + 2) + ":1"), Set.copyOf(got));
        assertEquals(5, got.size(), "no row twice: " + got);
        assertEquals(List.of((b + 3) + ":4", (b + 3) + ":5"), paged(s, s.prepare("SELECT k, c FROM " + t
                + " WHERE k = ? AND n > ?"), 1, b + 3, 100 * (b + 3) + 3), "SAI with the partition key");
        List<String> tagged = paged(s, s.prepare("SELECT k, c FROM " + t + " WHERE tags CONTAINS ? AND n >= ? AND n <= ?"), 3,
                "t2", 100 * b, 100 * (b + 3) + 5);
        assertEquals(Set.of(b + ":2", (b + 1) + ":2", (b + 2) + ":2", (b + 3) + ":2"), Set.copyOf(tagged));
        assertEquals(4, tagged.size());
    }

    @Test
    void materializedViewsWhereEnabled(Cql cql) {
        String create = "CREATE MATERIALIZED VIEW " + cql.table("idx_by_n") + " AS SELECT k, c, n FROM " + t
                + " WHERE n IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (n, k, c)";
        try {
            cql.session.execute(create);
        } catch (InvalidQueryException e) {
            assertEquals("Materialized views are disabled. Enable in cassandra.yaml to use.", e.getMessage());
            Assumptions.abort("materialized views are disabled on this endpoint");
        }
        try {
            for (String version : List.of("V4", "V5")) {
                CqlSession s = cql.at(version);
                int n = 100 * (base(version) + 2) + 3;
                Row r = s.execute(s.prepare("SELECT k, c FROM " + cql.table("idx_by_n") + " WHERE n = ?").bind(n)).one();
                assertEquals((base(version) + 2) + ":3", r.getInt("k") + ":" + r.getInt("c"));
            }
            ViewMetadata view = cql.session.getMetadata().getKeyspace(cql.keyspace).orElseThrow()
                    .getView("idx_by_n").orElseThrow(() -> new AssertionError("no metadata for the view"));
            assertEquals("idx", view.getBaseTable().asInternal());
            assertEquals(List.of("n"), view.getPartitionKey().stream().map(c -> c.getName().asInternal()).toList());
        } finally {
            cql.session.execute("DROP MATERIALIZED VIEW " + cql.table("idx_by_n"));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void describeTableRows(String version, Cql cql) {
        CqlSession s = cql.at(version);
        List<Row> rows = s.execute("DESCRIBE TABLE " + t).all();
        assertEquals(List.of("keyspace_name", "type", "name", "create_statement"),
                List.of(0, 1, 2, 3).stream().map(i -> rows.get(0).getColumnDefinitions().get(i).getName().asInternal()).toList());
        Map<String, String> byName = new TreeMap<>();
        for (Row r : rows) {
            assertEquals(cql.keyspace, r.getString("keyspace_name"));
            byName.put(r.getString("type") + " " + r.getString("name"), r.getString("create_statement"));
        }
        String ks = cql.keyspace;
        assertEquals("CREATE TABLE " + ks + ".idx (\n"
                + "    k int,\n"
                + "    c int,\n"
                + "    st int static,\n"
                + "    label frozen<idx_tag>,\n"
                + "    n int,\n"
                + "    pair frozen<tuple<int, frozen<list<int>>>>,\n"
                + "    v text,\n"
                + "    tags set<text>,\n"
                + "    PRIMARY KEY (k, c)\n"
                + ") WITH CLUSTERING ORDER BY (c ASC)\n"
                + "    AND additional_write_policy = '99p'\n"
                + "    AND allow_auto_snapshot = true\n"
                + "    AND bloom_filter_fp_chance = 0.01\n"
                + "    AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}\n"
                + "    AND cdc = false\n"
                + "    AND comment = 'indexed'\n"
                + "    AND compaction = {'class': 'org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy',"
                + " 'max_threshold': '32', 'min_threshold': '4'}\n"
                + "    AND compression = {'chunk_length_in_kb': '16', 'class': 'org.apache.cassandra.io.compress.LZ4Compressor'}\n"
                + "    AND memtable = 'default'\n"
                + "    AND crc_check_chance = 1.0\n"
                + "    AND default_time_to_live = 0\n"
                + "    AND extensions = {}\n"
                + "    AND gc_grace_seconds = 864000\n"
                + "    AND incremental_backups = true\n"
                + "    AND max_index_interval = 2048\n"
                + "    AND memtable_flush_period_in_ms = 0\n"
                + "    AND min_index_interval = 128\n"
                + "    AND read_repair = 'BLOCKING'\n"
                + "    AND speculative_retry = '99p';", byName.get("table idx"));
        assertEquals("CREATE INDEX idx_v ON " + ks + ".idx (v);", byName.get("index idx_v"));
        assertEquals("CREATE CUSTOM INDEX idx_n ON " + ks + ".idx (n) USING 'StorageAttachedIndex';", byName.get("index idx_n"));
        assertEquals("CREATE CUSTOM INDEX idx_tags ON " + ks + ".idx (values(tags)) USING 'StorageAttachedIndex';",
                byName.get("index idx_tags"));
        assertEquals(4, byName.size(), "rows: " + byName.keySet());
    }

    @Test
    void driverMetadataShowsTheTableTypeAndIndexes(Cql cql) {
        KeyspaceMetadata ks = cql.session.getMetadata().getKeyspace(cql.keyspace).orElseThrow();
        UserDefinedType tag = ks.getUserDefinedType("idx_tag").orElseThrow(() -> new AssertionError("no metadata for type idx_tag"));
        assertEquals(List.of(DataTypes.TEXT, DataTypes.INT), tag.getFieldTypes());
        TableMetadata table = ks.getTable("idx").orElseThrow(() -> new AssertionError("no metadata for table idx"));
        assertEquals(tag.copy(true), table.getColumn("label").orElseThrow().getType());
        assertEquals(DataTypes.tupleOf(DataTypes.INT, DataTypes.frozenListOf(DataTypes.INT)),
                table.getColumn("pair").orElseThrow().getType());
        assertTrue(table.getColumn("st").orElseThrow().isStatic());
        assertEquals("indexed", table.getOptions().get(CqlIdentifier.fromCql("comment")));
        Map<String, String> indexes = new TreeMap<>();
        for (IndexMetadata i : table.getIndexes().values()) {
            indexes.put(i.getName().asInternal(), i.getKind() + " " + i.getClassName().orElse("-") + " " + i.getTarget());
        }
        assertEquals(Map.of("idx_v", "COMPOSITES - v", "idx_n", "CUSTOM StorageAttachedIndex n",
                "idx_tags", "CUSTOM StorageAttachedIndex values(tags)"), indexes);
        assertEquals(IndexKind.CUSTOM, table.getIndexes().get(CqlIdentifier.fromInternal("idx_n")).getKind());

        // DDL through the session refreshes its metadata before the call returns.
        cql.session.execute("CREATE INDEX idx_c ON " + t + " (c)");
        assertEquals(Set.of("idx_v", "idx_n", "idx_tags", "idx_c"), indexNames(cql));
        cql.session.execute("DROP INDEX " + cql.table("idx_c"));
        assertEquals(Set.of("idx_v", "idx_n", "idx_tags"), indexNames(cql));
    }

    private static Set<String> indexNames(Cql cql) {
        TableMetadata table = cql.session.getMetadata().getKeyspace(cql.keyspace).orElseThrow().getTable("idx").orElseThrow();
        return table.getIndexes().keySet().stream().map(CqlIdentifier::asInternal).collect(Collectors.toSet());
    }
}
