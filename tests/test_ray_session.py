"""A local Ray's session and a second SIGINT: from `ray.init` to the end of `ray.shutdown`
there is no moment when a second SIGINT finds nothing to kill. CI once caught one: the
second SIGINT landed as the block's body ended, before the shutdown's own kill list was
in place, and the raylet's DashboardAgent and RuntimeEnvAgent outlived the run."""

import subprocess
import sys
import time

import pytest

import campaign_processes as runs

pytestmark = pytest.mark.slow  # starts a local Ray in a process of its own

AGENTS = {"ray::DashboardAgent", "ray::RuntimeEnvAgent"}

# The body ends with the stop flag set (the first SIGINT) and a second SIGINT timed to land
# a few milliseconds later: in the session's way out, as a Ctrl-C pressed twice does.
SCRIPT = """
import os, signal, sys, threading, time
from evo import ray_session, stopping

with stopping.listening(), ray_session.session(None):
    print("up", flush=True)
    sys.stdin.readline()  # the test has listed this process's Ray
    os.kill(os.getpid(), signal.SIGINT)
    threading.Timer(float(sys.argv[1]), os.kill, (os.getpid(), signal.SIGINT)).start()
time.sleep(60)  # the session ended before the second SIGINT: it still exits at once
"""


def _ray_processes(pid: int, timeout_s: float = 60) -> list:
    """Returns `pid`'s descendants once the raylet's two agents are among them."""
    deadline = time.monotonic() + timeout_s
    while True:
        started = runs.descendants(pid)
        if AGENTS <= {process.name() for process in started}:
            return started
        assert time.monotonic() < deadline, [process.name() for process in started]
        time.sleep(0.1)


@pytest.mark.parametrize("delay_s", [0.0, 0.005, 0.05])
def test_a_second_sigint_on_the_way_out_kills_every_process_of_the_local_ray(delay_s):
    process = subprocess.Popen([sys.executable, "-c", SCRIPT, str(delay_s)], cwd=runs.ROOT,
                               env=runs.clean_env(), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    started = []
    try:
        assert process.stdout.readline().strip() == "up", process.stderr.read()[-3000:]
        started = _ray_processes(process.pid)
        process.stdin.write("\n")
        process.stdin.flush()
        process.wait(timeout=30)
        gone_s = runs.seconds_until_gone(started, 30)
        left = [(p.pid, p.name()) for p in runs.alive(started)]
    finally:
        runs.kill_leftovers(process, started)
    said = process.stderr.read()
    assert process.returncode == 130, said[-3000:]
    assert "second SIGINT: exiting now" in said, said[-3000:]
    assert not left and gone_s < 10, left
