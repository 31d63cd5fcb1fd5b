"""Bytes to checked lines (webapp.corpus.input_files): compression told by content, UTF-8 only,
lines bounded in length and number, broken archives reported at their line. Plain units."""
import bz2
import gzip
import io
import lzma
import zipfile
from dataclasses import replace

import pytest

from webapp.corpus.input_files import open_lines, read_text_file, sniff, unzip_brat
from webapp.corpus.limits import ImportLimits
from webapp.corpus.sources import Problems

LIMITS = ImportLimits(note_chars=200_000, upload_bytes=2 * 1024**3, unpacked_bytes=8 * 1024**3, lines=10_000_000,
                      evidence_spans=100, metadata_bytes=256 * 1024)
BODY = b'{"id": "a"}\n{"id": "b"}\n'


def read(path, limits=LIMITS):
    problems = Problems()
    with open_lines(path, problems, limits) as lines:
        got = list(lines)
    return got, [str(p) for p in problems.kept], [str(w) for w in problems.warnings]


@pytest.mark.parametrize("compress, kind", [(gzip.compress, "gzip"), (bz2.compress, "bz2"), (lzma.compress, "xz")])
def test_compressed_files_are_told_by_their_bytes_whatever_their_name(tmp_path, compress, kind):
    path = tmp_path / "notes.jsonl"  # no .gz: the content decides
    path.write_bytes(compress(BODY))
    assert sniff(path) == kind
    assert read(path) == ([(1, '{"id": "a"}\n'), (2, '{"id": "b"}\n')], [], [])


def test_a_plain_file_named_gz_is_read_as_plain_text_with_a_warning(tmp_path):
    path = tmp_path / "notes.jsonl.gz"
    path.write_bytes(BODY)
    lines, problems, warnings = read(path)
    assert len(lines) == 2 and problems == []
    assert warnings == ["notes.jsonl.gz: is named .gz but holds plain text; it was read as such"]


def test_a_truncated_gzip_file_is_reported_where_reading_stopped(tmp_path):
    path = tmp_path / "notes.jsonl.gz"
    path.write_bytes(gzip.compress(BODY * 1000)[:-40])
    lines, problems, _ = read(path)
    assert problems == [f"notes.jsonl.gz line {len(lines) + 1}: the gzip data is broken (truncated or corrupt) "
                        f"after line {len(lines):,}; nothing after it was read"]


def test_a_corrupt_gzip_file_is_reported_at_its_start(tmp_path):
    path = tmp_path / "notes.jsonl.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 50)
    assert read(path) == ([], ["notes.jsonl.gz line 1: the gzip data is broken (truncated or corrupt) at its start"],
                          [])


def test_zstd_and_zip_are_refused_as_text_files(tmp_path):
    zst = tmp_path / "notes.jsonl.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    archive = tmp_path / "notes.jsonl"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("notes.jsonl", BODY)
    assert read(zst)[1] == ["notes.jsonl.zst: is zstd-compressed, which is not supported; use gzip, bz2 or xz"]
    assert read(archive)[1] == ["notes.jsonl: is a zip archive: only notes in brat format (.txt and .ann files) "
                                "can come in a zip"]


def test_a_byte_not_utf8_is_reported_with_its_line_value_and_column(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_bytes(b"id,text\n1,ok\n2,caf\xe9 latte\n3,ok\n")
    lines, problems, _ = read(path)
    assert problems == ["notes.csv line 3: not UTF-8 (byte 0xe9 at column 6); save the file as UTF-8"]
    assert [n for n, _ in lines] == [1, 2, 4]  # the rest of the file is still read


def test_utf16_text_is_refused_at_once(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(BODY.decode().encode("utf-16"))
    assert read(path)[:2] == ([], ["notes.jsonl line 1: the file is UTF-16 text (it starts with a UTF-16 byte "
                                   "order mark); save it as UTF-8"])


def test_a_utf8_byte_order_mark_is_dropped_with_a_warning(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + BODY)
    lines, problems, warnings = read(path)
    assert lines[0] == (1, '{"id": "a"}\n') and problems == []
    assert warnings == ["notes.jsonl line 1: the file starts with a UTF-8 byte order mark; it was ignored"]


def test_a_line_too_long_is_reported_with_its_length_and_skipped_unread(tmp_path):
    limits = replace(LIMITS, note_chars=100, metadata_bytes=100)  # lines of at most 6 x 200 + 64 KiB bytes
    path = tmp_path / "notes.jsonl"
    long_line = b'{"id": "x", "text": "' + b"a" * 3_000_000 + b'"}\n'
    path.write_bytes(BODY + long_line + BODY)
    lines, problems, _ = read(path, limits)
    assert [n for n, _ in lines] == [1, 2, 4, 5]
    assert problems == [f"notes.jsonl line 3: the line has {len(long_line):,} bytes or more, more than a note of "
                        "100 characters (IMPORT_MAX_NOTE_CHARS) and its metadata can take"]


def test_a_file_stops_at_the_line_limit(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(BODY * 3)
    lines, problems, _ = read(path, replace(LIMITS, lines=4))
    assert len(lines) == 4
    assert problems == ["notes.jsonl line 5: the file has more than 4 lines, the limit (IMPORT_MAX_LINES); "
                        "nothing after it was read"]


def test_a_compressed_file_stops_at_the_unpacked_limit(tmp_path):
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(BODY * 10_000))  # 240 kB from about 1 kB
    lines, problems, _ = read(path, replace(LIMITS, unpacked_bytes=1000))
    assert len(lines) < 100
    assert problems == [f"bomb.jsonl.gz line {len(lines) + 1}: the gzip data unpacks to more than 1,000 bytes, "
                        "the limit (IMPORT_MAX_UNPACKED_BYTES)"]


def test_a_text_file_too_large_for_a_note_is_refused_unread(tmp_path):
    path = tmp_path / "doc1.txt"
    path.write_bytes(b"a" * 404)  # 4 bytes a character at most, and a byte order mark
    problems = Problems()
    assert read_text_file(path, problems, replace(LIMITS, note_chars=100)) is None
    assert [str(p) for p in problems.kept] == [
        "doc1.txt: has 404 bytes, more than a note of 100 characters can take (IMPORT_MAX_NOTE_CHARS)"]


def test_a_zip_without_brat_files_is_refused_with_a_hint(tmp_path):
    archive = tmp_path / "notes.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("notes.jsonl", BODY)
    archive.write_bytes(buffer.getvalue())
    problems = Problems()
    assert unzip_brat(archive, tmp_path / "out", problems, LIMITS) is None
    assert [str(p) for p in problems.kept] == [
        "notes.zip: the archive holds no brat files (.txt and .ann); a JSONL or CSV file may be compressed with "
        "gzip, bz2 or xz instead"]


def test_a_zip_that_unpacks_too_large_is_refused_before_unpacking(tmp_path):
    archive = tmp_path / "cases.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("doc1.txt", "a" * 5000)
        zf.writestr("doc1.ann", "")
    problems = Problems()
    assert unzip_brat(archive, tmp_path / "out", problems, replace(LIMITS, unpacked_bytes=4000)) is None
    assert [str(p) for p in problems.kept] == [
        "cases.zip: the zip data unpacks to more than 4,000 bytes, the limit (IMPORT_MAX_UNPACKED_BYTES)"]
    assert not (tmp_path / "out").exists()
