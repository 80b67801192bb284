"""Test set-up. TRITON_INTERPRET must be set before any @triton.jit is decorated."""

import os

os.environ["TRITON_INTERPRET"] = "1"
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: campaign-level or sweep tests; `make test-fast` leaves them out")


@pytest.fixture(scope="session")
def shared_ray():
    """One local Ray (loopback only) for every test that needs actors; shut down at the end."""
    import ray

    if ray.is_initialized():
        yield ray
        return
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    yield ray
    ray.shutdown()


from fitness_limits import FITNESS_TEST_LIMITS  # noqa: E402


@pytest.fixture(scope="session")
def fitness_evaluator():
    """One interpreter Evaluator shared by the fitness tests (a worker starts in seconds)."""
    from fitness import Evaluator, Settings

    with Evaluator(Settings(device="interpreter", workers=2,
                            timeouts=FITNESS_TEST_LIMITS)) as evaluator:
        yield evaluator


@pytest.fixture(scope="session")
def ungated_evaluator():
    """An interpreter Evaluator with the static gate off: for tests of what the sandbox,
    the worker and the checker catch on their own (code the gate would stop first)."""
    from fitness import Evaluator, Settings

    with Evaluator(Settings(device="interpreter", workers=2, timeouts=FITNESS_TEST_LIMITS,
                            static_gate=False)) as evaluator:
        yield evaluator


@pytest.fixture(scope="session")
def interpreter_fitness(shared_ray):
    """One interpreter FitnessActor (2 workers) shared by the campaign tests: its workers'
    cold start is paid once per session, not once per campaign."""
    from fitness import Settings, actor

    actors = actor.start_actors(Settings(device="interpreter", workers=2))
    yield actors
    shared_ray.get([handle.shutdown.remote() for handle in actors], timeout=120)
    for handle in actors:
        shared_ray.kill(handle)
