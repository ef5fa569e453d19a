#!/bin/bash
# NAME: the hits and misses of NAME's pass (NAME.metrics).
awk '$1 ~ /misses/ {m += $2} $1 ~ /hits/ {h += $2} END {print "misses", m, "hits", h}' "$1.metrics"
