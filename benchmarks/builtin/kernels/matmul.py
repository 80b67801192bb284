"""Baseline: C = A @ B in fp16 with an fp32 accumulator; tiles visited in grouped order for L2 reuse.

The design is chosen per shape from `CONFIGS` (see the launcher). Work units are (output tile, K
slice) pairs. PERSISTENT=0 launches one program per unit; PERSISTENT=1 launches one per SM, each
walking units in grouped order (GROUP_M row-blocks share each column-block of B while it is in
L2; FLATTEN lets the compiler pipeline across a program's tiles). TMA=1 loads tiles through TMA
tensor descriptors (out-of-bounds reads come back as zeros, so no masks); TMA needs 16-byte
aligned rows, so an operand whose rows are not is first copied into a row-aligned buffer (COPY=0
by row tiles, whose loads are as unaligned as the rows; COPY=1 as one flat stream: the
contiguous operand read with aligned vector loads, each element stored at its place in the
padded rows). EPILOGUE stores C through a descriptor (where C's rows are aligned) as one tile,
or as two half tiles, whose staging takes half the shared memory and so leaves room for one more
pipeline stage. PAD_C=1 makes C's rows aligned where N alone would not: C is allocated with rows
padded to 16 bytes and returned as a view of its first N columns (a strided result), so TMA
stores it. Without TMA (ROCm, GPUs before sm_90) loads and stores go through masked pointers.
WARP_SPECIALIZE (with TMA loads) asks the compiler to split the K loop into producer and
consumer warps. SPLIT_K > 1 cuts the K loop into slices computed into an fp32 workspace, then
summed in a fixed order and rounded once (deterministic; more parallelism for long K).
"""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

KNOBS = {
    "BLOCK_M": (16, 32, 64, 128, 256),
    "BLOCK_N": (16, 32, 64, 128, 256),
    "BLOCK_K": (16, 32, 64, 128),
    "GROUP_M": (1, 2, 4, 8, 16),
    "SPLIT_K": (1, 2, 4, 8, 16),
    "PERSISTENT": (0, 1),  # 1: one program per SM walks the work units
    "TMA": (0, 1),  # 1: TMA descriptor loads where the device has them
    "EPILOGUE": (0, 1, 2),  # C stored by 0: masked stores, 1: a TMA store, 2: TMA stores of two half tiles
    "FLATTEN": (0, 1),  # 1: pipeline across a persistent program's tiles
    "WARP_SPECIALIZE": (0, 1),  # 1: producer and consumer warps in the K loop (TMA devices)
    "COPY": (0, 1),  # an unaligned operand's copy for TMA: 0 by row tiles, 1 as one flat stream
    "PAD_C": (0, 1),  # 1: C's rows padded to 16 bytes (TMA stores where N is unaligned), returned as a view
    "num_warps": (2, 4, 8),
    "num_stages": (1, 2, 3, 4, 5),
}
DESIGN = ("SPLIT_K", "PERSISTENT", "TMA", "EPILOGUE", "WARP_SPECIALIZE", "COPY", "PAD_C")
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "small": (("BLOCK_M", 64), ("BLOCK_N", 64), ("BLOCK_K", 64), ("GROUP_M", 8), ("SPLIT_K", 1),
              ("PERSISTENT", 1), ("TMA", 1), ("EPILOGUE", 1), ("FLATTEN", 0), ("WARP_SPECIALIZE", 0),
              ("COPY", 0), ("PAD_C", 0), ("num_warps", 4), ("num_stages", 3)),
    "k_heavy": (("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 64), ("GROUP_M", 8), ("SPLIT_K", 4),
                ("PERSISTENT", 0), ("TMA", 1), ("EPILOGUE", 1), ("FLATTEN", 0), ("WARP_SPECIALIZE", 0),
                ("COPY", 0), ("PAD_C", 0), ("num_warps", 8), ("num_stages", 4)),
    "unaligned": (("BLOCK_M", 128), ("BLOCK_N", 256), ("BLOCK_K", 64), ("GROUP_M", 8), ("SPLIT_K", 1),
                  ("PERSISTENT", 0), ("TMA", 1), ("EPILOGUE", 1), ("FLATTEN", 0), ("WARP_SPECIALIZE", 0),
                  ("COPY", 0), ("PAD_C", 1), ("num_warps", 8), ("num_stages", 3)),
    "medium": (("BLOCK_M", 128), ("BLOCK_N", 256), ("BLOCK_K", 64), ("GROUP_M", 8), ("SPLIT_K", 1),
               ("PERSISTENT", 0), ("TMA", 1), ("EPILOGUE", 1), ("FLATTEN", 0), ("WARP_SPECIALIZE", 0),
               ("COPY", 0), ("PAD_C", 0), ("num_warps", 8), ("num_stages", 3)),
    "large": (("BLOCK_M", 128), ("BLOCK_N", 256), ("BLOCK_K", 64), ("GROUP_M", 8), ("SPLIT_K", 1),
              ("PERSISTENT", 1), ("TMA", 1), ("EPILOGUE", 1), ("FLATTEN", 0), ("WARP_SPECIALIZE", 0),
              ("COPY", 0), ("PAD_C", 0), ("num_warps", 8), ("num_stages", 3)),
    "huge": (("BLOCK_M", 128), ("BLOCK_N", 256), ("BLOCK_K", 64), ("GROUP_M", 8), ("SPLIT_K", 1),
             ("PERSISTENT", 1), ("TMA", 1), ("EPILOGUE", 1), ("FLATTEN", 0), ("WARP_SPECIALIZE", 0),
             ("COPY", 0), ("PAD_C", 0), ("num_warps", 8), ("num_stages", 3)),
}
TMA_ALIGN_BYTES = 16
"""TMA's rule: the base and every stride but the last a multiple of 16 bytes."""
FLAT_COPY_BLOCK = 4096
"""Elements a program of the flat copy moves (COPY=1)."""
INTERPRETER_PROGRAMS = 2
"""Persistent grid on CPU tensors (the interpreter): enough programs that each walks several units."""


