"""The docs stay a map that leads somewhere: every relative link in README.md, docs/**/*.md and the
apps' READMEs (webapp/**/README.md) resolves to a file of the repository, and an #anchor to a
heading of that file; every `python -m ml CMD`, `python -m benchmarks NAME`, `manage.py COMMAND`
and `make TARGET` they quote exists, and so does every file path and module they quote in code;
and README.md stays a map, at most 300 lines.

Each test lists every broken link or command with its file and line, not only the first. No
database: Django's command list is read from the installed apps."""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 300


def doc_files() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "webapp").rglob("README.md")),
    ]


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- reading markdown -------------------------------------------------------------------------

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
# [text](target "title") and ![alt](target); the target has no spaces (or is in <...>).
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]+>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+(\S+)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)


def _lines(path: Path):
    """(line number, text, in a fenced code block) for each line."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            yield number, line, True
            continue
        yield number, line, fenced


def _prose(path: Path):
    """(first line number, text) of each run of lines outside fenced code, so that a link or a
    code span broken over two lines is read whole."""
    run: list[str] = []
    start = 0
    for number, line, fenced in _lines(path):
        if fenced:
            if run:
                yield start, "\n".join(run)
            run = []
            continue
        if not run:
            start = number
        run.append(line)
    if run:
        yield start, "\n".join(run)


def links(path: Path):
    """(line, target) of every markdown link outside code."""
    for start, text in _prose(path):
        prose = INLINE_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
        for match in LINK.finditer(prose):
            yield start + prose.count("\n", 0, match.start()), match.group(1).strip("<>")
        for offset, line in enumerate(prose.split("\n")):
            match = REFERENCE.match(line)
            if match:
                yield start + offset, match.group(1)


def code(path: Path):
    """(line, text) of every piece of code: inline code spans (newlines read as spaces) and the
    lines of fenced blocks."""
    for number, line, fenced in _lines(path):
        if fenced and not FENCE.match(line):
            yield number, line
    for start, text in _prose(path):
        for match in INLINE_CODE.finditer(text):
            yield start + text.count("\n", 0, match.start()), match.group(2).replace("\n", " ")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces to
    hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = unicodedata.normalize("NFC", text).lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found = set()
    for _, line, fenced in _lines(path):
        if fenced:
            continue
        found.update(HTML_ID.findall(line))
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


# --- links ------------------------------------------------------------------------------------


def broken_link(doc: Path, target: str) -> str | None:
    """Why `target`, linked from `doc`, leads nowhere; None when it leads somewhere."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto:
        return None
    file_part, _, anchor = target.partition("#")
    if file_part.startswith("/"):
        return "is an absolute path (links are relative to the file)"
    destination = (doc.parent / file_part).resolve() if file_part else doc
    if "../shared" in file_part or not destination.is_relative_to(ROOT):
        return "leads outside the repository (a clone has nothing beside it)"
    if not destination.exists():
        return "names a file that does not exist"
    if anchor:
        if destination.is_dir() or destination.suffix.lower() != ".md":
            return f"has an anchor #{anchor} into a file that is not markdown"
        if anchor not in anchors(destination):
            return f"has an anchor #{anchor} that is no heading of {_rel(destination)}"
    return None


def test_every_relative_link_resolves():
    problems = []
    for doc in doc_files():
        for number, target in links(doc):
            why = broken_link(doc, target)
            if why:
                problems.append(f"{_rel(doc)}:{number}: link ({target}) {why}")
    assert not problems, f"{len(problems)} broken link(s):\n" + "\n".join(problems)


# --- commands ---------------------------------------------------------------------------------

# A placeholder (NAME, <command>, CMD, ...) is not a name to check.
NAME = r"([a-z][a-z0-9_-]*)"
ML = re.compile(r"python3?\s+-m\s+ml\s+" + NAME)
BENCHMARK = re.compile(r"python3?\s+-m\s+benchmarks\s+" + NAME)
MANAGE = re.compile(r"manage\.py\s+" + NAME)
MAKE = re.compile(r"(?:^|[\s;&|(])make\s+([^#;&|`]*)")


