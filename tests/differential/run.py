#!/usr/bin/env python3
"""Differential CQL runner: the same statements against two endpoints, results compared.

    python tests/differential/run.py --a 127.0.0.1:9142 --b 127.0.0.1:9042 [--scenario NAME ...] [-v]

A is the reference (real Cassandra), B the candidate (Peregrine). Every scenario file
(scenarios/*.cql) runs in a fresh keyspace on each side (`$KS` in the text is replaced by that
keyspace's name; results have the name mapped back to `$KS`; `$ID0`..`$ID9` are uuids of that
keyspace, for `WITH ID = ...`, mapped back too), statement by statement, A then B,
through the Python driver with protocol v4 and unprepared statements. For each statement it
compares:
  * success vs error;
  * errors: the protocol error code (0x2000 syntax, 0x2200 invalid, 0x2400 already exists, ...);
  * results: column names, CQL types, rows (in order, unless the statement is marked @unordered).

Scenario syntax: statements end with `;` (a BEGIN BATCH ... APPLY BATCH; block is one statement);
`--` and `//` start comments. Directive comments apply to the next statement:
  -- @error               the statement must fail on A (checked; a scenario bug otherwise)
  -- @unordered           compare rows as a multiset
  -- @nullness c1,c2      compare only whether these columns are null (e.g. writetime of a write
                          without USING TIMESTAMP)
  -- @tolerance c=2       compare numeric column c within +-2 (e.g. ttl(v))
  -- @sleep 2.5           (alone) sleep before the next statement, on both sides
  -- @pages 3             run the statement with page size 3 and compare its pages too: the rows
                          in each and whether it says more pages follow (a paging state)
  -- @unpaged             run the statement without paging (ORDER BY over IN partitions,
                          which Cassandra refuses to page)
  -- @messages            compare the error message too, not only the code
  -- @warnings            compare the client warnings of a success too (e.g. a BATCH's size)
  -- @binds 0x0a0b, null  prepare the statement and bind these raw bytes to its markers in
                          order (no client-side encoding: values a driver would not send,
                          e.g. a timeuuid of another version, a time outside the day);
                          `unset` binds the protocol's unset value; `@binds` alone prepares
                          a statement without markers. A failure at PREPARE is an error of
                          its own (`prepare 0x2200`), unlike the same failure at EXECUTE
  -- @file-messages       (anywhere in a file) @messages for every statement of the file
  -- @requires-views      (anywhere in a file) the scenario needs materialized views: when the
                          reference refuses them (materialized_views_enabled off), the whole
                          scenario is reported skipped instead of run
  -- @requires-drop-compact-storage  (anywhere in a file) likewise for ALTER TABLE ... DROP
                          COMPACT STORAGE (drop_compact_storage_enabled off on the reference)
  -- @requires-masking    (anywhere in a file) likewise for MASKED WITH on columns
                          (dynamic_data_masking_enabled off on the reference)
Any statement that fails on A without `@error` is reported as a scenario problem too.

known_differences.txt lists accepted deviations, one per line:
    <scenario file name> :: <statement text, whitespace-normalized, with $KS> :: <reason>
A mismatch listed there is reported as "known" and does not fail the run.

Exit status 0 when nothing unexpected differs. The last line reads
`differential: N passed, N failed, N skipped` (skipped = known differences).
"""

import argparse
import datetime
import decimal
import functools
import glob
import ipaddress
import logging
import math
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = os.path.join(HERE, "scenarios")
KNOWN = os.path.join(HERE, "known_differences.txt")

# Error classes the driver raises without the numeric code attached.
_CLASS_CODES = {
    "InvalidRequest": 0x2200, "AlreadyExists": 0x2400, "ConfigurationException": 0x2300,
    "Unauthorized": 0x2100, "AuthenticationFailed": 0x0100, "Unavailable": 0x1000,
    "OperationTimedOut": "client-timeout", "ReadTimeout": 0x1200, "WriteTimeout": 0x1100,
    "ReadFailure": 0x1300, "WriteFailure": 0x1500, "FunctionFailure": 0x1400,
    "CoordinationFailure": "coordination", "Overloaded": 0x1001, "IsBootstrapping": 0x1002,
    "TruncateError": 0x1003, "SyntaxException": 0x2000, "ServerError": 0x0000, "ProtocolException": 0x000A,
}