@triton.jit
def _matmul_kernel(a_in, b_in, c_out,
                   M, N, K,
                   stride_am, stride_ak,
                   stride_bk, stride_bn,
                   stride_cs, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
                   TMA: tl.constexpr, C_STORES: tl.constexpr, FLATTEN: tl.constexpr,
                   WARP_SPECIALIZE: tl.constexpr):
    # a_in, b_in: pointers, or TMA descriptors when TMA; c_out: a pointer when C_STORES == 0, else
    # a descriptor whose block is the C tile cut into C_STORES column slices.
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles = tiles_m * tiles_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    tiles_per_split = tl.cdiv(k_tiles, SPLIT_K)
    for unit in tl.range(tl.program_id(axis=0), tiles * SPLIT_K, tl.num_programs(axis=0), flatten=FLATTEN):
        # Grouped ordering within each K slice: units of one slice run side by side.
        split = unit // tiles
        tile = unit % tiles
        tiles_in_group = GROUP_M * tiles_n
        first_m = (tile // tiles_in_group) * GROUP_M
        group_size_m = min(tiles_m - first_m, GROUP_M)
        tile_m = first_m + (tile % tiles_in_group) % group_size_m
        tile_n = (tile % tiles_in_group) // group_size_m
        first_k_tile = split * tiles_per_split
        last_k_tile = tl.minimum(first_k_tile + tiles_per_split, k_tiles)
        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k_tile in tl.range(first_k_tile, last_k_tile, warp_specialize=WARP_SPECIALIZE):
            if TMA:
                a = a_in.load([tile_m * BLOCK_M, k_tile * BLOCK_K])
                b = b_in.load([k_tile * BLOCK_K, tile_n * BLOCK_N])
            else:
                ks = k_tile * BLOCK_K + tl.arange(0, BLOCK_K)
                # Pad with 0, the identity of the dot product's sum.
                a = tl.load(a_in + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                            mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
                b = tl.load(b_in + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                            mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)

        # SPLIT_K == 1: c_out is the output; else an fp32 workspace with one [M, N] slice per split.
        if C_STORES == 2:
            # Two half tiles, one after the other: half the shared memory stages each store.
            left, right = acc.to(c_out.dtype).reshape(BLOCK_M, 2, BLOCK_N // 2).permute(0, 2, 1).split()
            c_out.store([tile_m * BLOCK_M, tile_n * BLOCK_N], left)
            c_out.store([tile_m * BLOCK_M, tile_n * BLOCK_N + BLOCK_N // 2], right)
        elif C_STORES == 1:
            c_out.store([tile_m * BLOCK_M, tile_n * BLOCK_N], acc.to(c_out.dtype))
        else:
            c_mask = (rows[:, None] < M) & (cols[None, :] < N)
            tl.store(c_out + split * stride_cs + rows[:, None] * stride_cm + cols[None, :] * stride_cn,
                     acc.to(c_out.dtype.element_ty), mask=c_mask)


@triton.jit
def _sum_splits_kernel(partial_ptr, c_ptr,
                       n_elements, n_splits,
                       BLOCK_SIZE: tl.constexpr):
    # partial is a contiguous [n_splits, M, N] fp32 workspace, c a contiguous [M, N] output.
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for split in range(0, n_splits):
        # Pad with 0, the identity of +; masked lanes are never stored.
        acc += tl.load(partial_ptr + split * n_elements + offsets, mask=mask, other=0.0)
    tl.store(c_ptr + offsets, acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _copy_rows_kernel(src_ptr, dst_ptr,
                      rows, cols,
                      stride_sr, stride_sc, stride_dr,
                      BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # dst[r, c] = src[r, c] for c < cols; dst's padding columns stay unwritten (never read).
    r = tl.program_id(axis=0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(axis=1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(src_ptr + r[:, None] * stride_sr + c[None, :] * stride_sc, mask=mask, other=0.0)
    tl.store(dst_ptr + r[:, None] * stride_dr + c[None, :], x, mask=mask)


@triton.jit
def _copy_flat_kernel(src_ptr, dst_ptr,
                      n_elements, cols, stride_dr,
                      BLOCK_SIZE: tl.constexpr):
    # src is contiguous, read as n_elements in a row; element i of row r = i // cols goes to
    # dst[r, i % cols] (dst's rows stride_dr apart, the batches' rows one after another).
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(src_ptr + offsets, mask=mask)
    rows = offsets // cols
    tl.store(dst_ptr + rows * stride_dr + (offsets - rows * cols), x, mask=mask)


def _bucket(M: int, N: int, K: int) -> str:
    """Returns the CONFIGS bucket of an M x K @ K x N product ("unaligned": fp16 rows of A or B
    not 16-byte aligned, so TMA loads a row-aligned copy)."""
    if M * N <= 512 * 512:
        return "small"
    if K >= 4 * max(M, N):
        return "k_heavy"
    if K % 8 or N % 8:
        return "unaligned"
    work = M * N * K
    return "medium" if work < 4096 ** 3 else "large" if work < 8192 ** 3 else "huge"


def _tma_available(device: torch.device) -> bool:
    """True where TMA descriptors work: NVIDIA sm_90 and newer, and the interpreter (CPU
    tensors), which emulates them; not ROCm, whose GPUs have no TMA."""
    if device.type == "cpu":
        return True
    return torch.version.hip is None and torch.cuda.get_device_capability(device)[0] >= 9


def _tma_aligned(x: torch.Tensor) -> bool:
    """True if a TMA descriptor may address `x` as it is (see TMA_ALIGN_BYTES)."""
    return x.stride(-1) == 1 and x.data_ptr() % TMA_ALIGN_BYTES == 0 and all(
        stride > 0 and stride * x.element_size() % TMA_ALIGN_BYTES == 0 for stride in x.stride()[:-1])


def _row_aligned_empty(shape: tuple, like: torch.Tensor) -> torch.Tensor:
    """Returns an empty tensor of `shape` whose rows start 16-byte aligned: a view of the
    first shape[-1] columns of one whose rows are padded."""
    per_row = TMA_ALIGN_BYTES // like.element_size()
    padded = torch.empty((*shape[:-1], triton.cdiv(shape[-1], per_row) * per_row), dtype=like.dtype,
                         device=like.device)
    return padded[..., :shape[-1]]


def _row_aligned_copy(x: torch.Tensor, flat: bool) -> torch.Tensor:
    """Returns a copy of 2-D `x` whose rows start 16-byte aligned, made as one flat stream if
    `flat` and `x` is contiguous, else by row tiles."""
    rows, cols = x.shape
    out = _row_aligned_empty(x.shape, x)
    if flat and x.is_contiguous():
        _copy_flat_kernel[(triton.cdiv(x.numel(), FLAT_COPY_BLOCK),)](
            x, out, x.numel(), cols, out.stride(0), BLOCK_SIZE=FLAT_COPY_BLOCK, num_warps=8, num_stages=1)
        return out
    grid = lambda meta: (triton.cdiv(rows, meta["BLOCK_R"]), triton.cdiv(cols, meta["BLOCK_C"]))
    _copy_rows_kernel[grid](x, out, rows, cols, x.stride(0), x.stride(1), out.stride(0),
                            BLOCK_R=16, BLOCK_C=256, num_warps=4, num_stages=1)
    return out


def _descriptor(x: torch.Tensor, block_rows: int, block_cols: int, flat_copy: bool) -> TensorDescriptor:
    """Returns a TMA descriptor of 2-D `x` (of a row-aligned copy if its rows are not aligned)."""
    source = x if _tma_aligned(x) else _row_aligned_copy(x, flat_copy)
    return TensorDescriptor(source, list(x.shape), [source.stride(0), 1], [block_rows, block_cols])


def _programs(device: torch.device, units: int, persistent: int) -> int:
    """Returns the grid: one program per unit, or per SM (CU on ROCm) when persistent."""
    if not persistent:
        return units
    if device.type == "cpu":
        return min(units, INTERPRETER_PROGRAMS)
    return min(units, torch.cuda.get_device_properties(device).multi_processor_count)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    assert a.ndim == 2 and b.ndim == 2, f"expected 2-D inputs, got {tuple(a.shape)}, {tuple(b.shape)}"
    assert a.shape[1] == b.shape[0], f"inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}"
    assert a.dtype == b.dtype == torch.float16, f"expected float16 inputs, got {a.dtype}, {b.dtype}"
    M, K = a.shape
    N = b.shape[1]
    config = dict(CONFIGS[_bucket(M, N, K)])
    block_m, block_n, block_k, split_k = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"], config["SPLIT_K"]
    tma_device = _tma_available(a.device)
    # The split sums are stored through pointers into a contiguous C: padded rows only without them.
    if config["PAD_C"] and tma_device and split_k == 1:
        c = _row_aligned_empty((M, N), a)
    else:
        c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    target = c if split_k == 1 else torch.empty((split_k, M, N), dtype=torch.float32, device=a.device)
    split_stride = 0 if split_k == 1 else target.stride(0)
    tma = bool(config["TMA"]) and tma_device
    # The compiler splits warps only for TMA loads, and then cannot take TMA stores: stores via pointers.
    warp_specialize = bool(config["WARP_SPECIALIZE"]) and tma
    c_stores = config["EPILOGUE"] if tma_device and split_k == 1 and not warp_specialize and _tma_aligned(c) else 0
    a_in, b_in, c_out = a, b, target
    if tma:
        flat = bool(config["COPY"])
        a_in, b_in = _descriptor(a, block_m, block_k, flat), _descriptor(b, block_k, block_n, flat)
    if c_stores:
        c_out = TensorDescriptor(c, [M, N], [c.stride(0), 1], [block_m, block_n // c_stores])
    units = triton.cdiv(M, block_m) * triton.cdiv(N, block_n) * split_k
    _matmul_kernel[(_programs(a.device, units, config["PERSISTENT"]),)](
        a_in, b_in, c_out, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        split_stride, target.stride(-2), target.stride(-1),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
        GROUP_M=config["GROUP_M"], SPLIT_K=split_k,
        TMA=tma, C_STORES=c_stores, FLATTEN=config["FLATTEN"],
        WARP_SPECIALIZE=warp_specialize,
        num_warps=config["num_warps"], num_stages=config["num_stages"])
    if split_k > 1:
        _sum_splits_kernel[(triton.cdiv(M * N, 1024),)](target, c, M * N, split_k,
                                                         BLOCK_SIZE=1024, num_warps=4, num_stages=1)
    return c
