package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.data.CqlVector;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.type.DataTypes;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** vector&lt;T, n&gt; decoded natively by driver 4 (its VectorType and CqlVector), and the similarity functions. */
@ExtendWith(CqlExtension.class)
class VectorsTest {
    private static PreparedStatement insert;
    private static PreparedStatement select;

    @BeforeAll
    static void createTable(Cql cql) {
        cql.session.execute("CREATE TABLE " + cql.table("vectors")
                + " (k int PRIMARY KEY, v vector<float, 3>, t vector<text, 2>)");
        insert = cql.session.prepare("INSERT INTO " + cql.table("vectors") + " (k, v, t) VALUES (?, ?, ?)");
        select = cql.session.prepare("SELECT v, t, similarity_cosine(v, ?) AS cos,"
                + " similarity_dot_product(v, ?) AS dot FROM " + cql.table("vectors") + " WHERE k = ?");
    }

    @Test
    void metadataHasTheVectorTypes() {
        assertEquals(DataTypes.vectorOf(DataTypes.FLOAT, 3), insert.getVariableDefinitions().get("v").getType());
        assertEquals(DataTypes.vectorOf(DataTypes.TEXT, 2), insert.getVariableDefinitions().get("t").getType());
        assertEquals(DataTypes.vectorOf(DataTypes.FLOAT, 3), select.getResultSetDefinitions().get("v").getType());
        assertEquals(DataTypes.FLOAT, select.getResultSetDefinitions().get("cos").getType());
    }

    @Test
    void boundVectorsReadBackWithCassandrasScores(Cql cql) {
        cql.session.execute(insert.bind(1, CqlVector.newInstance(4.0f, 5.0f, 6.0f), CqlVector.newInstance("a", "héllo")));
        CqlVector<Float> query = CqlVector.newInstance(1.0f, 2.0f, 4.0f);
        CqlVector<Float> other = CqlVector.newInstance(1.0f, 2.0f, 3.0f);
        Row row = cql.session.execute(select.bind(query, other, 1)).one();
        assertEquals(CqlVector.newInstance(4.0f, 5.0f, 6.0f), row.getVector("v", Float.class));
        assertEquals(List.of("a", "héllo"), List.copyOf(row.getVector("t", String.class).stream().toList()));
        // Cassandra 5.0.9's answers to the same call.
        assertEquals(0.972496509552002f, row.getFloat("cos"));
        assertEquals(16.5f, row.getFloat("dot"));
    }

    @Test
    void wrongDimensionsAreRefused(Cql cql) {
        InvalidQueryException e = assertThrows(InvalidQueryException.class, () -> cql.session.execute(
                "INSERT INTO " + cql.table("vectors") + " (k, v) VALUES (2, [1.0, 2.0])"));
        assertTrue(e.getMessage().contains("expected 3 elements, but given 2"), e.getMessage());
        ResultSet rs = cql.session.execute("SELECT k FROM " + cql.table("vectors") + " WHERE k = 2");
        assertEquals(0, rs.all().size());
    }
}
