"""A storage configuration the object store refuses when it is built (credentials in halves,
a boolean that is not one, an unreadable service-account file) is bad input: one line naming
the option as the user wrote it, exit 2, no secret printed, no request sent (the endpoint is
a closed port; every one of these is refused before the first request)."""
import pytest

from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.errors import OptionError

SECRET = "wJalrXUtnFEMI-K7MDENG-SECRET"
ACCESS = "AKIAIOSFODNN7EXAMPLE"
S3 = "s3://bucket/wh/db.db/t"
BASE = {"s3.endpoint": "http://127.0.0.1:9", "object-store.max-retries": "0"}


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch):
    import os
    for k in [k for k in os.environ if k.startswith(("AWS_", "GOOGLE_", "AZURE_"))]:
        monkeypatch.delenv(k)


CASES = [
    ({"s3.access-key": ACCESS},
     "storage option 's3.access-key' is given without 's3.secret-key' for s3://bucket: S3 "
     "credentials need both (or neither, with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"),
    ({"fs.s3a.secret.key": SECRET, "aws_skip_signature": "true"},
     "storage option 'fs.s3a.secret.key' is given without 's3.access-key' for s3://bucket: S3 "
     "credentials need both (or neither, with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"),
    ({"s3.access-key": ACCESS, "s3.secret-key": SECRET, "s3.path.style.access": "maybe"},
     "storage option 's3.path.style.access' = 'maybe' must be true or false"),
    ({"s3.access-key": ACCESS, "s3.secret-key": SECRET, "aws_skip_signature": "maybe"},
     "storage option 'aws_skip_signature' = 'maybe' must be true or false"),
    ({"s3.access-key": ACCESS, "s3.secret-key": SECRET, "aws_checksum_algorithm": "md9"},
     "the S3 storage options for s3://bucket are refused: Config error: \"md9\" is not a "
     "valid checksum algorithm"),
]


def _argv(command, path, options):
    argv = [command, path]
    for k, v in {**BASE, **options}.items():
        argv += ["--option", f"{k}={v}"]
    return argv


@pytest.mark.parametrize("options, message", CASES, ids=[
    "access-key-alone", "secret-key-alone", "path-style-maybe", "skip-signature-maybe",
    "checksum"])
@pytest.mark.parametrize("command", ["expire-snapshots", "snapshots"])
def test_a_store_configuration_the_store_refuses_exits_2_in_one_line(capsys, options,
                                                                     message, command):
    # Regression (audit F9): obstore's error escaped as a traceback with exit 1 (which the
    # CLI documents as "failed after deleting"); "maybe" was read as false.
    code = main(_argv(command, S3, options))
    out, err = capsys.readouterr()
    assert (code, out, err.splitlines()) == (2, "", [f"error: {message}"])
    assert SECRET not in out + err


@pytest.mark.parametrize("options, message", CASES[:3], ids=["access", "secret", "bool"])
def test_the_api_raises_the_same_option_error(options, message):
    with pytest.raises(OptionError) as e:
        Table.open(S3, storage_options={**BASE, **options})
    assert str(e.value) == message


def test_an_unreadable_service_account_file_is_named(capsys, tmp_path):
    missing = tmp_path / "no-such-key.json"
    code = main(["snapshots", "gs://bucket/wh/db.db/t", "--option",
                 f"gs.service-account-file={missing}"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("error: the GCS storage options for gs://bucket are refused: GCS "
                           "error: GCP credential error: Unable to open service account file "
                           f"from {missing}")


def test_booleans_are_read_as_paimon_reads_them():
    # true / false in any case; the store is built (no request is sent).
    from paimon_commit.io.object_store_config import build_store
    for v in ("true", "FALSE", "True"):
        build_store("s3", "bucket", None, None, {**BASE, "s3.access-key": ACCESS,
                                                 "s3.secret-key": SECRET,
                                                 "fs.s3a.path.style.access": v})
    for v in ("1", "yes", ""):
        with pytest.raises(OptionError, match=f"'fs.s3a.path.style.access' = '{v}' must be "
                                              f"true or false"):
            build_store("s3", "bucket", None, None, {**BASE, "s3.access-key": ACCESS,
                                                     "s3.secret-key": SECRET,
                                                     "fs.s3a.path.style.access": v})
