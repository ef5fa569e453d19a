package peregrine.ycsb;

import com.datastax.driver.core.BoundStatement;
import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ColumnDefinitions;
import com.datastax.driver.core.ConsistencyLevel;
import com.datastax.driver.core.Host;
import com.datastax.driver.core.PreparedStatement;
import com.datastax.driver.core.RegularStatement;
import com.datastax.driver.core.ResultSet;
import com.datastax.driver.core.Row;
import com.datastax.driver.core.Session;
import com.datastax.driver.core.querybuilder.Insert;
import com.datastax.driver.core.querybuilder.QueryBuilder;
import com.datastax.driver.core.querybuilder.Select;
import com.datastax.driver.core.querybuilder.Update;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * A YCSB {@link DB} for a CQL endpoint that puts on the wire what YCSB 0.17.0's Cassandra binding
 * ({@code site.ycsb.db.CassandraCQLClient}, which is not published to Maven Central) puts there:
 * the DataStax Java driver 3.x with its default policies and protocol negotiation, one shared
 * Cluster and Session for all client threads connected to the keyspace, statements built with
 * the driver's QueryBuilder and prepared on first use (several threads may prepare the same text
 * at once, as the binding does), QUORUM by default, and the same CQL:
 *
 * <pre>
 *   SELECT * FROM usertable WHERE y_id=? LIMIT 1;                  (or SELECT f1,f2 ... for a field set)
 *   SELECT * FROM usertable WHERE token(y_id) >= token(?) LIMIT ?
 *   INSERT INTO usertable (y_id,fieldA,...) VALUES (?,?,...);
 *   UPDATE usertable SET fieldA=?,... WHERE y_id=?;
 *   DELETE FROM usertable WHERE y_id=?;
 * </pre>
 *
 * A read of a key with no row is NOT_FOUND; a read copies every returned column (for SELECT *
 * that includes y_id). Properties: hosts, port, cassandra.keyspace, cassandra.username,
 * cassandra.password, cassandra.readconsistencylevel, cassandra.writeconsistencylevel.
 */
public class CqlClient extends DB {
  private static final Logger LOG = LoggerFactory.getLogger(CqlClient.class);
  private static final String KEY = "y_id";

  private static final Object LOCK = new Object();
  private static int users = 0;
  private static Cluster cluster;
  private static Session session;
  private static ConsistencyLevel readCl = ConsistencyLevel.QUORUM;
  private static ConsistencyLevel writeCl = ConsistencyLevel.QUORUM;
  private static final Map<String, PreparedStatement> PREPARED = new ConcurrentHashMap<>();

