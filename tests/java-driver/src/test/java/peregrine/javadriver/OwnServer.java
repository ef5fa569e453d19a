package peregrine.javadriver;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * A {@code peregrine serve} of the test's own, for what the shared endpoint cannot show (e.g.
 * logins: test-all's server runs without an authenticator). The binary is {@code PEREGRINE_BIN}
 * (test-all exports it); without it the calling test is skipped. It listens on a free loopback
 * port, with the given YAML, in a temporary directory removed by {@link #close}.
 */
final class OwnServer implements AutoCloseable {
    final InetSocketAddress address;
    private final Process process;
    private final Path dir;

    private OwnServer(InetSocketAddress address, Process process, Path dir) {
        this.address = address;
        this.process = process;
        this.dir = dir;
    }

    static OwnServer start(String yaml) throws IOException, InterruptedException {
        String bin = System.getenv("PEREGRINE_BIN");
        Assumptions.assumeTrue(bin != null && !bin.isEmpty(), "PEREGRINE_BIN is not set: no server of the test's own");
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path dir = Files.createTempDirectory("peregrine-jd-");
        Path config = dir.resolve("peregrine.yaml");
        Files.writeString(config, yaml);
        Process p = new ProcessBuilder(bin, "serve", "--config", config.toString(), "--listen", "127.0.0.1:" + port,
                "--data-dir", dir.resolve("data").toString())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("peregrine.log").toFile())
                .start();
        OwnServer server = new OwnServer(new InetSocketAddress("127.0.0.1", port), p, dir);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(server.address, 500);
                return server;
            } catch (IOException notYet) {
                if (!p.isAlive() || System.nanoTime() > deadline) {
                    String log = Files.readString(dir.resolve("peregrine.log"));
                    server.close();
                    throw new IllegalStateException("peregrine did not start:\n" + log);
                }
                Thread.sleep(50);
            }
        }
    }

    /** A session logged in as {@code user}, pinned to {@code protocolVersion} ("V4", "V5"). */
    CqlSession session(String user, String password, String protocolVersion) {
        return CqlSession.builder()
                .addContactPoint(address)
                .withLocalDatacenter("datacenter1")
                .withAuthCredentials(user, password)
                .withConfigLoader(DriverConfigLoader.programmaticBuilder()
                        .withString(DefaultDriverOption.PROTOCOL_VERSION, protocolVersion)
                        .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(30))
                        .withBoolean(DefaultDriverOption.METADATA_SCHEMA_ENABLED, false)
                        .withBoolean(DefaultDriverOption.REQUEST_LOG_WARNINGS, false)
                        // These sessions come on top of the shared ones (Cql): no leak warning for them.
                        .withInt(DefaultDriverOption.SESSION_LEAK_THRESHOLD, 16)
                        .withInt(DefaultDriverOption.NETTY_IO_SHUTDOWN_QUIET_PERIOD, 0)
                        .withInt(DefaultDriverOption.NETTY_ADMIN_SHUTDOWN_QUIET_PERIOD, 0)
                        .build())
                .build();
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException ignored) {
            // A temporary directory left behind is harmless.
        }
    }
}