@dataclass
class Statement:
    text: str
    line: int
    directives: dict = field(default_factory=dict)
    sleep: float = 0.0


def parse_scenario(path):
    """Splits a .cql file into statements with their directives."""
    stmts, buf, buf_line, pending, sleep = [], [], None, {}, 0.0
    in_batch = False
    file_wide = {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for lineno, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if not buf and (stripped.startswith("--") or stripped.startswith("//")):
            m = re.match(r"(?:--|//)\s*@(\w[\w-]*)\s*(.*)$", stripped)
            if m:
                name, arg = m.group(1), m.group(2).strip()
                if name == "sleep":
                    sleep += float(arg)
                elif name in ("error", "unordered", "messages", "warnings", "unpaged"):
                    pending[name] = True
                elif name == "file-messages":
                    file_wide["messages"] = True
                elif name in _REQUIREMENT_NAMES:
                    file_wide[name] = True
                elif name == "pages":
                    pending["pages"] = int(arg)
                elif name == "binds":
                    pending["binds"] = [_raw_bind(b) for b in arg.split(",") if b.strip()]
                elif name == "nullness":
                    pending.setdefault("nullness", set()).update(c.strip() for c in arg.split(",") if c.strip())
                elif name == "tolerance":
                    for part in arg.split(","):
                        col, tol = part.split("=")
                        pending.setdefault("tolerance", {})[col.strip()] = float(tol)
                else:
                    raise ValueError(f"{path}:{lineno}: unknown directive @{name}")
            continue
        if not stripped and not buf:
            continue
        code = _strip_comment(raw)
        if not buf:
            buf_line = lineno
            in_batch = bool(re.match(r"\s*BEGIN\s+(UNLOGGED\s+|COUNTER\s+|LOGGED\s+)?BATCH\b", code, re.I))
        buf.append(code)
        joined = "\n".join(buf).strip()
        done = False
        if in_batch:
            done = bool(re.search(r"\bAPPLY\s+BATCH\s*;\s*$", joined, re.I))
        else:
            done = joined.endswith(";") and not _inside_quotes(joined)
        if done:
            text = joined[:-1].strip() if not in_batch else re.sub(r";\s*$", "", joined)
            stmts.append(Statement(text=" ".join(text.split()) if "'" not in text else text.strip(),
                                   line=buf_line, directives=pending, sleep=sleep))
            buf, pending, sleep, in_batch = [], {}, 0.0, False
    if buf:
        raise ValueError(f"{path}:{buf_line}: statement without a closing ';'")
    for st in stmts:
        for k, v in file_wide.items():
            st.directives.setdefault(k, v)
    return stmts


def _inside_quotes(s):
    q = None
    i = 0
    while i < len(s):
        ch = s[i]
        if q is None:
            if ch in "'\"":
                q = ch
            elif s.startswith("$$", i):
                q = "$$"
                i += 1
        elif q == "$$":
            if s.startswith("$$", i):
                q = None
                i += 1
        elif ch == q:
            if i + 1 < len(s) and s[i + 1] == q:
                i += 1
            else:
                q = None
        i += 1
    return q is not None


def _strip_comment(line):
    """Drops a trailing -- or // comment outside quotes."""
    q = None
    for i, ch in enumerate(line):
        if q:
            if ch == q:
                q = None
        elif ch in "'\"":
            q = ch
        elif line.startswith("--", i) or line.startswith("//", i):
            return line[:i].rstrip()
    return line


def normalize_stmt(text):
    return " ".join(text.split())


# ----------------------------------------------------------------- execution

@dataclass
class Outcome:
    error: object = None          # error code (int) or str for client-side errors
    error_text: str = ""
    columns: list = None          # [(name, cql type)]
    rows: list = None             # list of tuples of normalized values
    pages: list = None            # with @pages: [(rows in the page, more pages follow)]
    warnings: list = None         # the server's client warnings


def _error_code(e):
    code = getattr(e, "code", None)
    if isinstance(code, int):
        return code
    m = re.search(r"code=([0-9a-fA-F]{4})", str(e))
    if m:
        return int(m.group(1), 16)
    name = type(e).__name__
    return _CLASS_CODES.get(name, "client:" + name)


def norm_value(v, ks):
    """A comparable, printable form of one driver value."""
    from cassandra.util import Date, Duration, OrderedMapSerializedKey, SortedSet, Time
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        return unbind_names(v, ks)
    if isinstance(v, (bytes, bytearray)):
        return "0x" + bytes(v).hex()
    if isinstance(v, decimal.Decimal):
        return "decimal:" + str(v)
    if isinstance(v, uuid.UUID):
        return "uuid:" + unbind_names(str(v), ks)
    if isinstance(v, datetime.datetime):
        return "ts:" + v.isoformat()
    if isinstance(v, datetime.date):
        return "date:" + v.isoformat()
    if isinstance(v, (Date, Time, Duration)):
        return f"{type(v).__name__.lower()}:{v}"
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return "inet:" + str(v)
    if isinstance(v, (OrderedMapSerializedKey, dict)):
        return ("map", tuple((norm_value(k, ks), norm_value(x, ks)) for k, x in v.items()))
    if isinstance(v, (SortedSet, set, frozenset)):
        return ("set", tuple(sorted((norm_value(x, ks) for x in v), key=repr)))
    if isinstance(v, list):
        return ("list", tuple(norm_value(x, ks) for x in v))
    if isinstance(v, tuple):
        return tuple(norm_value(x, ks) for x in v)
    return f"{type(v).__name__}:{v}"


@functools.lru_cache(maxsize=64)
def scenario_ids(ks):
    """What `$ID0`..`$ID9` stand for on the side whose keyspace is `ks` (table ids for `WITH
    ID = $ID0`): uuids of that keyspace, so that the two sides, and two runs, never share one
    (a table id is unique on a node, and through the proxy both sides are one Cassandra)."""
    return tuple(str(uuid.uuid5(uuid.NAMESPACE_OID, f"{ks}/{i}")) for i in range(10))


def bind_names(text, ks):
    """A scenario statement as run on the side whose keyspace is `ks`."""
    text = text.replace("$KS", ks)
    for i, u in enumerate(scenario_ids(ks)):
        text = text.replace(f"$ID{i}", u)
    return text


def unbind_names(text, ks):
    """What a side answered, with its keyspace and ids named as the scenario names them."""
    if not ks:
        return text
    text = text.replace(ks, "$KS")
    if "-" in text:
        for i, u in enumerate(scenario_ids(ks)):
            text = text.replace(u, f"$ID{i}")
    return text


def _raw_bind(text):
    """One value of `@binds`: hex bytes, `null` or `unset`."""
    from cassandra.query import UNSET_VALUE
    text = text.strip().lower()
    if text in ("null", "unset"):
        return None if text == "null" else UNSET_VALUE
    return bytes.fromhex(text[2:])


def execute(session, text, ks, fetch_size, pages=False, binds=None):
    """Runs `text`, fetching every page; with `pages`, records each page's row count and
    whether more pages follow; with `binds`, prepared, with these raw values bound."""
    from cassandra.query import SimpleStatement
    from cassandra.query import tuple_factory
    session.row_factory = tuple_factory
    try:
        if binds is None:
            stmt = SimpleStatement(text, fetch_size=fetch_size)
        else:
            try:
                prepared = session.prepare(text)
            except Exception as e:  # noqa: BLE001 - failing at PREPARE is not failing at EXECUTE
                return Outcome(error=f"prepare {_fmt_code(_error_code(e))}",
                               error_text=unbind_names(str(e), ks))
            stmt = prepared.bind([None] * len(binds))
            stmt.values = list(binds)
            stmt.fetch_size = fetch_size
        rs = session.execute(stmt, timeout=30)
        seen = None
        if pages:
            seen, got = [], []
            while True:
                got += rs.current_rows
                seen.append((len(rs.current_rows), rs.has_more_pages))
                if not rs.has_more_pages:
                    break
                rs.fetch_next_page()
        else:
            got = list(rs)  # fetches every page
    except Exception as e:  # noqa: BLE001 - every failure is an outcome to compare
        return Outcome(error=_error_code(e), error_text=unbind_names(str(e), ks))
    names = rs.column_names or []
    types = [t.cql_parameterized_type() for t in (rs.column_types or [])]
    rows = [tuple(norm_value(v, ks) for v in row) for row in got]
    warnings = [unbind_names(w, ks) for w in (rs.response_future.warnings or [])]
    return Outcome(columns=list(zip(names, types)), rows=rows, pages=seen, warnings=warnings)


def _close(a, b, tol):
    """Equal, numbers within `tol`; inside collections too (ttl() of a collection is a list)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= tol
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_close(u, v, tol) for u, v in zip(a, b))
    return a == b


def compare(stmt, oa, ob):
    """Returns a list of difference descriptions (empty when equal)."""
    diffs = []
    if (oa.error is None) != (ob.error is None):
        fmt = lambda o: (f"error {_fmt_code(o.error)}: {o.error_text[:300]}" if o.error is not None
                         else f"success, {len(o.rows)} row(s)")
        return [f"a: {fmt(oa)}", f"b: {fmt(ob)}"]
    if oa.error is not None:
        if oa.error != ob.error:
            diffs += [f"error code differs: a {_fmt_code(oa.error)} vs b {_fmt_code(ob.error)}",
                      f"  a: {oa.error_text[:300]}", f"  b: {ob.error_text[:300]}"]
        elif stmt.directives.get("messages") and _comparable(oa.error_text) != _comparable(ob.error_text):
            diffs += ["error message differs:", f"  a: {_message(oa.error_text)[:300]}",
                      f"  b: {_message(ob.error_text)[:300]}"]
        return diffs
    if stmt.directives.get("warnings") and oa.warnings != ob.warnings:
        diffs.append(f"warnings differ:\n  a: {oa.warnings}\n  b: {ob.warnings}")
    if oa.columns != ob.columns:
        diffs.append(f"columns differ:\n  a: {oa.columns}\n  b: {ob.columns}")
        return diffs
    if oa.pages != ob.pages:
        diffs.append(f"pages differ (rows, more pages follow):\n  a: {oa.pages}\n  b: {ob.pages}")
    names = [c[0] for c in oa.columns]
    nullness = stmt.directives.get("nullness", set())
    tolerance = stmt.directives.get("tolerance", {})
    for col in list(nullness) + list(tolerance):
        if col not in names:
            diffs.append(f"directive names column {col!r} which is not in the result {names}")
    ra, rb = oa.rows, ob.rows
    if nullness:
        idx = [names.index(c) for c in nullness if c in names]
        fix = lambda rows: [tuple(("<set>" if v is not None else None) if i in idx else v
                                  for i, v in enumerate(r)) for r in rows]
        ra, rb = fix(ra), fix(rb)
    if stmt.directives.get("unordered"):
        ra, rb = sorted(ra, key=repr), sorted(rb, key=repr)
    if len(ra) != len(rb):
        diffs.append(f"row count differs: a {len(ra)} vs b {len(rb)}")
    tol_idx = {names.index(c): t for c, t in tolerance.items() if c in names}
    shown = 0
    for i, (x, y) in enumerate(zip(ra, rb)):
        same = len(x) == len(y) and all(
            _close(u, v, tol_idx[j]) if j in tol_idx else u == v for j, (u, v) in enumerate(zip(x, y)))
        if not same:
            if shown < 5:
                diffs.append(f"row {i} differs:\n  a: {x}\n  b: {y}")
            shown += 1
    if shown > 5:
        diffs.append(f"... {shown - 5} more differing rows")
    if len(ra) != len(rb):
        extra = ra[len(rb):] if len(ra) > len(rb) else rb[len(ra):]
        side = "a" if len(ra) > len(rb) else "b"
        diffs.append(f"only in {side} (first 5): {extra[:5]}")
    return diffs


def _message(error_text):
    """The server's message out of the driver's error text (`... message="..."`)."""
    m = re.search(r'message="(.*)"', error_text, re.S)
    return m.group(1) if m else error_text


# "Ambiguous call to function f (can be matched by following signatures: s1, s2): ..." and
# "... none of its type signatures match (known type signatures: s1, s2)": Cassandra lists the
# signatures in its HashMultimap's order, which changes from one start to the next.
_SIGNATURES = re.compile(
    r"((?:can be matched by following signatures|known type signatures): )(.*?)(\)(?:: use type casts|$))",
    re.S)


def _comparable(error_text):
    """The message as compared: a function's listed signatures in sorted order."""
    return _SIGNATURES.sub(lambda m: m.group(1) + ", ".join(sorted(m.group(2).split(", "))) + m.group(3),
                           _message(error_text))


def _fmt_code(c):
    return f"0x{c:04X}" if isinstance(c, int) else str(c)


# ------------------------------------------------------------------ driver

def parse_hostport(s):
    host, _, port = s.rpartition(":")
    if not host:
        raise argparse.ArgumentTypeError(f"expected host:port, got {s!r}")
    return host, int(port)


def connect(hostport, user=None, password=None):
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import Cluster
    kw = {}
    if user:
        kw["auth_provider"] = PlainTextAuthProvider(user, password)
    cluster = Cluster([hostport[0]], port=hostport[1], protocol_version=4, connect_timeout=10, **kw)
    return cluster, cluster.connect()


def load_known(path=KNOWN):
    known = {}
    if not os.path.exists(path):
        return known
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split(" :: ")]
            if len(parts) < 2:
                raise ValueError(f"{path}:{n}: expected '<scenario> :: <statement> :: <reason>'")
            known[(parts[0], normalize_stmt(parts[1]))] = parts[2] if len(parts) > 2 else ""
    return known


