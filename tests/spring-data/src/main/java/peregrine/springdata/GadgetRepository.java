package peregrine.springdata;

import com.datastax.oss.driver.api.core.data.CqlVector;
import java.util.List;
import java.util.UUID;
import org.springframework.data.cassandra.repository.CassandraRepository;
import org.springframework.data.cassandra.repository.Query;

/** {@link Gadget}s: CRUD, and an approximate-nearest-neighbour query over the vector column. */
public interface GadgetRepository extends CassandraRepository<Gadget, UUID> {

    /** The {@code n} gadgets whose embedding is most similar to {@code to} (SAI, cosine). */
    @Query("SELECT * FROM gadgets ORDER BY embedding ANN OF ?0 LIMIT ?1")
    List<Gadget> nearest(CqlVector<Float> to, int n);
}
