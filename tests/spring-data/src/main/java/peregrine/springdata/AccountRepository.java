package peregrine.springdata;

import java.util.List;
import org.springframework.data.cassandra.repository.CassandraRepository;

/** {@link Account}s: a derived query on {@code owner}, which has a secondary index. */
public interface AccountRepository extends CassandraRepository<Account, String> {
    List<Account> findByOwner(String owner);
}
