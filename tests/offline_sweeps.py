"""Sweep files of small offline campaigns on vector_add under the interpreter, seeded with the
baseline, for the tests that run a real sweep."""


def sweep_toml(name: str, grid: str, search: str = "") -> str:
    """Returns a sweep file named `name` with the `[grid]` lines `grid` and extra
    `[base.search]` lines `search`."""
    return f"""
[sweep]
name = "{name}"
[base.campaign]
name = "{name}"
tasks = ["vector_add"]
seed_with_baseline = true
[base.search]
population = 2
offspring = 2
migration_interval = 0
{search}
[base.operators]
mode = "offline"
[base.fitness]
device = "interpreter"
workers = 1
[grid]
{grid}
"""
