"""The OS sandbox keeps its promises, tested with hostile code run straight inside it.

These tests bypass the static gate on purpose: they show what the walls hold on their own,
for code that slipped past every other check. Each runs a small Python program the way a
fitness worker runs (`fitness.processes.jail.command`) and looks at the host afterwards.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid

import pytest

from fitness.processes import jail

@pytest.fixture()
def workdir(tmp_path):
    path = tmp_path / "private"
    path.mkdir()
    jail.prepare_workdir(str(path))
    return path


def _start(workdir, code: str, limits: jail.Limits = jail.Limits(), **popen):
    """Starts `code` sandboxed (as `python -m fitness.sandbox.script CODE` would run it)."""
    argv, env = jail.command("fitness.sandbox.hello", [], workdir=str(workdir),
                             backend="interpreter", limits=limits, use_bwrap=True)
    # [..., python, "-m", "fitness.sandbox.entry", SETTINGS, "fitness.sandbox.hello"]:
    # run `code` instead of the module, after the same limits and uid drop.
    module = argv.index("fitness.sandbox.hello")
    argv = argv[:module - 3] + ["-c", _ENTRY_THEN_CODE, argv[module - 1], code]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, **popen)


_ENTRY_THEN_CODE = textwrap.dedent("""
    import json, sys
    from fitness.sandbox import entry
    settings = json.loads(sys.argv[1])
    drop_to = settings["drop_to"]
    entry._set_limits(settings["limits"], settings["backend"], dedicated_uid=drop_to is not None)
    if drop_to is not None:
        entry._drop_privileges(*drop_to)
    exec(sys.argv[2])
""")


def _run(workdir, code: str, timeout_s: float = 60, **kwargs) -> str:
    process = _start(workdir, code, **kwargs)
    try:
        out, _ = process.communicate(timeout=timeout_s)
    finally:
        os.killpg(process.pid, signal.SIGKILL) if process.poll() is None else None
    return out


def test_no_secret_is_readable_whatever_its_name(workdir, monkeypatch):
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    for name in ("OPENAI_API_KEY", "MYSQL_PWD", "DATABASE_URL", "GITHUB_PAT", "PLAIN_NAME"):
        monkeypatch.setenv(name, secret)
    out = _run(workdir, textwrap.dedent("""
        import os, glob
        found = [repr(dict(os.environ))]
        for path in glob.glob("/proc/*/environ") + [f"/proc/{os.getppid()}/environ"]:
            try:
                found.append(open(path, "rb").read().decode(errors="replace"))
            except OSError as error:
                found.append(f"denied {path}")
        for path in glob.glob("/root/*") + glob.glob("/home/*/*"):
            found.append(path)
        print("\\n".join(found))
    """))
    assert "denied" in out or "PATH=" in out, out
    assert secret not in out


def test_nothing_is_written_outside_the_private_directory(workdir, tmp_path):
    marker = f"written-{uuid.uuid4().hex}"
    targets = [os.path.expanduser("~"), tempfile.gettempdir(), "/dev/shm", os.getcwd(),
               str(tmp_path), "/var/tmp"]
    out = _run(workdir, textwrap.dedent(f"""
        import os
        for target in {targets!r} + ["/sandbox"]:
            try:
                with open(os.path.join(target, "{marker}"), "w") as handle:
                    handle.write("x")
                print("wrote", target)
            except OSError as error:
                print("refused", target, error.strerror)
    """))
    assert "wrote /sandbox" in out, out  # the private directory
    assert (workdir / marker).exists()
    for target in targets:
        assert not os.path.exists(os.path.join(target, marker)), f"{target}: {out}"


def test_nothing_outlives_the_sandbox(workdir):
    marker = f"survivor-{uuid.uuid4().hex}"
    process = _start(workdir, textwrap.dedent(f"""
        import os, subprocess, sys, time
        nap = "import time; time.sleep(300)"
        subprocess.Popen([sys.executable, "-c", nap, "{marker}"], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", nap, "{marker}"])
            os._exit(0)
        print("started", flush=True)
        time.sleep(300)
    """))
    assert process.stdout.readline().strip() == "started"
    time.sleep(0.5)
    assert _processes_with(marker), "the survivors were never started"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    deadline = time.monotonic() + 5
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes_with(marker)


def _processes_with(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if marker.encode() in handle.read():
                        found.append(int(name))
            except OSError:
                continue
    return found


def test_engine_and_other_processes_are_invisible_and_unsignalable(workdir):
    out = _run(workdir, textwrap.dedent("""
        import json, os, signal
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        sent = []
        for pid in (os.getppid(), 1, -1):
            try:
                os.kill(pid, signal.SIGSTOP if pid != os.getpid() else 0)
                sent.append(pid)
            except OSError:
                pass
        print(json.dumps({"pids": pids, "uid": os.getuid()}))
    """))
    seen = json.loads(out.strip().splitlines()[-1])
    assert os.getpid() not in seen["pids"] or os.getpid() <= 3
    assert max(seen["pids"]) < 10, seen  # a fresh PID namespace: only its own few processes
    assert seen["uid"] == jail.NOBODY_UID
    # the engine (this test) was not stopped: it is running this line
    with open(f"/proc/{os.getpid()}/stat") as handle:
        assert handle.read().rsplit(")", 1)[1].split()[0] in ("R", "S")


def test_no_network(workdir):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        out = _run(workdir, textwrap.dedent(f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=3)
                print("connected")
            except OSError as error:
                print("unreachable", error)
        """))
    finally:
        server.close()
    assert "unreachable" in out, out


