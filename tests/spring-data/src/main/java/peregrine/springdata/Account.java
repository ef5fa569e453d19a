package peregrine.springdata;

import org.springframework.data.cassandra.core.mapping.PrimaryKey;
import org.springframework.data.cassandra.core.mapping.Table;

/** Table {@code accounts}: a single-column primary key, used for batches and lightweight transactions. */
@Table("accounts")
public class Account {
    @PrimaryKey
    public String id;
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
