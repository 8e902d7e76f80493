"""The command line and a new user's input: options checked, errors in the user's words
(the flag and value as typed), exit 2 with one line and nothing touched."""
import json

import pytest

from conftest import files_under, make_rows, write

from paimon_commit.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def written(table, table_path):
    for i in range(1, 4):
        write(table, make_rows([i]))
    return table


def assert_refused(capsys, table_path, argv, message):
    """exit 2, one error line equal to `message`, no file written or removed."""
    before = files_under(table_path)
    code, out, err = run(capsys, *argv)
    assert (code, err.splitlines()) == (2, [f"error: {message}"]), err
    assert out == "" and files_under(table_path) == before


@pytest.mark.parametrize("option, message", [
    ("s3.endpiont=http://127.0.0.1:9000",
     "unknown --option 's3.endpiont': did you mean 's3.endpoint'?"),
    ("endpoint=http://127.0.0.1:9000", "unknown --option 'endpoint': did you mean 's3.endpoint'?"),
    ("snapshot.num-retained.min=1",
     "--option 'snapshot.num-retained.min' is a table option, not a storage option: storage "
     "options set how the table is reached (s3.endpoint, s3.access-key, ...; see README "
     "Storage)"),
    ("colour=blue",
     "unknown --option 'colour': storage options are those of README Storage (s3.endpoint, "
     "s3.access-key, fs.s3a.endpoint, gs.service-account-file, azure.account-name, "
     "object-store.max-retries, ...) and obstore's aws_*/google_*/azure_* keys"),
])
@pytest.mark.parametrize("command", [["expire-snapshots", "--retain-min", "1",
                                      "--time-retained", "0 s"], ["remove-orphan-files"],
                                     ["snapshots"]])
def test_an_unknown_option_key_is_refused(capsys, written, table_path, option, message,
                                          command):
    assert_refused(capsys, table_path,
                   [command[0], table_path, *command[1:], "--option", option], message)


def test_an_unknown_option_key_is_refused_by_maintain(capsys, written, table_path):
    wh = table_path.parent.parent
    before = files_under(wh)
    code, _, err = run(capsys, "maintain", wh, "--orphans", "--option", "s3.acess-key=x")
    assert (code, err.splitlines()) == (
        2, ["error: unknown --option 's3.acess-key': did you mean 's3.access-key'?"])
    assert files_under(wh) == before


def test_an_unknown_option_in_json_mode(capsys, written, table_path):
    code, out, err = run(capsys, "snapshots", table_path, "--json", "--option", "s3.regoin=eu")
    assert code == 2
    assert json.loads(out)["error"] == "unknown --option 's3.regoin': did you mean 's3.region'?"


def test_known_storage_options_are_accepted(capsys, written, table_path):
    code, _, err = run(capsys, "snapshots", table_path, "--option", "s3.endpoint=http://x:1",
                       "--option", "fs.s3a.path.style.access=true", "--option",
                       "aws_allow_http=true")
    assert code == 0, err


# --- errors in the user's words ------------------------------------------------------------

