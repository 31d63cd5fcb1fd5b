"""Import files judged by their bytes, never by their names; their lines, decoded and checked.

- `sniff(path)`: what the first bytes say the file is: "plain", "gzip", "bz2", "xz", "zip" (an
  archive of brat files) or "zstd" (refused with a reason). A plain file named .gz is read as
  plain text (with a warning), a gzip file named .jsonl is unpacked.
- `open_lines(path, problems, limits)`: a context manager over the (line number, text) pairs
  of a plain or compressed text file. Each line is checked as it is read, so a problem names
  its line and memory stays bounded by the longest allowed line, whatever the file holds:
    * UTF-8 only: a bad byte is reported as "not UTF-8 (byte 0xe9 at column 14)" (the column
      counts bytes from 1); UTF-16/32 text is refused at once; a UTF-8 byte order mark at the
      start is dropped, with a warning;
    * a line longer than `limits.line_bytes` is reported once, with its length, and skipped
      unread;
    * the file stops at `limits.lines` lines, a compressed one at `limits.unpacked_bytes` (a line
      too long counts too: reading stops inside it); a brat file (`text_only`), which is read
      whole, larger than `limits.file_bytes` (IMPORT_MAX_FILE_BYTES) is refused before it is read;
    * a broken archive (truncated or corrupt) is reported at the line where reading stopped.
- `read_text_file(path, ...)`: a whole small file (a brat .txt), with the same checks.
- `unzip(archive, target, ..., members, what)`: the members of a zip that a folder format reads
  (brat's .txt/.ann, XMI's .xmi/.xml), flattened into one folder; a member larger than
  `limits.file_bytes` (its declared size) refuses the archive unpacked.

The files of brat notes (`text_only`, and every .txt) must be plain text: a compressed member
would unpack past the one budget of the zip (whose members' declared sizes are checked together).

Messages hold file names, line numbers, byte values and sizes: never the text itself.
No Django here.
"""

import bz2
import gzip
import lzma
import re
import shutil
import stat
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from webapp.lib.import_limits import THE_FILE, ImportLimits, file_too_large
from webapp.lib.messages import Message, gettext_noop, message

CANNOT_BE_READ = gettext_noop("cannot be read (%(reason)s)")
NO_SUCH_FILE_OR_FOLDER = gettext_noop("no such file or folder")
_OTHER_UNICODE = gettext_noop(
    "the file is %(encoding)s text (it starts with a %(encoding)s byte order mark); save it as UTF-8"
)

BOM = b"\xef\xbb\xbf"
UNICODE_BOMS = (  # UTF-32 first: its little-endian mark begins with UTF-16's
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
OPENERS = {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open}
NAMED = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}
BROKEN_ARCHIVE = (OSError, EOFError, zlib.error, lzma.LZMAError)  # gzip.BadGzipFile is an OSError
SKIP_CHUNK = 1024 * 1024
MAX_ZIP_MEMBERS = 200_000


def sniff(path: Path) -> str:
    """The kind of file its first bytes show. Raises OSError if it cannot be read."""
    with path.open("rb") as handle:
        head = handle.read(8)
    return next((kind for magic, kind in MAGIC if head.startswith(magic)), "plain")


def compression_suffixes(path: Path) -> list[str]:
    return [s.lower() for s in path.suffixes if s.lower() in NAMED]


def name_mismatch(path: Path, kind: str) -> Message | str:
    """'is named .gz but holds plain text' when the name promises another kind than the bytes."""
    suffixes = compression_suffixes(path)
    if not suffixes or kind in {NAMED[s] for s in suffixes}:
        return ""
    if kind == "plain":
        return message(gettext_noop("is named %(suffixes)s but holds plain text"), suffixes=", ".join(suffixes))
    return message(
        gettext_noop("is named %(suffixes)s but holds %(kind)s data"), suffixes=", ".join(suffixes), kind=kind
    )


