package peregrine.springdata;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class during which anything logged a WARN or ERROR (see {@link DriverLog}); the
 * lines themselves are on stderr. Lines logged while the Spring context starts (the session
 * connecting, the schema action) count against the first class that starts it.
 */
final class DriverLogCheck implements AfterAllCallback {
    @Override
    public void afterAll(ExtensionContext context) {
        List<String> lines = DriverLog.drain();
        if (!lines.isEmpty()) {
            List<String> shown = lines.subList(0, Math.min(3, lines.size()));
            fail("the driver (or Spring) logged " + lines.size() + " WARN/ERROR line(s) during "
                    + context.getDisplayName() + " (all on stderr), the first:\n  " + String.join("\n  ", shown));
        }
    }
}