  @Override
  public void init() throws DBException {
    synchronized (LOCK) {
      users++;
      if (cluster != null) {
        return;
      }
      String hosts = getProperties().getProperty("hosts");
      if (hosts == null) {
        throw new DBException("property hosts is required");
      }
      int port = Integer.parseInt(getProperties().getProperty("port", "9042"));
      String keyspace = getProperties().getProperty("cassandra.keyspace", "ycsb");
      String user = getProperties().getProperty("cassandra.username");
      readCl = ConsistencyLevel.valueOf(
          getProperties().getProperty("cassandra.readconsistencylevel", "QUORUM"));
      writeCl = ConsistencyLevel.valueOf(
          getProperties().getProperty("cassandra.writeconsistencylevel", "QUORUM"));
      try {
        Cluster.Builder builder = Cluster.builder().withPort(port).addContactPoints(hosts.split(","));
        if (user != null && !user.isEmpty()) {
          builder = builder.withCredentials(user, getProperties().getProperty("cassandra.password"));
        }
        cluster = builder.build();
        LOG.info("Connected to cluster: {} (protocol {})", cluster.getMetadata().getClusterName(),
            cluster.getConfiguration().getProtocolOptions().getProtocolVersion());
        for (Host h : cluster.getMetadata().getAllHosts()) {
          LOG.info("Datacenter: {}; Host: {}; Rack: {}", h.getDatacenter(), h.getAddress(), h.getRack());
        }
        session = cluster.connect(keyspace);
      } catch (Exception e) {
        if (cluster != null) {
          cluster.close();
          cluster = null;
        }
        throw new DBException(e);
      }
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (LOCK) {
      users--;
      if (users == 0 && cluster != null) {
        PREPARED.clear();
        session.close();
        cluster.close();
        session = null;
        cluster = null;
      }
    }
  }

  /**
   * Prepares {@code built} (or {@code text}) and caches it under {@code id} unless another thread
   * got there first. Callers look in the cache first without a lock, so racing threads may both
   * prepare the same text, as the binding's threads do.
   */
  private static PreparedStatement prepared(String id, RegularStatement built, String text,
      ConsistencyLevel cl) {
    PreparedStatement ps = built != null ? session.prepare(built) : session.prepare(text);
    ps.setConsistencyLevel(cl);
    PreparedStatement earlier = PREPARED.putIfAbsent(id, ps);
    return earlier != null ? earlier : ps;
  }

  private static Select.Where selectFrom(String table, Set<String> fields) {
    Select.Builder sel;
    if (fields == null) {
      sel = QueryBuilder.select().all();
    } else {
      Select.Selection cols = QueryBuilder.select();
      for (String f : fields) {
        cols = cols.column(f);
      }
      sel = cols;
    }
    return sel.from(table).where();
  }

  private static HashMap<String, ByteIterator> toFields(Row row) {
    HashMap<String, ByteIterator> out = new HashMap<>();
    for (ColumnDefinitions.Definition def : row.getColumnDefinitions()) {
      ByteBuffer b = row.getBytesUnsafe(def.getName());
      out.put(def.getName(), b == null ? null : new ByteArrayByteIterator(b.array()));
    }
    return out;
  }

  private static String fieldsId(Set<String> fields) {
    return fields == null ? "*" : new TreeSet<>(fields).toString();
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      String id = "read:" + fieldsId(fields);
      PreparedStatement ps = PREPARED.get(id);
      if (ps == null) {
        ps = prepared(id,
            selectFrom(table, fields).and(QueryBuilder.eq(KEY, QueryBuilder.bindMarker())).limit(1),
            null, readCl);
      }
      ResultSet rs = session.execute(ps.bind(key));
      Row row = rs.one();
      if (row == null) {
        return Status.NOT_FOUND;
      }
      result.putAll(toFields(row));
      return Status.OK;
    } catch (Exception e) {
      LOG.error("Error reading key: " + key, e);
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      String id = "scan:" + fieldsId(fields);
      PreparedStatement ps = PREPARED.get(id);
      if (ps == null) {
        // The binding writes the token restriction by hand: "<select without ';'> WHERE
        // token(y_id) >= token(?) LIMIT ?".
        Select.Builder sel = fields == null ? QueryBuilder.select().all() : QueryBuilder.select();
        if (fields != null) {
          Select.Selection cols = (Select.Selection) sel;
          for (String f : fields) {
            cols = cols.column(f);
          }
          sel = cols;
        }
        String head = sel.from(table).toString();
        head = head.substring(0, head.length() - 1);
        String text = head + " WHERE " + QueryBuilder.token(KEY) + " >= token(" + QueryBuilder.bindMarker()
            + ") LIMIT " + QueryBuilder.bindMarker();
        ps = prepared(id, null, text, readCl);
      }
      ResultSet rs = session.execute(ps.bind(startkey, recordcount));
      for (Row row : rs) {
        result.add(toFields(row));
      }
      return Status.OK;
    } catch (Exception e) {
      LOG.error("Error scanning with startkey: " + startkey, e);
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      Set<String> fields = values.keySet();
      String id = "update:" + fieldsId(fields);
      PreparedStatement ps = PREPARED.get(id);
      if (ps == null) {
        Update u = QueryBuilder.update(table);
        for (String f : fields) {
          u.with(QueryBuilder.set(f, QueryBuilder.bindMarker()));
        }
        u.where(QueryBuilder.eq(KEY, QueryBuilder.bindMarker()));
        ps = prepared(id, u, null, writeCl);
      }
      ColumnDefinitions vars = ps.getVariables();
      BoundStatement b = ps.bind();
      int last = vars.size() - 1;
      for (int i = 0; i < last; i++) {
        b.setString(i, values.get(vars.getName(i)).toString());
      }
      b.setString(last, key);
      session.execute(b);
      return Status.OK;
    } catch (Exception e) {
      LOG.error("Error updating key: " + key, e);
      return Status.ERROR;
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      Set<String> fields = values.keySet();
      String id = "insert:" + fieldsId(fields);
      PreparedStatement ps = PREPARED.get(id);
      if (ps == null) {
        Insert ins = QueryBuilder.insertInto(table).value(KEY, QueryBuilder.bindMarker());
        for (String f : fields) {
          ins.value(f, QueryBuilder.bindMarker());
        }
        ps = prepared(id, ins, null, writeCl);
      }
      ColumnDefinitions vars = ps.getVariables();
      BoundStatement b = ps.bind().setString(0, key);
      for (int i = 1; i < vars.size(); i++) {
        b.setString(i, values.get(vars.getName(i)).toString());
      }
      session.execute(b);
      return Status.OK;
    } catch (Exception e) {
      LOG.error("Error inserting key: " + key, e);
      return Status.ERROR;
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      PreparedStatement ps = PREPARED.get("delete");
      if (ps == null) {
        ps = prepared("delete",
            QueryBuilder.delete().from(table).where(QueryBuilder.eq(KEY, QueryBuilder.bindMarker())),
            null, writeCl);
      }
      session.execute(ps.bind(key));
      return Status.OK;
    } catch (Exception e) {
      LOG.error("Error deleting key: " + key, e);
      return Status.ERROR;
    }
  }
}
