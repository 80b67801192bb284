"""Baseline: C[b] = A[b] @ B[b] in fp16 with an fp32 accumulator; tiles in grouped order per batch.

The design is chosen per shape from `CONFIGS` (see the launcher). Work units are (batch, output
tile) pairs. PERSISTENT=0 launches one program per unit; PERSISTENT=1 one per SM, each walking
units batch by batch in grouped order (GROUP_M row-blocks share each column-block of B while it
is in L2; 1 is plain row-major order; FLATTEN lets the compiler pipeline across a program's
tiles). TMA=1 loads tiles through 3-D TMA tensor descriptors (out-of-bounds reads, per batch,
come back as zeros: no masks); TMA needs 16-byte aligned rows, so an operand whose rows are not
is first copied into a row-aligned buffer (COPY=0 by row tiles, whose loads are as unaligned as
the rows; COPY=1 as one flat stream: the contiguous operand read with aligned vector loads, each
element stored at its place in the padded rows). EPILOGUE stores C through a descriptor (where
C's rows are aligned) as one tile, or as two half tiles, whose staging takes half the shared
memory. PAD_C=1 makes C's rows aligned where N alone would not: C is allocated with rows padded
to 16 bytes and returned as a view of its first N columns (a strided result), so TMA stores it.
Without TMA (ROCm, GPUs before sm_90) loads and stores go through masked pointers.
WARP_SPECIALIZE (with TMA loads) asks the compiler to split the K loop into producer and
consumer warps.
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
DESIGN = ("PERSISTENT", "TMA", "EPILOGUE", "WARP_SPECIALIZE", "COPY", "PAD_C")
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "short_k": (("BLOCK_M", 256), ("BLOCK_N", 128), ("BLOCK_K", 64), ("GROUP_M", 8), ("PERSISTENT", 1),
                ("TMA", 1), ("EPILOGUE", 1), ("FLATTEN", 1), ("WARP_SPECIALIZE", 0),
                ("COPY", 0), ("PAD_C", 0), ("num_warps", 8), ("num_stages", 3)),
    "long_k": (("BLOCK_M", 128), ("BLOCK_N", 256), ("BLOCK_K", 64), ("GROUP_M", 8), ("PERSISTENT", 1),
               ("TMA", 1), ("EPILOGUE", 1), ("FLATTEN", 1), ("WARP_SPECIALIZE", 0),
               ("COPY", 0), ("PAD_C", 0), ("num_warps", 8), ("num_stages", 3)),
    "unaligned_short_k": (("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 64), ("GROUP_M", 8), ("PERSISTENT", 1),
                          ("TMA", 1), ("EPILOGUE", 1), ("FLATTEN", 1), ("WARP_SPECIALIZE", 0),
                          ("COPY", 0), ("PAD_C", 0), ("num_warps", 8), ("num_stages", 3)),
    "unaligned_long_k": (("BLOCK_M", 128), ("BLOCK_N", 256), ("BLOCK_K", 64), ("GROUP_M", 8), ("PERSISTENT", 1),
                         ("TMA", 1), ("EPILOGUE", 1), ("FLATTEN", 1), ("WARP_SPECIALIZE", 0),
                         ("COPY", 1), ("PAD_C", 1), ("num_warps", 8), ("num_stages", 3)),
}
TMA_ALIGN_BYTES = 16
"""TMA's rule: the base and every stride but the last a multiple of 16 bytes."""
FLAT_COPY_BLOCK = 4096
"""Elements a program of the flat copy moves (COPY=1)."""
INTERPRETER_PROGRAMS = 2
"""Persistent grid on CPU tensors (the interpreter): enough programs that each walks several units."""


