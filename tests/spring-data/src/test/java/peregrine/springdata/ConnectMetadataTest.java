package peregrine.springdata;

import static org.assertj.core.api.Assertions.assertThat;

import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.TokenMap;
import com.datastax.oss.driver.api.core.metadata.schema.ClusteringOrder;
import com.datastax.oss.driver.api.core.metadata.schema.ColumnMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.KeyspaceMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.TableMetadata;
import com.datastax.oss.driver.api.core.type.DataType;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.UserDefinedType;
import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.data.cassandra.core.CassandraAdminTemplate;
import org.springframework.data.cassandra.core.CassandraPersistentEntitySchemaCreator;

/**
 * What the driver loads when the application connects (nodes, token map, schema metadata), the
 * keyspace the application created, and the user type and tables Spring Data's schema action
 * ({@code spring.cassandra.schema-action: create_if_not_exists}) created from the entities.
 */
class ConnectMetadataTest extends SpringDataTest {

    @Test
    void oneNodeAtTheContactPointWithATokenMap() {
        Map<?, Node> nodes = session.getMetadata().getNodes();
        assertThat(nodes).hasSize(1);
        Node node = nodes.values().iterator().next();
        InetSocketAddress address = (InetSocketAddress) node.getEndPoint().resolve();
        assertThat(address.getPort()).isEqualTo(Integer.parseInt(System.getenv("CQL_PORT")));
        Row local = session.execute("SELECT data_center, release_version FROM system.local").one();
        assertThat(local).isNotNull();
        assertThat(node.getDatacenter()).isEqualTo(local.getString("data_center"));
        assertThat(node.getCassandraVersion()).isNotNull();

        TokenMap tokens = session.getMetadata().getTokenMap().orElseThrow();
        assertThat(tokens.getTokenRanges()).isNotEmpty();
        assertThat(tokens.getReplicas(CqlIdentifier.fromInternal(KEYSPACE), tokens.newToken(
                java.nio.ByteBuffer.wrap("any key".getBytes())))).containsExactly(node);
    }

    @Test
    void theApplicationCreatedItsKeyspaceAndUsesIt() {
        assertThat(session.getKeyspace()).contains(CqlIdentifier.fromInternal(KEYSPACE));
        KeyspaceMetadata ks = keyspace();
        assertThat(ks.getReplication())
                .containsEntry("class", "org.apache.cassandra.locator.SimpleStrategy")
                .containsEntry("replication_factor", "1");
        assertThat(ks.isDurableWrites()).isTrue();
    }

    @Test
    void schemaActionCreatedTheUserType() {
        UserDefinedType location = keyspace().getUserDefinedType("location").orElseThrow();
        assertThat(location.getFieldNames()).extracting(CqlIdentifier::asInternal)
                .containsExactly("lat", "lon", "label");
        assertThat(location.getFieldTypes()).containsExactly(DataTypes.DOUBLE, DataTypes.DOUBLE, DataTypes.TEXT);
    }

