"""rheotheory.loadcheck: counting the runnable threads that are not the measured run's."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from rheotheory import loadcheck

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")

#: A process that spins until it is killed (the test kills it in its finally clause).
BUSY = "while True:\n    pass\n"


def test_a_busy_process_counts_outside_its_tree_and_not_inside():
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])
    try:
        time.sleep(0.5)
        # NOTE: a busy loop is in state R (running or ready) at almost every look; take the best of a few
        outside = max(loadcheck.other_runnable(root=idle.pid) for _ in range(5))
        assert outside >= 1
        assert busy.pid in loadcheck._tree(busy.pid) and busy.pid not in loadcheck._tree(idle.pid)
        with loadcheck.LoadMonitor(root=idle.pid, interval=0.1) as m:
            time.sleep(0.6)
        rep = m.report()
        assert rep.samples >= 3 and rep.max_other_runnable >= 1
        assert "other runnable threads on average" in rep.describe()
    finally:
        busy.kill()
        idle.kill()


def test_the_verdict_follows_the_threshold():
    rep = loadcheck.LoadReport(4, 0.25, 1, 0.25 > loadcheck.LOADED_MEAN)
    assert rep.loaded is False and rep.describe().startswith("quiet")
    assert loadcheck.LoadReport(0, None, None, None).describe() == "machine load unknown (no /proc)"
