package peregrine.springdata;

import java.math.BigDecimal;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.springframework.data.cassandra.core.mapping.CassandraType;
import org.springframework.data.cassandra.core.mapping.Column;
import org.springframework.data.cassandra.core.mapping.PrimaryKey;
import org.springframework.data.cassandra.core.mapping.Table;

/**
 * One sensor reading: table {@code readings}, a column of most native CQL types, collections and
 * a user-defined type, keyed by {@link ReadingKey}. Mutable fields, no-argument constructor: Spring
 * Data reads and writes the fields directly.
 */
@Table("readings")
public class Reading {
    @PrimaryKey
    public ReadingKey key;

    public String note;                       // text
    public int samples;                       // int
    public long total;                        // bigint
    public UUID owner;                        // uuid
    @Column("event_id")
    @CassandraType(type = CassandraType.Name.TIMEUUID)
    public UUID eventId;                      // timeuuid
    @Column("recorded_at")
    public Instant recordedAt;                // timestamp
    public BigDecimal price;                  // decimal
    public double value;                      // double
    public boolean valid;                     // boolean
    public ByteBuffer payload;                // blob
    public InetAddress source;                // inet
    public Set<String> tags;                  // set<text>
    public List<Integer> levels;              // list<int>
    public Map<String, Integer> attrs;        // map<text, int>
    public Location location;                 // the UDT

    public Reading() {
    }

    /** A reading with only its key and note set (the other columns null or zero). */
    public Reading(ReadingKey key, String note) {
        this.key = key;
        this.note = note;
    }

    @Override
    public String toString() {
        return "Reading" + key + " " + note;
    }
}
