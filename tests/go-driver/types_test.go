package godriver

import (
	"math/big"
	"net"
	"reflect"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"
)

type addr struct {
	Street string `cql:"street"`
	Zip    int    `cql:"zip"`
}

// typeColumns: every native CQL type, collections frozen and not, a tuple and a UDT frozen and
// not, with a value for each (values at the edges of their ranges) in the Go type gocql maps it to.
func typeColumns() []struct {
	name, cqlType string
	value         interface{}
} {
	ts := time.Date(2024, 2, 29, 23, 59, 58, 123e6, time.UTC)
	return []struct {
		name, cqlType string
		value         interface{}
	}{
		{"i", "int", int32(-2147483648)},
		{"bi", "bigint", int64(9223372036854775807)},
		{"si", "smallint", int16(-32768)},
		{"ti", "tinyint", int8(127)},
		{"vi", "varint", new(big.Int).Exp(big.NewInt(-7), big.NewInt(41), nil)},
		{"de", "decimal", inf.NewDec(-1234567890123456789, 7)},
		{"f", "float", float32(3.25)},
		{"d", "double", -1.0e300},
		{"t", "text", "héllo wörld ✓"},
		{"a", "ascii", "plain ascii"},
		{"b", "blob", []byte{0, 1, 2, 0xfe, 0xff}},
		{"bo", "boolean", true},
		{"u", "uuid", gocql.MustRandomUUID()},
		{"tu", "timeuuid", gocql.UUIDFromTime(ts)},
		{"ts", "timestamp", ts},
		{"dt", "date", time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC)},
		{"tm", "time", 13*time.Hour + 14*time.Minute + 15*time.Second + 123456789},
		{"du", "duration", gocql.Duration{Months: -14, Days: -3, Nanoseconds: -5_000_000_123}},
		{"ip4", "inet", net.ParseIP("192.0.2.7").To4()},
		{"ip6", "inet", net.ParseIP("2001:db8::1")},
		{"l", "list<int>", []int{3, 1, 2, 1}},
		{"s", "set<text>", []string{"a", "b", "c"}},
		{"m", "map<text, int>", map[string]int{"x": 1, "y": -2}},
		{"fl", "frozen<list<text>>", []string{"z", "a"}},
		{"fs", "frozen<set<bigint>>", []int64{-5, 0, 7}},
		{"fm", "frozen<map<int, text>>", map[int]string{1: "one", 2: "two"}},
		{"tp", "tuple<int, text>", nil}, // gocql binds a tuple element by element: TestTupleRoundTrips
		{"ud", "addr", addr{Street: "1 Main St", Zip: 12345}},
		{"fud", "frozen<addr>", addr{Street: "2 Side St", Zip: 0}},
		{"nested", "map<text, frozen<list<frozen<addr>>>>", map[string][]addr{"home": {{"3 Elm", 1}, {"4 Oak", 2}}}},
	}
}

func createTypesTable(t *testing.T, table string) []string {
	s := sess
	stmt := "CREATE TABLE " + table + " (k int PRIMARY KEY"
	var names []string
	for _, c := range typeColumns() {
		stmt += ", " + c.name + " " + c.cqlType
		names = append(names, c.name)
	}
	createTable(t, s, "CREATE TYPE IF NOT EXISTS addr (street text, zip int)", stmt+")")
	return names
}

// same compares a value read back with the one written, by the type's own equality where
// DeepEqual is too strict (big numbers, IP forms, time zones).
func same(want, got interface{}) bool {
	switch w := want.(type) {
	case *big.Int:
		return w.Cmp(got.(*big.Int)) == 0
	case *inf.Dec:
		return w.Cmp(got.(*inf.Dec)) == 0
	case net.IP:
		return w.Equal(got.(net.IP))
	case time.Time:
		return w.Equal(got.(time.Time))
	}
	return reflect.DeepEqual(want, got)
}

// Every type round-trips through a prepared INSERT with bind markers and a SELECT.
func TestEveryTypeRoundTrips(t *testing.T) {
	s := begin(t)
	cols := typeColumns()
	createTypesTable(t, "types_rt")
	markers := "?"
	args := []interface{}{1}
	var bound []string
	for _, c := range cols {
		if c.value != nil {
			markers += ", ?"
			args = append(args, c.value)
			bound = append(bound, c.name)
		}
	}
	insert := "INSERT INTO types_rt (k, " + join(bound) + ") VALUES (" + markers + ")"
	if err := s.Query(insert, args...).Exec(); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var dests []interface{}
	var values []interface{}
	for _, c := range cols {
		if c.value != nil {
			dests = append(dests, reflect.New(reflect.TypeOf(c.value)).Interface())
			values = append(values, c.value)
		}
	}
	if err := s.Query("SELECT "+join(bound)+" FROM types_rt WHERE k = ?", 1).Scan(dests...); err != nil {
		t.Fatalf("select: %v", err)
	}
	for i, want := range values {
		got := reflect.ValueOf(dests[i]).Elem().Interface()
		if !same(want, got) {
			t.Errorf("%s: wrote %v, read %v", bound[i], want, got)
		}
	}
}

