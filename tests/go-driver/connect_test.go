package godriver

import (
	"fmt"
	"net"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// The driver sees exactly one node, the address it connected to (a proxy shows itself, not its
// upstream), up, with the data center, host id and version that system.local gives.
func TestConnectSeesOneNodeAtTheContactPoint(t *testing.T) {
	s := begin(t)
	hosts := s.GetHosts()
	if len(hosts) != 1 {
		t.Fatalf("hosts the driver sees: %v", hosts)
	}
	h := hosts[0]
	want := net.ParseIP(cqlHost)
	if want == nil {
		addrs, err := net.LookupIP(cqlHost)
		if err != nil || len(addrs) == 0 {
			t.Fatalf("resolve %s: %v", cqlHost, err)
		}
		want = addrs[0]
	}
	if !h.ConnectAddress().Equal(want) || h.Port() != cqlPort {
		t.Errorf("host %s:%d, want %s:%d", h.ConnectAddress(), h.Port(), want, cqlPort)
	}
	if !h.IsUp() {
		t.Errorf("host %v is not up", h)
	}
	var dc, rack, release, partitioner string
	var hostID gocql.UUID
	if err := s.Query("SELECT data_center, rack, host_id, release_version, partitioner FROM system.local").
		Scan(&dc, &rack, &hostID, &release, &partitioner); err != nil {
		t.Fatal(err)
	}
	if h.DataCenter() != dc || h.Rack() != rack || h.HostID() != hostID.String() {
		t.Errorf("host dc/rack/id %q/%q/%q, system.local says %q/%q/%q",
			h.DataCenter(), h.Rack(), h.HostID(), dc, rack, hostID)
	}
	if h.Version().String() != "v"+release {
		t.Errorf("host version %q, release_version %q", h.Version(), release)
	}
	if h.Partitioner() != "org.apache.cassandra.dht.Murmur3Partitioner" {
		t.Errorf("partitioner %q", h.Partitioner())
	}
	if len(h.Tokens()) == 0 {
		t.Errorf("host %v has no tokens", h)
	}
}

// At connect the driver read system_schema: the system keyspaces and this run's keyspace with its
// replication are in its metadata.
func TestConnectReadsKeyspaceMetadata(t *testing.T) {
	s := begin(t)
	all, err := s.AllKeyspaceMetadata()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"system", "system_schema", ks} {
		if _, ok := all[name]; !ok {
			t.Errorf("keyspace %s missing from the driver's metadata (has %d keyspaces)", name, len(all))
		}
	}
	local, ok := all["system"].Tables["local"]
	if !ok {
		t.Fatalf("system.local missing from the driver's table metadata")
	}
	if len(local.PartitionKey) != 1 || local.PartitionKey[0].Name != "key" {
		t.Errorf("system.local partition key: %v", local.PartitionKey)
	}
	mine := all[ks]
	if mine.StrategyClass != "org.apache.cassandra.locator.SimpleStrategy" ||
		mine.StrategyOptions["replication_factor"] != "1" || !mine.DurableWrites {
		t.Errorf("keyspace %s: class %q options %v durable %v", ks, mine.StrategyClass, mine.StrategyOptions, mine.DurableWrites)
	}
}

// After CREATE TABLE the driver's schema metadata (refreshed on the SCHEMA_CHANGE event) has the
// table with its key columns in order, clustering order and column types.
func TestSchemaMetadataAfterCreateTable(t *testing.T) {
	s := begin(t)
	created := events.on("table created", ks, "meta")
	createTable(t, s, `CREATE TABLE meta (a int, b text, c timeuuid, d bigint, v map<text, frozen<list<int>>>,
		st set<inet> static, PRIMARY KEY ((a, b), c, d)) WITH CLUSTERING ORDER BY (c DESC, d ASC)`)
	await(t, created, "table created")
	meta, err := s.KeyspaceMetadata(ks)
	if err != nil {
		t.Fatal(err)
	}
	tbl, ok := meta.Tables["meta"]
	if !ok {
		t.Fatalf("table meta missing; tables: %v", meta.Tables)
	}
	names := func(cols []*gocql.ColumnMetadata) []string {
		var out []string
		for _, c := range cols {
			out = append(out, c.Name)
		}
		return out
	}
	if got := names(tbl.PartitionKey); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("partition key %v", got)
	}
	if got := names(tbl.ClusteringColumns); len(got) != 2 || got[0] != "c" || got[1] != "d" {
		t.Errorf("clustering columns %v", got)
	}
	if tbl.ClusteringColumns[0].Order != gocql.DESC || tbl.ClusteringColumns[1].Order != gocql.ASC {
		t.Errorf("clustering order %v %v", tbl.ClusteringColumns[0].Order, tbl.ClusteringColumns[1].Order)
	}
	wantTypes := map[string]string{
		"a": "int", "b": "text", "c": "timeuuid", "d": "bigint",
		"v": "map<text, frozen<list<int>>>", "st": "set<inet>",
	}
	for name, typ := range wantTypes {
		col, ok := tbl.Columns[name]
		if !ok {
			t.Errorf("column %s missing", name)
			continue
		}
		if col.Validator != typ {
			t.Errorf("column %s type %q, want %q", name, col.Validator, typ)
		}
	}
	if tbl.Columns["st"].Kind != gocql.ColumnStatic || tbl.Columns["v"].Kind != gocql.ColumnRegular {
		t.Errorf("column kinds: st %v v %v", tbl.Columns["st"].Kind, tbl.Columns["v"].Kind)
	}
}

// ALTER TABLE ADD and CREATE TYPE reach the driver's metadata through schema events too.
func TestSchemaMetadataAfterAlterTableAndCreateType(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE altered (k int PRIMARY KEY, v int)")
	typed := events.on("type created", ks, "point")
	createTable(t, s, "ALTER TABLE altered ADD (extra list<text>, more boolean)",
		"CREATE TYPE point (x double, y double, label frozen<list<text>>)")
	await(t, typed, "type created")
	// gocql calls no table-updated listener on an ALTER: wait for its metadata to show the
	// new columns (bounded), then check them.
	var meta *gocql.KeyspaceMetadata
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if meta, err = s.KeyspaceMetadata(ks); err != nil {
			t.Fatal(err)
		}
		if tbl := meta.Tables["altered"]; tbl != nil && tbl.Columns["more"] != nil || time.Now().After(deadline) {
			break
		}
	}
	tbl := meta.Tables["altered"]
	if tbl == nil || tbl.Columns["extra"] == nil || tbl.Columns["extra"].Validator != "list<text>" ||
		tbl.Columns["more"] == nil || tbl.Columns["more"].Validator != "boolean" {
		t.Errorf("altered table metadata: %+v", tbl)
	}
	udt := meta.UserTypes["point"]
	if udt == nil {
		t.Fatalf("type point missing; types: %v", meta.UserTypes)
	}
	if fmt.Sprint(udt.FieldNames) != "[x y label]" || len(udt.FieldTypes) != 3 ||
		udt.FieldTypes[0].Type() != gocql.TypeDouble || udt.FieldTypes[2].Type() != gocql.TypeList {
		t.Errorf("type point: fields %v types %v", udt.FieldNames, udt.FieldTypes)
	}
}
