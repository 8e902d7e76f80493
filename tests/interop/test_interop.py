"""Both directions of interop with pypaimon 2.1.0, the independent oracle."""
import datetime
import decimal

import pyarrow as pa
import pytest

from oracle import pp_create, pp_drop, pp_live_file_names, pp_read, pp_write, rows

from paimon_commit import Table

RICH = pa.schema([
    ("id", pa.int64()),
    ("name", pa.string()),
    ("price", pa.float64()),
    ("amount", pa.decimal128(10, 2)),
    ("ts", pa.timestamp("us")),
    ("flag", pa.bool_()),
    ("small", pa.int16()),
    ("dt", pa.date32()),
    ("hr", pa.int32()),
])
DAYS = [datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(3)]


def rich_rows(ids, days=DAYS, hours=range(8)):
    out = []
    for i in ids:
        out.append({
            "id": i, "name": None if i % 7 == 0 else f"name-{i}" * (1 + i % 3),
            "price": i * 1.25, "amount": decimal.Decimal(i) / 4,
            "ts": datetime.datetime(2024, 5, 1, 12, 0, 0, i),
            "flag": i % 2 == 0, "small": i % 100,
            "dt": days[i % len(days)], "hr": list(hours)[i % len(list(hours))],
        })
    return pa.Table.from_pylist(out, schema=RICH)


@pytest.fixture
def rich_path(tmp_path):
    p = tmp_path / "wh" / "db.db" / "rich"
    p.parent.mkdir(parents=True)
    return p


def _assert_same_view(t: Table, path, snapshot_id):
    assert sorted(f.file_name for f in t.live_files(snapshot_id)) == \
        pp_live_file_names(path, snapshot_id)
    assert rows(t.read_arrow(snapshot_id)) == rows(pp_read(path, snapshot_id=snapshot_id))


def test_we_read_what_pypaimon_wrote(rich_path):
    pp_create(rich_path, RICH, ["dt", "hr"])
    pp_write(rich_path, rich_rows(range(0, 60)))                     # 24 partitions
    pp_write(rich_path, rich_rows(range(60, 90)))
    pp_write(rich_path, rich_rows([1000, 1001], days=[DAYS[0]], hours=[1]),
             overwrite={"dt": DAYS[0], "hr": 1})
    pp_drop(rich_path, [{"dt": DAYS[1], "hr": 3}])
    pp_write(rich_path, rich_rows(range(90, 100)))
    t = Table.open(str(rich_path))
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4, 5]
    assert [s.commit_kind for s in t.snapshots()] == \
        ["APPEND", "APPEND", "OVERWRITE", "OVERWRITE", "APPEND"]
    for sid in range(1, 6):
        _assert_same_view(t, rich_path, sid)
    assert t.read_arrow().num_rows == t.latest_snapshot().total_record_count


def test_pypaimon_reads_what_we_wrote_then_appends(rich_path):
    t = Table.create(str(rich_path), RICH, ["dt", "hr"])
    expected = {}  # snapshot id -> rows

    def commit(data, how="append", spec=None):
        w = t.new_writer()
        w.write_arrow(data)
        with t.new_commit() as c:
            if how == "append":
                sid = c.commit(w.prepare_commit())
            else:
                sid = c.overwrite(w.prepare_commit(), partition=spec)
        return sid

    model = rows(rich_rows([]))
    s = commit(rich_rows(range(0, 60)))
    model = rows(rich_rows(range(0, 60)))
    expected[s] = model
    s = commit(rich_rows(range(60, 90)))
    model = rows(rich_rows(range(0, 90)))
    expected[s] = model
    s = commit(rich_rows([1000], days=[DAYS[0]], hours=[1]), "overwrite")
    model = [r for r in model if not (r["dt"] == DAYS[0] and r["hr"] == 1)] + \
        rich_rows([1000], days=[DAYS[0]], hours=[1]).to_pylist()
    expected[s] = rows(pa.Table.from_pylist(model, schema=RICH))
    with t.new_commit() as c:
        s = c.drop_partitions([{"dt": DAYS[2]}])
    model = [r for r in model if r["dt"] != DAYS[2]]
    expected[s] = rows(pa.Table.from_pylist(model, schema=RICH))

    for sid, want in expected.items():
        assert rows(pp_read(rich_path, snapshot_id=sid)) == want, f"snapshot {sid}"
        _assert_same_view(t, rich_path, sid)

    # pypaimon appends on top of our snapshots; we read its commit back.
    pp_write(rich_path, rich_rows(range(200, 210)))
    latest = t.latest_snapshot()
    assert latest.id == s + 1 and latest.commit_kind == "APPEND"
    _assert_same_view(t, rich_path, latest.id)
    assert t.read_arrow().num_rows == len(model) + 10
    # ...and we commit on top of pypaimon's snapshot.
    s2 = commit(rich_rows(range(300, 305)))
    assert rows(pp_read(rich_path)) == rows(t.read_arrow(s2))
    assert pp_read(rich_path).num_rows == len(model) + 15


def test_unpartitioned_table_round_trip(tmp_path):
    path = tmp_path / "wh" / "db.db" / "u"
    path.parent.mkdir(parents=True)
    t = Table.create(str(path), RICH, [])
    w = t.new_writer()
    w.write_arrow(rich_rows(range(10)))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
    assert (path / "bucket-0").is_dir()
    assert rows(pp_read(path)) == rows(rich_rows(range(10)))
    pp_write(path, rich_rows(range(10, 12)))
    assert t.read_arrow().num_rows == 12
