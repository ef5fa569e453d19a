package peregrine.springdata;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.data.cassandra.core.query.Criteria.where;

import com.datastax.oss.driver.api.core.uuid.Uuids;
import java.math.BigDecimal;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import org.springframework.data.cassandra.core.InsertOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.cassandra.core.query.Query;
import org.springframework.data.cassandra.core.query.Update;

/**
 * The {@link ReadingRepository}: save and read back every column type, findAll, queries
 * derived from method names, string queries with bind parameters, partial updates and deletes.
 */
class RepositoryTest extends SpringDataTest {
    @Autowired
    ReadingRepository readings;

    static Reading full(String sensor, int seq) throws Exception {
        Reading r = new Reading(new ReadingKey(sensor, DAY, seq), "reading " + seq + " ünïcödé ✓");
        r.samples = -7 * seq;
        r.total = 9_000_000_000_000L + seq;
        r.owner = UUID.randomUUID();
        r.eventId = Uuids.timeBased();
        r.recordedAt = Instant.ofEpochMilli(1_709_164_800_123L + seq);
        r.price = new BigDecimal("-12345678901234567890.000123");
        r.value = Math.PI * seq;
        r.valid = seq % 2 == 0;
        r.payload = ByteBuffer.wrap(new byte[] {0, 1, 2, (byte) 0xff, (byte) seq});
        r.source = InetAddress.getByName("2001:db8::" + seq);
        r.tags = Set.of("a", "b", "tag " + seq);
        r.levels = List.of(3, 1, 2, 1, seq);
        r.attrs = Map.of("x", 1, "y", -2);
        r.location = new Location(52.52, 13.405, "Berlin " + seq);
        return r;
    }

    static void assertSameColumns(Reading got, Reading want) {
        assertThat(got.key).isEqualTo(want.key);
        assertThat(got.note).isEqualTo(want.note);
        assertThat(got.samples).isEqualTo(want.samples);
        assertThat(got.total).isEqualTo(want.total);
        assertThat(got.owner).isEqualTo(want.owner);
        assertThat(got.eventId).isEqualTo(want.eventId);
        assertThat(got.eventId.version()).isEqualTo(1);
        assertThat(got.recordedAt).isEqualTo(want.recordedAt);
        assertThat(got.price).isEqualTo(want.price); // equals: same unscaled value and scale
        assertThat(got.value).isEqualTo(want.value);
        assertThat(got.valid).isEqualTo(want.valid);
        assertThat(got.payload).isEqualTo(want.payload);
        assertThat(got.source).isEqualTo(want.source);
        assertThat(got.tags).isEqualTo(want.tags);
        assertThat(got.levels).isEqualTo(want.levels);
        assertThat(got.attrs).isEqualTo(want.attrs);
        assertThat(got.location).isEqualTo(want.location);
    }

    @Test
    void saveAndFindByIdRoundTripEveryType() throws Exception {
        Reading r = full(newSensor("types"), 1);
        readings.save(r);
        Reading got = readings.findById(r.key).orElseThrow();
        assertSameColumns(got, r);
        assertThat(readings.existsById(r.key)).isTrue();
        assertThat(readings.findById(new ReadingKey(r.key.sensor(), DAY, 2))).isEmpty();
    }

    @Test
    void findAllSeesTheSavedRows() throws Exception {
        String sensor = newSensor("all");
        List<Reading> saved = new ArrayList<>();
        for (int seq = 1; seq <= 3; seq++) {
            saved.add(full(sensor, seq));
        }
        readings.saveAll(saved);
        List<Reading> all = readings.findAll();
        List<Reading> mine = all.stream().filter(r -> r.key.sensor().equals(sensor)).toList();
        assertThat(mine).extracting(r -> r.key.seq()).containsExactly(1, 2, 3);
        for (int i = 0; i < 3; i++) {
            assertSameColumns(mine.get(i), saved.get(i));
        }
        // (No count(): a count over the whole table makes Cassandra warn "Aggregation query used
        // without partition key", which the driver logs.)
        assertThat(all.stream().map(r -> r.key).distinct().count()).isEqualTo(all.size());
    }

    @Test
    void derivedQueriesOverTheCompositeKey() throws Exception {
        String sensor = newSensor("derived");
        for (int seq = 5; seq >= 1; seq--) {
            readings.save(full(sensor, seq));
        }
        assertThat(readings.findByKeySensorAndKeyDay(sensor, DAY)).extracting(r -> r.key.seq())
                .containsExactly(1, 2, 3, 4, 5);
        assertThat(readings.findByKeySensorAndKeyDayAndKeySeqGreaterThan(sensor, DAY, 2))
                .extracting(r -> r.key.seq()).containsExactly(3, 4, 5);
        assertThat(readings.findByKeySensorAndKeyDayAndKeySeqGreaterThan(sensor, DAY, 5)).isEmpty();
        assertThat(readings.findByKeySensorAndKeyDay(sensor, DAY.plusDays(1))).isEmpty();
    }

