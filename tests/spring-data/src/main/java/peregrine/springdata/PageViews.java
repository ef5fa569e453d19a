package peregrine.springdata;

import org.springframework.data.cassandra.core.mapping.CassandraType;
import org.springframework.data.cassandra.core.mapping.PrimaryKey;
import org.springframework.data.cassandra.core.mapping.Table;

/** Table {@code page_views}: a counter table (counters are only incremented, never inserted). */
@Table("page_views")
public class PageViews {
    @PrimaryKey
    public String page;
    @CassandraType(type = CassandraType.Name.COUNTER)
    public long hits;
}
