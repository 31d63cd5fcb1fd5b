"""What an import cannot read, and what it accepts but its user should hear about: every reader of
the format table (webapp.lib.formats) and every import reports into one `Problems`. No Django here.

A problem names the file, the line (or None) and the reason, with character or byte offsets
where useful, and never quotes note text. A problem line never holds a character that is not
printable (`validators.printable`): it is shown on pages, stored in jsonb and audited, and
PostgreSQL refuses a \\u0000 there.

A problem keeps its message as a template and its values (webapp.lib.messages): `problems.add(name,
line, gettext_noop("expected a JSON object, got %(kind)s"), kind=...)`, so that the page showing it
translates the words in its reader's language (webapp.corpus.problem_text) while the file's name,
the line, the id and the sizes stay as they are. `str(problem)` is the English line; `as_json()` is
what an import's job stores.
"""

from dataclasses import dataclass, field

from webapp.lib.messages import Message, as_message, mapped
from webapp.lib.validators import printable

MAX_PROBLEMS = 50  # problem lines shown at once (a command's output, a page of an import's problems)
# Problems kept, and stored with a refused import's job: every one can be read (the import's
# page, a page at a time; the API and a download, whole). The bound keeps memory and the job's row
# small (~150 bytes a line) whatever the file; past it, the count says how many more there were.
KEPT_PROBLEMS = 10_000


@dataclass(frozen=True)
class Problem:
    source: str
    line: int | None
    template: str  # the message's template, in English (its whole text where there are no params)
    params: tuple[tuple[str, object], ...] = ()  # its values (webapp.lib.messages.Message)

    @property
    def text(self) -> Message:
        return Message(self.template, self.params)

    @property
    def message(self) -> str:
        """The message in English, without the file and line."""
        return str(self.text)

    def __str__(self):
        where = f"{self.source} line {self.line}" if self.line is not None else self.source
        return f"{where}: {self.text}"

    def as_json(self) -> dict:
        return {"source": self.source, "line": self.line, **self.text.as_json()}

    @classmethod
    def of(cls, source: str, line: int | None, message, **params) -> "Problem":
        """A problem whose message (a template with `params`, or a Message) and source hold only
        printable characters."""
        text = mapped(as_message(message, params), printable)
        return cls(printable(source), line, text.template, text.params)


@dataclass
class Problems:
    """Keeps the first `limit` problems (and MAX_PROBLEMS warnings) and counts them all. Problems
    stop an import; warnings are shown with its summary."""

    limit: int = KEPT_PROBLEMS
    kept: list[Problem] = field(default_factory=list)
    total: int = 0
    warnings: list[Problem] = field(default_factory=list)
    warning_total: int = 0

    def __bool__(self):
        return self.total > 0

    def add(self, source: str, line: int | None, message: str | Message, **params) -> None:
        """`message`: a template marked with gettext_noop and its `params`, a Message, or plain text."""
        self.total += 1
        if len(self.kept) < self.limit:
            self.kept.append(Problem.of(source, line, message, **params))

    def warn(self, source: str, line: int | None, message: str | Message, **params) -> None:
        self.warning_total += 1
        if len(self.warnings) < MAX_PROBLEMS:
            self.warnings.append(Problem.of(source, line, message, **params))

    def lines(self) -> list[str]:
        return numbered_lines(self.kept, self.total, "problems")


def numbered_lines(kept: list[Problem], total: int, what: str) -> list[str]:
    """The first MAX_PROBLEMS lines, then how many more there are."""
    kept = kept[:MAX_PROBLEMS]
    out = [str(p) for p in kept]
    if total > len(kept):
        out.append(f"... and {total - len(kept)} more {what} ({total} in all)")
    return out


def numbered_items(kept: list[Problem], total: int, what: str) -> list[dict]:
    """numbered_lines as a job stores them, to be shown in any language: the first MAX_PROBLEMS
    problems (`Problem.as_json`), then {"more": N, "total": M, "what": "problems"} if there are more."""
    kept = kept[:MAX_PROBLEMS]
    out = [p.as_json() for p in kept]
    if total > len(kept):
        out.append({"more": total - len(kept), "total": total, "what": what})
    return out
