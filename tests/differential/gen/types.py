"""CQL types for the generator: drawing a type, drawing a value of it, writing it as a literal.

A type is a small immutable `T`. A value is the Python object the driver binds for a prepared
statement; `literal(t, v)` writes the same value as CQL text, so one drawn value serves both the
literal and the bind-marker form of a statement. Value domains are deliberately small (a handful
of keys, a few values per type) so writes collide with earlier rows and reads find data.
"""

import datetime
import decimal
import ipaddress
import json
import uuid
from dataclasses import dataclass

from cassandra.util import Duration

NATIVE = ["ascii", "bigint", "blob", "boolean", "date", "decimal", "double", "duration", "float",
          "inet", "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint", "uuid",
          "varchar", "varint"]
# Types that may not appear in a primary key, a set element or a map key.
NOT_IN_KEYS = {"duration"}


@dataclass(frozen=True)
class T:
    kind: str                 # native name, or "list", "set", "map", "tuple", "udt", "counter"
    args: tuple = ()          # element types; for udt: ((field, T), ...)
    frozen: bool = False
    name: str = ""            # udt name

    def cql(self):
        if self.kind in ("list", "set", "map"):
            inner = f"{self.kind}<{', '.join(a.cql() for a in self.args)}>"
        elif self.kind == "tuple":
            return f"tuple<{', '.join(a.cql() for a in self.args)}>"   # tuples are always frozen
        elif self.kind == "udt":
            inner = self.name
        elif self.kind == "vector":
            return f"vector<{self.args[0].cql()}, {self.name}>"   # gen/vectors.py (--vectors)
        else:
            return self.kind
        return f"frozen<{inner}>" if self.frozen else inner

    @property
    def is_native(self):
        return self.kind in NATIVE

    @property
    def multicell(self):
        """A non-frozen collection or UDT: stored per element, updatable per element."""
        return self.kind in ("list", "set", "map", "udt") and not self.frozen

    def keyable(self):
        """May this type be a primary key column, a set element or a map key?"""
        if self.kind in NOT_IN_KEYS or self.kind == "counter" or self.multicell:
            return False
        return all(a.keyable() for a in self._children())

    def _children(self):
        return [a for _, a in self.args] if self.kind == "udt" else list(self.args)

    def family(self):
        """A short name for signatures: the native name, or the collection kind."""
        return self.kind if self.kind != "udt" else ("udt" if self.multicell else "frozen_udt")


def draw_native(rng, keyable=False):
    choices = [n for n in NATIVE if not (keyable and n in NOT_IN_KEYS)]
    return T(rng.choice(choices))


def draw_type(rng, udts, depth=0, keyable=False, frozen_ctx=False):
    """A random type. Nested types are frozen, as Cassandra requires below the top level."""
    r = rng.random()
    if depth >= 2 or r < 0.55:
        return draw_native(rng, keyable)
    frozen = frozen_ctx or depth > 0 or keyable or rng.random() < 0.35
    # Inside a key every nested type must be keyable too (no duration anywhere in a key).
    if r < 0.65:
        return T("list", (draw_type(rng, udts, depth + 1, keyable, True),), frozen)
    if r < 0.75:
        return T("set", (draw_type(rng, udts, depth + 1, True, True),), frozen)
    if r < 0.86:
        return T("map", (draw_type(rng, udts, depth + 1, True, True),
                         draw_type(rng, udts, depth + 1, keyable, True)), frozen)
    if r < 0.93 or not udts:
        n = rng.randint(2, 3)
        return T("tuple", tuple(draw_type(rng, udts, depth + 1, keyable, True) for _ in range(n)))
    u = rng.choice(udts)
    if keyable and not all(a.keyable() for _, a in u.args):
        return draw_native(rng, keyable)
    return T("udt", u.args, frozen, u.name)


# ------------------------------------------------------------------ values

_TEXT = ["a", "b", "zz", "", "it''s", "ünï", "日本", "a b"]     # literal form ('' = one quote)
_ASCII = ["a", "b", "zz", "", "x''y", "Q"]
_INTS = {"tinyint": (-128, 127), "smallint": (-32768, 32767), "int": (-2**31, 2**31 - 1),
         "bigint": (-2**63, 2**63 - 1)}
_FLOATS = [0.0, 1.5, -0.25, 3.0, 1024.125, -7.5, 1e10]
_DEC = ["1.50", "0", "-0.001", "12345678901234567890.5", "3", "2.5E+3"]
_INETS = ["127.0.0.1", "10.0.0.2", "::1", "2001:db8::7", "192.168.1.255"]
_DURATIONS = [Duration(0, 0, 3600 * 10**9), Duration(1, 2, 0), Duration(0, 3, 5 * 10**6),
              Duration(-1, -2, -3000), Duration(14, 0, 0)]


