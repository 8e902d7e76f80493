"""The health report's integrity section: `check`'s result and, for a broken latest snapshot,
what `repair` would give up (its dry run) or why it refuses, in the text, the JSON and the
HTML page. The report stays read-only (nothing written, no maintenance lease: it works while
another process holds the lease) and its request bill includes the check's requests."""
import dataclasses
import hashlib
import json
import os
import subprocess
import sys

import pytest

from conftest import make_rows, without_bill, write

from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.io.metered import REQUEST_KINDS
from paimon_commit.lease import lease_settings
from paimon_commit.report import build_report, render_html

from .test_report import Page

STILL = "snapshot 2, snapshot 3, snapshot 4"


@pytest.fixture
def four(table):
    """Four snapshots of two rows each: ids (i, i + 10) in hr = i % 2; tag t2 on snapshot 2."""
    for i in range(1, 5):
        write(table, make_rows([i, i + 10], hr=i % 2))
    table.create_tag("t2", 2)
    return table


def lose(t, sid=2):
    """Delete by hand the data file snapshot `sid` added (live in the latest snapshot)."""
    (f,) = [f for f in t.live_files(sid) if f.file_name not in
            {g.file_name for g in t.live_files(sid - 1)}]
    os.unlink(f.path)
    return f


def tree(path):
    """Every file under `path` (the lease records too) with a hash of its bytes."""
    out = {}
    for root, _, names in os.walk(path):
        for n in names:
            with open(os.path.join(root, n), "rb") as fh:
                out[os.path.relpath(os.path.join(root, n), path)] = \
                    hashlib.sha256(fh.read()).hexdigest()
    return out


def report_text(capsys, table_path, code=0):
    """The text report; `code`: the exit code expected (1: the table misses a file)."""
    assert main(["report", str(table_path)]) == code
    return without_bill(capsys.readouterr().out).splitlines()


def checked_files(t):
    return sum(v["files"] for v in t.check().checked.values())


def test_a_healthy_table_says_ok(four, table_path, capsys):
    n = checked_files(four)
    rep = build_report(four)
    ig = rep.integrity
    assert (ig["checked"], ig["ok"], ig["problems"], ig["broken"], ig["repair"]) == \
        (True, True, [], [], None)
    assert ig["files_checked"] == n and (ig["snapshots"], ig["tags"]) == (4, 1)
    assert report_text(capsys, table_path)[-1] == \
        f"integrity        ok ({n} file(s) checked, of 4 snapshot(s), 1 tag(s))"
    page = Page()
    page.feed(render_html(rep))
    assert ("data-ok", "true") in page.attrs
    text = "".join(page.text)
    assert f"{n} files checked" in text and "OK: every file the 4 snapshot(s), 1 tag(s) use" \
        in text


def test_a_deleted_data_file_is_named_with_what_it_breaks_and_what_repair_gives_up(
        four, table_path, capsys):
    f = lose(four)
    rel = os.path.relpath(f.path, table_path)
    n = checked_files(four)
    before = tree(table_path)
    lines = report_text(capsys, table_path, code=1)
    assert lines[-6:] == [
        f"integrity        1 problem(s) ({n} file(s) ok, of 4 snapshot(s), 1 tag(s)); broken: "
        f"{STILL}, tag t2",
        f"  data {rel}: missing ({f.file_size} bytes); breaks {STILL}, tag t2",
        f"  paimon-commit check {table_path} names every problem",
        f"repair           a repair would give up 1 missing data file(s) of snapshot 4: 2 "
        f"record(s), {f.file_size} bytes (dry run, nothing changed; paimon-commit repair "
        f"{table_path} --apply commits a snapshot without them)",
        f"  dt=2024-01-01,hr=0 bucket 0: 1 file(s), 2 record(s), {f.file_size} bytes",
        f"  still broken after it: {STILL}, tag t2 (repair changes no existing snapshot or "
        f"tag)"]
    assert tree(table_path) == before   # nothing written: no snapshot, no lease record
    # What the report said a repair gives up is what it gives up.
    r = four.repair(apply=True)
    assert [x.path for x in r.files] == [rel] and r.records == 2


