package peregrine.javadriver;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.ProtocolVersion;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.metadata.TokenMap;
import com.datastax.oss.driver.api.core.metadata.token.Token;
import com.datastax.oss.driver.api.core.servererrors.FunctionFailureException;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.codec.TypeCodecs;
import com.datastax.oss.driver.api.core.uuid.Uuids;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 10's selectors at v4 and v5: native functions (blob conversions, JSON, token, uuid/now,
 * the timeuuid and date conversions, math, collection and masking functions), CAST, arithmetic in
 * selectors and in WHERE/SET terms, literal terms and bind markers in the select clause, and
 * aliases as the result column names.
 */
@ExtendWith(CqlExtension.class)
class FunctionsTest {
    private static String t;

    @BeforeAll
    static void createTable(Cql cql) {
        t = cql.table("fn");
        cql.session.execute("CREATE TABLE " + t + " (k int PRIMARY KEY, q int, d double, txt text, b bigint,"
                + " l list<int>, m map<text, int>, s set<text>, ts timestamp, tu timeuuid)");
    }

    private static Row one(CqlSession s, String select, Object... values) {
        Row r = s.execute(s.prepare(select).bind(values)).one();
        assertNotNull(r, select);
        return r;
    }

    private static int write(CqlSession s, String version) {
        int k = version.equals("V4") ? 4 : 5;
        s.execute(s.prepare("INSERT INTO " + t + " (k, q, d, txt, b, l, m, s, ts, tu) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
                .bind(k, 7, 2.5, "abc", 10L, List.of(3, 1, 2), Map.of("b", 2, "a", 1), Set.of("y", "x"),
                        Instant.parse("2020-01-02T03:04:05.678Z"), Uuids.startOf(1_577_836_800_000L)));
        return k;
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void blobJsonAndTokenFunctions(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = write(s, version);
        Row r = one(s, "SELECT bigintAsBlob(b), blobAsBigint(bigintAsBlob(b)), textAsBlob(txt), blobAsText(0x616263),"
                + " intAsBlob(q), toJson(m), toJson(l), toJson(ts), token(k) FROM " + t + " WHERE k = ?", k);
        assertEquals(ByteBuffer.wrap(new byte[] {0, 0, 0, 0, 0, 0, 0, 10}), r.getByteBuffer(0));
        assertEquals(10L, r.getLong(1));
        assertArrayEquals("abc".getBytes(StandardCharsets.UTF_8), bytes(r.getByteBuffer(2)));
        assertEquals("abc", r.getString(3));
        assertEquals(ByteBuffer.wrap(new byte[] {0, 0, 0, 7}), r.getByteBuffer(4));
        assertEquals("{\"a\": 1, \"b\": 2}", r.getString(5));
        assertEquals("[3, 1, 2]", r.getString(6));
        assertEquals("\"2020-01-02 03:04:05.678Z\"", r.getString(7));
        assertEquals("system.token(k)", r.getColumnDefinitions().get(8).getName().asInternal());
        assertEquals(DataTypes.BIGINT, r.getColumnDefinitions().get(8).getType());
        // The driver's own Murmur3 hash of the key (the token map of the metadata session) agrees.
        TokenMap tokens = cql.session.getMetadata().getTokenMap().orElseThrow();
        Token expected = tokens.newToken(TypeCodecs.INT.encode(k, ProtocolVersion.DEFAULT));
        assertEquals(expected, tokens.parse(String.valueOf(r.getLong(8))));

        s.execute(s.prepare("UPDATE " + t + " SET m = fromJson(?), q = fromJson(?) WHERE k = ?").bind("{\"z\": 26}", "12", k));
        Row after = one(s, "SELECT m, q FROM " + t + " WHERE k = ?", k);
        assertEquals(Map.of("z", 26), after.getMap("m", String.class, Integer.class));
        assertEquals(12, after.getInt("q"));
        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("SELECT fromJson(txt) FROM " + t + " WHERE k = ?"));
        assertEquals("fromjson() cannot be used in the selection clause of a SELECT statement", e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void timeFunctions(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = write(s, version);
        long before = System.currentTimeMillis();
        Row r = one(s, "SELECT uuid(), now(), minTimeuuid('2020-01-01 00:00:00+0000'), maxTimeuuid('2020-01-01 00:00:00+0000'),"
                + " toTimestamp(tu), toUnixTimestamp(tu), toDate(ts), toUnixTimestamp(ts), toTimestamp(toDate(ts)),"
                + " currentTimestamp() FROM " + t + " WHERE k = ?", k);
        long after = System.currentTimeMillis();
        assertEquals(4, r.getUuid(0).version(), "uuid() is random (version 4)");
        UUID now = r.getUuid(1);
        assertEquals(1, now.version(), "now() is a timeuuid");
        long nowMillis = Uuids.unixTimestamp(now);
        assertTrue(nowMillis >= before - 5_000 && nowMillis <= after + 5_000, "now() at " + nowMillis);
        assertEquals(DataTypes.TIMEUUID, r.getColumnDefinitions().get(1).getType());
        assertEquals(1_577_836_800_000L, Uuids.unixTimestamp(r.getUuid(2)));
        assertEquals(Uuids.startOf(1_577_836_800_000L), r.getUuid(2), "minTimeuuid is the driver's startOf");
        assertEquals(Uuids.endOf(1_577_836_800_000L), r.getUuid(3), "maxTimeuuid is the driver's endOf");
        assertEquals(Instant.ofEpochMilli(1_577_836_800_000L), r.getInstant(4));
        assertEquals(1_577_836_800_000L, r.getLong(5));
        assertEquals(LocalDate.of(2020, 1, 2), r.getLocalDate(6));
        assertEquals(Instant.parse("2020-01-02T03:04:05.678Z").toEpochMilli(), r.getLong(7));
        assertEquals(Instant.parse("2020-01-02T00:00:00Z"), r.getInstant(8));
        long current = r.getInstant(9).toEpochMilli();
        assertTrue(current >= before - 5_000 && current <= after + 5_000, "currentTimestamp() at " + current);
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void mathCollectionAndMaskingFunctions(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = write(s, version);
        Row r = one(s, "SELECT abs(b), round(d), collection_count(l), collection_max(l), collection_sum(l), collection_avg(l),"
                + " map_keys(m), map_values(m), collection_min(s), mask_null(q), mask_default(txt), mask_inner(txt, 1, 1),"
                + " mask_outer(txt, 1, 0), mask_default(l) FROM " + t + " WHERE k = ?", k);
        assertEquals(10L, r.getLong(0));
        assertEquals(3.0, r.getDouble(1), "round(2.5) rounds half up");
        assertEquals(3, r.getInt(2));
        assertEquals(3, r.getInt(3));
        assertEquals(6, r.getInt(4));
        assertEquals(2, r.getInt(5));
        assertEquals(Set.of("a", "b"), r.getSet(6, String.class));
        assertEquals(List.of(1, 2), r.getList(7, Integer.class));
        assertEquals("x", r.getString(8));
        assertTrue(r.isNull(9), "mask_null");
        assertEquals("****", r.getString(10), "mask_default(text)");
        assertEquals("a*c", r.getString(11));
        assertEquals("*bc", r.getString(12));
        assertEquals(List.of(), r.getList(13, Integer.class), "mask_default of a list is the empty list");
        assertEquals(DataTypes.setOf(DataTypes.TEXT), r.getColumnDefinitions().get(6).getType());
    }

    @ParameterizedTest
    @ValueSource(strings = {"V4", "V5"})
    void castArithmeticLiteralsAndAliases(String version, Cql cql) {
        CqlSession s = cql.at(version);
        int k = write(s, version);
        Row r = one(s, "SELECT CAST(q AS text) AS qt, CAST(d AS int), CAST(b AS varint), q + 1 AS next, q * b, q % 3, d / 2,"
                + " b - q, txt + 'def', (int) ? AS lit, q * (int) ?, (text) 'x' AS label FROM " + t + " WHERE k = ?", 5, 3, k);
        assertEquals("7", r.getString("qt"));
        assertEquals(2, r.getInt(1));
        assertEquals(java.math.BigInteger.TEN, r.getBigInteger(2));
        assertEquals(8, r.getInt("next"));
        assertEquals(70L, r.getLong(4), "int * bigint is a bigint");
        assertEquals(DataTypes.BIGINT, r.getColumnDefinitions().get(4).getType());
        assertEquals(1, r.getInt(5));
        assertEquals(1.25, r.getDouble(6));
        assertEquals(3L, r.getLong(7));
        assertEquals("abcdef", r.getString(8));
        assertEquals(5, r.getInt("lit"));
        assertEquals(21, r.getInt(10));
        assertEquals("x", r.getString("label"));
        assertEquals(List.of("qt", "cast(d as int)", "cast(b as varint)", "next"),
                List.of(0, 1, 2, 3).stream().map(i -> r.getColumnDefinitions().get(i).getName().asInternal()).toList());

        // Arithmetic on literals in SET and WHERE terms (k is 4 or 5).
        s.execute("UPDATE " + t + " SET q = 2 * 3 + 1, b = 5 * -4 WHERE k = 2 + " + (k - 2));
        Row after = one(s, "SELECT q, b FROM " + t + " WHERE k = 10 - " + (10 - k));
        assertEquals(7, after.getInt("q"));
        assertEquals(-20L, after.getLong("b"));
        InvalidQueryException e = assertThrows(InvalidQueryException.class,
                () -> s.prepare("SELECT q * ? FROM " + t + " WHERE k = ?"));
        assertEquals("Ambiguous '*' operation with args q and ?: use type hint to disambiguate, example '(int) ?'", e.getMessage());
        e = assertThrows(InvalidQueryException.class, () -> s.prepare("SELECT ? FROM " + t + " WHERE k = ?"));
        assertEquals("Cannot infer type for term ? in selection clause (try using a cast to force a type)", e.getMessage());
        FunctionFailureException f = assertThrows(FunctionFailureException.class,
                () -> s.execute(s.prepare("SELECT q / 0 FROM " + t + " WHERE k = ?").bind(k)));
        assertEquals("the operation 'int / int' failed: / by zero", f.getMessage());
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }
}
