package peregrine.springdata;

import static org.assertj.core.api.Assertions.assertThat;

import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BatchType;
import com.datastax.oss.driver.api.core.cql.Row;
import java.util.List;
import java.util.UUID;
import java.util.function.Predicate;
import java.util.stream.StreamSupport;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.session.Request;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.cassandra.core.InsertOptions;
import org.springframework.data.cassandra.core.WriteResult;

/** {@code CassandraBatchOperations}: logged, unlogged, with a timestamp, and conditional. */
class BatchTest extends SpringDataTest {
    @Autowired
    ReadingRepository readings;

    private static String id() {
        return "acct-" + UUID.randomUUID();
    }

    @Test
    void loggedBatchOfInsertsUpdateAndDelete() throws Exception {
        Account keep = new Account(id(), "ann", 10);
        Account change = new Account(id(), "bob", 20);
        Account gone = new Account(id(), "cy", 30);
        template.insert(change);
        template.insert(gone);

        change.balance = 25;
        requests.clear();
        WriteResult result = template.batchOps().insert(keep).update(change).delete(gone).execute();
        assertThat(result.wasApplied()).isTrue();
        // Spring Data batches plain statements with bound values (a BATCH of QUERY kinds).
        Predicate<Request> ours = r -> r instanceof BatchStatement b
                && StreamSupport.stream(b.spliterator(), false).anyMatch(
                        s -> s instanceof SimpleStatement ss && ss.getPositionalValues().contains(keep.id));
        List<BatchStatement> batches = requests.await(ours, 1).stream()
                .filter(ours).map(r -> (BatchStatement) r).toList();
        assertThat(batches).hasSize(1);
        assertThat(batches.get(0).getBatchType()).isEqualTo(BatchType.LOGGED);
        assertThat(batches.get(0).size()).isEqualTo(3);

        assertThat(template.selectOneById(keep.id, Account.class).balance).isEqualTo(10);
        assertThat(template.selectOneById(change.id, Account.class).balance).isEqualTo(25);
        assertThat(template.selectOneById(gone.id, Account.class)).isNull();
    }

    @Test
    void unloggedBatchIntoOnePartition() {
        String sensor = newSensor("batch");
        List<Reading> rows = List.of(
                new Reading(new ReadingKey(sensor, DAY, 1), "one"),
                new Reading(new ReadingKey(sensor, DAY, 2), "two"),
                new Reading(new ReadingKey(sensor, DAY, 3), "three"));
        assertThat(template.batchOps(BatchType.UNLOGGED).insert(rows).execute().wasApplied()).isTrue();
        assertThat(readings.findByKeySensorAndKeyDay(sensor, DAY)).extracting(r -> r.note)
                .containsExactly("one", "two", "three");
    }

    @Test
    void batchWithOneTimestamp() {
        Account a = new Account(id(), "ts", 1);
        Account b = new Account(id(), "ts", 2);
        long micros = 1_700_000_000_000_000L;
        template.batchOps().withTimestamp(micros).insert(a, b).execute();
        for (Account x : List.of(a, b)) {
            Row row = session.execute("SELECT writetime(balance) AS wt FROM accounts WHERE id = ?", x.id).one();
            assertThat(row).isNotNull();
            assertThat(row.getLong("wt")).isEqualTo(micros);
        }
        // A later write with an older timestamp loses.
        a.balance = 99;
        template.batchOps().withTimestamp(micros - 1).update(a).execute();
        assertThat(template.selectOneById(a.id, Account.class).balance).isEqualTo(1);
    }

    /** A conditional batch (IF NOT EXISTS) in one partition: all or nothing. */
    @Test
    void conditionalBatchAppliesOnce() {
        String sensor = newSensor("lwtbatch");
        InsertOptions ifNotExists = InsertOptions.builder().withIfNotExists().build();
        List<Reading> first = List.of(
                new Reading(new ReadingKey(sensor, DAY, 1), "first"),
                new Reading(new ReadingKey(sensor, DAY, 2), "first"));
        assertThat(template.batchOps().insert(first, ifNotExists).execute().wasApplied()).isTrue();

        List<Reading> second = List.of(
                new Reading(new ReadingKey(sensor, DAY, 2), "second"),
                new Reading(new ReadingKey(sensor, DAY, 3), "second"));
        WriteResult result = template.batchOps().insert(second, ifNotExists).execute();
        assertThat(result.wasApplied()).isFalse();
        assertThat(readings.findByKeySensorAndKeyDay(sensor, DAY)).extracting(r -> r.key.seq() + ":" + r.note)
                .containsExactly("1:first", "2:first");
    }
}
