"""Bytes to checked lines (webapp.lib.input_files): compression told by content, UTF-8 only,
lines bounded in length and number, broken archives reported at their line. Plain units."""

import bz2
import gzip
import io
import lzma
import zipfile
from dataclasses import replace

import pytest

from webapp.lib.import_limits import DEFAULT_LIMITS
from webapp.lib.input_files import open_lines, read_text_file, sniff, unzip
from webapp.lib.problems import Problems

LIMITS = DEFAULT_LIMITS  # the settings' defaults
BODY = b'{"id": "a"}\n{"id": "b"}\n'


def unzip_brat(archive, target, problems, limits):
    return unzip(archive, target, problems, limits, (".txt", ".ann"), "brat")


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
    assert problems == [
        f"notes.jsonl.gz line {len(lines) + 1}: the gzip data is broken (truncated or corrupt) "
        f"after line {len(lines):,}; nothing after it was read"
    ]


def test_a_corrupt_gzip_file_is_reported_at_its_start(tmp_path):
    path = tmp_path / "notes.jsonl.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 50)
    assert read(path) == (
        [],
        ["notes.jsonl.gz line 1: the gzip data is broken (truncated or corrupt) at its start"],
        [],
    )


def test_zstd_and_zip_are_refused_as_text_files(tmp_path):
    zst = tmp_path / "notes.jsonl.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    archive = tmp_path / "notes.jsonl"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("notes.jsonl", BODY)
    assert read(zst)[1] == ["notes.jsonl.zst: is zstd-compressed, which is not supported; use gzip, bz2 or xz"]
    assert read(archive)[1] == [
        "notes.jsonl: is a zip archive: only the files of a folder format (brat, XMI) can come in a zip"
    ]