@dataclass
class Report:
    passed: int = 0
    failed: int = 0
    known: int = 0
    scenario_problems: int = 0
    lines: list = field(default_factory=list)
    known_hit: set = field(default_factory=set)
    # One line per failed statement, repeated after the totals: a CI log shows only its end.
    failures: list = field(default_factory=list)


def _views_enabled(session, ks):
    """Whether `session`'s server accepts CREATE MATERIALIZED VIEW (a probe in `ks`)."""
    session.execute(f"CREATE TABLE {ks}.views_probe (k int PRIMARY KEY)")
    try:
        session.execute(f"CREATE MATERIALIZED VIEW {ks}.views_probe_v AS SELECT k FROM {ks}.views_probe "
                        "WHERE k IS NOT NULL PRIMARY KEY (k)")
    except Exception as e:  # noqa: BLE001 - any refusal means the scenario cannot run
        if "Materialized views are disabled" in str(e):
            return False
        raise
    finally:
        session.execute(f"DROP MATERIALIZED VIEW IF EXISTS {ks}.views_probe_v")
        session.execute(f"DROP TABLE {ks}.views_probe")
    return True


def _drop_compact_storage_enabled(session, ks):
    """Whether `session`'s server allows DROP COMPACT STORAGE (a probe on a regular table in `ks`,
    which an enabled server refuses for not being compact)."""
    session.execute(f"CREATE TABLE {ks}.dcs_probe (k int PRIMARY KEY)")
    try:
        session.execute(f"ALTER TABLE {ks}.dcs_probe DROP COMPACT STORAGE")
    except Exception as e:  # noqa: BLE001 - the message tells which refusal it is
        return "DROP COMPACT STORAGE is disabled" not in str(e)
    finally:
        session.execute(f"DROP TABLE {ks}.dcs_probe")
    return True


