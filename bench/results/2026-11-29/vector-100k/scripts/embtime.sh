#!/bin/bash
# Before/after embedder speed on the same 1000 sentences (every 20th of the 20k base), CPU 1.
# old.py: git show 4c1a8c7:bench/vectors/make_dataset.py; new.py: this branch's make_dataset.py
cd "$(dirname "$0")"
PY=~/.cache/peregrine/vectors-venv/bin/python
for i in 1 2; do
  echo "== round $i $(date -u +%T) $(uptime | sed 's/.*load/load/')"
  echo -n "old, default threads: "; taskset -c 0,1 $PY prof.py old.py 1000
  echo -n "old, 1 thread:        "; OPENBLAS_NUM_THREADS=1 taskset -c 1 $PY prof.py old.py 1000
  echo -n "new, 1 thread:        "; OPENBLAS_NUM_THREADS=1 taskset -c 1 $PY prof.py new.py 1000
done