// A tuple column through bind markers: gocql cannot bind a whole tuple to one marker (it counts a
// tuple's elements as values but marshals only whole tuples), so the statement binds each element
// inside the tuple literal, as gocql's own tests do.
func TestTupleRoundTrips(t *testing.T) {
	begin(t)
	createTable(t, sess, "CREATE TABLE tuples (k int PRIMARY KEY, tp tuple<int, text>)")
	expectBug(t, func(c check) {
		s := sess
		if err := s.Query("INSERT INTO tuples (k, tp) VALUES (?, (?, ?))", 1, 42, "answer").Exec(); err != nil {
			c.Fatalf("insert: %v", err)
		}
		var n int
		var text string
		if err := s.Query("SELECT tp FROM tuples WHERE k = ?", 1).Scan(&n, &text); err != nil || n != 42 || text != "answer" {
			c.Errorf("read (%d, %q) %v, want (42, answer)", n, text, err)
		}
	})
}

// A row with only its key has null in every other column, and the driver reads them as nulls.
func TestEveryTypeReadsNull(t *testing.T) {
	s := begin(t)
	names := createTypesTable(t, "types_null")
	exec(t, s, "INSERT INTO types_null (k) VALUES (2)")
	row := map[string]interface{}{}
	if err := s.Query("SELECT " + join(names) + " FROM types_null WHERE k = 2").MapScan(row); err != nil {
		t.Fatal(err)
	}
	// MapScan names a tuple's two elements apart: one entry more than there are columns.
	if len(row) != len(names)+1 {
		t.Errorf("%d entries, want %d: %v", len(row), len(names)+1, row)
	}
	for _, n := range names {
		v := reflect.ValueOf(row[n])
		if v.IsValid() && !v.IsZero() && !(v.Kind() == reflect.Slice || v.Kind() == reflect.Map) {
			t.Errorf("%s: %#v, want null", n, row[n])
		} else if (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() != 0 {
			t.Errorf("%s: %#v, want empty", n, row[n])
		}
	}
}

// CQL literals (not bound values) of each kind are read back as the driver's values.
func TestLiteralsReadBack(t *testing.T) {
	s := begin(t)
	createTypesTable(t, "types_lit")
	exec(t, s, `INSERT INTO types_lit (k, i, vi, de, d, t, b, bo, u, ts, dt, tm, du, ip6, l, s, m, tp, ud)
		VALUES (3, 7, 123456789012345678901234567890, 0.000001, 1.5e-7, 'it''s', 0xcafe, false,
		        123e4567-e89b-12d3-a456-426614174000, '2020-01-02T03:04:05.678Z', '2000-02-29', '01:02:03.000000004',
		        1y2mo3w4d5h6m7s8ms9us10ns, '::ffff:10.0.0.1', [1, 2], {'q'}, {'k': 9}, (1, 'x'),
		        {street: 'lit', zip: 5})`)
	var (
		i      int32
		vi     *big.Int
		de     *inf.Dec
		d      float64
		text   string
		b      []byte
		bo     = true
		u      gocql.UUID
		ts, dt time.Time
		tm     time.Duration
		du     gocql.Duration
		ip     net.IP
		l      []int
		set    []string
		m      map[string]int
		tpN    int
		tpS    string
		ud     addr
	)
	if err := s.Query("SELECT i, vi, de, d, t, b, bo, u, ts, dt, tm, du, ip6, l, s, m, tp, ud FROM types_lit WHERE k = 3").
		Scan(&i, &vi, &de, &d, &text, &b, &bo, &u, &ts, &dt, &tm, &du, &ip, &l, &set, &m, &tpN, &tpS, &ud); err != nil {
		t.Fatal(err)
	}
	bigVi, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	checks := []struct {
		name      string
		want, got interface{}
	}{
		{"int", int32(7), i}, {"varint", bigVi, vi}, {"decimal", inf.NewDec(1, 6), de}, {"double", 1.5e-7, d},
		{"text", "it's", text}, {"blob", []byte{0xca, 0xfe}, b}, {"boolean", false, bo},
		{"uuid", mustUUID("123e4567-e89b-12d3-a456-426614174000"), u},
		{"timestamp", time.Date(2020, 1, 2, 3, 4, 5, 678e6, time.UTC), ts},
		{"date", time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC), dt},
		{"time", time.Hour + 2*time.Minute + 3*time.Second + 4, tm},
		{"duration", gocql.Duration{Months: 14, Days: 25, Nanoseconds: ((5*60+6)*60+7)*1e9 + 8e6 + 9e3 + 10}, du},
		{"inet", net.ParseIP("10.0.0.1"), ip}, {"list", []int{1, 2}, l}, {"set", []string{"q"}, set},
		{"map", map[string]int{"k": 9}, m}, {"tuple", []interface{}{1, "x"}, []interface{}{tpN, tpS}}, {"udt", addr{"lit", 5}, ud},
	}
	for _, c := range checks {
		if !same(c.want, c.got) {
			t.Errorf("%s: want %v, read %v", c.name, c.want, c.got)
		}
	}
}

func join(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

func mustUUID(s string) gocql.UUID {
	u, err := gocql.ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}
