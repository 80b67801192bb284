"""The built-in suite: one module per task, each defining TASK; kernels/ holds the baselines."""

from benchmarks.builtin import (
    batched_matmul,
    bias_gelu,
    cross_entropy,
    cumsum,
    embedding,
    flash_attention,
    flip2d,
    layernorm,
    matmul,
    rmsnorm,
    row_argmax,
    row_sum,
    softmax,
    transpose,
    vector_add,
)

TASKS = (
    vector_add.TASK,
    bias_gelu.TASK,
    flip2d.TASK,
    transpose.TASK,
    embedding.TASK,
    row_sum.TASK,
    row_argmax.TASK,
    softmax.TASK,
    rmsnorm.TASK,
    layernorm.TASK,
    cumsum.TASK,
    cross_entropy.TASK,
    matmul.TASK,
    batched_matmul.TASK,
    flash_attention.TASK,
)
"""Ordered roughly by difficulty: elementwise, data movement, reductions, scans, matmuls, attention."""