@triton.jit
def _batched_matmul_kernel(a_in, b_in, c_out,
                           batches, M, N, K,
                           stride_ab, stride_am, stride_ak,
                           stride_bb, stride_bk, stride_bn,
                           stride_cb, stride_cm, stride_cn,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr,
                           TMA: tl.constexpr, C_STORES: tl.constexpr, FLATTEN: tl.constexpr,
                           WARP_SPECIALIZE: tl.constexpr):
    # a_in, b_in: pointers, or 3-D TMA descriptors when TMA; c_out: a pointer when C_STORES == 0,
    # else a 3-D descriptor whose block is the C tile cut into C_STORES column slices.
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles = tiles_m * tiles_n
    for unit in tl.range(tl.program_id(axis=0), tiles * batches, tl.num_programs(axis=0), flatten=FLATTEN):
        batch = unit // tiles
        tile = unit % tiles
        tiles_in_group = GROUP_M * tiles_n
        first_m = (tile // tiles_in_group) * GROUP_M
        group_size_m = min(tiles_m - first_m, GROUP_M)
        tile_m = first_m + (tile % tiles_in_group) % group_size_m
        tile_n = (tile % tiles_in_group) // group_size_m
        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k_start in tl.range(0, K, BLOCK_K, warp_specialize=WARP_SPECIALIZE):
            if TMA:
                a_tile = a_in.load([batch, tile_m * BLOCK_M, k_start]).reshape(BLOCK_M, BLOCK_K)
                b_tile = b_in.load([batch, k_start, tile_n * BLOCK_N]).reshape(BLOCK_K, BLOCK_N)
            else:
                ks = k_start + tl.arange(0, BLOCK_K)
                # Pad with 0, the identity of the dot product's sum.
                a_tile = tl.load(a_in + batch * stride_ab + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                                 mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
                b_tile = tl.load(b_in + batch * stride_bb + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                                 mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a_tile, b_tile, acc)

        if C_STORES == 2:
            # Two half tiles, one after the other: half the shared memory stages each store.
            left, right = acc.to(c_out.dtype).reshape(BLOCK_M, 2, BLOCK_N // 2).permute(0, 2, 1).split()
            c_out.store([batch, tile_m * BLOCK_M, tile_n * BLOCK_N], left.reshape(1, BLOCK_M, BLOCK_N // 2))
            c_out.store([batch, tile_m * BLOCK_M, tile_n * BLOCK_N + BLOCK_N // 2],
                        right.reshape(1, BLOCK_M, BLOCK_N // 2))
        elif C_STORES == 1:
            c_out.store([batch, tile_m * BLOCK_M, tile_n * BLOCK_N],
                        acc.to(c_out.dtype).reshape(1, BLOCK_M, BLOCK_N))
        else:
            out_mask = (rows[:, None] < M) & (cols[None, :] < N)
            tl.store(c_out + batch * stride_cb + rows[:, None] * stride_cm + cols[None, :] * stride_cn,
                     acc.to(c_out.dtype.element_ty), mask=out_mask)


@triton.jit
def _copy_rows_kernel(src_ptr, dst_ptr,
                      rows, cols,
                      stride_sb, stride_sr, stride_sc,
                      stride_db, stride_dr,
                      BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # dst[z, r, c] = src[z, r, c] for c < cols (z: grid axis 2); dst's padding columns stay unwritten.
    z = tl.program_id(axis=2)
    r = tl.program_id(axis=0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(axis=1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(src_ptr + z * stride_sb + r[:, None] * stride_sr + c[None, :] * stride_sc, mask=mask, other=0.0)
    tl.store(dst_ptr + z * stride_db + r[:, None] * stride_dr + c[None, :], x, mask=mask)


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
    """Returns the CONFIGS bucket of a product [M, K] @ [K, N] per batch ("unaligned_": fp16
    rows of A or B not 16-byte aligned, so TMA loads a row-aligned copy)."""
    depth = "short_k" if K <= 256 else "long_k"
    if K % 8 or N % 8:
        return "unaligned_" + depth
    return depth


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
    """Returns a copy of 3-D `x` whose rows start 16-byte aligned, made as one flat stream if
    `flat` and `x` is contiguous, else by row tiles."""
    batch, rows, cols = x.shape
    out = _row_aligned_empty(x.shape, x)
    if flat and x.is_contiguous():
        _copy_flat_kernel[(triton.cdiv(x.numel(), FLAT_COPY_BLOCK),)](
            x, out, x.numel(), cols, out.stride(1), BLOCK_SIZE=FLAT_COPY_BLOCK, num_warps=8, num_stages=1)
        return out
    grid = lambda meta: (triton.cdiv(rows, meta["BLOCK_R"]), triton.cdiv(cols, meta["BLOCK_C"]), batch)
    _copy_rows_kernel[grid](x, out, rows, cols, x.stride(0), x.stride(1), x.stride(2), out.stride(0), out.stride(1),
                            BLOCK_R=16, BLOCK_C=256, num_warps=4, num_stages=1)
    return out


def _descriptor(x: torch.Tensor, block_rows: int, block_cols: int, flat_copy: bool) -> TensorDescriptor:
    """Returns a 3-D TMA descriptor of `x` (of a row-aligned copy if its rows are not aligned)."""
    source = x if _tma_aligned(x) else _row_aligned_copy(x, flat_copy)
    return TensorDescriptor(source, list(x.shape), [source.stride(0), source.stride(1), 1],
                            [1, block_rows, block_cols])


def _programs(device: torch.device, units: int, persistent: int) -> int:
    """Returns the grid: one program per unit, or per SM (CU on ROCm) when persistent."""
    if not persistent:
        return units
    if device.type == "cpu":
        return min(units, INTERPRETER_PROGRAMS)
    return min(units, torch.cuda.get_device_properties(device).multi_processor_count)


def batched_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    assert a.ndim == 3 and b.ndim == 3, f"expected 3-D inputs, got {tuple(a.shape)}, {tuple(b.shape)}"
    assert a.shape[0] == b.shape[0] and a.shape[2] == b.shape[1], \
        f"shapes do not multiply batch-wise: {tuple(a.shape)} @ {tuple(b.shape)}"
    assert a.dtype == b.dtype == torch.float16, f"expected float16 inputs, got {a.dtype}, {b.dtype}"
    batch, M, K = a.shape
    N = b.shape[2]
    config = dict(CONFIGS[_bucket(M, N, K)])
    block_m, block_n, block_k = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]
    tma_device = _tma_available(a.device)
    if config["PAD_C"] and tma_device:
        c = _row_aligned_empty((batch, M, N), a)
    else:
        c = torch.empty((batch, M, N), dtype=a.dtype, device=a.device)
    tma = bool(config["TMA"]) and tma_device
    # The compiler splits warps only for TMA loads, and then cannot take TMA stores: stores via pointers.
    warp_specialize = bool(config["WARP_SPECIALIZE"]) and tma
    c_stores = config["EPILOGUE"] if tma_device and not warp_specialize and _tma_aligned(c) else 0
    a_in, b_in, c_out = a, b, c
    if tma:
        flat = bool(config["COPY"])
        a_in, b_in = _descriptor(a, block_m, block_k, flat), _descriptor(b, block_k, block_n, flat)
    if c_stores:
        c_out = TensorDescriptor(c, [batch, M, N], [c.stride(0), c.stride(1), 1],
                                 [1, block_m, block_n // c_stores])
    units = batch * triton.cdiv(M, block_m) * triton.cdiv(N, block_n)
    _batched_matmul_kernel[(_programs(a.device, units, config["PERSISTENT"]),)](
        a_in, b_in, c_out, batch, M, N, K,
        a.stride(0), a.stride(1), a.stride(2),
        b.stride(0), b.stride(1), b.stride(2),
        c.stride(0), c.stride(1), c.stride(2),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=config["GROUP_M"],
        TMA=tma, C_STORES=c_stores, FLATTEN=config["FLATTEN"], WARP_SPECIALIZE=warp_specialize,
        num_warps=config["num_warps"], num_stages=config["num_stages"])
    return c