def ml_commands() -> set[str]:
    from ml.__main__ import COMMANDS

    return set(COMMANDS)


def benchmark_names() -> set[str]:
    from benchmarks.__main__ import BENCHMARKS

    return {*BENCHMARKS, "list"}  # `python -m benchmarks list` lists them


def management_commands() -> set[str]:
    import django
    from django.core.management import get_commands

    django.setup()
    return set(get_commands())


def make_targets() -> set[str]:
    targets = set()
    for line in (ROOT / "Makefile").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.][A-Za-z0-9_. -]*?)\s*:(?![=:])", line)
        if match and "$" not in match.group(1):
            targets.update(match.group(1).split())
        if line.startswith(".PHONY:"):
            targets.update(line.split(":", 1)[1].split())
    return targets


def make_invocations(text: str):
    """The targets of each `make ...` in a piece of code: `make install model` names two,
    `make test TEST_RUN=3` one (variables are skipped)."""
    for match in MAKE.finditer(text):
        for word in match.group(1).split():
            if "=" in word:
                continue
            if word.startswith("-") or not re.fullmatch(r"[a-z][a-z0-9_.-]*", word):
                break
            yield word


def quoted_commands(doc: Path):
    """(line, kind, name) of every command quoted in the doc's code."""
    for number, text in code(doc):
        for match in ML.finditer(text):
            yield number, "python -m ml", match.group(1)
        for match in BENCHMARK.finditer(text):
            yield number, "python -m benchmarks", match.group(1)
        for match in MANAGE.finditer(text):
            yield number, "manage.py", match.group(1)
        for target in make_invocations(text):
            yield number, "make", target


def test_every_quoted_command_exists():
    known = {
        "python -m ml": ml_commands(),
        "python -m benchmarks": benchmark_names(),
        "manage.py": management_commands(),
        "make": make_targets(),
    }
    problems, checked = [], 0
    for doc in doc_files():
        for number, kind, name in quoted_commands(doc):
            checked += 1
            if name not in known[kind]:
                problems.append(f"{_rel(doc)}:{number}: `{kind} {name}`: no such {kind.split()[-1]} command/target")
    assert checked > 50, f"only {checked} commands found in the docs: is the pattern still right?"
    assert not problems, f"{len(problems)} quoted command(s) that do not exist:\n" + "\n".join(problems)


def test_readme_is_a_map():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines, more than {README_MAX_LINES}: move detail into docs/ and link it"
    )
    text = "\n".join(lines)
    for command in ("make demo", "make test"):
        assert command in text, f"README.md no longer states `{command}`"


# --- paths and modules ------------------------------------------------------------------------

# `webapp/corpus/importing.py`, `workers/imports.py:run_import`, `tests/webapp/review/test_validation*.py`
CODE_PATH = re.compile(
    r"^(?:\.\./)*((?:webapp|ml|workers|tests|scripts|benchmarks|docs|templates|static)/[\w./*-]*)(?::(\w+))?$"
)
# `webapp.lifecycle.queue.send_on_commit`, `ml.training.memory.paper_table()`
DOTTED = re.compile(r"\b((?:webapp|ml|workers)(?:\.\w+)+)")


def _module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def broken_path(doc: Path, path: str, name: str | None) -> str | None:
    """Why a quoted path leads nowhere (tried from the repository root, then from the doc's folder)."""
    path = path.rstrip(".")
    for base in (ROOT, doc.parent):
        found = sorted(base.glob(path)) if "*" in path else [base / path] if (base / path).exists() else []
        if found:
            if name and found[0].is_file() and name not in found[0].read_text(encoding="utf-8"):
                return f"{path} has no {name}"
            return None
    return f"{path} does not exist"


