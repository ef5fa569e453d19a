// Package godriver runs the Go CQL driver against any CQL endpoint: tests/go-driver/run.sh PORT [HOST].
//
// The driver is github.com/apache/cassandra-gocql-driver/v2. gocql was donated to the Apache
// Software Foundation: github.com/gocql/gocql's last release is v1.7.0 and its README points to
// the Apache repository, where the maintained v2 line is released (protocol v5, structured
// logging, schema change listeners). So the suite pins the maintained module, not the old path.
//
// What every test shares (this file): one session on a keyspace made for this run (unique name,
// dropped at the end), a driver logger that records every WARN and ERROR the driver logs (a test
// fails if the driver logged one while it ran: drivers degrade silently on what they cannot
// parse), and the pass/fail count that run.sh prints as its closing line.
package godriver

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

var (
	cqlHost = envOr("CQL_HOST", "127.0.0.1")
	cqlPort int
	// ks is this run's keyspace; sess is a protocol v4 session with it as the default keyspace.
	ks     string
	sess   *gocql.Session
	logs   = &driverLog{}
	events = &schemaEvents{seen: map[string]chan struct{}{}}
	counts struct {
		sync.Mutex
		passed, failed int
	}
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// driverLog is the driver's StructuredLogger: it keeps warnings and errors, drops info and debug.
type driverLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *driverLog) add(level, msg string, fields []gocql.LogField) {
	var b strings.Builder
	b.WriteString(level + " " + msg)
	for _, f := range fields {
		fmt.Fprintf(&b, " %s=%v", f.Name, f.Value.Any())
	}
	l.mu.Lock()
	l.entries = append(l.entries, b.String())
	l.mu.Unlock()
}

func (l *driverLog) Error(msg string, fields ...gocql.LogField)   { l.add("ERROR", msg, fields) }
func (l *driverLog) Warning(msg string, fields ...gocql.LogField) { l.add("WARN", msg, fields) }
func (l *driverLog) Info(string, ...gocql.LogField)               {}
func (l *driverLog) Debug(string, ...gocql.LogField)              {}

func (l *driverLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *driverLog) since(mark int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.entries[mark:]...)
}

// schemaEvents lets a test wait for the driver's own schema refresh after DDL (the SCHEMA_CHANGE
// event, then the driver re-reads system_schema and calls its listeners) instead of sleeping.
type schemaEvents struct {
	mu   sync.Mutex
	seen map[string]chan struct{}
}

// on is closed when the driver reported `what` ("table created", "table updated", "type created")
// for keyspace.name.
func (e *schemaEvents) on(what, keyspace, name string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := what + " " + keyspace + "." + name
	ch, ok := e.seen[key]
	if !ok {
		ch = make(chan struct{})
		e.seen[key] = ch
	}
	return ch
}

func (e *schemaEvents) report(what, keyspace, name string) {
	ch := e.on(what, keyspace, name)
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// await fails the test unless ch (from on) is closed within 30 s.
func await(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s schema event from the driver within 30 s", what)
	}
}

func (e *schemaEvents) OnTableCreated(ev gocql.OnTableCreatedEvent) {
	e.report("table created", ev.Table.Keyspace, ev.Table.Name)
}
func (e *schemaEvents) OnTableUpdated(ev gocql.OnTableUpdatedEvent) {
	e.report("table updated", ev.New.Keyspace, ev.New.Name)
}
func (e *schemaEvents) OnTableDropped(gocql.OnTableDroppedEvent) {}
func (e *schemaEvents) OnUserTypeCreated(ev gocql.OnUserTypeCreatedEvent) {
	e.report("type created", ev.UserType.Keyspace, ev.UserType.Name)
}
func (e *schemaEvents) OnUserTypeUpdated(gocql.OnUserTypeUpdatedEvent) {}
func (e *schemaEvents) OnUserTypeDropped(gocql.OnUserTypeDroppedEvent) {}

// cluster is the driver configuration every session here uses, at protocol version proto.
func cluster(proto int) *gocql.ClusterConfig {
	c := gocql.NewCluster(cqlHost)
	c.Port = cqlPort
	c.ProtoVersion = proto
	c.Logger = logs
	c.Timeout = 15 * time.Second
	c.ConnectTimeout = 15 * time.Second
	c.WriteTimeout = 15 * time.Second
	c.NumConns = 1
	c.Consistency = gocql.One
	c.MaxWaitSchemaAgreement = 30 * time.Second
	return c
}

// knownBugs are bugs of standalone Peregrine that these tests find, by test name. Such a test uses
// expectBug: it still runs everywhere; against standalone Peregrine its failure is logged and
// not counted, and its passing fails it ("now passes": take it off this list).
var knownBugs = map[string]string{}