def usage_and_error(capsys, argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.splitlines()
    # The one useful line first, then the usage (issue 28): returned as (usage, error).
    assert lines[1].startswith("usage: ")
    return lines[1], lines[0]


def assert_refused_by_parser(capsys, table_path, argv, error):
    """argparse: one error line equal to `error`, then the sub-command's usage."""
    before = files_under(table_path)
    first, last = usage_and_error(capsys, argv)
    assert first.startswith(f"usage: paimon-commit {argv[0]} ")
    assert last == f"paimon-commit {argv[0]}: error: {error}"
    assert files_under(table_path) == before


@pytest.mark.parametrize("argv, error", [
    (["remove-orphan-files", "{t}", "--older-than-duration", "-1 d"],
     "--older-than-duration '-1 d' must not be negative"),
    (["expire-snapshots", "{t}", "--time-retained", "-1 h"],
     "--time-retained '-1 h' must not be negative"),
    (["expire-partitions", "{t}", "--expiration-time", "-30 d"],
     "--expiration-time '-30 d' must not be negative"),
    (["create-tag", "{t}", "x", "--time-retained", "-1 d"],
     "--time-retained '-1 d' must not be negative"),
    (["expire-snapshots", "{t}", "--time-retained", "soon"],
     "--time-retained 'soon' is an invalid duration (expected e.g. '500 ms', '30 s', "
     "'10 min', '1 h', '7 d')"),
    (["expire-snapshots", "{t}", "--retain-min", "0"], "--retain-min '0' must be >= 1"),
    (["expire-snapshots", "{t}", "--retain-min", "three"], "--retain-min 'three' is not an integer"),
    (["expire-snapshots", "{t}", "--older-than", "yesterday"],
     "--older-than 'yesterday' is an invalid timestamp (expected 'YYYY-MM-DD HH:MM:SS' "
     "or 'YYYY-MM-DD', local time)"),
    (["remove-orphan-files", "{t}", "--mode", "distribute"],
     "--mode 'distribute' is not one of local, distributed: did you mean 'distributed'?"),
    (["expire-snapshots", "{t}", "--retian-min", "3"],
     "unrecognized argument '--retian-min': did you mean '--retain-min'?"),
    (["expire-snapshots", "{t}", "--retain-min=3", "--dryrun"],
     "unrecognized argument '--dryrun': did you mean '--dry-run'?"),
    # No abbreviations: a tool that deletes does not guess what `--dry` means.
    (["expire-snapshots", "{t}", "--dry"],
     "unrecognized argument '--dry': did you mean '--dry-run'?"),
    (["remove-orphan-files", "{t}", "--older-than-dur", "2 d"],
     "unrecognized argument '--older-than-dur': did you mean '--older-than-duration'?"),
    (["maintain", "{wh}", "--orphan"], "unrecognized argument '--orphan': did you mean "
                                       "'--orphans'?"),
])
def test_errors_quote_the_flag_and_value_as_typed(capsys, written, table_path, argv, error):
    wh = table_path.parent.parent
    argv = [a.format(t=table_path, wh=wh) for a in argv]
    assert_refused_by_parser(capsys, wh, argv, error)


def test_a_command_typo_gets_a_suggestion(capsys):
    first, last = usage_and_error(capsys, ["expire-snapshot", "/nowhere"])
    assert first == "usage: paimon-commit [-h] [-v] [--version] COMMAND ..."
    assert last.startswith("paimon-commit: error: COMMAND 'expire-snapshot' is not one of ")
    assert last.endswith(": did you mean 'expire-snapshots'?")


@pytest.mark.parametrize("command", ["expire-snapshots", "expire-tags", "remove-orphan-files"])
def test_a_future_cutoff_is_refused_by_every_command(capsys, written, table_path, command):
    # Regression: expire-snapshots took a future --older-than and expired every snapshot the
    # retention allowed, while remove-orphan-files refused it.
    table_path_files = files_under(table_path)
    first, last = usage_and_error(capsys, [command, table_path, "--older-than",
                                           "2999-01-01 00:00:00"])
    assert first.startswith(f"usage: paimon-commit {command} ")
    assert last.startswith(f"paimon-commit {command}: error: --older-than '2999-01-01 00:00:00' "
                           f"is not in the past (it is ")
    assert last.endswith(" now, local time): a cutoff must be a past time")
    assert files_under(table_path) == table_path_files
    assert len(written.snapshots()) == 3


def test_a_zero_orphan_age_is_refused_in_the_users_words(capsys, written, table_path):
    assert_refused(capsys, table_path, ["remove-orphan-files", table_path,
                                        "--older-than-duration", "0 s"],
                   "--older-than-duration '0 s' must be longer than 0: files being written "
                   "now would be deleted")


def test_the_help_says_every_cutoff_must_be_in_the_past(capsys):
    for command in ("expire-snapshots", "expire-tags", "remove-orphan-files"):
        assert main([command, "--help"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert "must be in the past" in out, command


# --- listings a person reads ---------------------------------------------------------------

def test_snapshots_show_the_commit_time_in_local_time(capsys, written, table_path):
    import datetime
    code, out, _ = run(capsys, "snapshots", table_path)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["id", "commit", "time", "kind", "records", "delta", "commit",
                                "user"]
    for line, s in zip(lines[1:], written.snapshots()):
        local = datetime.datetime.fromtimestamp(s.time_millis / 1000)
        assert line.split()[:3] == [str(s.id), local.strftime("%Y-%m-%d"),
                                    local.strftime("%H:%M:%S")]
    assert len(lines) == 4
    r = json.loads(run(capsys, "snapshots", table_path, "--json")[1])
    first = r["snapshots"][0]
    assert datetime.datetime.fromisoformat(first["time"]).timestamp() == \
        first["time_millis"] // 1000


def test_empty_listings_say_so(capsys, table, table_path):
    assert run(capsys, "snapshots", table_path)[1] == "no snapshots\n"
    assert run(capsys, "tags", table_path)[1] == "no tags\n"
    code, out, _ = run(capsys, "info", table_path)
    assert code == 0
    assert "[]" not in out and "{}" not in out and "None" not in out
    info = dict((line[:16].strip(), line[16:]) for line in out.splitlines())
    assert (info["snapshots"], info["tags"], info["consumers"], info["partition keys"]) == \
        ("none", "no tags", "no consumers", "dt, hr")


def test_info_and_tags_in_words(capsys, written, table_path):
    written.create_tag("release-1", 2, time_retained="7 d")
    written.create_tag("nightly", 3)
    (table_path / "consumer").mkdir()
    (table_path / "consumer" / "consumer-reader1").write_text('{"nextSnapshot": 3}')
    code, out, _ = run(capsys, "info", table_path)
    info = dict((line[:16].strip(), line[16:]) for line in out.splitlines())
    names = [t.name for t in written.tags()]
    assert (info["snapshots"], info["latest"], info["tags"], info["consumers"]) == (
        "3 (ids 1 to 3)", "3 (APPEND), 3 record(s)", ", ".join(names),
        "reader1 (next snapshot 3)")
    assert sorted(names) == ["nightly", "release-1"]
    assert info["live files"].startswith("3 (") and info["live files"].endswith(
        " bytes) in 1 partition(s)")
    out = sorted(run(capsys, "tags", table_path)[1].splitlines())
    assert [line.split("\t")[:2] for line in out] == [["nightly", "snapshot 3"],
                                                       ["release-1", "snapshot 2"]]
    assert out[1].endswith("\tretained 7 d") and out[0].endswith("\tretained -")


def test_the_help_names_every_storage_scheme(capsys):
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    for command in ("snapshots", "expire-snapshots", "remove-orphan-files", "maintain"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        for scheme in ("s3://", "gs://", "az://", "abfs", "hdfs://", "file://"):
            assert scheme in text, (command, scheme)
    for scheme in ("s3://", "gs://", "az://", "abfss]://", "hdfs://", "file://"):
        assert scheme in top.replace("abfs[s]", "abfss]"), scheme


def test_verbose_is_accepted_after_the_command(capsys, written, table_path):
    code, out, _ = run(capsys, "snapshots", table_path, "-v")
    assert code == 0 and len(out.splitlines()) == 4
    code, out, _ = run(capsys, "-v", "snapshots", table_path)
    assert code == 0 and len(out.splitlines()) == 4