def _masking_enabled(session, ks):
    """Whether `session`'s server lets MASKED WITH attach a mask (dynamic_data_masking_enabled)."""
    try:
        session.execute(f"CREATE TABLE {ks}.masking_probe (k int PRIMARY KEY, v int MASKED WITH DEFAULT)")
    except Exception as e:  # noqa: BLE001 - the message tells which refusal it is
        if "dynamic data masking is not enabled" in str(e):
            return False
        raise
    # Cassandra 5.0.9 keeps the column_masks rows of a dropped table: unmask before dropping.
    session.execute(f"ALTER TABLE {ks}.masking_probe ALTER v DROP MASKED")
    session.execute(f"DROP TABLE {ks}.masking_probe")
    return True


# File-wide requirements on the reference: directive, probe, what a reference without it lacks.
_REQUIREMENTS = (
    ("requires-views", _views_enabled, "materialized views disabled (materialized_views_enabled)"),
    ("requires-drop-compact-storage", _drop_compact_storage_enabled,
     "DROP COMPACT STORAGE disabled (drop_compact_storage_enabled)"),
    ("requires-masking", _masking_enabled, "dynamic data masking disabled (dynamic_data_masking_enabled)"),
)
_REQUIREMENT_NAMES = tuple(name for name, _, _ in _REQUIREMENTS)


