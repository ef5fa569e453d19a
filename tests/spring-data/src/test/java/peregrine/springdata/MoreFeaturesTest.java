package peregrine.springdata;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.data.cassandra.core.query.Criteria.where;

import com.datastax.oss.driver.api.core.data.CqlDuration;
import com.datastax.oss.driver.api.core.data.CqlVector;
import com.datastax.oss.driver.api.core.metadata.schema.TableMetadata;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.ListType;
import com.datastax.oss.driver.api.core.type.MapType;
import com.datastax.oss.driver.api.core.type.TupleType;
import com.datastax.oss.driver.api.core.type.UserDefinedType;
import com.datastax.oss.driver.api.core.type.VectorType;
import java.math.BigInteger;
import java.time.LocalTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.cassandra.core.query.Query;
import org.springframework.data.cassandra.core.query.Update;

/**
 * The rest of what the schema action and the mapping cover: the remaining column types, a tuple,
 * a list of user-type values, a nested frozen collection and a vector with its SAI index
 * ({@link Gadget}), a secondary index used by a derived query ({@link Account#owner}), and a
 * counter table ({@link PageViews}).
 */
class MoreFeaturesTest extends SpringDataTest {
    @Autowired
    GadgetRepository gadgets;
    @Autowired
    AccountRepository accounts;

    private static Gadget gadget(float... embedding) {
        Gadget g = new Gadget(UUID.randomUUID());
        g.small = (short) -32768;
        g.tiny = (byte) 127;
        g.big = new BigInteger("-123456789012345678901234567890");
        g.atTime = LocalTime.of(23, 59, 58, 123_456_789);
        g.span = CqlDuration.newInstance(1, 2, 3_000_000_004L);
        g.ratio = 0.25f;
        g.code = "plain ascii";
        g.pair = new Pair(7, "seven");
        g.stops = List.of(new Location(1.5, -2.5, "a"), new Location(0, 0, null));
        g.matrix = Map.of("row0", List.of(1, 0), "row1", List.of(0, 1));
        g.embedding = embedding;
        return g;
    }

    @Test
    void schemaActionCreatedTheGadgetColumns() {
        TableMetadata t = session.getMetadata().getKeyspace(KEYSPACE).orElseThrow().getTable("gadgets").orElseThrow();
        assertThat(t.getColumn("small").orElseThrow().getType()).isEqualTo(DataTypes.SMALLINT);
        assertThat(t.getColumn("tiny").orElseThrow().getType()).isEqualTo(DataTypes.TINYINT);
        assertThat(t.getColumn("big").orElseThrow().getType()).isEqualTo(DataTypes.VARINT);
        assertThat(t.getColumn("at_time").orElseThrow().getType()).isEqualTo(DataTypes.TIME);
        assertThat(t.getColumn("span").orElseThrow().getType()).isEqualTo(DataTypes.DURATION);
        assertThat(t.getColumn("ratio").orElseThrow().getType()).isEqualTo(DataTypes.FLOAT);
        assertThat(t.getColumn("code").orElseThrow().getType()).isEqualTo(DataTypes.ASCII);
        assertThat(t.getColumn("pair").orElseThrow().getType()).isEqualTo(DataTypes.tupleOf(DataTypes.INT, DataTypes.TEXT));
        assertThat(((TupleType) t.getColumn("pair").orElseThrow().getType()).getComponentTypes()).hasSize(2);
        ListType stops = (ListType) t.getColumn("stops").orElseThrow().getType();
        assertThat(stops.isFrozen()).isFalse();
        assertThat(((UserDefinedType) stops.getElementType()).getName().asInternal()).isEqualTo("location");
        assertThat(stops.getElementType().isDetached()).isFalse();
        MapType matrix = (MapType) t.getColumn("matrix").orElseThrow().getType();
        assertThat(matrix.getValueType()).isEqualTo(DataTypes.frozenListOf(DataTypes.INT));
        VectorType embedding = (VectorType) t.getColumn("embedding").orElseThrow().getType();
        assertThat(embedding.getElementType()).isEqualTo(DataTypes.FLOAT);
        assertThat(embedding.getDimensions()).isEqualTo(3);
        assertThat(t.getIndexes()).hasSize(1);
        assertThat(t.getIndexes().values().iterator().next().getTarget()).isEqualTo("embedding");
    }

