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