    @Test
    void schemaActionCreatedReadingsWithEveryColumnType() {
        TableMetadata t = keyspace().getTable("readings").orElseThrow();
        assertThat(t.getPartitionKey()).extracting(c -> c.getName().asInternal()).containsExactly("sensor", "day");
        assertThat(t.getPartitionKey()).extracting(ColumnMetadata::getType).containsExactly(DataTypes.TEXT, DataTypes.DATE);
        assertThat(t.getClusteringColumns()).hasSize(1);
        Map.Entry<ColumnMetadata, ClusteringOrder> seq = t.getClusteringColumns().entrySet().iterator().next();
        assertThat(seq.getKey().getName().asInternal()).isEqualTo("seq");
        assertThat(seq.getKey().getType()).isEqualTo(DataTypes.INT);
        assertThat(seq.getValue()).isEqualTo(ClusteringOrder.ASC);

        Map<String, DataType> want = new LinkedHashMap<>();
        want.put("note", DataTypes.TEXT);
        want.put("samples", DataTypes.INT);
        want.put("total", DataTypes.BIGINT);
        want.put("owner", DataTypes.UUID);
        want.put("event_id", DataTypes.TIMEUUID);
        want.put("recorded_at", DataTypes.TIMESTAMP);
        want.put("price", DataTypes.DECIMAL);
        want.put("value", DataTypes.DOUBLE);
        want.put("valid", DataTypes.BOOLEAN);
        want.put("payload", DataTypes.BLOB);
        want.put("source", DataTypes.INET);
        want.put("tags", DataTypes.setOf(DataTypes.TEXT));
        want.put("levels", DataTypes.listOf(DataTypes.INT));
        want.put("attrs", DataTypes.mapOf(DataTypes.TEXT, DataTypes.INT));
        Map<String, DataType> got = t.getColumns().values().stream()
                .filter(c -> want.containsKey(c.getName().asInternal()))
                .collect(Collectors.toMap(c -> c.getName().asInternal(), ColumnMetadata::getType));
        assertThat(got).isEqualTo(want);

        DataType location = t.getColumn("location").orElseThrow().getType();
        assertThat(location).isInstanceOf(UserDefinedType.class);
        assertThat(((UserDefinedType) location).getName().asInternal()).isEqualTo("location");
        // Spring Data declares a user type column frozen.
        assertThat(((UserDefinedType) location).isFrozen()).isTrue();
        // 18 columns: 3 key columns, 14 regular ones and the user type.
        assertThat(t.getColumns()).hasSize(18);
    }

    @Test
    void schemaActionCreatedTheOtherTables() {
        TableMetadata accounts = keyspace().getTable("accounts").orElseThrow();
        assertThat(accounts.getPrimaryKey()).extracting(c -> c.getName().asInternal()).containsExactly("id");
        assertThat(accounts.getColumn("balance").orElseThrow().getType()).isEqualTo(DataTypes.BIGINT);
        TableMetadata documents = keyspace().getTable("documents").orElseThrow();
        assertThat(documents.getPrimaryKey()).extracting(ColumnMetadata::getType).containsExactly(DataTypes.UUID);
        assertThat(documents.getColumn("version").orElseThrow().getType()).isEqualTo(DataTypes.BIGINT);
    }

    /**
     * An application that starts again runs the same schema action over the existing schema:
     * CREATE TYPE / TABLE IF NOT EXISTS must succeed and change nothing.
     */
    @Test
    void schemaActionAgainChangesNothing() {
        String before = keyspace().describeWithChildren(false);
        CassandraAdminTemplate admin = new CassandraAdminTemplate(session, template.getConverter());
        CassandraPersistentEntitySchemaCreator creator =
                new CassandraPersistentEntitySchemaCreator(template.getConverter().getMappingContext(), admin);
        creator.createUserTypes(true);
        creator.createTables(true);
        creator.createIndexes(true);
        assertThat(session.checkSchemaAgreement()).isTrue();
        assertThat(keyspace().describeWithChildren(false)).isEqualTo(before);
    }

    /** Spring Data's own view of the schema, through the admin template. */
    @Test
    void adminTemplateSeesTheTables() {
        CassandraAdminTemplate admin = new CassandraAdminTemplate(session, template.getConverter());
        List<String> tables = admin.getKeyspaceMetadata().getTables().keySet().stream()
                .map(CqlIdentifier::asInternal).sorted().toList();
        assertThat(tables).containsExactly("accounts", "documents", "gadgets", "page_views", "readings");
        assertThat(admin.getTableMetadata(CqlIdentifier.fromInternal(KEYSPACE), CqlIdentifier.fromInternal("readings")))
                .isPresent();
    }

    private KeyspaceMetadata keyspace() {
        return session.getMetadata().getKeyspace(KEYSPACE).orElseThrow();
    }
}
