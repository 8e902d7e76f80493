"""Idea: records are listed by `^lease-(\\d{1,18})$` and only as files. A record numbered
999999999999999999 (18 digits: a hand-made or hostile record, e.g. a `--break` tool writing
a big number) makes every next record 19 digits long: listing ignores it, so every taker
re-reads the 18-digit one as the latest, tries to create the same 19-digit name, fails, and
retries. `_take` loops on `continue` without looking at its wait deadline: every explicit
operation and post-commit maintenance (skip_if_held does not help: the lease looks free) and a
batch commit (its maintenance runs inline) hang forever. Also: a directory named lease-(n+1)."""
import json
import os
import subprocess
import sys
import textwrap

from common import new_table, write

t = new_table(options={"snapshot.num-retained.min": "1"})
write(t, 0)
md = os.path.join(t.path, ".maintenance")
rec = json.load(open(os.path.join(md, sorted(os.listdir(md), key=lambda n: int(n[6:]))[-1])))
rec["released"] = True
with open(os.path.join(md, "lease-999999999999999999"), "w") as f:
    json.dump(rec, f)

HERE = os.path.dirname(os.path.abspath(__file__))
code = textwrap.dedent(f"""
    import sys; sys.path.insert(0, {HERE!r})
    from common import write
    from paimon_commit import Table
    from paimon_commit.lease import lease_settings
    t = Table.open({t.path!r})
    with lease_settings(wait_s=2):
        print("first op:", t.expire_snapshots(retain_max=1).expired_snapshots, flush=True)
        print("second op:", t.expire_snapshots(retain_max=1).expired_snapshots, flush=True)
    write(t, 10)
    print("batch commit returned", flush=True)
""")


def run(label):
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=30, env=dict(os.environ, PYTHONPATH=os.getcwd()))
        print(label, "finished rc", p.returncode, p.stdout.strip(), p.stderr.strip()[-300:])
        return False
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        print(label, "HUNG (killed after 30 s with a 2 s lease wait); output so far:",
              out.strip())
        return True


hung1 = run("18-digit record:")
print("records:", sorted(os.listdir(md))[-4:])

t2 = new_table(options={"snapshot.num-retained.min": "1"})
write(t2, 0)
md2 = os.path.join(t2.path, ".maintenance")
n = max(int(x[6:]) for x in os.listdir(md2))
os.mkdir(os.path.join(md2, f"lease-{n + 1}"))
code = code.replace(repr(t.path), repr(t2.path))
hung2 = run("directory lease-(n+1):")
if hung1 or hung2:
    print("FINDING (hang): lease take loops forever ignoring lease_wait; maintenance and batch "
          "commits block" + (" [18-digit record]" if hung1 else "") +
          (" [directory record]" if hung2 else ""))
else:
    print("NO FINDING")
