package peregrine.springdata;

import org.springframework.data.cassandra.core.mapping.Indexed;
import org.springframework.data.cassandra.core.mapping.PrimaryKey;
import org.springframework.data.cassandra.core.mapping.Table;

/**
 * Table {@code accounts}: a single-column primary key and an indexed column, used for batches,
 * lightweight transactions and a query through the index.
 */
@Table("accounts")
public class Account {
    @PrimaryKey
    public String id;
    /** A secondary index (created by the schema action): derived queries on it need no filtering. */
    @Indexed
    public String owner;
    public long balance;

    public Account() {
    }

    public Account(String id, String owner, long balance) {
        this.id = id;
        this.owner = owner;
        this.balance = balance;
    }
}
