#!/usr/bin/env python3
"""Generate tests/vectors/murmur3_tokens.json from a real Cassandra.

Each vector is a partition key, the exact bytes Cassandra hashes for it (the serialized value for a
single-column key; for a compound key the composite encoding: for each component a big-endian u16
length, the bytes, then 0x00) and the token Cassandra itself returns for ``SELECT token(k...)``.
The keys cover every tail length of Murmur3 x64_128 (0..16 mod 16) and bytes >= 0x80 in every
position, which is where Cassandra's sign-extending tail (its "signed-byte quirk") differs from the
reference MurmurHash3.

Usage (Cassandra from scripts/cassandra.sh, default port 9142):

    $PEREGRINE_VENV/bin/python tests/vectors/gen_murmur3.py [--host 127.0.0.1] [--port 9142] \
        [--out tests/vectors/murmur3_tokens.json]

The output is deterministic (fixed seeds), so regenerating it must give the same file.
"""

import argparse
import json
import os
import random
import re
import struct
import sys
import uuid

from cassandra import InvalidRequest
from cassandra.cluster import Cluster
from cassandra.metadata import Murmur3Token

KS = "murmur3_vectors"


def ser(cql_type, v):
    """The native-protocol serialization of one value (what Cassandra hashes)."""
    if cql_type == "text":
        return v.encode("utf-8")
    if cql_type == "int":
        return struct.pack(">i", v)
    if cql_type == "bigint":
        return struct.pack(">q", v)
    if cql_type == "blob":
        return bytes(v)
    if cql_type in ("uuid", "timeuuid"):
        return v.bytes
    if cql_type == "boolean":
        return b"\x01" if v else b"\x00"
    raise ValueError(cql_type)


def composite(parts):
    out = b""
    for p in parts:
        out += struct.pack(">H", len(p)) + p + b"\x00"
    return out


def literal(cql_type, v):
    """A CQL literal for the value, for tests that build CQL text."""
    if cql_type == "text":
        return "'" + v.replace("'", "''") + "'"
    if cql_type in ("int", "bigint"):
        return str(v)
    if cql_type == "blob":
        return "0x" + bytes(v).hex()
    if cql_type in ("uuid", "timeuuid"):
        return str(v)
    if cql_type == "boolean":
        return "true" if v else "false"
    raise ValueError(cql_type)


def json_value(cql_type, v):
    if cql_type == "blob":
        return bytes(v).hex()
    if cql_type in ("uuid", "timeuuid"):
        return str(v)
    return v


def text_keys():
    keys = []
    # ASCII, byte lengths 0..40: every tail case (0..15) at 0, 1 and 2 full blocks.
    for n in range(0, 41):
        keys.append("".join(chr(ord("a") + (i * 7 + n) % 26) for i in range(n)))
    # Non-ASCII UTF-8 (bytes >= 0x80 in the tail), byte lengths 1..40.
    pieces = ["é", "ß", "中", "文", "😀", "ü", "ñ", "€", "Ж", "ह"]
    rnd = random.Random(7)
    seen = set()
    for target in range(2, 41):
        s = ""
        while len(s.encode()) < target:
            room = target - len(s.encode())
            cands = [p for p in pieces if len(p.encode()) <= room] or ["x"]
            s += rnd.choice(cands)
        if s not in seen:
            seen.add(s)
            keys.append(s)
    keys += ["\x00", "a\x00b", "\u00ff" * 8, "key with spaces", "user1000385178204227360"]
    return keys


def int_keys():
    return [0, 1, -1, 2, -2, 42, 127, 128, 255, 256, -128, -129, 65535, 65536, -65536,
            1000000, -1000000, 2**31 - 1, -2**31, 2**31 - 2, -2**31 + 1, 0x7F7F7F7F, -0x7F7F7F80]


def bigint_keys():
    return [0, 1, -1, 42, -42, 2**31, -2**31 - 1, 2**32, 2**63 - 1, -2**63, 2**63 - 2, -2**63 + 1,
            1234567890123456789, -1234567890123456789, 0x0102030405060708, -0x0102030405060708,
            0x80, 0x8000000000, 1 << 56, -(1 << 56)]


def blob_keys():
    keys = []
    for n in range(0, 34):
        keys.append(bytes((0x80 + i * 13) % 256 | 0x80 for i in range(n)))  # all bytes >= 0x80
        keys.append(bytes((i * 37 + n) % 256 for i in range(n)))            # mixed bytes
    keys += [b"\xff" * 16, b"\x7f" * 15, b"\x80", b"\x00" * 17, bytes(range(256))[:33]]
    out, seen = [], set()
    for k in keys:
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out


def uuid_keys():
    rnd = random.Random(11)
    keys = [uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1),
            uuid.UUID("00000000-0000-0000-0000-000000000001"),
            uuid.UUID("80000000-0000-4000-8000-000000000000")]
    keys += [uuid.UUID(int=rnd.getrandbits(128), version=4) for _ in range(12)]
    return keys


def timeuuid_keys():
    rnd = random.Random(13)
    keys = []
    for i in range(15):
        ts = 0x1E0000000000000 + rnd.getrandbits(52)  # 100-ns intervals since 1582, plausible range
        keys.append(uuid.UUID(fields=(ts & 0xFFFFFFFF, (ts >> 32) & 0xFFFF, ((ts >> 48) & 0x0FFF) | 0x1000,
                                      0x80 | rnd.getrandbits(6), rnd.getrandbits(8), rnd.getrandbits(48))))
    return keys


def compound_text_int():
    rnd = random.Random(17)
    out = [("", 0), ("a", 1), ("", -1), ("user", 2**31 - 1), ("é中", -2**31)]
    for i in range(25):
        n = rnd.randrange(0, 20)
        s = "".join(rnd.choice("abcxyzé中😀") for _ in range(n))
        out.append((s, rnd.randrange(-2**31, 2**31)))
    return out


