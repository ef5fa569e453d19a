package godriver

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Server errors reach the application as gocql's error types with Cassandra's codes, and the
// connection stays usable after each.
func TestErrorsHaveTheDriversClassesAndCodes(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE errs (k int PRIMARY KEY, v text)")
	cases := []struct {
		stmt string
		args []interface{}
		code int
		want interface{}
	}{
		{"SELEKT * FROM errs", nil, gocql.ErrCodeSyntax, new(*gocql.RequestErrSyntax)},
		{"SELECT * FROM no_such_table", nil, gocql.ErrCodeInvalid, new(*gocql.RequestErrInvalid)},
		{"SELECT * FROM no_such_keyspace.errs", nil, gocql.ErrCodeInvalid, new(*gocql.RequestErrInvalid)},
		{"INSERT INTO errs (k, v) VALUES ('not an int', 'x')", nil, gocql.ErrCodeInvalid, new(*gocql.RequestErrInvalid)},
		{"INSERT INTO errs (k, nope) VALUES (1, 'x')", nil, gocql.ErrCodeInvalid, new(*gocql.RequestErrInvalid)},
		{"SELECT * FROM errs WHERE v = 'x'", nil, gocql.ErrCodeInvalid, new(*gocql.RequestErrInvalid)},
		{"CREATE TABLE errs (k int PRIMARY KEY)", nil, gocql.ErrCodeAlreadyExists, new(*gocql.RequestErrAlreadyExists)},
		{"CREATE KEYSPACE " + ks + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", nil,
			gocql.ErrCodeAlreadyExists, new(*gocql.RequestErrAlreadyExists)},
	}
	for _, c := range cases {
		err := s.Query(c.stmt, c.args...).Exec()
		var re gocql.RequestError
		if !errors.As(err, &re) {
			t.Errorf("%s: %T %v, want a RequestError", c.stmt, err, err)
			continue
		}
		if re.Code() != c.code {
			t.Errorf("%s: code %#x (%s), want %#x", c.stmt, re.Code(), re.Message(), c.code)
		}
		if !errors.As(err, c.want) {
			t.Errorf("%s: %T, want %T", c.stmt, err, c.want)
		}
		if strings.TrimSpace(re.Message()) == "" {
			t.Errorf("%s: empty error message", c.stmt)
		}
	}
	var ae *gocql.RequestErrAlreadyExists
	if err := s.Query("CREATE TABLE errs (k int PRIMARY KEY)").Exec(); errors.As(err, &ae) {
		if ae.Keyspace != ks || ae.Table != "errs" {
			t.Errorf("AlreadyExists names %q.%q, want %s.errs", ae.Keyspace, ae.Table, ks)
		}
	}
	// A bound value of the wrong type is refused by the driver's marshaller, from the marker types
	// the server gave in PREPARED, before it is sent.
	var me gocql.MarshalError
	if err := s.Query("INSERT INTO errs (k, v) VALUES (?, ?)", "one", "x").Exec(); !errors.As(err, &me) {
		t.Errorf("binding a string to an int marker: %T %v, want a MarshalError", err, err)
	}
	// Fewer values than the statement has markers: the driver refuses it from the same metadata.
	if err := s.Query("INSERT INTO errs (k, v) VALUES (?, ?)", 1).Exec(); err == nil ||
		!strings.Contains(err.Error(), "expected 2 values") {
		t.Errorf("binding one value to two markers: %v", err)
	}
	var v string
	if err := s.Query("INSERT INTO errs (k, v) VALUES (1, 'still fine')").Exec(); err != nil {
		t.Fatalf("the session after errors: %v", err)
	}
	if err := s.Query("SELECT v FROM errs WHERE k = 1").Scan(&v); err != nil || v != "still fine" {
		t.Errorf("read after errors: %q %v", v, err)
	}
}

// A prepared statement whose table is dropped and recreated with other columns answers with an
// error, not with wrong data.
func TestPreparedAgainstADroppedTable(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE gone (k int PRIMARY KEY, v int)")
	if err := s.Query("INSERT INTO gone (k, v) VALUES (?, ?)", 1, 1).Exec(); err != nil {
		t.Fatal(err)
	}
	createTable(t, s, "DROP TABLE gone")
	var re gocql.RequestError
	err := s.Query("INSERT INTO gone (k, v) VALUES (?, ?)", 1, 2).Exec()
	if !errors.As(err, &re) || re.Code() != gocql.ErrCodeInvalid {
		t.Errorf("prepared insert into a dropped table: %T %v, want an Invalid error", err, err)
	}
}

// A prepared SELECT * outlives ALTER TABLE ... ADD at protocol v4, where the driver skips the
// result metadata of a prepared statement (v4 cannot say it changed): the server forgets the
// table's prepared statements as Cassandra does, the EXECUTE answers UNPREPARED, and gocql
// prepares again and reads the rows with the new columns (it read garbled rows before).
func TestPreparedSelectStarAfterAlterTableAtV4(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE widened (k int, c int, v text, PRIMARY KEY (k, c))")
	cfg := cluster(4)
	cfg.Keyspace = ks
	v4, err := cfg.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer v4.Close()
	for c, v := range []string{"x", "y"} {
		if err := v4.Query("INSERT INTO widened (k, c, v) VALUES (?, ?, ?)", 1, c+1, v).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	read := func() []map[string]interface{} {
		rows, err := v4.Query("SELECT * FROM widened WHERE k = ?", 1).Iter().SliceMap()
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if got := read(); len(got) != 2 || got[1]["v"] != "y" {
		t.Fatalf("before ALTER: %v", got)
	}
	createTable(t, s, "ALTER TABLE widened ADD w int")
	if err := v4.Query("UPDATE widened SET w = 7 WHERE k = 1 AND c = 2").Exec(); err != nil {
		t.Fatal(err)
	}
	got := read()
	want := []map[string]interface{}{
		{"k": 1, "c": 1, "v": "x", "w": 0},
		{"k": 1, "c": 2, "v": "y", "w": 7},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after ALTER TABLE ADD: %v, want %v", got, want)
	}
}
