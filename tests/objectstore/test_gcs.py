"""What only GCS has, against fake-gcs-server (see gcs_server.py for what runs and the one
request the adapter in front of it translates): GCS's option names. obstore is configured as a
user points it at an emulator: a service-account JSON with `gcs_base_url` and `disable_oauth`,
named by GOOGLE_SERVICE_ACCOUNT or by our options. Every operation, the conditional create
(with the generation condition on the wire), a store that ignores it (the adapter dropping it
on purpose), the CLI, several writer processes and bad input run on the emulator too:
test_store_operations.py and test_store_concurrency.py."""
import logging

from conftest import SCHEMA, make_rows, write
from paimon_commit import Table
from tests.objectstore.stores import PRIVATE_KEY, assert_never_stored, user_service_account


def _ids(t, **kw):
    return sorted(t.read_arrow(**kw).column("id").to_pylist())


def test_option_names_configure_the_store_and_are_never_stored(gcs, tmp_path, monkeypatch,
                                                               caplog):
    monkeypatch.delenv("GOOGLE_SERVICE_ACCOUNT")
    caplog.set_level(logging.DEBUG)
    sa = user_service_account(str(tmp_path / "sa.json"), gcs.url)
    t = Table.create(gcs.table_uri(), SCHEMA, partition_keys=["dt", "hr"],
                     storage_options={"gcs.service-account-file": sa})
    assert write(t, make_rows([1])) == 1
    for opts in ({"fs.gs.auth.service.account.json.keyfile": sa},      # Paimon's / Hadoop's
                 {"gcs.service-account-key": open(sa).read()},          # the JSON itself
                 {"google_service_account": sa}):                       # obstore's own key
        again = Table.open(gcs.table_uri(), storage_options=opts)
        assert again.store.io.description == f"gcs store at {gcs.url}"
        assert _ids(again) == [1]
        shown = [again.path, repr(again), repr(again.store.io)]
        assert not any(PRIVATE_KEY in s or "GCS-TEST-KEY" in s for s in shown)
    assert write(again, make_rows([2])) == 2
    assert _ids(again) == [1, 2]
    assert _ids(Table.open(f"gcs://{gcs.name}/db.db/t", storage_options=gcs.options)) == [1, 2]
    assert_never_stored(gcs, again, (sa, "GCS-TEST-KEY", "gcs."), ("gcs.", "fs.gs.", "google_"))
    assert "GCS-TEST-KEY" not in caplog.text