def test_json_has_the_integrity_object(four, table_path, capsys):
    f = lose(four)
    rel = os.path.relpath(f.path, table_path)
    assert main(["report", str(table_path), "--json"]) == 1
    r = json.loads(capsys.readouterr().out)
    assert r["unreadable"] is None
    ig = r["integrity"]
    assert (ig["checked"], ig["ok"], ig["complete"], ig["problem_count"]) == (True, False, True, 1)
    (p,) = ig["problems"]
    assert (p["path"], p["kind"], p["state"], p["expected_size"], p["actual_size"]) == \
        (rel, "data", "missing", f.file_size, None)
    assert p["roots"] == ["snapshot 2", "snapshot 3", "snapshot 4", "tag t2"]
    assert ig["broken"] == p["roots"]
    assert (ig["broken_snapshots"], ig["broken_tags"]) == ([2, 3, 4], ["t2"])
    assert ig["check_command"] == f"paimon-commit check {table_path}"
    rp = ig["repair"]
    assert (rp["refused"], rp["base_snapshot_id"], rp["removed_files"], rp["removed_records"],
            rp["removed_bytes"]) == (None, 4, 1, 2, f.file_size)
    assert [x["path"] for x in rp["files"]] == [rel]
    assert rp["still_broken"] == ig["broken"] and rp["unrepaired"] == []
    assert rp["command"] == f"paimon-commit repair {table_path} --apply"
    # The run's bill holds the check's and the repair dry run's requests.
    for k in REQUEST_KINDS:
        assert r["requests"][k] >= ig["requests"][k] + rp["requests"][k], k
    assert ig["requests"]["PUT"] == ig["requests"]["DELETE"] == 0


def test_the_bill_is_the_report_plus_the_check(four, table_path):
    """Exactly: the report without integrity, plus the check's requests (after a first
    report: the first read of the process reads one file the later ones have cached)."""
    build_report(Table.open(str(table_path)), integrity=False)
    with_check = build_report(Table.open(str(table_path)))
    without = build_report(Table.open(str(table_path)), integrity=False)
    assert without.integrity is None
    for k in REQUEST_KINDS + ("bytes_read",):
        assert with_check.requests[k] == without.requests[k] + \
            with_check.integrity["requests"][k], k


def test_the_page_has_the_section_with_names_escaped(four, table_path):
    four.create_tag("<b>x&y<i>", 3)
    f = lose(four)
    rel = os.path.relpath(f.path, table_path)
    html_page = render_html(build_report(four))
    page = Page()
    page.feed(html_page)
    assert "integrity" in page.sections
    assert "i" not in page.tags and "script" not in page.tags      # escaped, not markup
    for name, value in page.attrs:
        assert name not in ("src", "href"), (name, value)
    assert ("data-ok", "false") in page.attrs and ("data-problems", "1") in page.attrs
    assert ("data-files", "1") in page.attrs and ("data-records", "2") in page.attrs
    text = "".join(page.text)
    assert rel in text and "tag <b>x&y<i>" in text
    assert f"paimon-commit repair {table_path} --apply" in text
    assert "A repair would give up 1 missing data file(s) of snapshot 4" in text


def test_a_repair_refusal_is_shown(four, table_path, capsys):
    lose(four)
    old = four.schema
    new = dataclasses.replace(old, id=old.id + 1, primary_keys=("id", "dt", "hr"))
    (table_path / "schema" / f"schema-{new.id}").write_bytes(new.to_json())
    before = tree(table_path)
    lines = report_text(capsys, table_path, code=1)
    assert lines[-1] == (
        f"repair           refused: cannot repair {table_path}: it is a primary-key table "
        f"(dynamic bucket); a data file is one level of its LSM tree, and removing it can "
        f"bring back older versions of the keys it held or rows it deleted (deletion vectors "
        f"hide rows because of it). Restore the files, or roll back to a snapshot `check` "
        f"finds intact")
    assert tree(table_path) == before
    page = Page()
    page.feed(render_html(build_report(Table.open(str(table_path)))))
    assert "repair refuses this table: cannot repair" in "".join(page.text)


