package peregrine.springdata;

import com.datastax.oss.driver.api.core.CqlSession;
import java.time.LocalDate;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.data.cassandra.core.CassandraTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * What every test class shares: one Spring application context (the same configuration for all
 * classes, so Spring's test context cache starts the application, its session and its schema
 * action once per run), a keyspace made for this run, and the check that nothing logged a
 * warning ({@link DriverLogCheck}).
 *
 * <p>The endpoint is {@code CQL_HOST} (default 127.0.0.1) and {@code CQL_PORT} (required), read
 * by application.yml: an existing Peregrine, a Peregrine proxy or a real Cassandra. The keyspace
 * ({@code sd_<time>_<random>}) is created by the application and dropped after the last class.
 */
@SpringBootTest(classes = SpringDataApp.class)
@Import(RequestLog.class)
@ExtendWith({DriverLogCheck.class, DropKeyspace.class})
abstract class SpringDataTest {
    static final String KEYSPACE = "sd_" + System.currentTimeMillis() + "_" + UUID.randomUUID().toString().substring(0, 8);
    /** A day in the partition key of every reading the tests write. */
    static final LocalDate DAY = LocalDate.of(2024, 2, 29);
    private static final AtomicInteger SENSORS = new AtomicInteger();

    @Autowired
    CqlSession session;
    @Autowired
    CassandraTemplate template;
    @Autowired
    RequestLog requests;

    @DynamicPropertySource
    static void endpoint(DynamicPropertyRegistry registry) {
        String port = System.getenv("CQL_PORT");
        if (port == null || port.isEmpty()) {
            throw new IllegalStateException("set CQL_PORT (and CQL_HOST, default 127.0.0.1) to the endpoint under test");
        }
        registry.add("app.keyspace", () -> KEYSPACE);
    }

    /** A sensor name no other test uses: each test writes its own partitions. */
    static String newSensor(String what) {
        return what + "-" + SENSORS.incrementAndGet() + "-" + UUID.randomUUID().toString().substring(0, 6);
    }
}
