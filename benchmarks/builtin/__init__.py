"""The built-in suite: one module per task, each defining TASK; kernels/ holds the baselines."""

import importlib

TASK_MODULES = (
    "vector_add", "bias_gelu", "flip2d", "transpose", "embedding", "row_sum", "row_argmax", "softmax",
    "rmsnorm", "layernorm", "cumsum", "cross_entropy", "matmul", "batched_matmul", "flash_attention",
)
"""Ordered roughly by difficulty: elementwise, data movement, reductions, scans, matmuls, attention."""

TASKS = tuple(importlib.import_module(f"{__name__}.{name}").TASK for name in TASK_MODULES)
