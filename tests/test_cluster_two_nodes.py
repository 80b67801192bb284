"""Beyond one machine: `evo run --address` on a real two-node Ray cluster, started on loopback.

The cluster is built the way the README's cluster section tells a user to build theirs, but
on loopback: a CPU head (`--num-gpus 0`) and a second node that joins it as the fitness node
(`--num-gpus 1`), both with Ray's token authentication on (one token, `RAY_AUTH_MODE=token`),
`evo run --address` driving the campaign from the head's machine. This machine has
no GPU, so the second node's GPU is a Ray resource only and the campaign asks for the
interpreter: its FitnessActor goes to the GPU node holding no GPU, and every row says
`interpreter`. Where each actor ran is read back from Ray's actor table after the run.

The cluster is this test's own: its own port, its own temp dirs, each node in its own
process session, everything on loopback. It is stopped by signalling its own processes
(`ray stop` would stop every Ray of the machine, the test session's shared one included),
and every process that inherited the cluster's marker variable must be gone at the end.
"""

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # a two-node Ray cluster: `make test-fast` leaves it out

START_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 120.0
STOP_GRACE_S = 5.0
MARKER = "KERNELEVO_TEST_CLUSTER"
GENERATIONS, ISLANDS, OFFSPRING = 2, 2, 2

CONFIG = f"""
[campaign]
name = "two_nodes"
tasks = ["vector_add"]
seed = 11

[search]
generations = {GENERATIONS}
population = 2
offspring = {OFFSPRING}
islands = {ISLANDS}
migration_interval = 0

[operators]
mode = "offline"

[fitness]
device = "interpreter"
workers = 1
"""

# RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 keeps every node on loopback (Ray binds 127.0.0.1 and
# never swaps it for the machine's address), but `ray start --address` then refuses to join a
# cluster at all. The joining node is `ray start` with only that refusal lifted.
_JOINING_RAY = """
import sys, types
from ray._private import ray_constants
from ray.scripts import scripts

scripts.ray_constants = types.SimpleNamespace(**{**vars(ray_constants), "ENABLE_RAY_CLUSTER": True})
sys.argv[0] = "ray"
scripts.main()
"""
_HEAD_RAY = "from ray.scripts.scripts import main; main()"

