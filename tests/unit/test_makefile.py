"""`make test` says what it installs on the machine before it does, and each can be left
out (issue 28): JAVA=0, BROWSER=0, AZURE=0; the tests that need it skip and say why."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")


def dry(*switches):
    """What `make test` would run (`make -n`: nothing runs but the notice's echo lines)."""
    r = subprocess.run(["make", "-n", "-s", "test", "PYVERSIONS=", *switches], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def installs(out):
    """The targets the sub-make builds before the tests (what goes on the machine)."""
    line = next(x for x in out.splitlines() if x.startswith("make --no-print-directory"))
    return out.index(line), line.split()[2:]


def test_the_notice_comes_before_any_install():
    out = dry()
    notice = out.index("make test installs")
    at, targets = installs(out)
    assert at > notice
    assert {"java", "browser", ".venv/paimon-java/paimon-python-java-bridge.jar",
            ".venv/azurite/node_modules/.bin/azurite-blob"} <= set(targets)
    assert "JAVA=0 leaves it out" in out and "BROWSER=0" in out and "AZURE=0" in out


def test_each_install_can_be_left_out():
    out = dry("JAVA=0", "BROWSER=0", "AZURE=0")
    assert installs(out)[1] == [".venv/.installed"]
    assert "apt-get" not in out and "npm install" not in out
    assert "PAIMON_COMMIT_SKIP=java,browser,azure " in out


def test_ci_keeps_everything():
    out = dry()
    assert "PAIMON_COMMIT_SKIP=,, " in out