def run_scenario(path, sa, sb, report, known, fetch_size=100, verbose=False, keep=False, out=print):
    name = os.path.basename(path)
    base = re.sub(r"\W", "_", os.path.splitext(name)[0]).lower()
    suffix = uuid.uuid4().hex[:6]
    ks_a, ks_b = f"diff_{base}_{suffix}_a", f"diff_{base}_{suffix}_b"
    stmts = parse_scenario(path)
    for s, ks in ((sa, ks_a), (sb, ks_b)):
        s.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
        s.set_keyspace(ks)
    for directive, probe, lacking in _REQUIREMENTS:
        if stmts and stmts[0].directives.get(directive) and not probe(sa, ks_a):
            report.known += 1
            out(f"SKIP {name}: the reference has {lacking}")
            for s, ks in ((sa, ks_a), (sb, ks_b)):
                s.execute(f"DROP KEYSPACE IF EXISTS {ks}")
            return report
    try:
        for st in stmts:
            if st.sleep:
                time.sleep(st.sleep)
            page = None if st.directives.get("unpaged") else st.directives.get("pages", fetch_size)
            paged = "pages" in st.directives
            binds = st.directives.get("binds")
            oa = execute(sa, bind_names(st.text, ks_a), ks_a, page, paged, binds)
            ob = execute(sb, bind_names(st.text, ks_b), ks_b, page, paged, binds)
            where = f"{name}:{st.line}"
            # The scenario's own expectations, checked on the reference side.
            if st.directives.get("error") and oa.error is None:
                report.scenario_problems += 1
                out(f"SCENARIO {where}: marked @error but succeeded on a: {st.text}")
                report.failures.append(f"SCENARIO {where}: marked @error but succeeded on a")
            elif not st.directives.get("error") and oa.error is not None:
                report.scenario_problems += 1
                out(f"SCENARIO {where}: failed on a without @error: {st.text}\n  {oa.error_text[:300]}")
                report.failures.append(f"SCENARIO {where}: failed on a without @error")
            diffs = compare(st, oa, ob)
            key = (name, normalize_stmt(st.text))
            if not diffs:
                report.passed += 1
                if verbose:
                    res = (f"error {_fmt_code(oa.error)}" if oa.error is not None else f"{len(oa.rows)} row(s)")
                    out(f"ok   {where}: {normalize_stmt(st.text)[:100]}  -> {res}")
                    if verbose > 1 and oa.error is None and oa.columns:
                        out(f"       columns {oa.columns}")
                        for r in oa.rows[:20]:
                            out(f"       {r}")
            elif key in known:
                report.known += 1
                report.known_hit.add(key)
                out(f"KNOWN {where}: {normalize_stmt(st.text)[:100]}  ({known[key]})")
            else:
                report.failed += 1
                out(f"MISMATCH {where}: {st.text}")
                report.failures.append(f"MISMATCH {where}: {normalize_stmt(st.text)[:160]} | {diffs[0][:200]!r}")
                for d in diffs:
                    out("    " + d.replace("\n", "\n    "))
    finally:
        if not keep:
            for s, ks in ((sa, ks_a), (sb, ks_b)):
                try:
                    s.execute(f"DROP KEYSPACE IF EXISTS {ks}", timeout=60)
                except Exception as e:  # noqa: BLE001
                    out(f"warning: could not drop {ks}: {e}")
                # Scenarios may create extra keyspaces named $KS_<suffix>.
                for r in s.execute("SELECT keyspace_name FROM system_schema.keyspaces"):
                    kname = r[0]
                    if kname.startswith(ks + "_"):
                        s.execute(f"DROP KEYSPACE IF EXISTS {kname}", timeout=60)
    return report


