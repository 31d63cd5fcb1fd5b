"""What an import cannot read, and what it accepts but its user should hear about: every reader of
the format table (webapp.lib.formats) and every import reports into one `Problems`. No Django here.

A problem names the file, the line (or None) and the reason, with character or byte offsets
where useful, and never quotes note text. A problem line never holds a character that is not
printable (`validators.printable`): it is shown on pages, stored in jsonb and audited, and
PostgreSQL refuses a \\u0000 there.
"""

from dataclasses import dataclass, field

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
    message: str

    def __str__(self):
        where = f"{self.source} line {self.line}" if self.line is not None else self.source
        return f"{where}: {self.message}"


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

    def add(self, source: str, line: int | None, message: str) -> None:
        self.total += 1
        if len(self.kept) < self.limit:
            self.kept.append(Problem(printable(source), line, printable(message)))

    def warn(self, source: str, line: int | None, message: str) -> None:
        self.warning_total += 1
        if len(self.warnings) < MAX_PROBLEMS:
            self.warnings.append(Problem(printable(source), line, printable(message)))

    def lines(self) -> list[str]:
        return numbered_lines(self.kept, self.total, "problems")


def numbered_lines(kept: list[Problem], total: int, what: str) -> list[str]:
    """The first MAX_PROBLEMS lines, then how many more there are."""
    kept = kept[:MAX_PROBLEMS]
    out = [str(p) for p in kept]
    if total > len(kept):
        out.append(f"... and {total - len(kept)} more {what} ({total} in all)")
    return out