class FrozenDict(dict):
    """A map value usable as a set element or map key (frozen<map> inside a set or map)."""

    def __hash__(self):
        return hash(repr(sorted(self.items(), key=repr)))


def draw_value(rng, t, hashable=False):
    """A Python value of type t (what the driver binds); hashable for set elements and map keys."""
    k = t.kind
    if k in ("text", "varchar"):
        return rng.choice(_TEXT).replace("''", "'")
    if k == "ascii":
        return rng.choice(_ASCII).replace("''", "'")
    if k in _INTS:
        lo, hi = _INTS[k]
        return rng.choice([0, 1, -1, 2, 3, 7, lo, hi, rng.randint(lo, hi)])
    if k == "varint":
        return rng.choice([0, 5, -12, 2**70 + 3, -(2**65)])
    if k == "decimal":
        return decimal.Decimal(rng.choice(_DEC))
    if k in ("float", "double"):
        return rng.choice(_FLOATS)
    if k == "boolean":
        return rng.random() < 0.5
    if k == "blob":
        return bytes(rng.choice([b"", b"\x00", b"\x01\x02", b"\xff\xfe\x00", b"abc"]))
    if k == "date":
        return datetime.date(rng.choice([1970, 2000, 2024, 1969, 2262]), rng.randint(1, 12), rng.randint(1, 28))
    if k == "time":
        return rng.choice([0, 1, 3600 * 10**9 + 5, 86399999999999, 12 * 3600 * 10**9 + 123456789])
    if k == "timestamp":
        ms = rng.choice([0, 1, 1700000000123, -86400000, 1234567890000])
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    if k == "uuid":
        return uuid.UUID(int=rng.choice([0, 1, 2**127 + 5, 0xdeadbeef << 64, rng.getrandbits(128)]))
    if k == "timeuuid":
        t100 = rng.choice([0x1e0000000000000, 0x1eb0000000000001, 0x1f00000000000abc, rng.getrandbits(59)])
        return uuid.UUID(fields=(t100 & 0xffffffff, (t100 >> 32) & 0xffff, ((t100 >> 48) & 0x0fff) | 0x1000,
                                 0x80 | rng.randint(0, 0x3f), rng.randint(0, 255), rng.getrandbits(48)))
    if k == "inet":
        return ipaddress.ip_address(rng.choice(_INETS))
    if k == "duration":
        return rng.choice(_DURATIONS)
    if k == "counter":
        return rng.randint(-5, 5)
    if k == "list":
        items = [draw_value(rng, t.args[0], hashable) for _ in range(rng.randint(0, 3))]
        return tuple(items) if hashable else items
    if k == "set":
        items = {draw_value(rng, t.args[0], True) for _ in range(rng.randint(0, 3))}
        return frozenset(items) if hashable else items
    if k == "map":
        m = {draw_value(rng, t.args[0], True): draw_value(rng, t.args[1], hashable) for _ in range(rng.randint(0, 3))}
        return FrozenDict(m) if hashable else m
    if k == "tuple":
        return tuple(draw_value(rng, a, hashable) if rng.random() < 0.9 else None for a in t.args)
    if k == "udt":
        return tuple(draw_value(rng, a, hashable) if rng.random() < 0.85 else None for _, a in t.args)
    raise ValueError(f"no values for {k}")


def literal(t, v):
    """CQL literal text of value v of type t."""
    if v is None:
        return "null"
    k = t.kind
    if k in ("text", "varchar", "ascii"):
        return "'" + v.replace("'", "''") + "'"
    if k in _INTS or k in ("varint", "counter"):
        return str(v)
    if k == "decimal":
        return str(v)
    if k in ("float", "double"):
        return repr(v)
    if k == "boolean":
        return "true" if v else "false"
    if k == "blob":
        return "0x" + v.hex()
    if k == "date":
        return f"'{v.isoformat()}'"
    if k == "time":
        s, ns = divmod(v, 10**9)
        return f"'{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{ns:09d}'"
    if k == "timestamp":
        return f"'{v.strftime('%Y-%m-%d %H:%M:%S')}.{v.microsecond // 1000:03d}+0000'"
    if k in ("uuid", "timeuuid"):
        return str(v)
    if k == "inet":
        return f"'{v}'"
    if k == "duration":
        return _duration_literal(v)
    if k == "list":
        return "[" + ", ".join(literal(t.args[0], x) for x in v) + "]"
    if k == "set":
        # Sorted so that the same seed writes the same text (set iteration order is hash-seeded).
        return "{" + ", ".join(sorted((literal(t.args[0], x) for x in v))) + "}"
    if k == "map":
        return "{" + ", ".join(f"{literal(t.args[0], a)}: {literal(t.args[1], b)}" for a, b in v.items()) + "}"
    if k == "tuple":
        return "(" + ", ".join(literal(a, x) for a, x in zip(t.args, v)) + ")"
    if k == "udt":
        return "{" + ", ".join(f"{f}: {literal(a, x)}" for (f, a), x in zip(t.args, v)) + "}"
    raise ValueError(k)