def scenario_paths(names=None):
    paths = sorted(glob.glob(os.path.join(SCENARIOS, "*.cql")))
    if names:
        want = {n if n.endswith(".cql") else n + ".cql" for n in names}
        paths = [p for p in paths if os.path.basename(p) in want]
        missing = want - {os.path.basename(p) for p in paths}
        if missing:
            raise SystemExit(f"no such scenario: {', '.join(sorted(missing))}")
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compare CQL results of two endpoints, statement by statement.")
    ap.add_argument("--a", required=True, type=parse_hostport, help="reference endpoint host:port (Cassandra)")
    ap.add_argument("--b", required=True, type=parse_hostport, help="candidate endpoint host:port (Peregrine)")
    ap.add_argument("--scenario", action="append", help="run only this scenario (file name, repeatable)")
    ap.add_argument("--fetch-size", type=int, default=100, help="page size for SELECTs (default 100)")
    ap.add_argument("--known", default=KNOWN, help="known differences file")
    ap.add_argument("--keep", action="store_true", help="keep the scenario keyspaces")
    ap.add_argument("-v", "--verbose", action="count", default=0,
                    help="print every statement (-vv: and its first rows)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    # The driver logs server warnings (e.g. aggregation without partition key) at WARNING.
    logging.getLogger("cassandra").setLevel(logging.ERROR)

    known = load_known(args.known)
    user, pw = os.environ.get("CQL_USER"), os.environ.get("CQL_PASSWORD")
    ca, sa = connect(args.a, user, pw)
    cb, sb = connect(args.b, user, pw)
    report = Report()
    try:
        for path in scenario_paths(args.scenario):
            before = (report.passed, report.failed, report.known)
            t0 = time.time()
            run_scenario(path, sa, sb, report, known, args.fetch_size, args.verbose, args.keep)
            p, f, k = (report.passed - before[0], report.failed - before[1], report.known - before[2])
            print(f"-- {os.path.basename(path)}: {p} same, {f} different, {k} known ({time.time() - t0:.1f} s)")
    finally:
        ca.shutdown()
        cb.shutdown()
    stale = set(known) - report.known_hit
    ran = {os.path.basename(p) for p in scenario_paths(args.scenario)}
    for key in sorted(stale):
        if key[0] in ran:
            print(f"note: known difference no longer differs (remove it?): {key[0]} :: {key[1]}")
    if report.scenario_problems:
        print(f"{report.scenario_problems} scenario problem(s): statements whose outcome on a contradicts their @error marking")
    for line in report.failures[:40]:
        print(line)
    print(f"differential: {report.passed} passed, {report.failed + report.scenario_problems} failed, {report.known} skipped")
    return 0 if report.failed == 0 and report.scenario_problems == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
