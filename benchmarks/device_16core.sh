#!/usr/bin/env bash
# The 16-core column (issue 26 item 6): compaction and orphan cleanup side by side with
# delta-rs on a lent 16-core machine, in one call of at most ~9 minutes.
#
# That machine has no network and pyarrow of its own; what it lacks travels as one archive,
# .devsite/site.tar.xz (ignored; made here with `benchmarks/device_16core.sh --pack`): the
# cp312 manylinux wheels of deltalake, arro3-core, deprecated, fastavro, zstandard, tenacity,
# obstore, unpacked and xz-compressed (deltalake's wheel alone is 52 MB; the archive 45 MB,
# inside the 64 MiB a call may carry). pypaimon needs polars (50 MB more), which does not fit:
# PAIMON_BENCH_NO_PYPAIMON=1 skips its read of our tables there and the results say so; the
# 2-core runs read with pypaimon as always.
#
# Results come back as $OUT/*.json and $OUT/*.log; copy them to
# benchmarks/results/16core/ and run `benchmarks/report.py --update-readme`.
set -u
if [ "${1:-}" = "--pack" ]; then
    set -e
    rm -rf .whl /tmp/devsite && mkdir -p .whl /tmp/devsite .devsite
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d .whl deltalake==1.6.6 arro3-core deprecated \
        fastavro==1.13.1 tenacity zstandard obstore tqdm
    for w in .whl/*.whl; do unzip -q -o "$w" -d /tmp/devsite; done
    tar -C /tmp/devsite -cf - . | xz -9 -T0 > .devsite/site.tar.xz
    ls -la .devsite/site.tar.xz
    exit 0
fi
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT" /tmp/site
python3 -c "import tarfile; tarfile.open('.devsite/site.tar.xz').extractall('/tmp/site')" || exit 1
export PYTHONPATH=/tmp/site:$PWD PAIMON_BENCH_NO_PYPAIMON=1 PYTHONUNBUFFERED=1
{ nproc; uptime; python3 -V; python3 -c 'import pyarrow, deltalake; print("pyarrow", pyarrow.__version__, "deltalake", deltalake.__version__)'; } 2>&1 | tee "$OUT/machine.log"
timeout "${COMPACT_S:-270}" python3 benchmarks/bench_compact.py --cases small --reps 2 \
    --out "$OUT/bench_compact.json" > "$OUT/bench_compact.log" 2>&1
echo "bench_compact rc=$?" | tee -a "$OUT/machine.log"
timeout "${ORPHAN_S:-250}" python3 benchmarks/bench_orphan.py --orphans 100000 --small 10000 \
    --reps 2 --out "$OUT/bench_orphan.json" > "$OUT/bench_orphan.log" 2>&1
echo "bench_orphan rc=$?" | tee -a "$OUT/machine.log"
uptime | tee -a "$OUT/machine.log"
tail -25 "$OUT/bench_compact.log" "$OUT/bench_orphan.log"