def test_a_byte_not_utf8_is_reported_with_its_line_value_and_column(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_bytes(b"id,text\n1,ok\n2,caf\xe9 latte\n3,ok\n")
    lines, problems, _ = read(path)
    assert problems == ["notes.csv line 3: not UTF-8 (byte 0xe9 at column 6); save the file as UTF-8"]
    assert [n for n, _ in lines] == [1, 2, 4]  # the rest of the file is still read


def test_utf16_text_is_refused_at_once(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(BODY.decode().encode("utf-16"))
    assert read(path)[:2] == (
        [],
        ["notes.jsonl line 1: the file is UTF-16 text (it starts with a UTF-16 byte order mark); save it as UTF-8"],
    )


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
    assert problems == [
        f"notes.jsonl line 3: the line has {len(long_line):,} bytes or more, more than a note of "
        "100 characters (IMPORT_MAX_NOTE_CHARS) and its metadata can take"
    ]


def test_a_file_stops_at_the_line_limit(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(BODY * 3)
    lines, problems, _ = read(path, replace(LIMITS, lines=4))
    assert len(lines) == 4
    assert problems == [
        "notes.jsonl line 5: the file has more than 4 lines, the limit (IMPORT_MAX_LINES); nothing after it was read"
    ]


def test_a_compressed_file_stops_at_the_unpacked_limit(tmp_path):
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(BODY * 10_000))  # 240 kB from about 1 kB
    lines, problems, _ = read(path, replace(LIMITS, unpacked_bytes=1000))
    assert len(lines) < 100
    assert problems == [
        f"bomb.jsonl.gz line {len(lines) + 1}: the gzip data unpacks to more than 1,000 bytes, "
        "the limit (IMPORT_MAX_UNPACKED_BYTES)"
    ]


def test_a_text_file_too_large_for_a_note_is_refused_unread(tmp_path):
    path = tmp_path / "doc1.txt"
    path.write_bytes(b"a" * 404)  # 4 bytes a character at most, and a byte order mark
    problems = Problems()
    assert read_text_file(path, problems, replace(LIMITS, note_chars=100)) is None
    assert [str(p) for p in problems.kept] == [
        "doc1.txt: has 404 bytes, more than a note of 100 characters can take (IMPORT_MAX_NOTE_CHARS)"
    ]


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
        "gzip, bz2 or xz instead"
    ]


def test_a_zip_that_unpacks_too_large_is_refused_before_unpacking(tmp_path):
    archive = tmp_path / "cases.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("doc1.txt", "a" * 5000)
        zf.writestr("doc1.ann", "")
    problems = Problems()
    assert unzip_brat(archive, tmp_path / "out", problems, replace(LIMITS, unpacked_bytes=4000)) is None
    assert [str(p) for p in problems.kept] == [
        "cases.zip: the zip data unpacks to more than 4,000 bytes, the limit (IMPORT_MAX_UNPACKED_BYTES)"
    ]
    assert not (tmp_path / "out").exists()


def test_a_zip_member_over_the_file_limit_is_refused_by_its_declared_size_before_anything_is_unpacked(tmp_path):
    archive = tmp_path / "cases.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("doc1.txt", "a" * 100)
        zf.writestr("gold/doc1.ann", "\n" * 5000)
    problems = Problems()
    assert unzip_brat(archive, tmp_path / "out", problems, replace(LIMITS, file_bytes=4000)) is None
    assert [str(p) for p in problems.kept] == [
        "cases.zip: entry 'gold/doc1.ann' has 5,000 bytes, more than the 4,000 one file may have "
        "(IMPORT_MAX_FILE_BYTES); it was not read"
    ]
    assert not (tmp_path / "out").exists()


def test_a_compressed_corpus_is_not_held_to_the_one_file_limit(tmp_path):
    """A JSONL file is read a line at a time whatever it unpacks to: IMPORT_MAX_UNPACKED_BYTES
    bounds it, not IMPORT_MAX_FILE_BYTES (a corpus of millions of notes is one file)."""
    path = tmp_path / "notes.jsonl.gz"
    path.write_bytes(gzip.compress(BODY * 1000))  # 24 kB unpacked
    lines, problems, _ = read(path, replace(LIMITS, file_bytes=1000))
    assert len(lines) == 2000 and problems == []


def test_a_brat_file_over_the_file_limit_is_refused_unread(tmp_path):
    path = tmp_path / "doc1.ann"
    path.write_bytes(b"\n" * 2000)
    problems = Problems()
    with open_lines(path, problems, replace(LIMITS, file_bytes=1000), text_only=True) as lines:
        assert list(lines) == []
    assert [str(p) for p in problems.kept] == [
        "doc1.ann: the file has 2,000 bytes, more than the 1,000 one file may have (IMPORT_MAX_FILE_BYTES); "
        "it was not read"
    ]


SMALL = replace(LIMITS, note_chars=100, metadata_bytes=100)  # lines of at most 6 x 200 + 64 KiB = 66,736 bytes


@pytest.mark.parametrize("compress, kind", [(gzip.compress, "gzip"), (bz2.compress, "bz2"), (lzma.compress, "xz")])
def test_the_unpacked_limit_stops_a_compressed_line_too_long_with_one_problem(tmp_path, compress, kind):
    path = tmp_path / "bomb.jsonl"
    path.write_bytes(compress(BODY + b"a" * 10_000_000))  # one line of 10 MB, no line end
    lines, problems, _ = read(path, replace(SMALL, unpacked_bytes=1_000_000))
    assert [n for n, _ in lines] == [1, 2]
    assert problems == [
        f"bomb.jsonl line 3: the {kind} data unpacks to more than 1,000,000 bytes, the limit "
        "(IMPORT_MAX_UNPACKED_BYTES)"
    ]


def test_a_compressed_line_too_long_is_reported_once(tmp_path):
    path = tmp_path / "notes.jsonl.gz"
    long_line = b"a" * 1_000_000 + b"\n"  # 15 times the longest line, within the unpacked limit
    path.write_bytes(gzip.compress(BODY + long_line + BODY))
    lines, problems, _ = read(path, SMALL)
    assert [n for n, _ in lines] == [1, 2, 4, 5]
    assert problems == [
        f"notes.jsonl.gz line 3: the line has {len(long_line):,} bytes or more, more than a note of "
        "100 characters (IMPORT_MAX_NOTE_CHARS) and its metadata can take"
    ]


@pytest.mark.parametrize("compress, kind", [(gzip.compress, "gzip"), (bz2.compress, "bz2"), (lzma.compress, "xz")])
def test_a_brat_file_must_be_plain_text(tmp_path, compress, kind):
    ann, txt = tmp_path / "doc1.ann", tmp_path / "doc1.txt"
    ann.write_bytes(compress(b"T1\tDevice 0 5\tMario\n"))
    txt.write_bytes(compress(b"Mario Rossi"))
    problems = Problems()
    with open_lines(ann, problems, LIMITS, text_only=True) as lines:
        assert list(lines) == []
    assert read_text_file(txt, problems, LIMITS) is None
    assert [str(p) for p in problems.kept] == [
        f"doc1.ann: is {kind}-compressed; the .txt and .ann files of brat notes must be plain UTF-8 text",
        f"doc1.txt: is {kind}-compressed; the .txt and .ann files of brat notes must be plain UTF-8 text",
    ]


@pytest.mark.parametrize("patched", [1, 4], ids=["local header", "central directory"])
def test_a_zip_name_flagged_utf8_that_is_not_is_a_broken_archive(tmp_path, patched):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("doc\xe9.txt", "x")
        zf.writestr("doc\xe9.ann", "")
    archive = tmp_path / "cases.zip"
    archive.write_bytes(buffer.getvalue().replace("doc\xe9".encode(), b"doc\xe9\xe9", patched))
    problems = Problems()
    assert unzip_brat(archive, tmp_path / "out", problems, LIMITS) is None
    assert [str(p) for p in problems.kept] == ["cases.zip: not a valid zip archive (truncated or corrupt)"]


def test_a_zip_declaring_too_many_entries_is_refused_before_its_directory_is_read(tmp_path, monkeypatch):
    import zipfile

    from webapp.corpus.importing import import_limits
    from webapp.lib import input_files
    from webapp.lib.input_files import declared_zip_entries
    from webapp.lib.problems import Problems

    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(5):
            zf.writestr(f"n{i}.txt", "HR 120.")
    assert declared_zip_entries(archive) == 5
    monkeypatch.setattr(input_files, "MAX_ZIP_MEMBERS", 4)
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: pytest.fail("the directory was read"))
    problems = Problems()
    assert unzip_brat(archive, tmp_path / "out", problems, import_limits()) is None
    assert [p.message for p in problems.kept] == ["the archive holds 5 files; the limit is 4"]


