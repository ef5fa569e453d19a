package peregrine.springdata;

import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.session.Request;
import com.datastax.oss.driver.api.core.tracker.RequestTracker;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.springframework.boot.autoconfigure.cassandra.CqlSessionBuilderCustomizer;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * The requests the driver completed, as it sent them: a driver {@link RequestTracker} installed on
 * the application's session through Boot's {@link CqlSessionBuilderCustomizer}. A
 * {@link BoundStatement} is an EXECUTE of a prepared statement; anything else (a SimpleStatement)
 * went as a plain QUERY. {@link PreparedStatementsTest} uses it to see what Spring Data prepared.
 */
@TestConfiguration(proxyBeanMethods = false)
public class RequestLog implements RequestTracker {
    private final ConcurrentLinkedQueue<Request> done = new ConcurrentLinkedQueue<>();

    @Bean
    CqlSessionBuilderCustomizer trackRequests() {
        return builder -> builder.addRequestTracker(this);
    }

    @Override
    public void onSuccess(Request request, long latencyNanos, DriverExecutionProfile profile, Node node,
            String requestLogPrefix) {
        done.add(request);
    }

    /** Nothing to release: the driver calls this when the session closes. */
    @Override
    public void close() {
    }

    /** Forgets what was recorded so far. */
    public void clear() {
        done.clear();
    }

    /** The prepared statements executed since {@link #clear()}, directly or inside a batch. */
    public List<BoundStatement> bound() {
        List<BoundStatement> out = new ArrayList<>();
        for (Request r : done) {
            if (r instanceof BoundStatement b) {
                out.add(b);
            } else if (r instanceof BatchStatement batch) {
                batch.forEach(s -> {
                    if (s instanceof BoundStatement b) {
                        out.add(b);
                    }
                });
            }
        }
        return out;
    }

    /**
     * Waits (up to 10 s) until at least {@code count} requests matching {@code which} were recorded
     * and returns all those recorded. The driver tells its trackers after it completed the
     * request's future, so the caller may run ahead of the tracker by a moment.
     */
    public List<Request> await(Predicate<Request> which, int count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (done.stream().filter(which).count() < count && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        return all();
    }

    /** Everything completed since {@link #clear()}. */
    public List<Request> all() {
        return new ArrayList<>(done);
    }
}