def broken_module(dotted: str) -> str | None:
    """Why `a.b.c.name` names nothing: the longest prefix that is a module must exist, and the
    next part must be named in it (a function, class or submodule)."""
    parts = dotted.split(".")
    for end in range(len(parts), 1, -1):
        module = _module_file(parts[:end])
        if module:
            rest = parts[end:]
            if rest and not re.search(rf"\b{re.escape(rest[0])}\b", module.read_text(encoding="utf-8")):
                return f"{'.'.join(parts[:end])} has no {rest[0]}"
            return None
    return f"no module {'.'.join(parts[:2])}"


def test_every_quoted_path_and_module_exists():
    """A file, folder or module the docs quote in code exists where they say (code moves; the
    docs must follow)."""
    problems = []
    for doc in doc_files():
        for number, text in code(doc):
            for word in re.split(r"[\s,;()\[\]`'\"]+", text):
                match = CODE_PATH.match(word.split("#", 1)[0])
                if match and "<" not in word:
                    why = broken_path(doc, match.group(1), match.group(2))
                    if why:
                        problems.append(f"{_rel(doc)}:{number}: `{word}`: {why}")
            for match in DOTTED.finditer(text):
                why = broken_module(match.group(1))
                if why:
                    problems.append(f"{_rel(doc)}:{number}: `{match.group(1)}`: {why}")
    assert not problems, f"{len(problems)} quoted path(s) or module(s) that do not exist:\n" + "\n".join(problems)


# --- the checker itself -----------------------------------------------------------------------


def test_the_checker_finds_what_is_broken(tmp_path, monkeypatch):
    """A doc with a broken file link, a broken anchor, a good anchor and a missing command of each
    kind: every problem is reported, the good ones are not."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Long work: one lifecycle\n\n## Long work: one lifecycle\n")
    doc = tmp_path / "README.md"
    doc.write_text(
        "[ok](docs/a.md#long-work-one-lifecycle) [ok2](docs/a.md#long-work-one-lifecycle-1)\n"
        "[gone](docs/missing.md) [bad anchor](docs/a.md#nowhere) [web](https://example.org)\n"
        "`[not a link](nowhere.md)`\n"
        "```\nmake install model TEST_RUN=3 && python -m ml nosuch\n```\n"
    )
    found = {target: broken_link(doc, target) for _, target in links(doc)}
    assert found["docs/a.md#long-work-one-lifecycle"] is None
    assert found["docs/a.md#long-work-one-lifecycle-1"] is None
    assert found["https://example.org"] is None
    assert "does not exist" in found["docs/missing.md"]
    assert "#nowhere" in found["docs/a.md#nowhere"]
    assert "nowhere.md" not in found
    assert [(kind, name) for _, kind, name in quoted_commands(doc)] == [
        ("python -m ml", "nosuch"),
        ("make", "install"),
        ("make", "model"),
    ]
    assert slug("The paper's rows on CodiEsp, at CPU scale") == "the-papers-rows-on-codiesp-at-cpu-scale"
    assert slug("`explain`: which prediction") == "explain-which-prediction"


def test_the_path_checker_finds_what_is_gone():
    doc = ROOT / "README.md"
    assert broken_module("webapp.projects.no_such_module") == "webapp.projects has no no_such_module"
    assert broken_module("webapp.lifecycle.queue.send_on_commit") is None
    assert broken_module("webapp.lifecycle.queue.no_such_function") == "webapp.lifecycle.queue has no no_such_function"
    assert broken_path(doc, "webapp/lib/no_such_module.py", None) == "webapp/lib/no_such_module.py does not exist"
    assert broken_path(doc, "workers/imports.py", "run_import") is None
    assert broken_path(doc, "workers/imports.py", "no_such_task") == "workers/imports.py has no no_such_task"
    assert broken_path(doc, "tests/webapp/review/test_validation*.py", None) is None