def test_the_entries_of_a_zip64_archive_are_read_from_its_zip64_record(tmp_path):
    import zipfile

    from webapp.lib.input_files import declared_zip_entries

    archive = tmp_path / "big.zip"
    with zipfile.ZipFile(archive, "w", allowZip64=True) as zf:
        for i in range(3):
            zf.writestr(f"n{i}.txt", "x")
    data = bytearray(archive.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    assert declared_zip_entries(archive) == 3
    # the same directory declared through a zip64 record, as writers do past 65,535 entries
    record_at = end
    zip64 = (
        b"PK\x06\x06"
        + (44).to_bytes(8, "little")
        + (45).to_bytes(2, "little")
        + (45).to_bytes(2, "little")
        + bytes(8)
        + (3).to_bytes(8, "little")
        + (3).to_bytes(8, "little")
        + data[end + 12 : end + 16]
        + bytes(4)
        + data[end + 16 : end + 20]
        + bytes(4)
    )
    locator = b"PK\x06\x07" + bytes(4) + record_at.to_bytes(8, "little") + (1).to_bytes(4, "little")
    eocd = bytearray(data[end:])
    eocd[8:10] = eocd[10:12] = (0xFFFF).to_bytes(2, "little")
    archive.write_bytes(bytes(data[:end]) + zip64 + locator + bytes(eocd))
    assert declared_zip_entries(archive) == 3