def test_other_workers_and_engine_files_are_invisible(workdir, tmp_path):
    sibling = tmp_path / "sibling-worker"
    sibling.mkdir()
    (sibling / "candidate_1.py").write_text("secret kernel")
    project_results = os.path.join(os.path.dirname(jail.__file__), "..", "results")
    out = _run(workdir, textwrap.dedent(f"""
        import os
        for path in ({str(sibling)!r}, {os.path.realpath(project_results)!r}, {os.path.realpath(os.path.join(os.path.dirname(jail.__file__), "..", "benchmarks"))!r}):
            print(path, os.path.exists(path))
    """))
    assert " True" not in out, out


@pytest.mark.slow
def test_cpu_limit_kills_a_spinner_without_the_engine(workdir):
    start = time.monotonic()
    process = _start(workdir, "while True:\n    pass\n", limits=jail.Limits(cpu_s=2))
    process.wait(timeout=30)  # nothing here kills it: the kernel does
    assert time.monotonic() - start < 20
    assert process.returncode != 0


def test_memory_limit_holds(workdir):
    out = _run(workdir, textwrap.dedent("""
        try:
            hoard = bytearray(3 << 30)
            print("allocated", len(hoard))
        except MemoryError:
            print("refused")
    """), limits=jail.Limits(memory_bytes=1 << 30))
    assert "refused" in out, out


def test_file_size_limit_holds(workdir):
    out = _run(workdir, textwrap.dedent("""
        import signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        try:
            with open("/tmp/big", "wb") as handle:
                handle.write(b"x" * (8 << 20))
            print("wrote")
        except OSError as error:
            print("refused", error.strerror)
    """), limits=jail.Limits(file_bytes=1 << 20))
    assert "refused" in out, out


def test_sandbox_verification_names_a_missing_bwrap(monkeypatch):
    monkeypatch.setenv("KERNELEVO_BWRAP", "/nonexistent/bwrap")
    with pytest.raises(jail.SandboxUnavailable, match="apt-get install bubblewrap"):
        jail.verify("interpreter")


def test_a_worker_outlives_the_thread_that_started_it(tmp_path):
    # bwrap's --die-with-parent follows the *thread* that started it: workers must not be
    # started from threads that come and go (a ThreadPoolExecutor's), or they die with them.
    import threading

    from fitness.device import DeviceInfo
    from fitness.processes.pool import WorkerPool

    pools = []
    starter = threading.Thread(target=lambda: pools.append(
        WorkerPool(DeviceInfo("interpreter", "cpu-interpreter"), 1, "candidate", str(tmp_path))))
    starter.start()
    starter.join()
    time.sleep(1.0)
    (pool,) = pools
    try:
        with pool.lease() as worker:
            reply = worker.request({"op": "load", "source": "def f(x):\n    return x\n",
                                    "entry_point": "f", "arity": 1}, timeout_s=60)
        assert reply["ok"], reply
    finally:
        pool.close()
