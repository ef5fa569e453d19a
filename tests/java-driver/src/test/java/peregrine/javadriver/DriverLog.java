package peregrine.javadriver;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.AppenderBase;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/** A logback appender (see logback-test.xml) that records WARN and ERROR lines for {@link CqlExtension}. */
public final class DriverLog extends AppenderBase<ILoggingEvent> {
    private static final ConcurrentLinkedQueue<String> RECORDED = new ConcurrentLinkedQueue<>();

    /**
     * Netty's notice that a listener could not run because the event loop was already shut down:
     * a race inside the client while a session closes (seen once in ~10 runs of
     * ProtocolVersionTest, which opens and closes sessions), whatever the server.
     */
    private static boolean clientShutdownRace(ILoggingEvent e) {
        if (e.getLoggerName().equals("io.netty.util.concurrent.DefaultPromise.rejectedExecution")) {
            return true;
        }
        // The same race one step later: a task the driver scheduled on a channel that the
        // session's close has just closed (seen once, in ProtocolVersionTest on a loaded machine).
        IThrowableProxy t = e.getThrowableProxy();
        return e.getLoggerName().equals("com.datastax.oss.driver.internal.core.util.concurrent.UncaughtExceptions")
                && t != null && t.getClassName().endsWith(".StacklessClosedChannelException");
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
