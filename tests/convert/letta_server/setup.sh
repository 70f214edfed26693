#!/usr/bin/env bash
# Make the venv of the real Letta 0.16.8 server that tests/convert/test_letta_server.py runs on loopback.
#
#   bash tests/convert/letta_server/setup.sh      # prints the venv's python on stdout when ready
#
# Where: $BUNDLEKIT_LETTA_VENV, else .cache/letta-server/venv in this checkout (ignored by git).
# What: the pinned requirements.txt beside this script, installed with --no-deps (no resolution,
# the same versions every time). A venv already made from the same requirements is kept.
# Letta's code is installed from PyPI into that venv only; nothing of it is committed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="${BUNDLEKIT_LETTA_VENV:-$root/.cache/letta-server/venv}"
lock="$here/requirements.txt"
stamp="$venv/.bundlekit-requirements"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$lock" "$stamp"; then
  echo "$venv/bin/python"
  exit 0
fi
python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "the Letta server venv needs CPython 3.11 (the lock was made there); $python is not" >&2
  exit 1
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$lock" >&2
"$venv/bin/python" -c 'import letta, uvicorn, aiosqlite, sqlite_vec' >&2
cp "$lock" "$stamp"
echo "$venv/bin/python"