HOLD_SCRIPT = """
import sys
from paimon_commit import Table
from paimon_commit.lease import maintenance_lease
t = Table.open(sys.argv[1])
with maintenance_lease(t.store, "expire-snapshots"):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_report_works_while_another_process_holds_the_lease(four, table_path, capsys):
    lose(four)
    p = subprocess.Popen([sys.executable, "-c", HOLD_SCRIPT, str(table_path)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env={**os.environ})
    try:
        assert p.stdout.readline().strip() == "held"
        before = tree(table_path)
        with lease_settings(wait_s=0):   # a take would fail at once: none is tried
            rep = build_report(Table.open(str(table_path)))
        assert rep.integrity["problem_count"] == 1
        assert rep.integrity["repair"]["removed_files"] == 1
        lines = report_text(capsys, table_path, code=1)
        assert lines[-3].startswith("repair           a repair would give up 1 missing")
        assert tree(table_path) == before   # the holder's record is still the last one
    finally:
        p.communicate("\n", timeout=30)
    assert p.returncode == 0


def test_a_check_result_is_planned_from_in_a_dry_run_only(four):
    from paimon_commit.operations.repair import repair_table
    lose(four)
    c = four.check()
    assert repair_table(four.store, check=c).records == 2
    with pytest.raises(ValueError, match="dry run only"):
        repair_table(four.store, apply=True, check=c)
    assert [s.id for s in four.snapshots()] == [1, 2, 3, 4]


def test_a_missing_manifest_still_gives_the_integrity_section_and_exit_1(
        four, table_path, capsys, tmp_path):
    """The report's other sections need every manifest; a missing one used to end the run
    with `error: [Errno 2] ...` and no report, the one case a report is most wanted for."""
    # The manifest snapshot 1's delta added: every snapshot and the tag read it.
    (m,) = [x.file_name for x in four.store.manifests.read_list(
        four.store.snapshots.snapshot(1).delta_manifest_list)]
    os.unlink(table_path / "manifest" / m)
    n = checked_files(four)
    before = tree(table_path)
    out = tmp_path / "r.html"
    assert main(["report", str(table_path), "--html", str(out)]) == 1
    lines = without_bill(capsys.readouterr().out).splitlines()
    assert lines[:3] == [
        f"table            {table_path}",
        f"report           cannot read the table's metadata (manifest/{m} is missing); the "
        f"report's other sections are left out: see integrity",
        f"integrity        1 problem(s) ({n} file(s) ok, of 4 snapshot(s), 1 tag(s)); broken: "
        f"snapshot 1, {STILL}, tag t2"]
    assert lines[3].startswith(f"  manifest manifest/{m}: missing (") and \
        lines[3].endswith(f"bytes); breaks snapshot 1, {STILL}, tag t2")
    assert lines[4] == f"  paimon-commit check {table_path} names every problem"
    assert lines[5].startswith("repair           refused: cannot repair")
    assert lines[-1] == f"html report      {out}"
    assert main(["report", str(table_path), "--json"]) == 1
    r = json.loads(capsys.readouterr().out)
    assert r["unreadable"] == lines[1][len("report           "):]
    assert (r["integrity"]["problem_count"], r["integrity"]["broken_tags"]) == (1, ["t2"])
    assert (r["snapshots"], r["live_files"], r["history"], r["reclaimable"]) == (0, 0, [], {})
    assert r["latest"] == 4
    page = Page()
    page.feed(out.read_text())
    assert "integrity" in page.sections and "summary" not in page.sections
    assert "history" not in page.sections
    assert ("id", "unreadable") in page.attrs and ("data-ok", "false") in page.attrs
    assert f"manifest/{m} is missing" in "".join(page.text)
    assert tree(table_path) == before   # read-only still
    # The library call without integrity has nothing to show: it raises as before.
    with pytest.raises(FileNotFoundError):
        build_report(Table.open(str(table_path)), integrity=False)


def test_what_repair_leaves_is_named_with_why(table_path, capsys):
    """A missing file kept by repair because a file of its name is elsewhere (a writer's
    dynamic partition option, audit issue27d h2) is listed with where it was found, not
    filed under 'a data file of the wrong size' (audit issue25h)."""
    import pyarrow as pa
    from oracle import pp_write
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = Table.create(str(table_path), schema, partition_keys=["dt"])
    write(t, pa.table({"id": [1], "dt": [None]}, schema=schema))
    pp_write(table_path, pa.table({"id": [2], "dt": [None]}, schema=schema),
             **{"partition.default-name": "NULLS"})
    write(t, pa.table({"id": [3], "dt": ["x"]}, schema=schema))
    (lost,) = [f for f in Table.open(str(table_path)).live_files() if f.partition["dt"] == "x"]
    os.unlink(lost.path)
    (dyn,) = [os.path.relpath(os.path.join(r, n), table_path)
              for r, _, ns in os.walk(table_path / "dt=NULLS") for n in ns]
    lines = report_text(capsys, table_path, code=1)
    at = lines.index("  not fixed by repair: 1 problem(s) of snapshot 3:")
    (p,) = [p for p in Table.open(str(table_path)).check().problems
            if os.path.basename(p.path) == os.path.basename(dyn)]
    assert lines[at + 1] == (f"    data {p.path}: missing (found at {dyn}: written under "
                             f"another layout (a dynamic partition option?); not given up)")
    page = Page()
    page.feed(render_html(build_report(Table.open(str(table_path)))))
    assert f"found at {dyn}" in "".join(page.text)


def test_a_healthy_table_whose_metadata_moved_under_the_report_is_built_again(
        four, table_path, monkeypatch):
    """An expiration deleting a manifest the sections were reading makes them fail on a
    table the check then finds healthy: the sections are built again, once, and the report
    is not 'unreadable' (exit 1) for a race (audit issue25h)."""
    import paimon_commit.report as report
    real, calls = report._fill, []

    def racing(rep, *a, **kw):
        calls.append(1)
        if len(calls) == 1:   # as if an expiration removed the manifest being read
            raise FileNotFoundError(2, "No such file or directory",
                                    str(table_path / "manifest" / "manifest-gone-0"))
        return real(rep, *a, **kw)

    monkeypatch.setattr(report, "_fill", racing)
    rep = build_report(Table.open(str(table_path)))
    assert len(calls) == 2 and rep.unreadable is None
    assert rep.snapshots == 4 and rep.integrity["ok"] is True
    assert main(["report", str(table_path)]) == 0
