package godriver

import (
	"fmt"
	"reflect"
	"testing"
)

// Collection updates through bind markers, the forms applications use: append and prepend to a
// list, set a list element by index, add to and remove from a set, put map entries.
func TestCollectionUpdatesWithBindMarkers(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE colls (k int PRIMARY KEY, l list<int>, st set<text>, m map<text, int>)")
	exec(t, s, "INSERT INTO colls (k, l, st, m) VALUES (1, [2, 3], {'b'}, {'x': 1})")
	steps := []struct {
		stmt string
		args []interface{}
	}{
		{"UPDATE colls SET l = l + ? WHERE k = ?", []interface{}{[]int{4, 5}, 1}},
		{"UPDATE colls SET l = ? + l WHERE k = ?", []interface{}{[]int{1}, 1}},
		{"UPDATE colls SET l[?] = ? WHERE k = ?", []interface{}{0, 10, 1}},
		{"UPDATE colls SET st = st + ? WHERE k = ?", []interface{}{[]string{"a", "c"}, 1}},
		{"UPDATE colls SET st = st - ? WHERE k = ?", []interface{}{[]string{"b"}, 1}},
		{"UPDATE colls SET m[?] = ? WHERE k = ?", []interface{}{"y", 2, 1}},
		{"UPDATE colls SET m = m + ? WHERE k = ?", []interface{}{map[string]int{"z": 3}, 1}},
	}
	for _, st := range steps {
		if err := s.Query(st.stmt, st.args...).Exec(); err != nil {
			t.Errorf("%s %v: %v", st.stmt, st.args, err)
		}
	}
	var l []int
	var set []string
	var m map[string]int
	if err := s.Query("SELECT l, st, m FROM colls WHERE k = ?", 1).Scan(&l, &set, &m); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(l) != "[10 2 3 4 5]" || fmt.Sprint(set) != "[a c]" ||
		!reflect.DeepEqual(m, map[string]int{"x": 1, "y": 2, "z": 3}) {
		t.Errorf("after the updates: l %v set %v m %v", l, set, m)
	}
}

// DELETE of one map entry and one list element, by bind marker.
func TestDeleteCollectionElementsWithBindMarkers(t *testing.T) {
	begin(t)
	createTable(t, sess, "CREATE TABLE celems (k int PRIMARY KEY, l list<int>, m map<text, int>)")
	exec(t, sess, "INSERT INTO celems (k, l, m) VALUES (1, [7, 8, 9], {'x': 1, 'y': 2})")
	expectBug(t, func(c check) {
		for _, stmt := range []string{"DELETE m[?] FROM celems WHERE k = ?", "DELETE l[?] FROM celems WHERE k = ?"} {
			elem := interface{}("x")
			if stmt[7] == 'l' {
				elem = 1
			}
			if err := sess.Query(stmt, elem, 1).Exec(); err != nil {
				c.Errorf("%s: %v", stmt, err)
			}
		}
		var l []int
		var m map[string]int
		if err := sess.Query("SELECT l, m FROM celems WHERE k = 1").Scan(&l, &m); err != nil {
			c.Fatalf("select: %v", err)
		}
		if fmt.Sprint(l) != "[7 9]" || !reflect.DeepEqual(m, map[string]int{"y": 2}) {
			c.Errorf("after the deletes: l %v m %v, want [7 9] map[y:2]", l, m)
		}
	})
}

// One field of a non-frozen UDT, set by bind marker, leaves the other fields.
func TestSetUDTFieldWithBindMarker(t *testing.T) {
	begin(t)
	createTable(t, sess, "CREATE TYPE IF NOT EXISTS addr (street text, zip int)",
		"CREATE TABLE udtf (k int PRIMARY KEY, a addr)")
	exec(t, sess, "INSERT INTO udtf (k, a) VALUES (1, {street: 'Main', zip: 1})")
	expectBug(t, func(c check) {
		if err := sess.Query("UPDATE udtf SET a.zip = ? WHERE k = ?", 99, 1).Exec(); err != nil {
			c.Fatalf("UPDATE udtf SET a.zip = ?: %v", err)
		}
		var a addr
		if err := sess.Query("SELECT a FROM udtf WHERE k = 1").Scan(&a); err != nil || a != (addr{"Main", 99}) {
			c.Errorf("after setting a.zip: %+v %v, want {Main 99}", a, err)
		}
	})
}

// IN with one marker for the whole list and with a marker per element, LIMIT and a clustering
// range with markers, ORDER BY DESC with paging.
func TestInLimitAndRangesWithBindMarkers(t *testing.T) {
	s := begin(t)
	createTable(t, s, "CREATE TABLE ranges (k int, c int, v text, PRIMARY KEY (k, c))")
	for k := 1; k <= 3; k++ {
		for c := 0; c < 20; c++ {
			if err := s.Query("INSERT INTO ranges (k, c, v) VALUES (?, ?, ?)", k, c, fmt.Sprint(k, "-", c)).Exec(); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(stmt string, args ...interface{}) int {
		t.Helper()
		iter := s.Query(stmt, args...).PageSize(6).Iter()
		n := iter.NumRows()
		var v string
		n = 0
		for iter.Scan(&v) {
			n++
		}
		if err := iter.Close(); err != nil {
			t.Errorf("%s: %v", stmt, err)
		}
		return n
	}
	if n := count("SELECT v FROM ranges WHERE k IN ?", []int{1, 3}); n != 40 {
		t.Errorf("k IN ? [1 3]: %d rows, want 40", n)
	}
	if n := count("SELECT v FROM ranges WHERE k IN (?, ?) AND c >= ? AND c < ?", 2, 3, 5, 8); n != 6 {
		t.Errorf("k IN (?, ?) and a c range: %d rows, want 6", n)
	}
	if n := count("SELECT v FROM ranges WHERE k = ? LIMIT ?", 2, 7); n != 7 {
		t.Errorf("LIMIT ? 7: %d rows", n)
	}
	iter := s.Query("SELECT c FROM ranges WHERE k = ? AND c > ? ORDER BY c DESC", 1, 3).PageSize(5).Iter()
	var got []int
	var c int
	for iter.Scan(&c) {
		got = append(got, c)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 16 || got[0] != 19 || got[15] != 4 {
		t.Errorf("ORDER BY c DESC over pages of 5: %v", got)
	}
}
