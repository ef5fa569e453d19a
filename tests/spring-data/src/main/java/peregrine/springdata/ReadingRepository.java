package peregrine.springdata;

import java.time.LocalDate;
import java.util.List;
import org.springframework.data.cassandra.repository.AllowFiltering;
import org.springframework.data.cassandra.repository.CassandraRepository;
import org.springframework.data.cassandra.repository.Query;
import org.springframework.data.domain.Pageable;
import org.springframework.data.domain.Slice;
import org.springframework.data.repository.query.Param;

/**
 * The repository of {@link Reading}: CRUD from {@link CassandraRepository}, queries derived from
 * method names over the composite key, and string queries with positional and named bind
 * parameters.
 */
public interface ReadingRepository extends CassandraRepository<Reading, ReadingKey> {

    /** One partition, in clustering order. */
    List<Reading> findByKeySensorAndKeyDay(String sensor, LocalDate day);

    /** One partition, clustering column {@code seq > after}. */
    List<Reading> findByKeySensorAndKeyDayAndKeySeqGreaterThan(String sensor, LocalDate day, int after);

    /** One partition, a page at a time. */
    Slice<Reading> findByKeySensorAndKeyDay(String sensor, LocalDate day, Pageable page);

    /** Positional bind parameters: {@code from <= seq < to}. */
    @Query("SELECT * FROM readings WHERE sensor = ?0 AND day = ?1 AND seq >= ?2 AND seq < ?3")
    List<Reading> between(String sensor, LocalDate day, int from, int to);

    /** Named bind parameters and a bound LIMIT. */
    @Query("SELECT * FROM readings WHERE sensor = :sensor AND day = :day ORDER BY seq DESC LIMIT :n")
    List<Reading> latest(@Param("sensor") String sensor, @Param("day") LocalDate day, @Param("n") int n);

    /** A regular column, no index: Cassandra refuses it without ALLOW FILTERING. */
    List<Reading> findByNote(String note);

    /** The same with ALLOW FILTERING. */
    @AllowFiltering
    List<Reading> findByKeySensorAndKeyDayAndSamples(String sensor, LocalDate day, int samples);

    /** An aggregate through a string query. */
    @Query("SELECT count(*) FROM readings WHERE sensor = ?0 AND day = ?1")
    long countIn(String sensor, LocalDate day);
}