# Runs as a second driver (this process may already hold the session's local Ray): waits for
# both nodes, or reads which node each actor ran on. Ray's public state API needs the
# dashboard, which a minimal Ray install has not; the GCS actor table is there regardless.
_PROBE = """
import json, sys, time
import ray
from ray._private import state

ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
deadline = time.monotonic() + float(sys.argv[3])
while sys.argv[2] == "nodes" and len([n for n in ray.nodes() if n["Alive"]]) < 2:
    assert time.monotonic() < deadline, "the second node never joined: %s" % ray.nodes()
    time.sleep(0.5)
names = {n["NodeID"]: next(r for r in ("node_a", "node_b") if r in n["Resources"])
         for n in ray.nodes() if n["Alive"]}
actors = [{"class": a["ActorClassName"], "node": names.get(a["Address"]["NodeID"]),
           "state": a["State"]} for a in state.actors().values()]
print(json.dumps({"nodes": sorted(names.values()), "actors": actors}))
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Cluster:
    """A head and one joining node, each `ray start --block` in its own process session."""

    def __init__(self, root: Path):
        self.root = root
        self.address = f"127.0.0.1:{_free_port()}"
        self.marker = secrets.token_hex(8)
        (root / "tmp").mkdir()
        env = {name: value for name, value in os.environ.items()
               if not name.startswith("RAY_AUTH") and name != "RAY_ADDRESS"}
        env.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0",
                   RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32),
                   TMPDIR=str(root / "tmp"), **{MARKER: self.marker})
        self.env = env
        self.nodes: list[subprocess.Popen] = []

    def start(self) -> None:
        common = ["--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
        port = self.address.rsplit(":", 1)[1]
        self._node("a", _HEAD_RAY, ["--head", f"--port={port}", "--include-dashboard=false",
                                    *common, "--num-cpus=2", "--num-gpus=0",
                                    '--resources={"node_a": 1}'])
        self._node("b", _JOINING_RAY, [f"--address={self.address}", *common, "--num-cpus=1",
                                       "--num-gpus=1", '--resources={"node_b": 1}'])
        assert self.probe("nodes")["nodes"] == ["node_a", "node_b"]

    def _node(self, name: str, ray_cli: str, args: list[str]) -> None:
        log = open(self.root / f"node_{name}.log", "w")
        self.nodes.append(subprocess.Popen(
            [sys.executable, "-c", ray_cli, "start", f"--temp-dir={self.root / name}", *args],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        log.close()

    def probe(self, what: str) -> dict:
        done = subprocess.run([sys.executable, "-c", _PROBE, self.address, what,
                               str(START_TIMEOUT_S)], env=self.env, capture_output=True,
                              text=True, timeout=START_TIMEOUT_S + 30)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    def evo(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "evo", *args], env=self.env,
                              capture_output=True, text=True, timeout=RUN_TIMEOUT_S)

    def stop(self) -> None:
        """SIGTERM to each `ray start` (the joining node first), which stops its node's
        processes; SIGKILL to whatever of the cluster is still there after a grace period."""
        for node in reversed(self.nodes):
            node.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.25)
        for pid in self.leftovers():
            _kill(pid)
        for node in self.nodes:
            node.wait(timeout=STOP_GRACE_S)

    def listening(self) -> set[str]:
        """Returns the local addresses the cluster's processes listen on (TCP)."""
        ours = {f"pid={pid}," for pid in self.leftovers()}
        table = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, timeout=30)
        return {line.split()[3].rsplit(":", 1)[0] for line in table.stdout.splitlines()
                if any(pid in line for pid in ours)}

    def leftovers(self) -> list[int]:
        """Returns the live processes that carry this cluster's marker or run from its dirs:
        Ray's own (they inherit the environment) and sandboxed workers (whose environment is
        an allowlist, but whose command line names their directory under TMPDIR)."""
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
                environ = (proc / "environ").read_bytes()
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue  # gone meanwhile, or not ours to read
            if (f"{MARKER}={self.marker}".encode() in environ
                    or str(self.root).encode() in cmdline):
                found.append(int(proc.name))
        return found


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture
def cluster(tmp_path_factory):
    # A short root: Ray's socket paths under --temp-dir must fit in 107 bytes.
    nodes = _Cluster(tmp_path_factory.mktemp("ray2n"))
    try:
        yield nodes
    finally:
        nodes.stop()  # the test stops it itself and checks; this is for a failure on the way


def test_campaign_spreads_over_two_nodes_and_leaves_nothing_running(cluster, tmp_path):
    cluster.start()
    addresses = cluster.listening()
    assert addresses and addresses <= {"127.0.0.1", "[::ffff:127.0.0.1]"}, addresses
    config = tmp_path / "two_nodes.toml"
    config.write_text(CONFIG)
    out = tmp_path / "run"

    run = cluster.evo("run", str(config), "--out", str(out), "--address", cluster.address)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    placed = cluster.probe("actors")["actors"]
    fitness = [actor["node"] for actor in placed if actor["class"] == "FitnessService"]
    islands = [actor["node"] for actor in placed if actor["class"] == "Population"]
    assert fitness == ["node_b"], placed  # the GPU node scores, holding no GPU
    assert islands == ["node_a"] * ISLANDS, placed  # islands stay on the CPU head
    assert all(actor["state"] == "DEAD" for actor in placed), placed  # the run stopped them

    rows = pd.read_parquet(out / "evaluations")
    assert len(rows) == ISLANDS * (1 + GENERATIONS * OFFSPRING)  # a seed row per island
    per_cell = rows.groupby(["island", "generation"]).size()
    assert per_cell.to_dict() == {(island, generation): OFFSPRING if generation else 1
                                  for island in range(ISLANDS)
                                  for generation in range(GENERATIONS + 1)}
    assert (rows.task == "vector_add").all() and (rows.backend == "interpreter").all()
    assert rows.candidate_id.notna().all() and rows.stage_reached.notna().all()
    assert rows.correct.notna().all() and rows.sandboxed.all()  # bwrap ran on the joined node
    assert json.loads((out / "campaign.json").read_text())["device"]["backend"] == "interpreter"

    cluster.stop()
    assert cluster.leftovers() == []
    assert all(node.poll() is not None for node in cluster.nodes)
