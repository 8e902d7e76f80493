"""The maintenance lease on an S3-protocol server: taken with a conditional PUT, so a second
holder waits and fails naming the first, and nothing is deleted meanwhile."""
import threading

import pytest
from conftest import SCHEMA, make_rows, write

from paimon_commit import Table
from paimon_commit.errors import LeaseHeldError
from paimon_commit.lease import lease_settings, maintenance_lease

EAGER = {"snapshot.num-retained.min": "1", "write-only": "true"}


def test_the_lease_excludes_a_second_expiration_on_s3(s3):
    t = Table.create(s3.table_uri("db.db/t"), SCHEMA, ["dt", "hr"], EAGER)
    for i in range(1, 4):
        write(t, make_rows([i]))
    taken, done = threading.Event(), threading.Event()

    def hold():
        with maintenance_lease(Table.open(s3.table_uri("db.db/t")).store, "hold"):
            taken.set()
            done.wait(60)
    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert taken.wait(60)
    before = s3.keys()
    try:
        with lease_settings(wait_s=0.3), pytest.raises(LeaseHeldError,
                                                       match=r"is being maintained by .* \("
                                                             r"hold since "):
            t.expire_snapshots(retain_max=1, retain_min=1)
        assert s3.keys() == before                        # nothing deleted
    finally:
        done.set()
        holder.join(60)
    assert t.expire_snapshots(retain_max=1, retain_min=1).expired_snapshots == 2
    assert any(k.startswith("db.db/t/.maintenance/lease-") for k in s3.keys())
