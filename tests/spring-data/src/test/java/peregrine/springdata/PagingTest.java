package peregrine.springdata;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.data.cassandra.core.query.Criteria.where;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.session.Request;
import org.springframework.data.cassandra.core.cql.QueryOptions;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.cassandra.core.query.CassandraPageRequest;
import org.springframework.data.cassandra.core.query.Query;
import org.springframework.data.domain.Pageable;
import org.springframework.data.domain.Slice;
import org.springframework.data.domain.Sort;

/**
 * Paging with {@link Slice}s and {@link CassandraPageRequest}s of 3 rows: each slice carries the
 * server's paging state, the next request sends it back, and the walk must see every row exactly
 * once.
 */
class PagingTest extends SpringDataTest {
    @Autowired
    ReadingRepository readings;

    private String partitionOf(int rows) {
        String sensor = newSensor("paging");
        for (int seq = 1; seq <= rows; seq++) {
            readings.save(new Reading(new ReadingKey(sensor, DAY, seq), "row " + seq));
        }
        return sensor;
    }

    @Test
    void derivedQuerySlicesWalkOnePartition() {
        String sensor = partitionOf(11);
        List<Integer> seen = new ArrayList<>();
        List<Integer> sizes = new ArrayList<>();
        Slice<Reading> slice = readings.findByKeySensorAndKeyDay(sensor, DAY, CassandraPageRequest.first(3));
        while (true) {
            sizes.add(slice.getNumberOfElements());
            slice.forEach(r -> seen.add(r.key.seq()));
            if (!slice.hasNext()) {
                break;
            }
            Pageable next = slice.nextPageable();
            assertThat(((CassandraPageRequest) next).getPagingState()).isNotNull();
            slice = readings.findByKeySensorAndKeyDay(sensor, DAY, next);
        }
        assertThat(seen).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
        assertThat(sizes).containsExactly(3, 3, 3, 2);
    }

    /** The template's slice over a query, sorted by the clustering column in reverse. */
    @Test
    void templateSlicesWalkAPartitionBackwards() {
        String sensor = partitionOf(10);
        Query q = Query.query(where("sensor").is(sensor)).and(where("day").is(DAY))
                .sort(Sort.by(Sort.Direction.DESC, "seq"))
                .pageRequest(CassandraPageRequest.first(3));
        List<Integer> seen = new ArrayList<>();
        int pages = 0;
        Slice<Reading> slice = template.slice(q, Reading.class);
        while (true) {
            pages++;
            assertThat(slice.getNumberOfElements()).isBetween(0, 3);
            slice.forEach(r -> seen.add(r.key.seq()));
            if (!slice.hasNext()) {
                break;
            }
            slice = template.slice(q.pageRequest(slice.nextPageable()), Reading.class);
        }
        assertThat(seen).containsExactly(10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
        assertThat(pages).isBetween(4, 5);
    }

    /**
     * A stream of entities from the template: the driver fetches the pages (2 rows each) as the
     * stream is consumed, and the rows come in clustering order once each.
     */
    @Test
    void templateStreamFetchesPagesAsItGoes() throws Exception {
        String sensor = partitionOf(7);
        Query q = Query.query(where("sensor").is(sensor)).and(where("day").is(DAY))
                .queryOptions(QueryOptions.builder().pageSize(2).build());
        requests.clear();
        try (Stream<Reading> rows = template.stream(q, Reading.class)) {
            assertThat(rows.map(r -> r.key.seq())).containsExactly(1, 2, 3, 4, 5, 6, 7);
        }
        // 7 rows in pages of 2: the first request and 3 more for the following pages.
        List<Request> pages = requests.await(r -> r instanceof BoundStatement b
                && b.getPreparedStatement().getQuery().startsWith("SELECT") && sensor.equals(b.getString("sensor")), 4);
        assertThat(pages.stream().filter(r -> r instanceof BoundStatement b
                && b.getPreparedStatement().getQuery().startsWith("SELECT") && sensor.equals(b.getString("sensor")))
                .map(r -> ((BoundStatement) r).getPageSize())).containsOnly(2).hasSize(4);
    }

    /** findAll(Pageable) pages over the whole table (token order across partitions). */
    @Test
    void findAllSlicesWalkTheTable() {
        Set<String> mine = new HashSet<>();
        for (int i = 0; i < 12; i++) {
            mine.add(partitionOf(1));
        }
        // The table as one unpaged read (a count(*) over the whole table would make Cassandra warn).
        long total = readings.findAll().size();
        List<String> seenMine = new ArrayList<>();
        Set<ReadingKey> seenAll = new HashSet<>();
        int pages = 0;
        Slice<Reading> slice = readings.findAll(CassandraPageRequest.first(3));
        while (true) {
            pages++;
            assertThat(slice.getNumberOfElements()).isBetween(0, 3);
            for (Reading r : slice) {
                assertThat(seenAll.add(r.key)).as("row %s seen twice", r.key).isTrue();
                if (mine.contains(r.key.sensor())) {
                    seenMine.add(r.key.sensor());
                }
            }
            if (!slice.hasNext()) {
                break;
            }
            slice = readings.findAll(slice.nextPageable());
        }
        assertThat(seenMine).containsExactlyInAnyOrderElementsOf(mine);
        assertThat(seenAll).hasSize((int) total);
        assertThat(pages).isGreaterThanOrEqualTo((int) (total + 2) / 3);
    }
}
