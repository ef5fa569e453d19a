package peregrine.springdata;

import java.util.UUID;
import org.springframework.data.annotation.Version;
import org.springframework.data.cassandra.core.mapping.PrimaryKey;
import org.springframework.data.cassandra.core.mapping.Table;

/**
 * Table {@code documents}: optimistic locking with {@code @Version}, which Spring Data implements
 * with lightweight transactions (the first save is {@code INSERT ... IF NOT EXISTS}, later saves
 * {@code UPDATE ... IF version = <the version read>}).
 */
@Table("documents")
public class Document {
    @PrimaryKey
    public UUID id;
    public String title;
    @Version
    public Long version;

    public Document() {
    }

    public Document(UUID id, String title) {
        this.id = id;
        this.title = title;
    }
}
