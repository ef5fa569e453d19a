package peregrine.springdata;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import java.util.List;
import org.springframework.data.cassandra.SessionFactory;

/**
 * The storage-attached index of {@link Gadget#embedding}, created at start-up once the schema
 * action made the table; it is what {@link GadgetRepository#nearest} queries through.
 *
 * <p>Not {@code @SaiIndexed}: Spring Data 4.5 always writes the text-analysis options
 * (case_sensitive, normalize, ascii) into that index's CREATE INDEX, and Cassandra 5.0.9 refuses
 * them on a vector ("CQL type vector<float, 3> cannot be analyzed"). Cassandra answers the
 * creation with a client warning (vector indexes are experimental there): the application expects
 * it, so the statement runs with the driver's warning log off and the warnings are kept in
 * {@link #warnings()} instead.
 */
public final class VectorIndex {
    static final String CQL = "CREATE INDEX IF NOT EXISTS gadgets_embedding ON gadgets (embedding) USING 'sai'";

    private final List<String> warnings;

    VectorIndex(SessionFactory sessions) {
        DriverExecutionProfile quiet = sessions.getSession().getContext().getConfig().getDefaultProfile()
                .withBoolean(DefaultDriverOption.REQUEST_LOG_WARNINGS, false);
        ResultSet rs = sessions.getSession().execute(SimpleStatement.newInstance(CQL).setExecutionProfile(quiet));
        warnings = List.copyOf(rs.getExecutionInfo().getWarnings());
    }

    /** The client warnings the server sent with the CREATE INDEX. */
    public List<String> warnings() {
        return warnings;
    }
}
