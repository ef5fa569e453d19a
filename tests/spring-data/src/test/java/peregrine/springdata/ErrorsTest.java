package peregrine.springdata;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.servererrors.SyntaxError;
import java.nio.ByteBuffer;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.cassandra.CassandraInvalidQueryException;
import org.springframework.data.cassandra.CassandraQuerySyntaxException;
import org.springframework.data.cassandra.core.cql.CqlOperations;
import org.springframework.data.cassandra.core.cql.ResultSetExtractor;

/**
 * Server errors as the application sees them: Spring's translated exceptions, the driver's
 * exception as their cause, and Cassandra's message text.
 */
class ErrorsTest extends SpringDataTest {
    @Autowired
    ReadingRepository readings;

    private CqlOperations cql() {
        return template.getCqlOperations();
    }

    @Test
    void unknownTable() {
        assertThatThrownBy(() -> cql().execute("SELECT * FROM no_such_table"))
                .isInstanceOf(CassandraInvalidQueryException.class)
                .hasCauseInstanceOf(InvalidQueryException.class)
                .hasMessageContaining("table no_such_table does not exist");
    }

    @Test
    void unknownKeyspace() {
        assertThatThrownBy(() -> cql().execute("SELECT * FROM no_such_ks.readings"))
                .isInstanceOf(CassandraInvalidQueryException.class)
                .hasMessageContaining("keyspace no_such_ks does not exist");
    }

    @Test
    void unknownColumn() {
        assertThatThrownBy(() -> cql().execute("SELECT nope FROM accounts"))
                .isInstanceOf(CassandraInvalidQueryException.class)
                .hasMessageContaining("Undefined column name nope in table " + KEYSPACE + ".accounts");
    }

    @Test
    void literalOfTheWrongType() {
        assertThatThrownBy(() -> cql().execute("INSERT INTO accounts (id, balance) VALUES ('x', 'lots')"))
                .isInstanceOf(CassandraInvalidQueryException.class)
                .hasMessageContaining("Invalid STRING constant (lots) for \"balance\" of type bigint");
    }

    /** A bound value of the wrong size for its type: only the server can see it. */
    @Test
    void boundValueOfTheWrongSize() {
        assertThatThrownBy(() -> cql().query(
                s -> s.prepare("INSERT INTO accounts (id, balance) VALUES (?, ?)"),
                ps -> ps.bind().setString(0, "x").setBytesUnsafe(1, ByteBuffer.wrap(new byte[] {1, 2, 3})),
                (ResultSetExtractor<Boolean>) rs -> rs.wasApplied()))
                .isInstanceOf(CassandraInvalidQueryException.class)
                .hasMessageContaining("Expected 8 or 0 byte long (3)");
    }

    @Test
    void syntaxError() {
        assertThatThrownBy(() -> cql().execute("SELEC * FROM accounts"))
                .isInstanceOf(CassandraQuerySyntaxException.class)
                .hasCauseInstanceOf(SyntaxError.class)
                .hasMessageContaining("line 1:0 no viable alternative at input 'SELEC'");
    }

    /**
     * A server warning reaches the application in the execution info. (The driver logs such
     * warnings at WARN, which would fail this suite: this one statement runs with
     * advanced.request.log-warnings off.)
     */
    @Test
    void serverWarningOnAnAggregateWithoutPartitionKey() {
        DriverExecutionProfile quiet = session.getContext().getConfig().getDefaultProfile()
                .withBoolean(DefaultDriverOption.REQUEST_LOG_WARNINGS, false);
        ResultSet rs = session.execute(SimpleStatement.newInstance("SELECT count(*) FROM accounts")
                .setExecutionProfile(quiet));
        assertThat(rs.one()).isNotNull();
        assertThat(rs.getExecutionInfo().getWarnings()).containsExactly("Aggregation query used without partition key");
    }

    /** A derived query on a regular column needs ALLOW FILTERING; with it, it runs. */
    @Test
    void derivedQueryNeedingAllowFiltering() {
        assertThatThrownBy(() -> readings.findByNote("anything"))
                .isInstanceOf(CassandraInvalidQueryException.class)
                .hasMessageContaining("Cannot execute this query as it might involve data filtering");
        String sensor = newSensor("filtering");
        Reading r = new Reading(new ReadingKey(sensor, DAY, 1), "x");
        r.samples = 7;
        readings.save(r);
        readings.save(new Reading(new ReadingKey(sensor, DAY, 2), "y"));
        assertThat(readings.findByKeySensorAndKeyDayAndSamples(sensor, DAY, 7)).extracting(x -> x.note).containsExactly("x");
    }
}
