"""N (thread hygiene): an error raised by one request of _roots_of's first wave (here the
tag/ listing fails with an OSError) propagates out of the list comprehension that consumes
read_ahead.ordered(); the generator is left suspended, so its `finally` (cancel + shutdown)
runs only when the generator is collected. With the error's traceback alive (a reference
cycle), the wave's pool threads outlive clean(), idle, until a GC pass. Reads only; nothing
is deleted (the run fails). 788846d^ consumed the wave with list(), which runs the finally."""
import gc
import os
import threading

from common import (CleanContext, LocalFileIO, OrphanFilesCleaner, age_everything, cutoff,
                    new_table, threads_now, write)


class IO(LocalFileIO):
    read_concurrency = 8

    def list_names(self, path):
        if path.rstrip("/").endswith("/t/tag"):
            raise OSError("tag listing failed (injected)")
        return super().list_names(path)


path = new_table()
write(path, [1])
age_everything(path)
try:
    OrphanFilesCleaner(CleanContext(path, older_than_ms=cutoff(), file_io=IO(path))).clean()
except OSError as e:
    err = e
    print(f"clean() raised: {e}")
print(f"threads right after clean() raised (error still referenced): {threads_now()}")
del err
print(f"after del: {threads_now()}")
gc.collect()
threading.Event().wait(0.2)
print(f"after gc.collect(): {threads_now()}")