def input_size(path: Path) -> int:
    """Bytes of an input as given: a file, or the files of a folder (brat's .txt and .ann files)."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size


class open_lines:
    """`with open_lines(path, problems, limits) as lines: for line_no, text in lines: ...`

    Lines keep their newline (the CSV reader needs it). A line that is not UTF-8 or too long is
    reported and skipped, and the rest of the file is still checked; with `keep_bad_lines` (CSV,
    whose quoted fields span lines) a line not UTF-8 is yielded decoded with replacement
    characters instead, so the parser keeps its place (the problem already stops the import).
    """

    def __init__(
        self, path: Path, problems, limits: ImportLimits, keep_bad_lines: bool = False, text_only: bool = False
    ):
        self.path, self.problems, self.limits = path, problems, limits
        self.source = path.name
        self.keep_bad_lines = keep_bad_lines
        self.text_only = text_only  # a brat file: refuse compressed data
        self.raw = None

    def __enter__(self) -> Iterator[tuple[int, str]]:
        try:
            kind = sniff(self.path)
            if self.text_only and kind != "plain":
                self.problems.add(self.source, None, _not_plain_text(kind))
                return iter(())
            if self.text_only:  # a brat file: one file of a folder or a zip
                too_large = file_too_large(THE_FILE, self.path.stat().st_size, self.limits.file_bytes)
                if too_large:
                    self.problems.add(self.source, None, too_large)
                    return iter(())
            if kind in OPENERS:
                # read a line at a time: memory stays at the longest allowed line, and what it
                # unpacks to is bounded by IMPORT_MAX_UNPACKED_BYTES (a large corpus is one file)
                self.raw = OPENERS[kind](self.path, "rb")
            elif kind == "plain":
                self.raw = open(self.path, "rb")  # noqa: SIM115 - closed by __exit__
        except OSError as exc:
            self.problems.add(self.source, None, CANNOT_BE_READ, reason=exc.strerror or type(exc).__name__)
            return iter(())
        if self.raw is None:
            self.problems.add(self.source, None, _unreadable_kind(kind))
            return iter(())
        mismatch = name_mismatch(self.path, kind)
        if mismatch:
            self.problems.warn(self.source, None, gettext_noop("%(mismatch)s; it was read as such"), mismatch=mismatch)
        return self._lines(kind)

    def __exit__(self, *exc):
        if self.raw is not None:
            self.raw.close()

    def _lines(self, kind: str) -> Iterator[tuple[int, str]]:
        source, problems, limits = self.source, self.problems, self.limits
        compressed = kind != "plain"
        unpacked = 0
        line_no = 0
        while True:
            try:
                raw = self.raw.readline(limits.line_bytes + 1)
            except BROKEN_ARCHIVE:
                problems.add(source, line_no + 1, _broken(kind, line_no))
                return
            if not raw:
                return
            line_no += 1
            unpacked += len(raw)
            if line_no > limits.lines:
                problems.add(
                    source,
                    line_no,
                    gettext_noop(
                        "the file has more than %(most)s lines, the limit (IMPORT_MAX_LINES); nothing after it was read"
                    ),
                    most=f"{limits.lines:,}",
                )
                return
            if line_no == 1:
                refused = next((name for mark, name in UNICODE_BOMS if raw.startswith(mark)), None)
                if refused:
                    problems.add(source, 1, _OTHER_UNICODE, encoding=refused)
                    return
                if raw.startswith(BOM):
                    raw = raw[len(BOM) :]
                    problems.warn(
                        source, 1, gettext_noop("the file starts with a UTF-8 byte order mark; it was ignored")
                    )
            if len(raw) > limits.line_bytes:
                try:
                    length, unpacked = self._skip_rest_of_line(len(raw), unpacked, compressed)
                except BROKEN_ARCHIVE:
                    problems.add(source, line_no, _broken(kind, line_no - 1))
                    return
                if compressed and unpacked > limits.unpacked_bytes:  # stopped inside the line: one problem
                    problems.add(source, line_no, _unpacked_too_large(kind, limits))
                    return
                problems.add(
                    source,
                    line_no,
                    gettext_noop(
                        "the line has %(length)s bytes or more, more than a note of %(most)s characters "
                        "(IMPORT_MAX_NOTE_CHARS) and its metadata can take"
                    ),
                    length=f"{length:,}",
                    most=f"{limits.note_chars:,}",
                )
                continue
            if compressed and unpacked > limits.unpacked_bytes:
                problems.add(source, line_no, _unpacked_too_large(kind, limits))
                return
            try:
                yield line_no, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.add(source, line_no, not_utf8(raw, exc))
                if self.keep_bad_lines:
                    yield line_no, raw.decode("utf-8", errors="replace")

    def _skip_rest_of_line(self, length: int, unpacked: int, compressed: bool) -> tuple[int, int]:
        """Read on to the end of a line too long to keep; returns its length (or the length read
        before the unpacked limit stopped it) and the bytes unpacked so far."""
        while True:
            chunk = self.raw.readline(SKIP_CHUNK)
            length += len(chunk)
            unpacked += len(chunk)
            if not chunk or chunk.endswith(b"\n") or (compressed and unpacked > self.limits.unpacked_bytes):
                return length, unpacked


def read_text_file(path: Path, problems, limits: ImportLimits) -> str | None:
    """The whole text of a small UTF-8 file (a brat .txt note), or None with the problem reported."""
    most = 4 * limits.note_chars + len(BOM)  # UTF-8 takes at most 4 bytes a character
    try:
        size = path.stat().st_size
        if too_large := file_too_large(THE_FILE, size, limits.file_bytes):
            problems.add(path.name, None, too_large)
            return None
        if size > most:
            problems.add(
                path.name,
                None,
                gettext_noop(
                    "has %(size)s bytes, more than a note of %(most)s characters can take (IMPORT_MAX_NOTE_CHARS)"
                ),
                size=f"{size:,}",
                most=f"{limits.note_chars:,}",
            )
            return None
        data = path.read_bytes()
    except OSError as exc:
        problems.add(path.name, None, CANNOT_BE_READ, reason=exc.strerror or type(exc).__name__)
        return None
    refused = next((name for mark, name in UNICODE_BOMS if data.startswith(mark)), None)
    if refused:
        problems.add(path.name, 1, _OTHER_UNICODE, encoding=refused)
        return None
    if data.startswith(BOM):
        data = data[len(BOM) :]
        problems.warn(
            path.name,
            1,
            gettext_noop(
                "the file starts with a UTF-8 byte order mark; it was ignored "
                "(offsets count from the character after it)"
            ),
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        kind = next((kind for magic, kind in MAGIC if data.startswith(magic)), "plain")
        if kind != "plain":
            problems.add(path.name, None, _not_plain_text(kind))
            return None
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line_no = data.count(b"\n", 0, exc.start) + 1
        problems.add(path.name, line_no, not_utf8(data[line_start:], exc, offset=line_start))
        return None


def not_utf8(line: bytes, exc: UnicodeDecodeError, offset: int = 0) -> Message:
    at = exc.start - offset
    return message(
        gettext_noop("not UTF-8 (byte %(byte)s at column %(column)s); save the file as UTF-8"),
        byte=f"0x{line[at]:02x}",
        column=at + 1,
    )


_END_OF_DIRECTORY = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_END_OF_DIRECTORY = b"PK\x06\x06"


def declared_zip_entries(archive: Path) -> int | None:
    """The number of entries a zip's end-of-central-directory record declares (zip64 too), read
    from the end of the file without reading the directory: zipfile builds one object per entry
    before anything can be counted, so a directory of millions of entries pointing at one file
    would fill memory first. None when there is no such record (zipfile then says the archive
    is not valid)."""
    with open(archive, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        tail_size = min(size, 22 + 65_535 + 20)  # the record, the longest comment, a zip64 locator
        fh.seek(size - tail_size)
        tail = fh.read(tail_size)
        at = tail.rfind(_END_OF_DIRECTORY)
        if at < 0 or len(tail) < at + 22:
            return None
        entries = int.from_bytes(tail[at + 10 : at + 12], "little")
        locator = at - 20
        if entries == 0xFFFF and locator >= 0 and tail[locator : locator + 4] == _ZIP64_LOCATOR:
            record_at = int.from_bytes(tail[locator + 8 : locator + 16], "little")
            fh.seek(record_at)
            record = fh.read(56)
            if record[:4] == _ZIP64_END_OF_DIRECTORY and len(record) == 56:
                entries = int.from_bytes(record[32:40], "little")
        return entries


def unzip(
    archive: Path, target: Path, problems, limits: ImportLimits, members: tuple[str, ...], what: str
) -> Path | None:
    """Unpack the members of a zip whose names end in `members` (".txt", ".ann": the files of the
    folder format `what`, "brat") into `target`, flattened (no path from the archive reaches the
    disk), refusing archives that unpack too large, hold two files of one name, an entry with an
    absolute or `..` path, or a symbolic link. Returns `target`, or None with the problem reported."""
    shutil.rmtree(target, ignore_errors=True)  # left by an attempt whose worker was lost
    declared = declared_zip_entries(archive)
    if declared is not None and declared > MAX_ZIP_MEMBERS:  # before ZipFile builds an object per entry
        problems.add(archive.name, None, _TOO_MANY_FILES, count=f"{declared:,}", most=f"{MAX_ZIP_MEMBERS:,}")
        return None
    try:
        with zipfile.ZipFile(archive) as zf:
            entries = [m for m in zf.infolist() if not m.is_dir()]
            unpacked = sum(m.file_size for m in entries)  # zipfile never reads past a member's declared size
            if len(entries) > MAX_ZIP_MEMBERS:
                problems.add(
                    archive.name, None, _TOO_MANY_FILES, count=f"{len(entries):,}", most=f"{MAX_ZIP_MEMBERS:,}"
                )
                return None
            if unpacked > limits.unpacked_bytes:
                problems.add(archive.name, None, _unpacked_too_large("zip", limits))
                return None
            for member in zf.infolist():
                refusal = _entry_refusal(member)
                if refusal:
                    problems.add(
                        archive.name,
                        None,
                        gettext_noop("entry %(name)s %(refusal)s; refused"),
                        name=repr(member.filename),
                        refusal=refusal,
                    )
                    return None
            wanted = [m for m in entries if _is_member(m, members)]
            too_large = members_too_large(wanted, limits.file_bytes)
            if too_large:
                problems.add(archive.name, None, too_large)
                return None
            if entries and not wanted:
                problems.add(
                    archive.name,
                    None,
                    gettext_noop(
                        "the archive holds no %(format)s files (%(names)s); a JSONL or CSV file may be compressed "
                        "with gzip, bz2 or xz instead"
                    ),
                    format=what,
                    names=" and ".join(members),
                )
                return None
            target.mkdir(parents=True)
            for member in wanted:
                name = Path(member.filename).name
                if (target / name).exists():
                    problems.add(
                        archive.name, None, gettext_noop("two files named %(name)s in the archive"), name=repr(name)
                    )
                    return None
                try:
                    with zf.open(member) as src, (target / name).open("wb") as dst:
                        shutil.copyfileobj(src, dst)
                except (RuntimeError, NotImplementedError, *BROKEN_ARCHIVE):
                    problems.add(
                        archive.name,
                        None,
                        gettext_noop(
                            "%(name)s could not be unpacked (encrypted, compressed in an unsupported way, or corrupt)"
                        ),
                        name=repr(name),
                    )
                    return None
    except (zipfile.BadZipFile, ValueError, *BROKEN_ARCHIVE):  # ValueError: a name flagged UTF-8 that is not
        problems.add(archive.name, None, gettext_noop("not a valid zip archive (truncated or corrupt)"))
        return None
    return target


def members_too_large(members: list[zipfile.ZipInfo], limit: int) -> Message | str:
    """The refusal of the first zip member whose declared size is over IMPORT_MAX_FILE_BYTES, ""
    if none is: the members an import would unpack are all checked before any is (zipfile never
    unpacks a member past its declared size). Note and annotation imports both call this."""
    return next(
        (
            refusal
            for m in members
            if (refusal := file_too_large(message(_ENTRY, name=repr(m.filename[:80])), m.file_size, limit))
        ),
        "",
    )


_ENTRY = gettext_noop("entry %(name)s")
_TOO_MANY_FILES = gettext_noop("the archive holds %(count)s files; the limit is %(most)s")


def _entry_refusal(member: zipfile.ZipInfo) -> Message | str:
    """Why an entry is refused ("" if it is not). Members are unpacked flattened, so no path could
    escape; but an entry that asks to (or a symbolic link, whose stored content is its target's
    path, not a note) says the archive is not what its user thinks: refuse it, naming it."""
    if member.create_system == 3 and stat.S_ISLNK(member.external_attr >> 16):  # 3: made on Unix
        return Message(gettext_noop("is a symbolic link"))
    name = member.filename.replace("\\", "/")
    if name.startswith("/") or _DRIVE.match(name):
        return Message(gettext_noop("has an absolute path"))
    if ".." in name.split("/"):
        return Message(gettext_noop("has a path that leads out of the archive (..)"))
    return ""


_DRIVE = re.compile(r"[A-Za-z]:")


def _is_member(member: zipfile.ZipInfo, suffixes: tuple[str, ...]) -> bool:
    name = Path(member.filename.replace("\\", "/")).name
    return name.lower().endswith(suffixes) and not name.startswith(".")


def _unreadable_kind(kind: str) -> Message:
    if kind == "zip":
        return Message(
            gettext_noop("is a zip archive: only the files of a folder format (brat, XMI) can come in a zip")
        )
    return message(gettext_noop("is %(kind)s-compressed, which is not supported; use gzip, bz2 or xz"), kind=kind)


def _not_plain_text(kind: str) -> Message:
    if kind == "zip":
        return Message(gettext_noop("is a zip archive; the .txt and .ann files of brat notes must be plain UTF-8 text"))
    return message(
        gettext_noop("is %(kind)s-compressed; the .txt and .ann files of brat notes must be plain UTF-8 text"),
        kind=kind,
    )


def _broken(kind: str, lines_read: int) -> Message:
    if kind == "plain":
        if not lines_read:
            return Message(gettext_noop("reading the file failed at its start"))
        template = gettext_noop("reading the file failed after line %(line)s; nothing after it was read")
        return message(template, line=f"{lines_read:,}")
    if not lines_read:
        return message(gettext_noop("the %(kind)s data is broken (truncated or corrupt) at its start"), kind=kind)
    template = gettext_noop(
        "the %(kind)s data is broken (truncated or corrupt) after line %(line)s; nothing after it was read"
    )
    return message(template, kind=kind, line=f"{lines_read:,}")


def _unpacked_too_large(kind: str, limits: ImportLimits) -> Message:
    return message(
        gettext_noop("the %(kind)s data unpacks to more than %(most)s bytes, the limit (IMPORT_MAX_UNPACKED_BYTES)"),
        kind=kind,
        most=f"{limits.unpacked_bytes:,}",
    )
