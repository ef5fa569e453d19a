package peregrine.springdata;

import static org.springframework.data.cassandra.core.cql.PrimaryKeyType.CLUSTERED;
import static org.springframework.data.cassandra.core.cql.PrimaryKeyType.PARTITIONED;

import java.time.LocalDate;
import org.springframework.data.cassandra.core.cql.Ordering;
import org.springframework.data.cassandra.core.mapping.PrimaryKeyClass;
import org.springframework.data.cassandra.core.mapping.PrimaryKeyColumn;

/**
 * The composite primary key of {@link Reading}: {@code PRIMARY KEY ((sensor, day), seq)}, a
 * two-column partition key (text, date) and an ascending int clustering column.
 */
@PrimaryKeyClass
public record ReadingKey(
        @PrimaryKeyColumn(name = "sensor", ordinal = 0, type = PARTITIONED) String sensor,
        @PrimaryKeyColumn(name = "day", ordinal = 1, type = PARTITIONED) LocalDate day,
        @PrimaryKeyColumn(name = "seq", ordinal = 2, type = CLUSTERED, ordering = Ordering.ASCENDING) int seq) {
}
