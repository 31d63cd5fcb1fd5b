"""The translation catalogs are kept complete (scripts/check_messages.py, run by `make lint`): on a
tiny tree, a new string nobody translated fails the check naming its file and line, and so do an
untranslated, a fuzzy, an obsolete and a stale entry and a broken placeholder; a complete tiny
catalog passes. Then the repository's own catalogs."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_messages.py"

TEMPLATE = """{% load i18n %}<h1>{% translate "Peaks" %}</h1>
<p>{% blocktranslate count n=peaks %}{{ n }} peak{% plural %}{{ n }} peaks{% endblocktranslate %}</p>
<a>{% translate "Review" context "menu" %}</a>
"""
SCRIPT_JS = 'document.title = gettext("Accept");\n'
HEADER = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"
"Language: {language}\\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\\n"
"""
DJANGO_PO = """
#: templates/review/page.html:1
msgid "Peaks"
msgstr "{peaks}"

#: templates/review/page.html:2
#, python-format
msgid "%(n)s peak"
msgid_plural "%(n)s peaks"
msgstr[0] "%(n)s {peak}"
msgstr[1] "%(n)s {peaks_lower}"

#: templates/review/page.html:3
msgctxt "menu"
msgid "Review"
msgstr "{review}"
"""
DJANGOJS_PO = """
#: static/review/page.js:1
msgid "Accept"
msgstr "{accept}"
"""
WORDS = {
    "it": {"peaks": "Picchi", "peak": "picco", "peaks_lower": "picchi", "review": "Revisione", "accept": "Accetta"},
    "es": {"peaks": "Picos", "peak": "pico", "peaks_lower": "picos", "review": "Revisión", "accept": "Aceptar"},
}


def write(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def tree(tmp_path):
    """A tiny project: one template, one script (and a vendored one, never read), complete
    catalogs in Italian and Spanish."""
    write(tmp_path / "templates" / "review" / "page.html", TEMPLATE)
    write(tmp_path / "static" / "review" / "page.js", SCRIPT_JS)
    write(tmp_path / "static" / "vendor" / "lib.js", 'gettext("Not ours");\n')
    write(tmp_path / "webapp" / "__init__.py", "")
    for language, words in WORDS.items():
        messages = tmp_path / "locale" / language / "LC_MESSAGES"
        write(messages / "django.po", HEADER.format(language=language) + DJANGO_PO.format(**words))
        write(messages / "djangojs.po", HEADER.format(language=language) + DJANGOJS_PO.format(**words))
    return tmp_path


def run_check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), "--languages", "it", "es"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_complete_catalogs_pass(tree):
    result = run_check(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "complete" in result.stdout


def test_a_new_untranslated_string_fails_naming_its_file_and_line(tree):
    page = tree / "templates" / "review" / "page.html"
    page.write_text(TEMPLATE + '<button>{% translate "Reject" %}</button>\n', encoding="utf-8")
    result = run_check(tree)
    assert result.returncode == 1
    for language in ("it", "es"):
        line = f"templates/review/page.html:4: msgid 'Reject' is not in locale/{language}/LC_MESSAGES/django.po"
        assert line in result.stdout.splitlines(), result.stdout
    assert "2 problems" in result.stderr


def test_a_new_string_in_a_script_fails_too(tree):
    write(tree / "static" / "review" / "page.js", SCRIPT_JS + 'alert(ngettext("%s peak", "%s peaks", 2));\n')
    result = run_check(tree)
    assert result.returncode == 1
    assert (
        "static/review/page.js:2: msgid '%s peak' (plural '%s peaks') is not in locale/it/LC_MESSAGES/djangojs.po"
        in result.stdout
    )


def test_untranslated_fuzzy_obsolete_stale_and_broken_entries_fail(tree):
    catalog = tree / "locale" / "it" / "LC_MESSAGES" / "django.po"
    text = catalog.read_text(encoding="utf-8")
    text = text.replace('msgstr "Picchi"', 'msgstr ""')  # untranslated
    text = text.replace('msgctxt "menu"', '#, fuzzy\nmsgctxt "menu"')  # fuzzy
    text = text.replace('msgstr[1] "%(n)s picchi"', 'msgstr[1] "%(m)s picchi"')  # a placeholder lost
    text += '\n#: templates/gone.html:1\nmsgid "Gone"\nmsgstr "Sparito"\n'  # no longer in the sources
    text += '\n#~ msgid "Old"\n#~ msgstr "Vecchio"\n'  # obsolete
    catalog.write_text(text, encoding="utf-8")
    spanish = tree / "locale" / "es" / "LC_MESSAGES" / "djangojs.po"
    spanish.write_text("#, fuzzy\n" + spanish.read_text(encoding="utf-8"), encoding="utf-8")
    result = run_check(tree)
    assert result.returncode == 1
    out = result.stdout
    name = "locale/it/LC_MESSAGES/django.po"
    assert f"{name}:8: msgid 'Peaks' is untranslated" in out, out
    assert f"{name}:21: msgid 'Review' (context 'menu') is fuzzy" in out
    assert f"{name}:25: msgid 'Gone' is no longer in the sources" in out
    assert f"{name}:28: msgid 'Old' is obsolete" in out
    assert f"{name}:15: a format specification for argument 'm'" in out  # msgfmt --check-format names the line
    assert "locale/es/LC_MESSAGES/djangojs.po:2: the header is fuzzy" in out
    assert "Not ours" not in out  # static/vendor is not read


def test_a_missing_catalog_fails(tree):
    (tree / "locale" / "es" / "LC_MESSAGES" / "djangojs.po").unlink()
    result = run_check(tree)
    assert result.returncode == 1
    assert "locale/es/LC_MESSAGES/djangojs.po: missing, and the sources have 1 strings for it" in result.stdout


def test_the_repositorys_catalogs_are_complete():
    """What `make lint` runs: every string marked in the app is translated in Italian and Spanish."""
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
