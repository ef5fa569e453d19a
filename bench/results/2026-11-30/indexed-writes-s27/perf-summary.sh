#!/usr/bin/env bash
# Summaries of a `threads.sh` perf recording (PERF=1): samples by thread, and the top functions
# by their own samples (all threads). Usage: perf-summary.sh NAME.perf.data > NAME-perf.txt
set -euo pipefail
D=$1
r() { perf report -i "$D" --stdio --no-header "$@" 2>/dev/null | grep -v '^#' | grep -v '^$'; }
echo "== samples by thread name"
r --sort comm -g none | head -12
echo
echo "== top 45 functions by own samples (share of all samples), with thread"
r --no-children --sort comm,sym -g none | head -45
