import numpy as np
import pytest

from ml.codec import (
    decode_arrays,
    decode_map,
    decode_offsets,
    encode_map,
    encode_offsets,
    encode_scores,
    offsets_digest,
)


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


# ---- today's storage: a note's offsets once, each map's scores alone ----


def _subword_offsets(n, rng, longest=8):
    lengths = rng.integers(1, longest, n)
    starts = np.concatenate([[0], np.cumsum(lengths + rng.integers(0, 2, n))[:-1]])
    return np.stack([starts, starts + lengths], axis=1).astype(np.int32)


def test_subword_offsets_cost_one_byte_a_token_and_round_trip():
    offsets = _subword_offsets(300, np.random.default_rng(1))
    blob = encode_offsets(offsets)
    assert len(blob) == 5 + 300
    np.testing.assert_array_equal(decode_offsets(blob), offsets)


@pytest.mark.parametrize("gap,size", [(200, 2), (4_000, 4), (70_000, 8)])
def test_wider_offsets_use_wider_fields(gap, size):
    offsets = np.array([[0, 3], [gap, gap + 20], [gap + 21, gap + 22]], dtype=np.int32)
    blob = encode_offsets(offsets)
    assert len(blob) == 5 + 3 * size
    np.testing.assert_array_equal(decode_offsets(blob), offsets)


def test_overlapping_tokens_with_one_start_round_trip():
    offsets = np.array([[0, 2], [0, 2], [2, 5]], dtype=np.int32)  # a character split over two tokens
    np.testing.assert_array_equal(decode_offsets(encode_offsets(offsets)), offsets)


def test_arrays_join_offsets_and_float16_scores():
    rng = np.random.default_rng(2)
    offsets, scores = _subword_offsets(50, rng), rng.random(50).astype(np.float32)
    back_offsets, back_scores = decode_arrays(encode_offsets(offsets), encode_scores(scores))
    np.testing.assert_array_equal(back_offsets, offsets)
    np.testing.assert_array_equal(back_scores, scores.astype(np.float16).astype(np.float32))
    with pytest.raises(ValueError, match="scores"):
        decode_arrays(encode_offsets(offsets), encode_scores(scores[:-1]))


def test_equal_offsets_have_equal_digests_and_others_differ():
    a = encode_offsets(np.array([[0, 1], [1, 3]]))
    assert offsets_digest(a) == offsets_digest(bytes(a)) and len(offsets_digest(a)) == 16
    assert offsets_digest(a) != offsets_digest(encode_offsets(np.array([[0, 1], [1, 4]])))


def test_a_truncated_offsets_blob_is_refused():
    with pytest.raises(ValueError, match="offsets"):
        decode_offsets(encode_offsets(np.array([[0, 1], [1, 3]]))[:-1])
