"""Proxy CPU per operation from a compare's JSON: per round and over all measured rounds
(server_cpu_seconds are the proxy's own, its pid alone was given)."""
import json, sys
for name in sys.argv[1:]:
    d = json.load(open(name))
    for e in d["endpoints"]:
        rounds = e["rounds"]
        ops = sum(r["overall"]["count"] for r in rounds)
        cpu = sum(r["server_cpu_seconds"] for r in rounds)
        per = [f'{1e6 * r["server_cpu_seconds"] / r["overall"]["count"]:.1f}' for r in rounds]
        print(f'{name} {e["endpoint"]["name"]:6} rounds µs/op {" ".join(per)}; '
              f'all rounds {cpu:.2f} s / {ops} ops = {1e6 * cpu / ops:.1f} µs/op')