    @Test
    void gadgetRoundTrip() {
        Gadget g = gadget(0.1f, 0.2f, 0.3f);
        gadgets.save(g);
        Gadget got = gadgets.findById(g.id).orElseThrow();
        assertThat(got.small).isEqualTo(g.small);
        assertThat(got.tiny).isEqualTo(g.tiny);
        assertThat(got.big).isEqualTo(g.big);
        assertThat(got.atTime).isEqualTo(g.atTime);
        assertThat(got.span).isEqualTo(g.span);
        assertThat(got.ratio).isEqualTo(g.ratio);
        assertThat(got.code).isEqualTo(g.code);
        assertThat(got.pair).isEqualTo(g.pair);
        assertThat(got.stops).isEqualTo(g.stops);
        assertThat(got.matrix).isEqualTo(g.matrix);
        assertThat(got.embedding).containsExactly(0.1f, 0.2f, 0.3f);
    }

    /** Cassandra 5.0.9's client warning on creating a vector index, word for word. */
    @Test
    void vectorIndexCreationWarned(@Autowired VectorIndex index) {
        assertThat(index.warnings()).containsExactly("""
                SAI ANN indexes on vector columns are experimental and are not recommended for production use.
                They don't yet support SELECT queries with:
                 * Consistency level higher than ONE/LOCAL_ONE.
                 * Paging.
                 * No LIMIT clauses.
                 * PER PARTITION LIMIT clauses.
                 * GROUP BY clauses.
                 * Aggregation functions.
                 * Filters on columns without a SAI index.""");
    }

    /** An ANN query through the vector's SAI index, as a repository @Query. */
    @Test
    void nearestNeighboursThroughTheVectorIndex() {
        Gadget east = gadget(1f, 0f, 0f);
        Gadget north = gadget(0f, 1f, 0f);
        Gadget up = gadget(0f, 0f, 1f);
        gadgets.saveAll(List.of(east, north, up));
        List<Gadget> near = gadgets.nearest(CqlVector.newInstance(0.1f, 0.9f, 0.05f), 1);
        assertThat(near).extracting(x -> x.id).containsExactly(north.id);
    }

    /** A derived query on an indexed column: the index answers it, no ALLOW FILTERING needed. */
    @Test
    void derivedQueryThroughASecondaryIndex() {
        String owner = "owner-" + UUID.randomUUID();
        accounts.saveAll(List.of(new Account("ix-" + UUID.randomUUID(), owner, 1),
                new Account("ix-" + UUID.randomUUID(), owner, 2),
                new Account("ix-" + UUID.randomUUID(), "someone else", 3)));
        assertThat(accounts.findByOwner(owner)).extracting(a -> a.balance).containsExactlyInAnyOrder(1L, 2L);
        assertThat(accounts.findByOwner("nobody-" + UUID.randomUUID())).isEmpty();
    }

    @Test
    void counterIncrementsAndDecrements() {
        String page = "/page/" + UUID.randomUUID();
        Query q = Query.query(where("page").is(page));
        assertThat(template.update(q, Update.empty().increment("hits", 5), PageViews.class)).isTrue();
        assertThat(template.update(q, Update.empty().increment("hits"), PageViews.class)).isTrue();
        assertThat(template.update(q, Update.empty().decrement("hits", 2), PageViews.class)).isTrue();
        assertThat(template.selectOneById(page, PageViews.class).hits).isEqualTo(4);
        assertThat(template.selectOneById("/never/" + UUID.randomUUID(), PageViews.class)).isNull();
    }
}