def json_value(t, v):
    """v of type t as a Python value json.dumps writes the way fromJson() reads it back, or
    None when the type has no JSON form drawn here (maps with non-text keys, non-finite
    floats)."""
    if v is None:
        return _JSON_NULL
    k = t.kind
    if k in ("text", "varchar", "ascii"):
        return v
    if k in _INTS or k in ("varint", "counter", "boolean"):
        return v
    if k == "decimal":
        return str(v)
    if k in ("float", "double"):
        return v if v == v and abs(v) != float("inf") else None
    if k == "blob":
        return "0x" + v.hex()
    if k in ("date", "time", "timestamp", "uuid", "timeuuid", "inet", "duration"):
        text = literal(t, v)
        return text[1:-1] if text.startswith("'") else text
    if k in ("list", "set"):
        items = [json_value(t.args[0], x) for x in (sorted(v, key=repr) if k == "set" else v)]
        return None if any(i is None for i in items) else items
    if k == "map":
        if t.args[0].kind not in ("text", "varchar", "ascii"):
            return None
        items = {a: json_value(t.args[1], b) for a, b in v.items()}
        return None if any(i is None for i in items.values()) else items
    if k in ("tuple", "udt"):
        types = t.args if k == "tuple" else [a for _, a in t.args]
        items = [json_value(a, x) for a, x in zip(types, v)]
        if any(i is None for i in items):
            return None
        items = [None if i is _JSON_NULL else i for i in items]
        return items if k == "tuple" else {f: i for (f, _), i in zip(t.args, items)}
    return None


_JSON_NULL = object()   # a null inside a JSON value (None means "no JSON form")


def json_text(t, v):
    """The JSON text of v for fromJson(), or None (see json_value)."""
    j = json_value(t, v)
    if j is None:
        return None
    return json.dumps(None if j is _JSON_NULL else _strip_nulls(j), ensure_ascii=False)


def _strip_nulls(j):
    if j is _JSON_NULL:
        return None
    if isinstance(j, list):
        return [_strip_nulls(x) for x in j]
    if isinstance(j, dict):
        return {a: _strip_nulls(b) for a, b in j.items()}
    return j


def _duration_literal(d):
    neg = d.months < 0 or d.days < 0 or d.nanoseconds < 0
    mo, dy, ns = abs(d.months), abs(d.days), abs(d.nanoseconds)
    parts = (f"{mo // 12}y" if mo // 12 else "") + (f"{mo % 12}mo" if mo % 12 else "") + (f"{dy}d" if dy else "")
    parts += f"{ns // 10**6}ms{ns % 10**6 // 1000}us{ns % 1000}ns" if ns else ""
    return ("-" if neg else "") + (parts or "0s")


def bad_literal(rng, t):
    """A literal that is not a valid value of t (for deliberately invalid statements)."""
    k = t.kind
    if k in _INTS or k in ("varint", "decimal", "float", "double", "counter"):
        return rng.choice(["'seven'", "true", "'1'"])
    if k in ("text", "varchar", "ascii"):
        return rng.choice(["42", "0x00", "[1]"])
    if k in ("uuid", "timeuuid"):
        return rng.choice(["'not-a-uuid'", "12", "'0000'"])
    if k == "date":
        return rng.choice(["'2024-13-45'", "'yesterday'", "1.5"])
    if k == "timestamp":
        return rng.choice(["'2024-02-30 99:00'", "'noon'", "true"])
    if k == "time":
        return rng.choice(["'25:61:00'", "'x'"])
    if k == "inet":
        return rng.choice(["'300.1.1.1'", "'host'", "7"])
    if k == "boolean":
        return rng.choice(["'yes'", "1"])
    if k == "blob":
        return rng.choice(["'abc'", "0xzz", "5"])
    if k == "duration":
        return rng.choice(["'1 hour'", "5", "'P'"])
    if k in ("list", "set"):
        return rng.choice(["{1: 2}", "'[1]'", "5"])
    if k == "map":
        return rng.choice(["[1, 2]", "'x'", "5"])
    return rng.choice(["5", "'x'", "[1]"])
