package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.metadata.Metadata;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.NodeState;
import com.datastax.oss.driver.api.core.metadata.TokenMap;
import com.datastax.oss.driver.api.core.type.codec.TypeCodecs;
import java.net.InetSocketAddress;
import java.util.Collection;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** What the driver learns about the cluster at connect time (system.local, system.peers). */
@ExtendWith(CqlExtension.class)
class ConnectTest {

    /** Exactly one node, and it is the address we connected to: a proxy shows itself, not its upstream. */
    @Test
    void theOnlyNodeIsTheContactPoint(Cql cql) {
        Collection<Node> nodes = cql.session.getMetadata().getNodes().values();
        assertEquals(1, nodes.size(), "nodes the driver sees: " + nodes);
        Node node = nodes.iterator().next();
        assertEquals(cql.contactPoint, node.getEndPoint().resolve(), "endpoint of " + node);
        assertEquals(cql.contactPoint, node.getBroadcastRpcAddress().orElse(null),
                "broadcast rpc address (system.local rpc_address/rpc_port) of " + node);
        assertEquals(cql.datacenter, node.getDatacenter());
        assertEquals(NodeState.UP, node.getState());
        assertTrue(node.getOpenConnections() >= 1, "open connections: " + node.getOpenConnections());

        Row local = cql.session.execute("SELECT host_id, data_center, rack FROM system.local").one();
        assertNotNull(local);
        assertEquals(local.getUuid("host_id"), node.getHostId());
        assertEquals(local.getString("rack"), node.getRack());

        // No peers: the driver would open connections to each one (to the upstream, for a proxy).
        assertTrue(cql.session.execute("SELECT peer FROM system.peers").all().isEmpty(), "system.peers rows");
    }

    @Test
    void systemLocalDescribesTheServer(Cql cql) {
        Row local = cql.session.execute(
                "SELECT key, release_version, cluster_name, cql_version, partitioner FROM system.local").one();
        assertNotNull(local);
        assertEquals("local", local.getString("key"));
        String release = local.getString("release_version");
        assertTrue(release != null && release.matches("\\d.*"), "release_version: " + release);
        String cqlVersion = local.getString("cql_version");
        assertTrue(cqlVersion != null && cqlVersion.matches("3\\.\\d+\\.\\d+"), "cql_version: " + cqlVersion);

        Metadata metadata = cql.session.getMetadata();
        assertEquals(local.getString("cluster_name"), metadata.getClusterName().orElse(null));
        Node node = metadata.getNodes().values().iterator().next();
        assertNotNull(node.getCassandraVersion(), "node version parsed from release_version");
        assertEquals(release, node.getCassandraVersion().toString());
        assertTrue(local.getString("partitioner").endsWith("Murmur3Partitioner"), local.getString("partitioner"));
    }

    /** Token-aware routing works only if system.local lists tokens the driver can parse. */
    @Test
    void tokenMapRoutesEveryKeyToTheNode(Cql cql) {
        TokenMap tokens = cql.session.getMetadata().getTokenMap().orElse(null);
        assertNotNull(tokens, "token map (system.local tokens + partitioner)");
        assertTrue(tokens.getPartitionerName().endsWith("Murmur3Partitioner"), tokens.getPartitionerName());
        assertFalse(tokens.getTokenRanges().isEmpty(), "token ranges");
        Node node = cql.session.getMetadata().getNodes().values().iterator().next();
        for (int key = 0; key < 20; key++) {
            Set<Node> replicas = tokens.getReplicas(cql.keyspace, TypeCodecs.INT.encodePrimitive(key, cql.session.getContext().getProtocolVersion()));
            assertEquals(Set.of(node), replicas, "replicas of int key " + key);
        }
    }

    /** A second session with the datacenter given explicitly sees the same single node. */
    @Test
    void anExplicitDatacenterSessionConnects(Cql cql) {
        try (var session = cql.open(null)) {
            InetSocketAddress only = (InetSocketAddress) session.getMetadata().getNodes().values().iterator().next()
                    .getEndPoint().resolve();
            assertEquals(cql.contactPoint, only);
            assertEquals(1, session.execute("SELECT key FROM system.local").all().size());
        }
    }
}