def compound_int_int_text():
    rnd = random.Random(19)
    out = [(0, 0, ""), (1, 2, "c"), (-1, -1, "ü"), (2**31 - 1, -2**31, "x" * 16)]
    for i in range(26):
        n = rnd.randrange(0, 24)
        s = "".join(rnd.choice("klmnop€ЖQ") for _ in range(n))
        out.append((rnd.randrange(-2**31, 2**31), rnd.randrange(-1000, 1000), s))
    return out


TABLES = [
    # name, partition key column types, key list
    ("k_text", ["text"], [(k,) for k in text_keys()]),
    ("k_int", ["int"], [(k,) for k in int_keys()]),
    ("k_bigint", ["bigint"], [(k,) for k in bigint_keys()]),
    ("k_blob", ["blob"], [(k,) for k in blob_keys()]),
    ("k_uuid", ["uuid"], [(k,) for k in uuid_keys()]),
    ("k_timeuuid", ["timeuuid"], [(k,) for k in timeuuid_keys()]),
    ("k_boolean", ["boolean"], [(True,), (False,)]),
    ("k_text_int", ["text", "int"], compound_text_int()),
    ("k_int_int_text", ["int", "int", "text"], compound_int_int_text()),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default=os.environ.get("CQL_HOST", "127.0.0.1"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("CQL_PORT", "9142")))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "murmur3_tokens.json"))
    args = ap.parse_args()

    cluster = Cluster([args.host], port=args.port, protocol_version=4)
    s = cluster.connect()
    version = s.execute("SELECT release_version FROM system.local").one().release_version
    s.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    s.execute(f"CREATE KEYSPACE {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")

    vectors, rejected = [], []
    for table, types, keys in TABLES:
        cols = [f"k{i}" for i in range(len(types))]
        pk = cols[0] if len(cols) == 1 else "(" + ", ".join(cols) + ")"
        s.execute(f"CREATE TABLE {KS}.{table} ({', '.join(f'{c} {t}' for c, t in zip(cols, types))}, "
                  f"v int, PRIMARY KEY ({pk}))")
        ins = s.prepare(f"INSERT INTO {KS}.{table} ({', '.join(cols)}, v) VALUES ({', '.join('?' for _ in cols)}, 1)")
        where = " AND ".join(f"{c} = ?" for c in cols)
        sel = s.prepare(f"SELECT token({', '.join(cols)}) AS t FROM {KS}.{table} WHERE {where}")
        for key in keys:
            parts = [ser(t, v) for t, v in zip(types, key)]
            key_bytes = parts[0] if len(parts) == 1 else composite(parts)
            entry = {
                "table": table,
                "key_types": types,
                "values": [json_value(t, v) for t, v in zip(types, key)],
                "cql_literals": [literal(t, v) for t, v in zip(types, key)],
                "key_hex": key_bytes.hex(),
                "key_len": len(key_bytes),
            }
            try:
                s.execute(ins, key)
            except InvalidRequest as e:
                m = re.search(r'code=([0-9a-fA-F]{4}) \[[^]]*\] message="(.*)"', str(e))
                entry["error_code"] = int(m.group(1), 16) if m else 0x2200
                entry["error"] = m.group(2) if m else str(e)
                entry["driver_murmur3_token"] = Murmur3Token.from_key(key_bytes).value
                rejected.append(entry)
                continue
            row = s.execute(sel, key).one()
            assert row is not None, (table, key)
            token = row.t
            drv = Murmur3Token.from_key(key_bytes).value
            if drv != token:
                sys.exit(f"driver murmur3 disagrees with Cassandra for {table} {key!r}: {drv} != {token}")
            entry["token"] = token
            vectors.append(entry)
        # Cross-check the whole table: a full scan returns partitions in token order.
        scanned = [r.t for r in s.execute(f"SELECT token({', '.join(cols)}) AS t FROM {KS}.{table}")]
        assert scanned == sorted(scanned), f"{table}: full scan not in token order"

    s.execute(f"DROP KEYSPACE {KS}")
    cluster.shutdown()

    doc = {
        "description": "Murmur3Partitioner tokens of partition keys, as returned by a real Cassandra "
                       "for SELECT token(k...) FROM t WHERE k... = ?",
        "generated_by": "tests/vectors/gen_murmur3.py",
        "cassandra_version": version,
        "partitioner": "org.apache.cassandra.dht.Murmur3Partitioner",
        "notes": [
            "key_hex is the byte string Cassandra hashes: the serialized value for a one-column partition key; "
            "for a compound key, per component: u16 big-endian length, the bytes, 0x00.",
            "token is the signed 64-bit first half of MurmurHash3 x64_128 (seed 0) with Cassandra's quirk: "
            "tail bytes are sign-extended (long) key.get(i), not masked with 0xff; "
            "Long.MIN_VALUE maps to Long.MAX_VALUE (normalize). The Python driver's Murmur3Token agrees on all vectors.",
            "Partitions come back from a full scan in ascending token order (checked for each table).",
            "rejected: keys whose INSERT Cassandra refuses (an empty single-column text/blob partition key: "
            "'Key may not be empty', code 0x2200 Invalid); driver_murmur3_token is what the Python driver computes "
            "for the empty key (0), for reference only: Cassandra's Murmur3Partitioner.getToken maps an empty key "
            "to the minimum token, -2^63.",
        ],
        "vectors": vectors,
        "rejected": rejected,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {len(vectors)} vectors and {len(rejected)} rejected keys to {args.out}")


if __name__ == "__main__":
    main()