    @Test
    void stringQueriesWithPositionalAndNamedParameters() throws Exception {
        String sensor = newSensor("query");
        for (int seq = 1; seq <= 5; seq++) {
            readings.save(full(sensor, seq));
        }
        assertThat(readings.between(sensor, DAY, 2, 4)).extracting(r -> r.key.seq()).containsExactly(2, 3);
        List<Reading> latest = readings.latest(sensor, DAY, 2);
        assertThat(latest).extracting(r -> r.key.seq()).containsExactly(5, 4);
        assertSameColumns(latest.get(0), readings.findById(new ReadingKey(sensor, DAY, 5)).orElseThrow());
        assertThat(readings.countIn(sensor, DAY)).isEqualTo(5);
        assertThat(readings.countIn(sensor, DAY.minusDays(1))).isZero();
    }

    @Test
    void partialUpdatesOfColumnsAndCollections() throws Exception {
        Reading r = full(newSensor("update"), 1);
        readings.save(r);
        Query key = Query.query(where("sensor").is(r.key.sensor())).and(where("day").is(DAY)).and(where("seq").is(1));
        assertThat(template.update(key, Update.update("note", "changed").set("samples", 42), Reading.class)).isTrue();
        assertThat(template.update(key, Update.empty().addTo("tags").append("new"), Reading.class)).isTrue();
        assertThat(template.update(key, Update.empty().addTo("levels").append(99), Reading.class)).isTrue();
        assertThat(template.update(key, Update.empty().addTo("levels").prepend(0), Reading.class)).isTrue();
        assertThat(template.update(key, Update.empty().addTo("attrs").entry("z", 26), Reading.class)).isTrue();
        assertThat(template.update(key, Update.empty().remove("tags", "a"), Reading.class)).isTrue();

        Reading got = readings.findById(r.key).orElseThrow();
        assertThat(got.note).isEqualTo("changed");
        assertThat(got.samples).isEqualTo(42);
        assertThat(got.total).isEqualTo(r.total);
        assertThat(got.tags).containsExactlyInAnyOrder("b", "tag 1", "new");
        assertThat(got.levels).containsExactly(0, 3, 1, 2, 1, 1, 99);
        assertThat(got.attrs).isEqualTo(Map.of("x", 1, "y", -2, "z", 26));
        assertThat(got.location).isEqualTo(r.location);
    }

    @Test
    void deleteByEntityAndById() throws Exception {
        String sensor = newSensor("delete");
        Reading a = full(sensor, 1);
        Reading b = full(sensor, 2);
        Reading c = full(sensor, 3);
        readings.saveAll(List.of(a, b, c));
        readings.delete(a);
        readings.deleteById(b.key);
        assertThat(readings.findById(a.key)).isEmpty();
        assertThat(readings.existsById(b.key)).isFalse();
        assertThat(readings.findByKeySensorAndKeyDay(sensor, DAY)).extracting(r -> r.key.seq()).containsExactly(3);
        readings.deleteAllById(List.of(c.key));
        assertThat(readings.countIn(sensor, DAY)).isZero();
    }

    /** Write options: a TTL and a client timestamp on an insert, read back with ttl() and writetime(). */
    @Test
    void insertWithTtlAndTimestamp() throws Exception {
        Reading r = full(newSensor("ttl"), 1);
        long micros = 1_650_000_000_000_000L;
        template.insert(r, InsertOptions.builder().ttl(Duration.ofHours(1)).timestamp(micros).build());
        Row row = session.execute(SimpleStatement.newInstance(
                "SELECT ttl(note) AS t, writetime(total) AS w FROM readings WHERE sensor = ? AND day = ? AND seq = ?",
                r.key.sensor(), DAY, 1)).one();
        assertThat(row).isNotNull();
        assertThat(row.getInt("t")).isBetween(3500, 3600);
        assertThat(row.getLong("w")).isEqualTo(micros);
    }

    /** Unset columns read back as null (or Java's default for primitives); a null write clears. */
    @Test
    void nullsAndUnsetColumns() throws Exception {
        Reading sparse = new Reading(new ReadingKey(newSensor("nulls"), DAY, 1), null);
        readings.save(sparse);
        Reading got = readings.findById(sparse.key).orElseThrow();
        assertThat(got.note).isNull();
        assertThat(got.owner).isNull();
        assertThat(got.price).isNull();
        assertThat(got.payload).isNull();
        assertThat(got.location).isNull();
        assertThat(got.samples).isZero();

        Reading r = full(newSensor("nulls"), 2);
        readings.save(r);
        r.note = null;
        r.location = null;
        readings.save(r);
        got = readings.findById(r.key).orElseThrow();
        assertThat(got.note).isNull();
        assertThat(got.location).isNull();
        assertThat(got.total).isEqualTo(r.total);
    }
}