// standalone tells standalone Peregrine from Cassandra and from Peregrine as a proxy (which shows
// its upstream's system.local): it has no gossip, so its gossip_generation is 0, where a Cassandra
// node's is its start time.
func standalone(t *testing.T) bool {
	t.Helper()
	var gen int
	if err := sess.Query("SELECT gossip_generation FROM system.local").Scan(&gen); err != nil {
		t.Fatalf("system.local gossip_generation: %v", err)
	}
	return gen == 0
}

// check is what a test body under expectBug reports through: *testing.T, or a recorder.
type check interface {
	Errorf(format string, args ...interface{})
	Fatalf(format string, args ...interface{})
}

type recorder struct{ failures []string }

func (r *recorder) Errorf(format string, args ...interface{}) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...interface{}) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// expectBug runs body as the test, except where t's name is a known bug of this server: then
// body must fail, and passing is the failure.
func expectBug(t *testing.T, body func(c check)) {
	t.Helper()
	bug, listed := knownBugs[t.Name()]
	if !listed || !standalone(t) {
		body(t)
		return
	}
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(r)
	}()
	<-done
	if len(r.failures) == 0 {
		t.Errorf("known bug now passes, take %s off knownBugs: %s", t.Name(), bug)
		return
	}
	t.Logf("known Peregrine bug, still failing (%s):\n  %s", bug, strings.Join(r.failures, "\n  "))
}

// begin marks the start of a test: at its end the test fails if the driver logged a warning or an
// error meanwhile, and its outcome is counted.
func begin(t *testing.T) *gocql.Session {
	t.Helper()
	mark := logs.mark()
	t.Cleanup(func() {
		if got := logs.since(mark); len(got) > 0 {
			t.Errorf("the driver logged %d warning(s)/error(s):\n  %s", len(got), strings.Join(got, "\n  "))
		}
		counts.Lock()
		if t.Failed() {
			counts.failed++
		} else {
			counts.passed++
		}
		counts.Unlock()
	})
	return sess
}

// exec runs statements that must succeed.
func exec(t *testing.T, s *gocql.Session, stmts ...string) {
	t.Helper()
	for _, stmt := range stmts {
		if err := s.Query(stmt).Exec(); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// createTable runs a CREATE TABLE/TYPE and waits until every node agrees on the schema.
func createTable(t *testing.T, s *gocql.Session, stmts ...string) {
	t.Helper()
	exec(t, s, stmts...)
	if err := s.AwaitSchemaAgreement(context.Background()); err != nil {
		t.Fatalf("schema agreement: %v", err)
	}
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if cqlPort, err = strconv.Atoi(os.Getenv("CQL_PORT")); err != nil {
		fmt.Fprintln(os.Stderr, "CQL_PORT must be set to the endpoint's port (run.sh PORT [HOST])")
		return 2
	}
	ks = fmt.Sprintf("gocql_%d_%d", time.Now().UnixMilli(), os.Getpid())
	cfg := cluster(4)
	cfg.Metadata.SchemaListener.TableChangeListener = events
	cfg.Metadata.SchemaListener.UserTypeChangeListener = events
	if sess, err = cfg.CreateSession(); err != nil {
		fmt.Fprintf(os.Stderr, "connect to %s:%d: %v\n", cqlHost, cqlPort, err)
		return 1
	}
	if err = sess.Query(fmt.Sprintf("CREATE KEYSPACE %s WITH replication = "+
		"{'class': 'SimpleStrategy', 'replication_factor': 1}", ks)).Exec(); err == nil {
		err = sess.AwaitSchemaAgreement(context.Background())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "create keyspace %s: %v\n", ks, err)
		return 1
	}
	sess.Close()
	cfg.Keyspace = ks
	if sess, err = cfg.CreateSession(); err != nil {
		fmt.Fprintf(os.Stderr, "connect with keyspace %s: %v\n", ks, err)
		return 1
	}

	code := m.Run()

	mark := logs.mark()
	if err := sess.Query("DROP KEYSPACE " + ks).Exec(); err != nil {
		fmt.Fprintf(os.Stderr, "drop keyspace %s: %v\n", ks, err)
		counts.failed++
	}
	sess.Close()
	if got := logs.since(mark); len(got) > 0 {
		fmt.Fprintf(os.Stderr, "the driver logged while dropping the keyspace and closing:\n  %s\n", strings.Join(got, "\n  "))
		counts.failed++
	}
	if counts.failed > 0 && code == 0 {
		code = 1
	}
	summary := fmt.Sprintf("%d passed, %d failed", counts.passed, counts.failed)
	if path := os.Getenv("GO_SUITE_SUMMARY"); path != "" {
		_ = os.WriteFile(path, []byte(summary+"\n"), 0o644)
	} else {
		fmt.Println(summary)
	}
	return code
}
