package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Gives test classes the shared {@link Cql} (created on first use, closed after the last class) and
 * fails a class whose run made the driver log a WARN or ERROR: the driver tolerates many protocol
 * deviations (an odd row in system.peers, a schema row it cannot parse) with only a log line.
 */
final class CqlExtension implements ParameterResolver, AfterAllCallback {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(CqlExtension.class);

    static Cql cql(ExtensionContext context) {
        return context.getRoot().getStore(NS).getOrComputeIfAbsent(Cql.class, k -> new Cql(), Cql.class);
    }

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
        return p.getParameter().getType() == Cql.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext e) {
        return cql(e);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        List<String> lines = DriverLog.drain();
        if (!lines.isEmpty()) {
            List<String> shown = lines.subList(0, Math.min(3, lines.size()));
            fail("the driver logged " + lines.size() + " WARN/ERROR line(s) during "
                    + context.getDisplayName() + " (all on stderr), the first:\n  " + String.join("\n  ", shown));
        }
    }
}
