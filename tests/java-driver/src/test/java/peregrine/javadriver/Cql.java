package peregrine.javadriver;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The endpoint under test and what every test class shares: the datacenter name, a keyspace made
 * for this run, and a session on the driver's default settings (highest protocol version both
 * sides speak, local datacenter set explicitly).
 *
 * <p>The endpoint is {@code CQL_HOST} (default 127.0.0.1) and {@code CQL_PORT} (required): an
 * existing Peregrine, a Peregrine proxy or a real Cassandra. One instance lives in JUnit's root
 * store, so it is closed (keyspace dropped, session closed) after the last test class.
 */
final class Cql implements ExtensionContext.Store.CloseableResource {
    final InetSocketAddress contactPoint;
    /** Read from {@code system.local} through a first session that infers the datacenter. */
    final String datacenter;
    /** {@code jd_<time>_<random>}: SimpleStrategy, replication factor 1, dropped at the end. */
    final String keyspace;
    final CqlSession session;
    /** Sessions pinned to one protocol version, opened on first use by {@link #at}, closed last. */
    private final Map<String, CqlSession> pinned = new ConcurrentHashMap<>();

    Cql() {
        String host = System.getenv().getOrDefault("CQL_HOST", "127.0.0.1");
        String port = System.getenv("CQL_PORT");
        if (port == null || port.isEmpty()) {
            throw new IllegalStateException("set CQL_PORT (and CQL_HOST, default 127.0.0.1) to the endpoint under test");
        }
        contactPoint = new InetSocketAddress(host, Integer.parseInt(port));

        // Driver 4 refuses explicit contact points without a local datacenter, except with the
        // datacenter-inferring policy: use it once to learn the name system.local reports.
        try (CqlSession first = CqlSession.builder()
                .addContactPoint(contactPoint)
                .withConfigLoader(config(null)
                        .withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DcInferringLoadBalancingPolicy")
                        .build())
                .build()) {
            Row local = first.execute("SELECT data_center FROM system.local").one();
            if (local == null || local.getString("data_center") == null) {
                throw new IllegalStateException("system.local has no data_center on " + contactPoint);
            }
            datacenter = local.getString("data_center");
        }

        session = CqlSession.builder()
                .addContactPoint(contactPoint)
                .withLocalDatacenter(datacenter)
                .withConfigLoader(config(null).build())
                .build();
        keyspace = "jd_" + System.currentTimeMillis() + "_" + UUID.randomUUID().toString().substring(0, 8);
        session.execute("CREATE KEYSPACE " + keyspace
                + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    }

    /**
     * Another session, with the local datacenter set; {@code protocolVersion} e.g. "V4", null =
     * negotiate. It keeps no schema metadata (reading it all takes a second or two on Cassandra):
     * the shared {@link #session} is the one whose metadata the tests check.
     */
    CqlSession open(String protocolVersion) {
        return CqlSession.builder()
                .addContactPoint(contactPoint)
                .withLocalDatacenter(datacenter)
                .withConfigLoader(config(protocolVersion)
                        .withBoolean(DefaultDriverOption.METADATA_SCHEMA_ENABLED, false)
                        .build())
                .build();
    }

    /**
     * A shared session pinned to {@code protocolVersion} ("V4", "V5"), like {@link #open} but kept
     * for the whole run: classes that run every test at both versions use it instead of opening
     * two sessions per test.
     */
    CqlSession at(String protocolVersion) {
        return pinned.computeIfAbsent(protocolVersion, this::open);
    }

    /**
     * The rows of {@code rs} page by page as the server sent them (an empty last page included),
     * fetching the next page only when the current one is used up.
     */
    static List<List<Row>> pages(ResultSet rs) {
        List<List<Row>> pages = new ArrayList<>();
        while (true) {
            List<Row> page = new ArrayList<>();
            for (int n = rs.getAvailableWithoutFetching(); n > 0; n--) {
                page.add(rs.one());
            }
            pages.add(page);
            if (rs.isFullyFetched()) {
                return pages;
            }
            rs.iterator().hasNext(); // fetches the next page
        }
    }

    /** {@code keyspace.name}. */
    String table(String name) {
        return keyspace + "." + name;
    }

    private static ProgrammaticDriverConfigLoaderBuilder config(String protocolVersion) {
        ProgrammaticDriverConfigLoaderBuilder b = DriverConfigLoader.programmaticBuilder()
                // DDL on a real Cassandra with 2 cores can take seconds; the default is 2 s.
                .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(30))
                .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(10))
                .withDuration(DefaultDriverOption.CONTROL_CONNECTION_AGREEMENT_TIMEOUT, Duration.ofSeconds(20))
                // Server-side warnings (e.g. Cassandra's "aggregation query used without partition
                // key") are legitimate; DriverLog fails a test class on any driver WARN, so the
                // driver does not log them.
                .withBoolean(DefaultDriverOption.REQUEST_LOG_WARNINGS, false)
                // Closing a session otherwise waits 2 s of Netty quiet period; tests open several.
                .withInt(DefaultDriverOption.NETTY_IO_SHUTDOWN_QUIET_PERIOD, 0)
                .withInt(DefaultDriverOption.NETTY_ADMIN_SHUTDOWN_QUIET_PERIOD, 0);
        if (protocolVersion != null) {
            b = b.withString(DefaultDriverOption.PROTOCOL_VERSION, protocolVersion);
        }
        return b;
    }

    @Override
    public void close() {
        try {
            session.execute("DROP KEYSPACE IF EXISTS " + keyspace);
        } finally {
            pinned.values().forEach(CqlSession::close);
            session.close();
        }
    }
}
