"""Differential scenarios that need a non-default setting on both sides, run against a real
Cassandra 5.0.9 started here with that setting, and a Peregrine started here with the same one.

`scripts/test-all.sh` compares every scenario against one reference Cassandra on its default
configuration, where materialized views, DROP COMPACT STORAGE and dynamic data masking are
off: `32_views.cql` (`-- @requires-views`), `38_drop_compact_storage.cql`
(`-- @requires-drop-compact-storage`) and `42_masked_columns.cql` (`-- @requires-masking`) are
reported skipped there. This module starts a second Cassandra on FLAGGED_CASSANDRA_PORT
(default 9252, used by no other test; its data directory is wiped first) with
`materialized_views_enabled: true`, `drop_compact_storage_enabled: true` and
`dynamic_data_masking_enabled: true`, and a Peregrine
with the same keys, and runs those scenarios through `tests/differential/run.py`: they must run
(not be skipped) and match statement by statement. Skipped when the Cassandra jars are not
installed.
"""

import os
import subprocess
import sys
import tempfile

import pytest

import proxy_support as ps
from test_indexes import own_server_lifetime

PORT = int(os.environ.get("FLAGGED_CASSANDRA_PORT", "9252"))
HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "..", "differential", "run.py")
# The settings, as each side spells them, and the scenarios that need them.
SETTINGS = ("materialized_views_enabled: true\ndrop_compact_storage_enabled: true\n"
            "dynamic_data_masking_enabled: true\n")
SCENARIOS = ["32_views.cql", "38_drop_compact_storage.cql", "42_masked_columns.cql",
             "69_view_clustering_order.cql", "70_view_ddl_messages.cql", "71_view_empty_partition_key.cql",
             "75_view_ttl_expiry.cql", "116_view_reversed_key_casts.cql"]


@pytest.fixture(scope="module")
def cassandra():
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="flagged-") as extra:
        extra.write(SETTINGS)
        extra.flush()
        # scripts/cassandra.sh appends CASSANDRA_EXTRA_YAML to the node's cassandra.yaml.
        env = dict(os.environ, CASSANDRA_EXTRA_YAML=extra.name)
        ps.stop_cassandra(PORT, env=env)
        ps.start_cassandra(PORT, env=env, clean=True)
        yield PORT
        ps.stop_cassandra(PORT, env=env)


@pytest.fixture(scope="module")
def peregrine():
    yield from own_server_lifetime("peregrine-flagged-", SETTINGS, start=True)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_matches_cassandra(cassandra, peregrine, scenario):
    r = subprocess.run(
        [sys.executable, RUN, "--a", f"127.0.0.1:{cassandra}", "--b", f"127.0.0.1:{peregrine.port}",
         "--scenario", scenario],
        capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert "SKIP" not in out, f"{scenario} was skipped: the reference lacks the setting\n{out}"
    assert r.returncode == 0, out
    last = [line for line in out.splitlines() if line.startswith("differential:")]
    assert last and not last[-1].startswith("differential: 0 passed"), out


def test_generated_views_match_cassandra(cassandra, peregrine):
    """The statement generator with materialized views (generate.py --views): a fixed seed and
    a small count, so it stays deterministic and takes seconds; longer runs offline with
    --seed random."""
    gen = os.path.join(HERE, "..", "differential", "generate.py")
    r = subprocess.run(
        [sys.executable, gen, "--a", f"127.0.0.1:{cassandra}", "--b", f"127.0.0.1:{peregrine.port}",
         "--views", "--seed", "1", "--count", "300"],
        capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    last = [line for line in out.splitlines() if line.startswith("generated:")]
    assert last and not last[-1].startswith("generated: 0 passed"), out
