"""Compact binary form of a relevance map: float16 scores and delta-coded offsets.

Layout (little-endian): magic b"RM", version (u8), offset width (u8: 2 or 4), n_tokens (u32),
then n float16 scores, n token starts as deltas from the previous start, n token lengths.
With 2-byte offsets (the usual case: tokens are short and close together) a token costs
6 bytes; 4-byte offsets (10 bytes a token) are used only when a delta or length needs them.
"""

import struct

import numpy as np

MAGIC = b"RM"
VERSION = 1
_HEADER = struct.Struct("<2sBBI")


def encode_map(offsets: np.ndarray, scores: np.ndarray) -> bytes:
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    scores = np.asarray(scores, dtype=np.float32)
    if len(offsets) != len(scores):
        raise ValueError(f"{len(offsets)} offsets but {len(scores)} scores")
    starts, ends = offsets[:, 0], offsets[:, 1]
    lengths = ends - starts
    deltas = np.diff(starts, prepend=0)
    if len(offsets) and (deltas.min() < 0 or lengths.min() < 0):
        raise ValueError("offsets must be sorted by start and have end >= start")
    widest = int(max(deltas.max(initial=0), lengths.max(initial=0)))
    width, dtype = (2, "<u2") if widest < 2**16 else (4, "<u4")
    return b"".join(
        [
            _HEADER.pack(MAGIC, VERSION, width, len(offsets)),
            scores.astype("<f2").tobytes(),
            deltas.astype(dtype).tobytes(),
            lengths.astype(dtype).tobytes(),
        ]
    )


def decode_map(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Return (offsets int32 (n, 2), scores float32 (n,))."""
    blob = bytes(blob)
    magic, version, width, n = _HEADER.unpack_from(blob)
    if magic != MAGIC or version != VERSION or width not in (2, 4):
        raise ValueError("not a relevance map blob (or an unknown version)")
    expected = _HEADER.size + n * (2 + 2 * width)
    if len(blob) != expected:
        raise ValueError(f"relevance map blob has {len(blob)} bytes, expected {expected}")
    pos = _HEADER.size
    scores = np.frombuffer(blob, "<f2", n, pos).astype(np.float32)
    pos += 2 * n
    dtype = "<u2" if width == 2 else "<u4"
    deltas = np.frombuffer(blob, dtype, n, pos).astype(np.int64)
    lengths = np.frombuffer(blob, dtype, n, pos + width * n).astype(np.int64)
    starts = np.cumsum(deltas)
    offsets = np.stack([starts, starts + lengths], axis=1).astype(np.int32)
    return offsets, scores
