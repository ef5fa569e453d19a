package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Many requests in flight on one connection, and asynchronous paging. */
@ExtendWith(CqlExtension.class)
class AsyncTest {
    static final int PARTITIONS = 10;
    static final int PER_PARTITION = 100;

    /**
     * Runs every statement with {@code executeAsync}, at most {@code inFlight} at a time; fails
     * with the first error after all have finished. Returns the highest concurrency reached.
     */
    static int executeBounded(CqlSession session, List<? extends Statement<?>> statements, int inFlight) throws Exception {
        Semaphore permits = new Semaphore(inFlight);
        ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
        AtomicInteger running = new AtomicInteger();
        AtomicInteger peak = new AtomicInteger();
        List<CompletableFuture<?>> all = new ArrayList<>();
        for (Statement<?> s : statements) {
            permits.acquire();
            peak.accumulateAndGet(running.incrementAndGet(), Math::max);
            CompletionStage<AsyncResultSet> f = session.executeAsync(s);
            all.add(f.whenComplete((rs, e) -> {
                running.decrementAndGet();
                permits.release();
                if (e != null) {
                    errors.add(e);
                }
            }).toCompletableFuture());
        }
        CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])).exceptionally(e -> null).get(120, TimeUnit.SECONDS);
        if (!errors.isEmpty()) {
            throw new AssertionError(errors.size() + " of " + statements.size() + " async requests failed", errors.peek());
        }
        return peak.get();
    }

    @BeforeAll
    static void createTable(Cql cql) {
        cql.session.execute("CREATE TABLE " + cql.table("async_t") + " (pk int, ck int, v text, PRIMARY KEY (pk, ck))");
    }

    @Test
    void thousandConcurrentInsertsThenCount(Cql cql) throws Exception {
        PreparedStatement insert = cql.session.prepare("INSERT INTO " + cql.table("async_t") + " (pk, ck, v) VALUES (?, ?, ?)");
        List<BoundStatement> writes = new ArrayList<>();
        for (int i = 0; i < PARTITIONS * PER_PARTITION; i++) {
            writes.add(insert.bind(i % PARTITIONS, i / PARTITIONS, "v" + i));
        }
        int peak = executeBounded(cql.session, writes, 128);
        assertTrue(peak > 1, "requests in flight at once: " + peak);

        Row total = cql.session.execute("SELECT count(*) FROM " + cql.table("async_t")).one();
        assertEquals(PARTITIONS * PER_PARTITION, total.getLong(0), "count(*) over the table");

        PreparedStatement count = cql.session.prepare("SELECT count(*) FROM " + cql.table("async_t") + " WHERE pk = ?");
        List<CompletableFuture<AsyncResultSet>> counts = new ArrayList<>();
        for (int pk = 0; pk < PARTITIONS; pk++) {
            counts.add(cql.session.executeAsync(count.bind(pk)).toCompletableFuture());
        }
        for (int pk = 0; pk < PARTITIONS; pk++) {
            assertEquals(PER_PARTITION, counts.get(pk).get(30, TimeUnit.SECONDS).one().getLong(0), "count(*) of partition " + pk);
        }
    }

    /** AsyncResultSet pages are fetched explicitly with fetchNextPage(). */
    @Test
    void asyncPaging(Cql cql) throws Exception {
        cql.session.execute("CREATE TABLE " + cql.table("async_paged") + " (pk int, ck int, PRIMARY KEY (pk, ck))");
        PreparedStatement insert = cql.session.prepare("INSERT INTO " + cql.table("async_paged") + " (pk, ck) VALUES (0, ?)");
        List<BoundStatement> writes = new ArrayList<>();
        for (int ck = 0; ck < 95; ck++) {
            writes.add(insert.bind(ck));
        }
        executeBounded(cql.session, writes, 32);

        AsyncResultSet page = cql.session.executeAsync(cql.session
                .prepare("SELECT ck FROM " + cql.table("async_paged") + " WHERE pk = 0").bind().setPageSize(30))
                .toCompletableFuture().get(30, TimeUnit.SECONDS);
        List<Integer> seen = new ArrayList<>();
        List<Integer> pageSizes = new ArrayList<>();
        while (true) {
            pageSizes.add(page.remaining());
            for (Row r : page.currentPage()) {
                seen.add(r.getInt("ck"));
            }
            if (!page.hasMorePages()) {
                break;
            }
            page = page.fetchNextPage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        assertEquals(List.of(30, 30, 30, 5), pageSizes);
        assertEquals(95, seen.size());
        for (int i = 0; i < 95; i++) {
            assertEquals(i, seen.get(i));
        }
    }
}
