"""The size limits of an import, each a setting (IMPORT_MAX_*, webapp/settings.py) named in the
message that refuses an input over it, so whoever reads the message knows what to change.

IMPORT_MAX_FILE_BYTES bounds one file inside an input (a zip member, a file of a folder) and any
file a reader holds whole (Label Studio JSON, an XMI document): it is refused before it is read,
naming the file and the setting, so an import's memory is bounded whatever the upload. A JSONL or
CSV file, plain or compressed, is read a line at a time (memory: the longest allowed line) and
bounded by IMPORT_MAX_UPLOAD_BYTES, and what a compressed one unpacks to by
IMPORT_MAX_UNPACKED_BYTES: a corpus of two million notes is one such file.

The readers take an `ImportLimits` (no Django here); `webapp.corpus.importing.import_limits()`
reads the settings at the start of each import, so a changed setting applies to the next import.
"""

from dataclasses import dataclass

from webapp.lib.messages import Message, gettext_noop, message


@dataclass(frozen=True)
class ImportLimits:
    note_chars: int  # characters of one note's text (IMPORT_MAX_NOTE_CHARS)
    upload_bytes: int  # bytes of the file as given: an upload, a file or a brat folder (IMPORT_MAX_UPLOAD_BYTES)
    unpacked_bytes: int  # bytes a compressed file or a zip unpacks to (IMPORT_MAX_UNPACKED_BYTES)
    lines: int  # lines of one file (IMPORT_MAX_LINES)
    evidence_spans: int  # spans of one annotation's evidence, fragments of one brat entity (IMPORT_MAX_EVIDENCE_SPANS)
    metadata_bytes: int  # one note's metadata as compact UTF-8 JSON (IMPORT_MAX_METADATA_BYTES)
    file_bytes: int  # one file inside an input, or one read whole (IMPORT_MAX_FILE_BYTES; file_too_large)

    @property
    def line_bytes(self) -> int:
        """The longest line a valid file can hold: a note and its metadata, every character
        written as a \\uXXXX escape (6 bytes), and room for the other fields. Longer lines are
        refused unread, so one line never fills the memory."""
        return 6 * (self.note_chars + self.metadata_bytes) + 64 * 1024

    @property
    def csv_row_chars(self) -> int:
        """The longest CSV row a valid file can hold, over all its lines: a note of doubled quotes
        ("" for each "), its metadata (its compact JSON is no shorter than its cells) doubled too,
        and room for the id and the separators."""
        return 2 * (self.note_chars + self.metadata_bytes) + 64 * 1024


# The settings' defaults (webapp/settings.py): the limits of a reader called without an import's own.
DEFAULT_LIMITS = ImportLimits(
    note_chars=200_000,
    upload_bytes=2 * 1024**3,
    unpacked_bytes=8 * 1024**3,
    lines=10_000_000,
    evidence_spans=100,
    metadata_bytes=256 * 1024,
    file_bytes=512 * 1024**2,
)


def file_too_large(what, size: int, limit: int, setting: str = "IMPORT_MAX_FILE_BYTES") -> Message | str:
    """The refusal of a file over IMPORT_MAX_FILE_BYTES, "" when it is within: the one check
    every import makes, before reading, on a zip member's declared size (zipfile never unpacks
    past it), a brat, XMI or Label Studio file's size on disk. `what` names the file: "entry
    'big.ann'", "the file". `setting` says how `limit` follows
    from the setting where it is a share of it (a file parsed whole)."""
    if size <= limit:
        return ""
    return message(
        gettext_noop(
            "%(what)s has %(size)s bytes, more than the %(limit)s one file may have (%(setting)s); it was not read"
        ),
        what=what,
        size=f"{size:,}",
        limit=f"{limit:,}",
        setting=setting,
    )


THE_FILE = Message(gettext_noop("the file"))  # file_too_large's `what` for the file a problem names

_OVER_LIMIT = {
    "": gettext_noop("%(what)s has %(count)s; the limit is %(limit)s (%(setting)s)"),
    "bytes": gettext_noop("%(what)s has %(count)s bytes; the limit is %(limit)s bytes (%(setting)s)"),
    "characters": gettext_noop("%(what)s has %(count)s characters; the limit is %(limit)s characters (%(setting)s)"),
    "spans": gettext_noop("%(what)s has %(count)s spans; the limit is %(limit)s spans (%(setting)s)"),
    "fragments": gettext_noop("%(what)s has %(count)s fragments; the limit is %(limit)s fragments (%(setting)s)"),
}


def over_limit_message(what, count: int, limit: int, setting: str, unit: str = "") -> Message:
    """over_limit as a Message (`what`: a name, or a Message)."""
    if unit in _OVER_LIMIT:
        return message(_OVER_LIMIT[unit], what=what, count=f"{count:,}", limit=f"{limit:,}", setting=setting)
    return Message(f"{what} has {count:,} {unit}; the limit is {limit:,} {unit} ({setting})")


def over_limit(what, count: int, limit: int, setting: str, unit: str = "") -> str:
    """'note 'n7' has 250,000 characters; the limit is 200,000 (IMPORT_MAX_NOTE_CHARS)'."""
    return str(over_limit_message(what, count, limit, setting, unit))
