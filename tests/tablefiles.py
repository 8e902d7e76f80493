"""Walking a table's files as the tests compare them: without the maintenance lease's records
(`.maintenance/`: bookkeeping of who maintains the table, written by every destructive run of
ours and unknown to Paimon Java, whose results the tests compare with ours)."""
import os

LEASE_DIR = ".maintenance"


def table_walk(path):
    """os.walk(path), never entering a `.maintenance` directory."""
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d != LEASE_DIR]
        yield root, dirs, names
