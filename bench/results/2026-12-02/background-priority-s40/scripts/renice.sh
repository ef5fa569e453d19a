#!/bin/bash
# renice.sh BIN_PATTERN NICE: keeps every fjall:worker / storage-idle thread of the server at NICE
while true; do
  for p in $(pgrep -f "$1 serve"); do
    for t in /proc/$p/task/*; do
      c=$(cat $t/comm 2>/dev/null)
      case "$c" in fjall:worker|storage-idle)
        tid=${t##*/}; cur=$(awk '{print $19}' $t/stat 2>/dev/null)
        [ "$cur" != "$2" ] && renice -n "$2" -p "$tid" >/dev/null 2>&1 && echo "$(date +%s) $tid $c $cur->$2";;
      esac
    done
  done
  sleep 0.2
done
