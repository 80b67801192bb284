"""The built-in suite: one module per task, each defining TASK; kernels/ holds the baselines."""

from benchmarks.builtin import vector_add

TASKS = (
    vector_add.TASK,
)
