package peregrine.springdata;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.AppenderBase;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A logback appender (see logback-test.xml) that records every WARN and ERROR line, from the
 * driver ({@code com.datastax.oss.driver}), Netty, Spring Data or Boot, for {@link DriverLogCheck}:
 * the driver degrades silently, with only a log line, on what it cannot parse (a schema row, a
 * peers row, a protocol feature), so a clean log is part of what every test checks.
 */
public final class DriverLog extends AppenderBase<ILoggingEvent> {
    private static final ConcurrentLinkedQueue<String> RECORDED = new ConcurrentLinkedQueue<>();

    /**
     * Netty's notice that a listener could not run because the event loop was already shut down:
     * a race inside the client while a session closes, whatever the server (see the same
     * exception in tests/java-driver).
     */
    private static boolean clientShutdownRace(ILoggingEvent e) {
        return e.getLoggerName().equals("io.netty.util.concurrent.DefaultPromise.rejectedExecution");
    }

    @Override
    protected void append(ILoggingEvent e) {
        if (e.getLevel().isGreaterOrEqual(Level.WARN) && !clientShutdownRace(e)) {
            IThrowableProxy t = e.getThrowableProxy();
            RECORDED.add(e.getLevel() + " " + e.getLoggerName() + ": " + e.getFormattedMessage()
                    + (t == null ? "" : " (" + t.getClassName() + ": " + t.getMessage() + ")"));
        }
    }

    /** The lines recorded since the previous call. */
    static List<String> drain() {
        List<String> out = new ArrayList<>();
        for (String s; (s = RECORDED.poll()) != null; ) {
            out.add(s);
        }
        return out;
    }
}
