package peregrine.springdata;

import com.datastax.oss.driver.api.core.CqlSession;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.springframework.test.context.junit.jupiter.SpringExtension;

/**
 * Drops the run's keyspace after the last test class, through the application's session: it is
 * still open then, since Spring closes its cached contexts at JVM exit, after JUnit closes its
 * root store.
 */
final class DropKeyspace implements BeforeAllCallback {
    @Override
    public void beforeAll(ExtensionContext context) {
        context.getRoot().getStore(ExtensionContext.Namespace.create(DropKeyspace.class)).getOrComputeIfAbsent(
                "drop", k -> {
                    CqlSession session = SpringExtension.getApplicationContext(context).getBean(CqlSession.class);
                    return (ExtensionContext.Store.CloseableResource)
                            () -> session.execute("DROP KEYSPACE IF EXISTS " + SpringDataTest.KEYSPACE);
                });
    }
}
