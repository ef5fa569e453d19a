package godriver

import (
	"bytes"
	"fmt"
	"testing"
)

// Each protocol version the driver speaks, chosen explicitly (no negotiation down): a session
// connects, reads metadata, prepares, writes and reads back a value larger than one v5 segment
// (128 KiB) so v5's segment framing splits it.
func TestProtocolVersions(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE proto (k int PRIMARY KEY, b blob)")
	for _, version := range []int{3, 4, 5} {
		cfg := cluster(version)
		cfg.Keyspace = ks
		vs, err := cfg.CreateSession()
		if err != nil {
			t.Errorf("protocol v%d: connect: %v", version, err)
			continue
		}
		big := bytes.Repeat([]byte(fmt.Sprintf("v%d-", version)), 100_000)
		if err := vs.Query("INSERT INTO proto (k, b) VALUES (?, ?)", version, big).Exec(); err != nil {
			t.Errorf("protocol v%d: insert: %v", version, err)
		}
		var got []byte
		if err := vs.Query("SELECT b FROM proto WHERE k = ?", version).Scan(&got); err != nil || !bytes.Equal(got, big) {
			t.Errorf("protocol v%d: read %d bytes back (%v), want %d", version, len(got), err, len(big))
		}
		if _, err := vs.KeyspaceMetadata(ks); err != nil {
			t.Errorf("protocol v%d: keyspace metadata: %v", version, err)
		}
		vs.Close()
	}
}

// Protocol v5 carries a keyspace per request: a session without a default keyspace reads an
// unqualified table of this run's keyspace.
func TestProtocolV5KeyspacePerRequest(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE perks (k int PRIMARY KEY, v text)")
	exec(t, s, "INSERT INTO perks (k, v) VALUES (1, 'here')")
	vs, err := cluster(5).CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	var v string
	if err := vs.Query("SELECT v FROM perks WHERE k = ?", 1).SetKeyspace(ks).Scan(&v); err != nil || v != "here" {
		t.Errorf("v5 query with keyspace %s: %q %v", ks, v, err)
	}
	if err := vs.Query("SELECT v FROM perks WHERE k = 1").SetKeyspace(ks).Scan(&v); err != nil || v != "here" {
		t.Errorf("v5 unprepared query with keyspace %s: %q %v", ks, v, err)
	}
}
