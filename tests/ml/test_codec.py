import numpy as np
import pytest

from ml.codec import decode_map, encode_map


def test_a_map_round_trips_with_float16_precision():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 8, 300)
    starts = np.concatenate([[0], np.cumsum(lengths + rng.integers(0, 2, 300))[:-1]])
    offsets = np.stack([starts, starts + lengths], axis=1).astype(np.int32)
    scores = rng.random(300).astype(np.float32)
    blob = encode_map(offsets, scores)
    back_offsets, back_scores = decode_map(blob)
    np.testing.assert_array_equal(back_offsets, offsets)
    np.testing.assert_allclose(back_scores, scores, atol=5e-4)
    assert len(blob) == 8 + 300 * 6  # 6 bytes a token with 2-byte offsets


def test_far_apart_tokens_switch_to_four_byte_offsets():
    offsets = np.array([[0, 3], [70_000, 70_004]], dtype=np.int32)
    blob = encode_map(offsets, np.array([0.5, 1.0]))
    assert len(blob) == 8 + 2 * 10
    np.testing.assert_array_equal(decode_map(blob)[0], offsets)


def test_an_empty_map_round_trips():
    offsets, scores = decode_map(encode_map(np.zeros((0, 2)), np.zeros(0)))
    assert offsets.shape == (0, 2) and scores.shape == (0,)


def test_overlapping_or_unsorted_offsets_are_refused():
    with pytest.raises(ValueError, match="sorted"):
        encode_map(np.array([[5, 6], [0, 2]]), np.array([1.0, 1.0]))


def test_a_truncated_blob_is_refused():
    blob = encode_map(np.array([[0, 1]]), np.array([1.0]))
    with pytest.raises(ValueError, match="expected"):
        decode_map(blob[:-1])
    with pytest.raises(ValueError, match="not a relevance map"):
        decode_map(b"XX" + blob[2:])
