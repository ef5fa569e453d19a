package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.datastax.oss.driver.api.core.AllNodesFailedException;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.Base64;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The Java driver over mutual TLS ({@code client_encryption_options} with {@code
 * require_client_auth: true}). Runs only when {@code CQL_TLS_PORT} names such an endpoint, with
 * {@code CQL_TLS_CA} (the CA certificate, PEM), {@code CQL_TLS_CERT} and {@code CQL_TLS_KEY} (the
 * client's certificate and unencrypted EC key, PEM); tests/python/test_tls.py starts one and runs
 * this class. Skipped otherwise (the shared endpoints of the other classes are plain).
 */
class TlsTest {
    private static final char[] STORE_PASSWORD = "peregrine".toCharArray();

    @AfterAll
    static void forgetRefusedConnectionWarnings() {
        // The refused session logs its failed connections; they are this class's expectation.
        DriverLog.drain();
    }

    private static String env(String name) {
        String v = System.getenv(name);
        assumeTrue(v != null && !v.isEmpty(), name + " is not set: no TLS endpoint to test");
        return v;
    }

    private static CqlSession connect(SSLContext ssl) {
        InetSocketAddress endpoint = new InetSocketAddress("127.0.0.1", Integer.parseInt(env("CQL_TLS_PORT")));
        return CqlSession.builder()
                .addContactPoint(endpoint)
                .withSslContext(ssl)
                .withConfigLoader(DriverConfigLoader.programmaticBuilder()
                        .withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DcInferringLoadBalancingPolicy")
                        .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(10))
                        .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(10))
                        .build())
                .build();
    }

    /** An SSLContext trusting {@code caPem}, presenting {@code certPem}/{@code keyPem} if given. */
    private static SSLContext context(String caPem, String certPem, String keyPem) throws Exception {
        CertificateFactory x509 = CertificateFactory.getInstance("X.509");
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        try (InputStream in = Files.newInputStream(Path.of(caPem))) {
            trust.setCertificateEntry("ca", x509.generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        KeyManager[] keyManagers = null;
        if (certPem != null) {
            Certificate[] chain;
            try (InputStream in = Files.newInputStream(Path.of(certPem))) {
                chain = x509.generateCertificates(in).toArray(new Certificate[0]);
            }
            String body = Files.readString(Path.of(keyPem))
                    .replaceAll("-----[A-Z ]+-----", "")
                    .replaceAll("\\s", "");
            PrivateKey key = KeyFactory.getInstance("EC")
                    .generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(body)));
            KeyStore keys = KeyStore.getInstance("PKCS12");
            keys.load(null, null);
            keys.setKeyEntry("client", key, STORE_PASSWORD, chain);
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(keys, STORE_PASSWORD);
            keyManagers = kmf.getKeyManagers();
        }
        SSLContext ssl = SSLContext.getInstance("TLS");
        ssl.init(keyManagers, tmf.getTrustManagers(), null);
        return ssl;
    }

    @Test
    void aClientWithItsCertificateWritesAndReads() throws Exception {
        SSLContext ssl = context(env("CQL_TLS_CA"), env("CQL_TLS_CERT"), env("CQL_TLS_KEY"));
        try (CqlSession session = connect(ssl)) {
            session.execute("CREATE KEYSPACE IF NOT EXISTS tls_java WITH replication = "
                    + "{'class': 'SimpleStrategy', 'replication_factor': 1}");
            session.execute("CREATE TABLE IF NOT EXISTS tls_java.t (k int PRIMARY KEY, v text)");
            session.execute("INSERT INTO tls_java.t (k, v) VALUES (1, 'java over tls')");
            assertEquals("java over tls",
                    session.execute("SELECT v FROM tls_java.t WHERE k = 1").one().getString("v"));
        }
    }

    @Test
    void aClientWithoutACertificateIsRefused() throws Exception {
        SSLContext ssl = context(env("CQL_TLS_CA"), null, null);
        assertThrows(AllNodesFailedException.class, () -> connect(ssl).close());
    }
}
