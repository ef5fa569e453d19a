package peregrine.springdata;

import com.datastax.oss.driver.api.core.data.CqlDuration;
import java.math.BigInteger;
import java.time.LocalTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.data.cassandra.core.mapping.CassandraType;
import org.springframework.data.cassandra.core.mapping.Column;
import org.springframework.data.cassandra.core.mapping.Frozen;
import org.springframework.data.cassandra.core.mapping.PrimaryKey;
import org.springframework.data.cassandra.core.mapping.Table;
import org.springframework.data.cassandra.core.mapping.VectorType;

/**
 * Table {@code gadgets}: the column types {@link Reading} lacks (smallint, tinyint, varint, time,
 * duration, float, ascii), a mapped tuple, a list of user-type values, a nested collection, and a
 * {@code vector<float, 3>} (created by the schema action) with a storage-attached index.
 */
@Table("gadgets")
public class Gadget {
    @PrimaryKey
    public UUID id;

    public Short small;                           // smallint
    public Byte tiny;                             // tinyint
    public BigInteger big;                        // varint
    @Column("at_time")
    public LocalTime atTime;                      // time
    public CqlDuration span;                      // duration
    public Float ratio;                           // float
    @CassandraType(type = CassandraType.Name.ASCII)
    public String code;                           // ascii
    public Pair pair;                             // frozen<tuple<int, text>>
    public List<Location> stops;                  // list<frozen<location>>
    public Map<String, @Frozen List<Integer>> matrix;   // map<text, frozen<list<int>>>
    /** Its SAI index: see {@link VectorIndex}. */
    @VectorType(dimensions = 3)
    public float[] embedding;                     // vector<float, 3>

    public Gadget() {
    }

    public Gadget(UUID id) {
        this.id = id;
    }
}
