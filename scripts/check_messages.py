"""The translation catalogs are complete (`make lint`; docs/i18n.md): every string that
`makemessages` finds in the sources (templates/, webapp/, static/ but its vendor/) is in each
language's catalog (locale/<language>/LC_MESSAGES/django.po and djangojs.po), translated, not
fuzzy; no catalog keeps an obsolete entry or one the sources no longer have; and `msgfmt -c
--check-format` accepts each catalog (a translation keeps its %(name)s placeholders).

The sources are copied to a temporary folder and extracted there by Django's makemessages into a
temporary LOCALE_PATHS, so the committed catalogs are only read. Prints each problem as
file:line and exits 1; exits 0 when the catalogs are complete.

    python scripts/check_messages.py [--root DIR] [--languages it es]
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("templates", "webapp", "static")
SKIPPED = shutil.ignore_patterns("vendor", "__pycache__", "*.pyc", "locale")
DOMAINS = {"django": ["html", "txt", "py"], "djangojs": ["js"]}


@dataclass
class Entry:
    line: int  # of its msgid in the file
    msgctxt: str | None = None
    msgid: str = ""
    msgid_plural: str | None = None
    msgstr: list[str] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)
    references: list[str] = field(default_factory=list)
    obsolete: bool = False

    @property
    def key(self) -> tuple:
        return (self.msgctxt, self.msgid, self.msgid_plural)

    def describe(self) -> str:
        text = f"msgid {self.msgid!r}"
        if self.msgid_plural is not None:
            text += f" (plural {self.msgid_plural!r})"
        if self.msgctxt is not None:
            text += f" (context {self.msgctxt!r})"
        return text


def read_po(path: Path) -> list[Entry]:
    """The entries of a .po file, its header (msgid "") first. Enough of the format for what
    makemessages writes: comments, flags, context, plurals, continued strings, obsolete entries."""
    entries: list[Entry] = []
    entry: Entry | None = None
    keyword = None
    references: list[str] = []
    flags: set[str] = set()

    def finish():
        nonlocal entry, references, flags
        if entry is not None:
            entries.append(entry)
        entry, references, flags = None, [], set()

    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        obsolete = line.startswith("#~")
        if obsolete:
            line = line[2:].strip()
            if line.startswith("|"):  # the previous msgid of an obsolete fuzzy entry
                continue
        if not line:
            finish()
            continue
        if line.startswith("#:"):
            if entry is not None and entry.msgstr:
                finish()
            references.extend(line[2:].split())
        elif line.startswith("#,"):
            if entry is not None and entry.msgstr:
                finish()
            flags.update(flag.strip() for flag in line[2:].split(","))
        elif line.startswith("#"):
            continue
        elif line.startswith('"'):
            text = ast.literal_eval(line)
            if keyword == "msgstr":
                entry.msgstr[-1] += text
            else:
                setattr(entry, keyword, getattr(entry, keyword) + text)
        else:
            word, _, value = line.partition(" ")
            text = ast.literal_eval(value.strip())
            if word in ("msgctxt", "msgid") and entry is not None and entry.msgstr:
                finish()  # the next entry, with no blank line before it
            if entry is None:
                entry = Entry(line=number, references=references, flags=flags, obsolete=obsolete)
            if word == "msgid":
                entry.line = number
            if word.startswith("msgstr"):
                entry.msgstr.append(text)
                keyword = "msgstr"
            else:
                setattr(entry, word, text)
                keyword = word
    finish()
    return entries


def extract(root: Path, work: Path) -> dict[str, list[Entry]]:
    """What makemessages finds in a copy of root's sources: {domain: entries}."""
    import django
    from django.core.management import call_command
    from django.test.utils import override_settings

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    django.setup()
    tree, out = work / "tree", work / "locale"
    for name in SOURCES:
        if (root / name).is_dir():
            shutil.copytree(root / name, tree / name, ignore=SKIPPED)
    tree.mkdir(exist_ok=True)
    out.mkdir()
    here = Path.cwd()
    os.chdir(tree)  # makemessages walks the current folder; its references are relative to it
    try:
        with override_settings(LOCALE_PATHS=[str(out)]):
            for domain, extensions in DOMAINS.items():
                call_command("makemessages", locale=["xx"], domain=domain, extensions=extensions, verbosity=0)
    finally:
        os.chdir(here)
    found = {}
    for domain in DOMAINS:
        path = out / "xx" / "LC_MESSAGES" / f"{domain}.po"
        found[domain] = [entry for entry in read_po(path) if entry.msgid] if path.exists() else []
    return found


def check(root: Path, languages: list[str]) -> list[str]:
    problems = []
    with tempfile.TemporaryDirectory(prefix="check-messages-") as work:
        extracted = extract(root, Path(work))
    for language in languages:
        for domain, sources in extracted.items():
            path = root / "locale" / language / "LC_MESSAGES" / f"{domain}.po"
            name = path.relative_to(root)
            if not path.exists():
                if sources:
                    problems.append(f"{name}: missing, and the sources have {len(sources)} strings for it")
                continue
            catalog = read_po(path)
            if catalog and catalog[0].msgid == "" and "fuzzy" in catalog[0].flags:
                # msgfmt would drop a fuzzy header, and with it the charset and the plural forms
                problems.append(f"{name}:{catalog[0].line}: the header is fuzzy: fill it in, remove the flag")
            catalog = [entry for entry in catalog if entry.msgid]
            kept = {entry.key for entry in catalog if not entry.obsolete}
            wanted = {entry.key for entry in sources}
            for entry in sources:
                if entry.key not in kept:
                    where = entry.references[0] if entry.references else "(sources)"
                    problems.append(f"{where}: {entry.describe()} is not in {name}")
            for entry in catalog:
                if entry.obsolete:
                    problems.append(f"{name}:{entry.line}: {entry.describe()} is obsolete (#~): remove it")
                elif entry.key not in wanted:
                    problems.append(f"{name}:{entry.line}: {entry.describe()} is no longer in the sources")
                elif "fuzzy" in entry.flags:
                    problems.append(f"{name}:{entry.line}: {entry.describe()} is fuzzy: check it, remove the flag")
                elif not entry.msgstr or not all(entry.msgstr):
                    problems.append(f"{name}:{entry.line}: {entry.describe()} is untranslated")
            checked = subprocess.run(
                ["msgfmt", "-c", "--check-format", "-o", os.devnull, str(path)],
                capture_output=True,
                text=True,
                cwd=root,
            )
            if checked.returncode:
                problems.extend(checked.stderr.strip().replace(str(root) + os.sep, "").splitlines())
    return problems


def main(argv=None) -> int:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    from django.conf import settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree whose sources and locale/ are checked")
    parser.add_argument("--languages", nargs="+", help="default: settings.LANGUAGES but LANGUAGE_CODE")
    args = parser.parse_args(argv)
    languages = args.languages or [code for code, _ in settings.LANGUAGES if code != settings.LANGUAGE_CODE]
    problems = check(args.root.resolve(), languages)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problems in the translation catalogs (docs/i18n.md, adding a string)", file=sys.stderr)
        return 1
    print(f"The catalogs of {', '.join(languages)} are complete.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
