"""The FitnessActor under a real local Ray: concurrent evaluations, batches, stats."""

import pytest
import ray

from benchmarks.registry import builtin
from evo.records import make_candidate
from fitness import Settings
from fitness.actor import start_actors

pytestmark = pytest.mark.slow  # a real local Ray: `make test-fast` leaves it out

GET_TIMEOUT_S = 240
VECTOR_ADD = builtin().get("vector_add")


def test_actor_scores_concurrent_evaluations_and_batches(shared_ray):
    (actor,) = start_actors(Settings(device="interpreter", workers=2,
                                      timeouts={"compile": 20, "check": 20}))
    try:
        good = make_candidate("vector_add", VECTOR_ADD.baseline_source)
        wrong = make_candidate("vector_add", VECTOR_ADD.baseline_source.replace("x + y", "x - y"))
        crash = make_candidate("vector_add", "import os\ndef vector_add(x, y):\n    os._exit(1)\n")
        pending = [actor.evaluate.remote(VECTOR_ADD, c) for c in (good, wrong, crash)]
        done = []
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=GET_TIMEOUT_S)
            assert ready, "an evaluation did not return in time"
            done.extend(ray.get(ready, timeout=GET_TIMEOUT_S))
        by_id = {e.candidate_id: e for e in done}
        assert by_id[good.id].correct and by_id[good.id].stage_reached == "timed"
        assert by_id[wrong.id].failure_kind == "mismatch"
        assert by_id[crash.id].failure_kind == "policy_violation"  # os is not for kernels

        batch = ray.get(actor.evaluate_batch.remote([(VECTOR_ADD, good), (VECTOR_ADD, wrong)]),
                        timeout=GET_TIMEOUT_S)
        assert sorted(e.candidate_id for e in batch) == sorted([good.id, wrong.id])

        stats = ray.get(actor.stats.remote(), timeout=GET_TIMEOUT_S)
        assert stats["evaluated"] == 5 and stats["device_ok"] and stats["in_flight"] == 0
        assert stats["busy_s"] > 0 and stats["uptime_s"] >= stats["busy_s"]
    finally:
        ray.get(actor.shutdown.remote(), timeout=GET_TIMEOUT_S)
        ray.kill(actor)
