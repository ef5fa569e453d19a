package godriver

import (
	"errors"
	"fmt"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// A statement with bind markers prepares once and executes with many values; the driver learns the
// markers' names and types from the PREPARED result.
func TestPreparedStatementsWithBindMarkers(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE prep (k int, c int, v text, PRIMARY KEY (k, c))")
	for c := 0; c < 5; c++ {
		if err := s.Query("INSERT INTO prep (k, c, v) VALUES (?, ?, ?)", 1, c, fmt.Sprint("v", c)).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	md, err := s.StatementMetadata(t.Context(), "SELECT v FROM prep WHERE k = :key AND c >= :lo", ks)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.BindColumns) != 2 || md.BindColumns[0].Name != "key" || md.BindColumns[1].Name != "lo" ||
		md.BindColumns[0].TypeInfo.Type() != gocql.TypeInt {
		t.Errorf("bind markers: %+v", md.BindColumns)
	}
	if len(md.ResultColumns) != 1 || md.ResultColumns[0].Name != "v" || md.ResultColumns[0].TypeInfo.Type() != gocql.TypeVarchar {
		t.Errorf("result columns: %+v", md.ResultColumns)
	}
	iter := s.Query("SELECT v FROM prep WHERE k = ? AND c >= ?", 1, 3).Iter()
	var got []string
	var v string
	for iter.Scan(&v) {
		got = append(got, v)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[v3 v4]" {
		t.Errorf("rows %v, want [v3 v4]", got)
	}
	// A null bound value deletes the cell; an unset one leaves it.
	exec(t, s, "UPDATE prep SET v = 'kept' WHERE k = 2 AND c = 0")
	if err := s.Query("UPDATE prep SET v = ? WHERE k = ? AND c = ?", gocql.UnsetValue, 2, 0).Exec(); err != nil {
		t.Fatal(err)
	}
	if err := s.Query("SELECT v FROM prep WHERE k = 2 AND c = 0").Scan(&v); err != nil || v != "kept" {
		t.Errorf("after an unset value: %q %v", v, err)
	}
	if err := s.Query("UPDATE prep SET v = ? WHERE k = ? AND c = ?", nil, 2, 0).Exec(); err != nil {
		t.Fatal(err)
	}
	// The row was written by UPDATE (no row marker): with its only cell deleted it is gone.
	if err := s.Query("SELECT v FROM prep WHERE k = 2 AND c = 0").Scan(&v); !errors.Is(err, gocql.ErrNotFound) {
		t.Errorf("after a null value: %q %v, want no row", v, err)
	}
}

// A small page size splits a partition and a table scan into pages; the driver iterates all of
// them, and a page state taken from one query resumes a new one where it stopped.
func TestPaging(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE paged (k int, c int, v int, PRIMARY KEY (k, c))")
	b := s.Batch(gocql.UnloggedBatch)
	for c := 0; c < 95; c++ {
		b.Query("INSERT INTO paged (k, c, v) VALUES (?, ?, ?)", 7, c, c*c)
	}
	if err := b.Exec(); err != nil {
		t.Fatal(err)
	}
	for k := 100; k < 123; k++ {
		exec(t, s, fmt.Sprintf("INSERT INTO paged (k, c, v) VALUES (%d, 0, 0)", k))
	}

	// All pages of one partition, in clustering order.
	iter := s.Query("SELECT c, v FROM paged WHERE k = ?", 7).PageSize(10).Iter()
	var c, v, n int
	for iter.Scan(&c, &v) {
		if c != n || v != n*n {
			t.Fatalf("row %d: c=%d v=%d", n, c, v)
		}
		n++
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if n != 95 {
		t.Errorf("%d rows over all pages, want 95", n)
	}

	// Page by page by hand: each page has at most 10 rows, the state resumes exactly after it.
	var state []byte
	seen, pages := 0, 0
	for {
		iter := s.Query("SELECT c FROM paged WHERE k = ?", 7).PageSize(10).PageState(state).Iter()
		rows := iter.NumRows()
		for iter.Scan(&c) {
			if c != seen {
				t.Fatalf("page %d: c=%d, want %d", pages, c, seen)
			}
			seen++
		}
		state = iter.PageState()
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		pages++
		if rows > 10 {
			t.Fatalf("page %d has %d rows, page size 10", pages, rows)
		}
		if len(state) == 0 {
			break
		}
		if pages > 20 {
			t.Fatal("more than 20 pages for 95 rows")
		}
	}
	if seen != 95 || pages < 10 {
		t.Errorf("resumed pages: %d rows in %d pages, want 95 rows in 10 pages or more", seen, pages)
	}

	// A whole-table scan across partitions: every partition exactly once.
	iter = s.Query("SELECT k, c FROM paged").PageSize(7).Iter()
	count := map[int]int{}
	var k int
	for iter.Scan(&k, &c) {
		count[k]++
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if len(count) != 24 || count[7] != 95 || count[100] != 1 || count[122] != 1 {
		t.Errorf("table scan: %d partitions, k=7 has %d rows", len(count), count[7])
	}

	// The same scan resumed page by page from page states crossing partition boundaries gives the
	// same rows in the same (token) order.
	var order, resumed [][2]int
	iter = s.Query("SELECT k, c FROM paged").PageSize(7).Iter()
	for iter.Scan(&k, &c) {
		order = append(order, [2]int{k, c})
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	state = nil
	for pages = 0; pages < 100; pages++ {
		iter := s.Query("SELECT k, c FROM paged").PageSize(7).PageState(state).Iter()
		for iter.Scan(&k, &c) {
			resumed = append(resumed, [2]int{k, c})
		}
		state = iter.PageState()
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if len(state) == 0 {
			break
		}
	}
	if fmt.Sprint(resumed) != fmt.Sprint(order) || len(order) != 95+23 {
		t.Errorf("resumed table scan: %d rows, one-query scan: %d rows (want 118, same order)", len(resumed), len(order))
	}
}

// Logged and unlogged batches of prepared and literal statements apply all their rows; a counter
// batch adds to counters.
func TestBatches(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE bt (k int, c int, v text, PRIMARY KEY (k, c))",
		"CREATE TABLE bc (k int PRIMARY KEY, hits counter, misses counter)")
	for _, typ := range []gocql.BatchType{gocql.LoggedBatch, gocql.UnloggedBatch} {
		k := int(typ) + 1
		b := s.Batch(typ)
		b.Query("INSERT INTO bt (k, c, v) VALUES (?, ?, ?)", k, 1, "one")
		b.Query(fmt.Sprintf("INSERT INTO bt (k, c, v) VALUES (%d, 2, 'two')", k))
		b.Query("UPDATE bt SET v = ? WHERE k = ? AND c = ?", "three", k, 3)
		b.Query("DELETE FROM bt WHERE k = ? AND c = ?", k+10, 1)
		if err := b.Exec(); err != nil {
			t.Fatalf("batch type %d: %v", typ, err)
		}
		var n int
		if err := s.Query("SELECT count(*) FROM bt WHERE k = ?", k).Scan(&n); err != nil || n != 3 {
			t.Errorf("batch type %d: %d rows (%v), want 3", typ, n, err)
		}
	}
	for i := 0; i < 2; i++ {
		b := s.Batch(gocql.CounterBatch)
		b.Query("UPDATE bc SET hits = hits + ? WHERE k = ?", int64(5), 1)
		b.Query("UPDATE bc SET misses = misses - 1, hits = hits + 1 WHERE k = 1")
		b.Query("UPDATE bc SET hits = hits + 1 WHERE k = 2")
		if err := b.Exec(); err != nil {
			t.Fatalf("counter batch: %v", err)
		}
	}
	var hits, misses int64
	if err := s.Query("SELECT hits, misses FROM bc WHERE k = 1").Scan(&hits, &misses); err != nil || hits != 12 || misses != -2 {
		t.Errorf("counters: hits %d misses %d (%v), want 12 and -2", hits, misses, err)
	}
	// A counter update in a logged batch is refused by the server.
	b := s.Batch(gocql.LoggedBatch)
	b.Query("UPDATE bc SET hits = hits + 1 WHERE k = 1")
	var invalid *gocql.RequestErrInvalid
	if err := b.Exec(); !errors.As(err, &invalid) {
		t.Errorf("counter in a logged batch: %T %v, want an Invalid error", err, err)
	}
}

// Lightweight transactions: applied and not applied, with the current values the server returns.
func TestLightweightTransactions(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE lwt (k int PRIMARY KEY, v text, n int)")
	var k, n int
	var v string
	// The returned columns of a failed condition: the key, then the other columns by name.
	applied, err := s.Query("INSERT INTO lwt (k, v, n) VALUES (1, 'first', 10) IF NOT EXISTS").ScanCAS(&k, &n, &v)
	if err != nil || !applied {
		t.Fatalf("first insert: applied %v err %v", applied, err)
	}
	applied, err = s.Query("INSERT INTO lwt (k, v, n) VALUES (?, ?, ?) IF NOT EXISTS", 1, "second", 20).ScanCAS(&k, &n, &v)
	if err != nil || applied || k != 1 || v != "first" || n != 10 {
		t.Errorf("second insert: applied %v, existing (%d, %q, %d), err %v", applied, k, v, n, err)
	}
	applied, err = s.Query("UPDATE lwt SET v = 'third' WHERE k = 1 IF n = ?", 11).ScanCAS(&n)
	if err != nil || applied || n != 10 {
		t.Errorf("update IF n = 11: applied %v, n %d, err %v", applied, n, err)
	}
	applied, err = s.Query("UPDATE lwt SET v = 'third' WHERE k = 1 IF n = 10 AND v = 'first'").ScanCAS()
	if err != nil || !applied {
		t.Errorf("update IF n = 10: applied %v err %v", applied, err)
	}
	row := map[string]interface{}{}
	applied, err = s.Query("DELETE FROM lwt WHERE k = 1 IF v = 'nope'").MapScanCAS(row)
	if err != nil || applied || row["v"] != "third" {
		t.Errorf("delete IF v = 'nope': applied %v, row %v, err %v", applied, row, err)
	}
	applied, err = s.Query("DELETE FROM lwt WHERE k = 2 IF EXISTS").ScanCAS()
	if err != nil || applied {
		t.Errorf("delete of a missing row IF EXISTS: applied %v err %v", applied, err)
	}
	// A conditional batch on one partition.
	b := s.Batch(gocql.LoggedBatch)
	b.Query("UPDATE lwt SET n = 11 WHERE k = 1 IF v = 'third'")
	b.Query("INSERT INTO lwt (k, v) VALUES (1, 'batched')")
	applied, iter, err := b.ExecCAS()
	if err != nil || !applied {
		t.Errorf("conditional batch: applied %v err %v", applied, err)
	}
	if iter != nil {
		_ = iter.Close()
	}
	if err := s.Query("SELECT v, n FROM lwt WHERE k = 1").Scan(&v, &n); err != nil || v != "batched" || n != 11 {
		t.Errorf("after the batch: v %q n %d err %v", v, n, err)
	}
}

// TTL counts down from what was written, and writetime is the timestamp given.
func TestTTLAndWritetime(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE ttlt (k int PRIMARY KEY, v text, w int)")
	if err := s.Query("INSERT INTO ttlt (k, v) VALUES (?, ?) USING TTL ? AND TIMESTAMP ?", 1, "x", 3600, int64(1_700_000_000_000_000)).Exec(); err != nil {
		t.Fatal(err)
	}
	exec(t, s, "UPDATE ttlt USING TIMESTAMP 1700000000000001 SET w = 5 WHERE k = 1")
	var ttl *int
	var wt, wt2 int64
	var wttl *int
	if err := s.Query("SELECT ttl(v), writetime(v), writetime(w), ttl(w) FROM ttlt WHERE k = 1").Scan(&ttl, &wt, &wt2, &wttl); err != nil {
		t.Fatal(err)
	}
	if ttl == nil || *ttl > 3600 || *ttl < 3500 {
		t.Errorf("ttl(v) = %v, want 3500..3600", ttl)
	}
	if wt != 1_700_000_000_000_000 || wt2 != 1_700_000_000_000_001 {
		t.Errorf("writetime(v) = %d, writetime(w) = %d", wt, wt2)
	}
	if wttl != nil {
		t.Errorf("ttl(w) = %d, want null", *wttl)
	}
	// A write with the driver's default timestamp has a writetime near now (microseconds).
	exec(t, s, "INSERT INTO ttlt (k, v) VALUES (2, 'now')")
	if err := s.Query("SELECT writetime(v) FROM ttlt WHERE k = 2").Scan(&wt); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(time.UnixMicro(wt)); d < -time.Minute || d > time.Minute {
		t.Errorf("writetime %d is %v from now", wt, d)
	}
	// A TTL of 1 s expires: wait for the row to go (bounded), never a fixed sleep.
	exec(t, s, "INSERT INTO ttlt (k, v) VALUES (3, 'brief') USING TTL 1")
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := s.Query("SELECT count(*) FROM ttlt WHERE k = 3").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a row with TTL 1 is still there after 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
