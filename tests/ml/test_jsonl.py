"""JSON Lines reading and writing."""

import numpy as np
import pytest

from ml.jsonl import JsonlError, read_jsonl, write_jsonl


def test_it_reads_objects_with_their_line_numbers_skipping_blank_lines(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert list(read_jsonl(path)) == [(1, {"a": 1}), (3, {"a": 2})]


@pytest.mark.parametrize(
    "content,reason",
    [
        (b'{"a": 1}\n{"a": \n', "a.jsonl:2: invalid JSON"),
        (b'{"a": 1}\n"text"\n', "a.jsonl:2: expected a JSON object, got a string"),
        (b'{"a": 1}\n{"a": "\xff"}\n', "a.jsonl:2: not UTF-8"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, content, reason):
    path = tmp_path / "a.jsonl"
    path.write_bytes(content)
    with pytest.raises(JsonlError, match=reason) as info:
        list(read_jsonl(path))
    assert info.value.line_no == 2


def test_a_missing_file_is_a_jsonl_error(tmp_path):
    with pytest.raises(JsonlError, match="cannot open"):
        list(read_jsonl(tmp_path / "missing.jsonl"))


def test_it_writes_numpy_values_and_appends(tmp_path):
    path = tmp_path / "out.jsonl"
    assert write_jsonl(path, [{"x": np.float32(0.5), "v": np.arange(2, dtype=np.int32)}]) == 1
    assert write_jsonl(path, [{"x": "é"}], append=True) == 1
    assert path.read_text(encoding="utf-8") == '{"x":0.5,"v":[0,1]}\n{"x":"é"}\n'


def test_a_failed_write_leaves_no_file(tmp_path):
    path = tmp_path / "out.jsonl"

    def records():
        yield {"a": 1}
        raise ValueError("boom")

    with pytest.raises(ValueError):
        write_jsonl(path, records())
    assert list(tmp_path.iterdir()) == []
