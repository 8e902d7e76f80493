#!/usr/bin/env bash
# tests/unit on each supported Python version this machine has (`make test-versions`, run by
# `make test`): setup.cfg's python_requires claims 3.10 to 3.13, and this is what checks it.
#
# Usage: .ci/python-versions.sh VENV_DIR OWN_VERSION VERSION...
#   VENV_DIR     where the per-version venvs live (VENV_DIR/3.10, ...), created once and again
#                when setup.cfg changes (its stamp is older), with `pip install -e .[unit]`
#   OWN_VERSION  the version the whole suite just ran on (skipped here)
#
# An interpreter is pyenv's (PYENV_ROOT/versions/X.Y.*, the newest patch) or pythonX.Y on the
# PATH, and is used only if it really is X.Y (a pyenv shim for a version not selected fails).
# Debian's apt does not carry every version, so none is installed: a version not found is
# named in one line and skipped. A version found whose install or tests fail fails the script.
set -uo pipefail
cd "$(dirname "$0")/.."
venvs=$1 own=$2
shift 2

find_python() {   # prints a working interpreter of version $1, or nothing
    local v=$1 c
    for c in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python 2>/dev/null \
               | sort -V -r) "$(command -v "python$v" 2>/dev/null)"; do
        if [ -n "$c" ] && "$c" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$v'.split('.'))))" \
                2>/dev/null; then
            echo "$c"
            return
        fi
    done
}

failed=""
for v in "$@"; do
    [ "$v" = "$own" ] && continue
    py=$(find_python "$v")
    if [ -z "$py" ]; then
        echo "Python $v: not found (no pyenv $v.x, no working python$v on the PATH): tests/unit not run on it"
        continue
    fi
    venv="$venvs/$v"
    if [ ! -f "$venv/.installed" ] || [ setup.cfg -nt "$venv/.installed" ]; then
        echo "Python $v: creating $venv ($py)"
        if ! { "$py" -m venv "$venv" && "$venv/bin/python" -m pip install -q -e '.[unit]' \
                && touch "$venv/.installed"; }; then
            echo "Python $v: installing the package and its test dependencies failed"
            failed="$failed $v"
            continue
        fi
    fi
    echo "Python $v: tests/unit ($("$venv/bin/python" -V 2>&1))"
    "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/unit || failed="$failed $v"
done
if [ -n "$failed" ]; then
    echo "tests/unit failed on Python:$failed"
    exit 1
fi
