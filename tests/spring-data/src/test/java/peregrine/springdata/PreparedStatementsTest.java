package peregrine.springdata;

import static org.assertj.core.api.Assertions.assertThat;

import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.ColumnDefinition;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.type.DataTypes;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.cassandra.core.cql.CqlTemplate;

/**
 * Spring Data runs its statements as prepared statements (CassandraTemplate's default): the
 * driver's {@link RequestLog} sees EXECUTEs of {@link BoundStatement}s for repository CRUD,
 * derived and string queries, and the metadata of those prepared statements (bind variables,
 * partition key indices, result columns) is what the server answered to PREPARE. Plus prepared
 * statements written by hand through {@link CqlTemplate}.
 */
class PreparedStatementsTest extends SpringDataTest {
    @Autowired
    ReadingRepository readings;

    /** A statement on one of this test's partitions: its bind variable "sensor" is {@code sensor}. */
    private static boolean matches(Object request, String fragment, String sensor) {
        return request instanceof BoundStatement b
                && b.getPreparedStatement().getQuery().contains(fragment)
                && b.getPreparedStatement().getVariableDefinitions().contains("sensor")
                && sensor.equals(b.getString("sensor"));
    }

    /** The one EXECUTE of a prepared statement containing {@code fragment}, bound to {@code sensor}. */
    private BoundStatement onlyBound(String fragment, String sensor) throws InterruptedException {
        requests.await(r -> matches(r, fragment, sensor), 1);
        List<BoundStatement> bound = requests.bound().stream().filter(b -> matches(b, fragment, sensor)).toList();
        assertThat(bound).as("EXECUTEs of a statement containing <%s> among %s", fragment, requests.all()).hasSize(1);
        return bound.get(0);
    }

    @Test
    void repositoryCrudRunsPrepared() throws Exception {
        Reading r = RepositoryTest.full(newSensor("prepared"), 1);
        requests.clear();
        readings.save(r);
        readings.findById(r.key).orElseThrow();
        // Neither went as a plain QUERY.
        String sensor = r.key.sensor();
        requests.await(q -> matches(q, "readings", sensor), 2);
        assertThat(requests.all()).noneMatch(q -> q instanceof SimpleStatement s && s.getPositionalValues().contains(sensor));

        BoundStatement insert = onlyBound("INSERT INTO readings", sensor);
        // 18 columns, every one a bind marker; no partition key routing info would mean the
        // server's PREPARED result lacked pk indices.
        assertThat(insert.getPreparedStatement().getVariableDefinitions().size()).isEqualTo(18);
        assertThat(insert.getPreparedStatement().getPartitionKeyIndices()).hasSize(2);
        assertThat(insert.getRoutingKey()).isNotNull();

        BoundStatement select = onlyBound("SELECT", sensor);
        PreparedStatement ps = select.getPreparedStatement();
        assertThat(ps.getVariableDefinitions()).extracting(ColumnDefinition::getType)
                .containsExactly(DataTypes.TEXT, DataTypes.DATE, DataTypes.INT);
        assertThat(ps.getResultSetDefinitions().size()).isEqualTo(18);
        assertThat(ps.getResultSetDefinitions().get(0).getKeyspace().asInternal()).isEqualTo(KEYSPACE);
        assertThat(ps.getResultSetDefinitions().get(0).getTable().asInternal()).isEqualTo("readings");
    }

    @Test
    void stringQueryRunsPreparedWithItsBindVariables() throws Exception {
        String sensor = newSensor("prepared");
        readings.save(RepositoryTest.full(sensor, 1));
        readings.save(RepositoryTest.full(sensor, 2));
        requests.clear();
        assertThat(readings.between(sensor, DAY, 1, 2)).hasSize(1);

        BoundStatement between = onlyBound("seq >= ", sensor);
        PreparedStatement ps = between.getPreparedStatement();
        assertThat(ps.getVariableDefinitions()).extracting(ColumnDefinition::getType)
                .containsExactly(DataTypes.TEXT, DataTypes.DATE, DataTypes.INT, DataTypes.INT);
        assertThat(ps.getVariableDefinitions()).extracting(d -> d.getName().asInternal())
                .containsExactly("sensor", "day", "seq", "seq");
        assertThat(ps.getPartitionKeyIndices()).containsExactly(0, 1);
        assertThat(between.getString(0)).isEqualTo(sensor);
        assertThat(between.getInt(3)).isEqualTo(2);

        requests.clear();
        assertThat(readings.latest(sensor, DAY, 1)).extracting(r -> r.key.seq()).containsExactly(2);
        PreparedStatement latest = onlyBound("LIMIT", sensor).getPreparedStatement();
        // A bound LIMIT is the variable "[limit]" of type int.
        assertThat(latest.getVariableDefinitions().get(2).getName().asInternal()).isEqualTo("[limit]");
        assertThat(latest.getVariableDefinitions().get(2).getType()).isEqualTo(DataTypes.INT);
    }

    @Test
    void derivedQueryRunsPrepared() throws Exception {
        String sensor = newSensor("prepared");
        readings.save(RepositoryTest.full(sensor, 1));
        requests.clear();
        assertThat(readings.findByKeySensorAndKeyDayAndKeySeqGreaterThan(sensor, DAY, 0)).hasSize(1);
        BoundStatement derived = onlyBound("seq>", sensor);
        assertThat(derived.getPreparedStatement().getVariableDefinitions().size()).isEqualTo(3);
    }

    /** Preparing by hand: a PreparedStatementCreator, a binder and a row mapper. */
    @Test
    void cqlTemplateWithAPreparedStatement() throws Exception {
        String sensor = newSensor("cqltemplate");
        for (int seq = 1; seq <= 4; seq++) {
            readings.save(RepositoryTest.full(sensor, seq));
        }
        CqlTemplate cql = (CqlTemplate) template.getCqlOperations();
        List<Integer> seqs = cql.query(
                s -> s.prepare("SELECT seq FROM readings WHERE sensor = :sensor AND day = :day AND seq IN :seqs"),
                ps -> ps.bind().setString("sensor", sensor).setLocalDate("day", DAY).setList("seqs", List.of(4, 2, 9), Integer.class),
                (row, n) -> row.getInt("seq"));
        assertThat(seqs).containsExactly(2, 4);

        // A statement prepared once on the driver's session, then bound and run by the template.
        PreparedStatement notes = session.prepare("SELECT note FROM readings WHERE sensor = ? AND day = ?");
        assertThat(cql.query(s -> notes, ps -> ps.bind(sensor, DAY), (row, n) -> row.getString(0)))
                .containsExactly("reading 1 ünïcödé ✓", "reading 2 ünïcödé ✓", "reading 3 ünïcödé ✓", "reading 4 ünïcödé ✓");
        assertThat(cql.queryForList("SELECT note FROM readings WHERE sensor = ? AND day = ?", String.class, sensor, DAY))
                .hasSize(4);
    }
}
