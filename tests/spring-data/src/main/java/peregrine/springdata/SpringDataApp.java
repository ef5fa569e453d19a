package peregrine.springdata;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.cassandra.DriverConfigLoaderBuilderCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.data.cassandra.SessionFactory;
import org.springframework.data.cassandra.core.cql.CqlTemplate;
import org.springframework.data.cassandra.core.cql.generator.CreateKeyspaceCqlGenerator;
import org.springframework.data.cassandra.core.cql.keyspace.CreateKeyspaceSpecification;

/**
 * A small Spring Boot application on Spring Data Cassandra, the way such applications are
 * usually set up: Boot's auto-configuration builds the driver session from {@code spring.cassandra.*}
 * (application.yml), {@code spring.cassandra.schema-action: create_if_not_exists} makes Spring Data
 * create the user types, tables and indexes of the {@code @Table} entities at start-up
 * ({@link VectorIndex} adds what it cannot express), and the entities
 * are used through {@link ReadingRepository} and {@code CassandraTemplate}.
 *
 * <p>Two additions, both for running against any endpoint: the keyspace ({@code app.keyspace}) is
 * created by the application itself before the session binds to it (Boot never creates one), and
 * the driver infers the local datacenter from the node it connects to instead of being told its
 * name.
 */
@SpringBootApplication
public class SpringDataApp {

    public static void main(String[] args) {
        SpringApplication.run(SpringDataApp.class, args);
    }

    /**
     * Driver 4 refuses explicit contact points without a local datacenter, except with the
     * datacenter-inferring policy: it takes the datacenter of the contact point (Peregrine, a
     * proxy and Cassandra each report their own in system.local).
     */
    @Bean
    DriverConfigLoaderBuilderCustomizer inferLocalDatacenter() {
        return builder -> builder.withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS,
                "DcInferringLoadBalancingPolicy");
    }

    /**
     * The application's session, replacing Boot's (which would connect straight into a keyspace
     * that must already exist): a first session without a keyspace creates {@code app.keyspace}
     * with Spring Data's keyspace specification (SimpleStrategy, replication factor 1, IF NOT
     * EXISTS), then the session the application uses is bound to it. Both come from Boot's
     * builder, so every {@code spring.cassandra.*} setting applies to both.
     */
    @Bean(destroyMethod = "close")
    CqlSession cassandraSession(ObjectProvider<CqlSessionBuilder> builders, @Value("${app.keyspace}") String keyspace) {
        try (CqlSession system = builders.getObject().build()) {
            CreateKeyspaceSpecification spec = CreateKeyspaceSpecification.createKeyspace(keyspace)
                    .ifNotExists()
                    .withSimpleReplication(1);
            new CqlTemplate(system).execute(CreateKeyspaceCqlGenerator.toCql(spec));
        }
        return builders.getObject().withKeyspace(keyspace).build();
    }

    /** The vector index, once the session factory (and so the schema action) is ready. */
    @Bean
    VectorIndex vectorIndex(SessionFactory sessionFactory) {
        return new VectorIndex(sessionFactory);
    }
}
