"""Idea: Paimon Java's `data-file.path-directory` (e.g. 'data') puts data files under
TABLE/data/<partition>/bucket-N/. This library's writer refuses the option, but maintenance
(check, repair) opens such a table; store.data_file_path ignores the option. Does `repair
--apply` give up every (existing) data file of a table Java wrote with it?

Laid out as Java lays it out: files moved under TABLE/data/, option set in the schema."""
import os
import shutil

from common import new_table, write, cli_json, data_files, edit_schema_options

t = new_table()
write(t, 0, 5)
os.makedirs(os.path.join(t.path, "data"))
shutil.move(os.path.join(t.path, "bucket-0"), os.path.join(t.path, "data", "bucket-0"))
edit_schema_options(t.path, **{"data-file.path-directory": "data"})
print("data files on disk:", sorted(data_files(t.path)))
rc, out, err = cli_json("repair", t.path, "--apply")
print("repair rc:", rc, "|", (out.get("message") if isinstance(out, dict) else out), err[-300:])
removed = out.get("removed_files", 0) if isinstance(out, dict) else 0
if rc == 0 and removed:
    print(f"FINDING (data loss): repair --apply gave up {removed} existing data file(s) "
          f"({out['removed_records']} rows) of a table with data-file.path-directory")
else:
    print("NO FINDING")
