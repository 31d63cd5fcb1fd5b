"""Compact binary forms of relevance maps.

Stored today (webapp.pipeline): a note's token offsets once (`encode_offsets`, shared by every
map of the note made with the same tokenizer, found again by `offsets_digest`) and each map's
scores alone (`encode_scores`: float16, 2 bytes a token); `decode_arrays` joins the two.

Offsets layout: kind (u8), n_tokens (u32), then the token starts as deltas from the previous
start and the token lengths: kind 0 packs a delta and a length in one byte (4 bits each, the
usual case for subword tokens), kinds 1, 2 and 4 store each in that many bytes.

The earlier single blob (`encode_map` / `decode_map`, kept to read maps stored before) has the
layout (little-endian): magic b"RM", version (u8), offset width (u8: 2 or 4), n_tokens (u32),
then n float16 scores, n token starts as deltas from the previous start, n token lengths.
With 2-byte offsets (the usual case: tokens are short and close together) a token costs
6 bytes; 4-byte offsets (10 bytes a token) are used only when a delta or length needs them.
"""

import hashlib
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


_OFFSETS_HEADER = struct.Struct("<BI")
_WIDTHS = {1: "<u1", 2: "<u2", 4: "<u4"}


def _deltas_and_lengths(offsets) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    deltas, lengths = np.diff(offsets[:, 0], prepend=0), offsets[:, 1] - offsets[:, 0]
    if len(offsets) and (deltas.min() < 0 or lengths.min() < 0):
        raise ValueError("offsets must be sorted by start and have end >= start")
    return deltas, lengths


def encode_offsets(offsets) -> bytes:
    """A note's token offsets (n, 2): ~1 byte a token for subword tokens (see the module doc)."""
    deltas, lengths = _deltas_and_lengths(offsets)
    widest = int(max(deltas.max(initial=0), lengths.max(initial=0)))
    header = _OFFSETS_HEADER.pack
    if widest < 16:
        return header(0, len(deltas)) + (deltas << 4 | lengths).astype("<u1").tobytes()
    kind = next(k for k in (1, 2, 4) if widest < 2 ** (8 * k))
    return header(kind, len(deltas)) + deltas.astype(_WIDTHS[kind]).tobytes() + lengths.astype(_WIDTHS[kind]).tobytes()


def decode_offsets(blob) -> np.ndarray:
    """Offsets int32 (n, 2) of `encode_offsets`."""
    blob = bytes(blob)
    kind, n = _OFFSETS_HEADER.unpack_from(blob)
    size = {0: 1, 1: 2, 2: 4, 4: 8}.get(kind)
    if size is None or len(blob) != _OFFSETS_HEADER.size + n * size:
        raise ValueError("not a token offsets blob (or a truncated one)")
    pos = _OFFSETS_HEADER.size
    if kind == 0:
        packed = np.frombuffer(blob, "<u1", n, pos).astype(np.int64)
        deltas, lengths = packed >> 4, packed & 15
    else:
        deltas = np.frombuffer(blob, _WIDTHS[kind], n, pos).astype(np.int64)
        lengths = np.frombuffer(blob, _WIDTHS[kind], n, pos + kind * n).astype(np.int64)
    starts = np.cumsum(deltas)
    return np.stack([starts, starts + lengths], axis=1).astype(np.int32).reshape(-1, 2)


def offsets_digest(blob: bytes) -> bytes:
    """16 bytes naming an offsets blob: maps whose offsets are identical share one stored copy."""
    return hashlib.blake2b(bytes(blob), digest_size=16).digest()


def encode_scores(scores) -> bytes:
    """A map's scores as float16 (2 bytes a token, no header: the length gives the count)."""
    return np.asarray(scores, dtype=np.float32).astype("<f2").tobytes()


def decode_scores(blob) -> np.ndarray:
    return np.frombuffer(bytes(blob), "<f2").astype(np.float32)


def decode_arrays(offsets_blob, scores_blob) -> tuple[np.ndarray, np.ndarray]:
    """(offsets int32 (n, 2), scores float32 (n,)) of a stored map: its note's offsets and its scores."""
    offsets, scores = decode_offsets(offsets_blob), decode_scores(scores_blob)
    if len(offsets) != len(scores):
        raise ValueError(f"{len(offsets)} token offsets but {len(scores)} scores")
    return offsets, scores
