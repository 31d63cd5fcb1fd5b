"""Checks of a page shown in Italian or Spanish, for the browser tests of the app's languages.

`english_words(lang)`: the English words the interface could leave untranslated, read from the
catalogs themselves (locale/*/LC_MESSAGES/django.po and djangojs.po): every word of 4+ letters of
an msgid, less the words the language's translations also use ("corpus", "dataset", a key's
name) and the few that are the same in every language. A page in `lang` shows none of them except
in its data, which a template may mark translate="no" (or the test subtracts the words of the rows
it made): `leftover_english(page, lang, data)` names each with the element it is in.
`overflowing(page)` names every button, nav link, table header, label or summary whose text runs
out of its box, a dialog taller than the window, and a page that scrolls sideways. `check_page`
does both, saves a full-page screenshot under test-artifacts/i18n/<lang>/ for a person to look
at, and returns the problems as lines, so a test can gather them over a whole walk and fail
once, naming every one.
"""

import functools
import re
from pathlib import Path

from django.conf import settings

LOCALES = {"en": "en-US", "it": "it-IT", "es": "es-ES"}
LANGUAGES = ("it", "es")
ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts" / "i18n"
CATALOGS = ("django.po", "djangojs.po")

# Words of the msgids that are rightly the same in Italian and Spanish: names, the field's own
# English terms (docs/i18n.md keeps "corpus", "dataset", "worker"), formats, units, coefficients
# and the machine-learning words a clinician-researcher reads in English ("prompt", "logit").
SAME_IN_EVERY_LANGUAGE = frozenset(
    """corpus corpora dataset datasets worker workers token tokens prompt prompts kernel logit float
    micro macro decselfmask studio email kappa alpha cohen fleiss krippendorff spearman sigma jsonl
    json yaml brat html https http oidc mlflow redis postgresql llama attnlrp lora codiesp""".split()
)
# English words a language takes as its own, that its translations copy from their msgids (a
# copied word is otherwise not taken as the language's: see catalog_words), and the template's
# neutral phrases the job form quotes in every language.
LOANWORDS = {
    "it": frozenset({"home", "password", "mouse", "contrastive", "patient", "paciente"}),
    "es": frozenset({"cursor", "patient", "paziente"}),
}

WORD = re.compile(r"[^\W\d_]+")  # a run of letters, accented ones included
ENGLISH_WORD = re.compile(r"[A-Za-z]{4,}")
SYNTAX = re.compile(r"\{\w+\}")  # a prompt template's fields, {note} and {task}, shown as syntax
CODE = re.compile(r"<code>.*?</code>|\b\w*_\w*\b|\w+(?:[.:/=]\w+)+", re.S)  # code, and names as code writes them
PLACEHOLDER = re.compile(r"%\([^)]*\)[sdifr]|%[sdifr]|\{[^{}]*\}|<[^>]*>|&[#\w]+;")


# ---------------------------------------------------------------- catalogs


def _unquote(text: str) -> str:
    body = text.strip()
    assert body.startswith('"') and body.endswith('"'), body
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body[1:-1])


def read_po(path: Path) -> list[dict]:
    """The entries of a .po file: {"msgid", "msgid_plural", "msgstr": [..], "fuzzy"} (obsolete
    entries and the header left out)."""
    entries, entry, field, flags = [], None, None, ""
    for raw in path.read_text(encoding="utf-8").splitlines() + [""]:
        line = raw.strip()
        if line.startswith("#~"):
            continue
        if line.startswith('"') and entry is not None:
            if field == "msgstr":
                entry["msgstr"][-1] += _unquote(line)
            else:
                entry[field] += _unquote(line)
            continue
        keyword, _, rest = line.partition(" ")
        starts = keyword in ("msgctxt", "msgid") and (entry is None or field == "msgstr")
        if (starts or not line or line.startswith("#")) and entry is not None and field == "msgstr":
            if entry["msgid"]:
                entries.append(entry)
            entry, field = None, None
        if line.startswith("#,"):
            flags += line
        elif starts:
            entry = {"msgid": "", "msgid_plural": "", "msgstr": [], "fuzzy": "fuzzy" in flags}
            flags = ""
        if entry is None or line.startswith("#") or not line:
            continue
        if keyword.startswith("msgstr"):
            entry["msgstr"].append(_unquote(rest))
            field = "msgstr"
        elif keyword in ("msgid", "msgid_plural", "msgctxt"):
            entry[keyword] = _unquote(rest)
            field = keyword
    return entries


def catalog_entries(lang: str) -> list[dict]:
    locale_dir = Path(settings.BASE_DIR) / "locale"
    found = [locale_dir / lang / "LC_MESSAGES" / name for name in CATALOGS]
    found = [path for path in found if path.exists()]
    assert found, f"no catalog in {locale_dir / lang / 'LC_MESSAGES'}: the English words come from its msgids"
    return [entry for path in found for entry in read_po(path)]


def words_of(text: str) -> set[str]:
    return {w.lower() for w in WORD.findall(text)}


@functools.cache
def catalog_words(lang: str) -> tuple[frozenset[str], frozenset[str]]:
    """(the words of 4+ letters of the msgids, the words of the language) of the catalogs of
    `lang`. A word of the language is one a translation in use says where its msgid does not:
    a word a translation copies from its msgid (a name, a machine key, a string copied instead of
    translated) and what it writes as code (`<code>`, dotted or snake_case names) are not."""
    english, translated = set(), set()
    for entry in catalog_entries(lang):
        msgids = set()
        for msgid in (entry["msgid"], entry["msgid_plural"]):
            english |= {w.lower() for w in ENGLISH_WORD.findall(PLACEHOLDER.sub(" ", msgid))}
            msgids |= words_of(PLACEHOLDER.sub(" ", msgid))
        if not entry["fuzzy"]:
            for msgstr in entry["msgstr"]:
                translated |= words_of(PLACEHOLDER.sub(" ", CODE.sub(" ", msgstr))) - msgids
    return frozenset(english), frozenset(translated)


def translated_words(lang: str) -> frozenset[str]:
    """The words a page in `lang` may show: those of its translations, its loanwords and the few
    the same in every language."""
    return catalog_words(lang)[1] | SAME_IN_EVERY_LANGUAGE | LOANWORDS.get(lang, frozenset())


def english_words(lang: str) -> frozenset[str]:
    """The English words that must not be seen on a page in `lang` ("en": the words that no
    Italian or Spanish translation uses, for the detector's check on an English page)."""
    languages = LANGUAGES if lang == "en" else (lang,)
    english = set().union(*(catalog_words(language)[0] for language in languages))
    return frozenset(english - set().union(*(translated_words(language) for language in languages)))


# ---------------------------------------------------------------- the page's words

# describe(el): where an element is, as a short CSS path ending at the nearest element with an id.
DESCRIBE_JS = """
  const describe = el => {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 4; e = e.parentElement) {
      const first = typeof e.className === 'string' ? e.className.trim().split(/\\s+/)[0] : '';
      parts.unshift(e.tagName.toLowerCase() + (e.id ? '#' + e.id : first ? '.' + first : ''));
      if (e.id) break;
    }
    return parts.join(' > ');
  };
  const shown = el => el.checkVisibility({visibilityProperty: true});
"""

TEXTS_JS = (
    """() => {
  // Every piece of text a person reads: visible text nodes, the tooltips, labels and placeholders
  // of visible elements, the values of input buttons and the page's title; each with where it is.
  // Keys, code, the note's own text and what a template marks translate="no" (a machine name
  // shown as it is) are not words of the interface.
  const SKIP = 'script, style, template, noscript, kbd, code, .notetext, #note-text, [translate=no]';
  const ATTRIBUTES = ['title', 'aria-label', 'placeholder'];
  const pageLang = document.documentElement.lang.split('-')[0];
  // Text marked as written in another language (the language menu names each in itself).
  const foreign = el => {
    const marked = el.closest('[lang]');
    return marked && marked !== document.documentElement && marked.lang.split('-')[0] !== pageLang;
  };"""
    + DESCRIBE_JS
    + """
  const out = [[document.title, 'title']];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const node = walk.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || el.closest(SKIP) || foreign(el)) continue;
    if (!shown(el.closest('select') || el)) continue;
    out.push([node.textContent, describe(el)]);
  }
  const named = '[title], [aria-label], [placeholder], input[type=submit], input[type=button], input[type=reset]';
  for (const el of document.body.querySelectorAll(named)) {
    if (el.closest(SKIP) || foreign(el) || !shown(el)) continue;
    for (const name of ATTRIBUTES) {
      if (el.hasAttribute(name)) out.push([el.getAttribute(name), describe(el) + '[' + name + ']']);
    }
    if (el.matches('input') && el.value) out.push([el.value, describe(el) + '[value]']);
  }
  return out;
}"""
)


def data_words(*extra: str) -> set[str]:
    """The words of the data the tests made (names, descriptions, options, note texts, users):
    shown as they are, in whatever language they were written."""
    from django.contrib.auth import get_user_model

    from webapp.corpus.models import Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion, PeakProfile
    from webapp.review.models import ValidationSet

    texts = list(extra)
    texts += Corpus.objects.values_list("name", flat=True)
    for external_id, text in Note.objects.values_list("external_id", "text"):
        texts += [external_id, text]
    for task in Task.objects.all():
        texts += [task.slug, task.description, task.guideline or "", *map(str, task.options or [])]
    for name, family, path in ModelVersion.objects.values_list("name", "family", "path"):
        texts += [name, family, path]
    texts += PeakProfile.objects.values_list("name", flat=True)
    texts += ValidationSet.objects.values_list("name", flat=True)
    texts += get_user_model().objects.values_list("username", flat=True)
    return set().union(*(words_of(t) for t in texts))


def leftover_english(page, lang: str, data: set[str] | None = None) -> list[tuple[list[str], str, str]]:
    """([English words], element, its text) for every piece of text of the page with English
    words outside the data."""
    vocabulary = english_words(lang)
    data = data_words() if data is None else data
    found = []
    for text, where in page.evaluate(TEXTS_JS):
        words = sorted(words_of(SYNTAX.sub(" ", text)) & vocabulary - data)
        if words:
            found.append((words, where, " ".join(text.split())[:120]))
    return found


# ---------------------------------------------------------------- overflow

OVERFLOW_JS = (
    """() => {
  // Boxes whose text runs out of them: a block's content wider than the block (unless it
  // scrolls on purpose: overflow auto or scroll), an inline link or label past its container,
  // and the page itself scrolling sideways.
  const BOXES = 'button, input[type=submit], input[type=button], a.button, nav a, th, label, summary, legend, '
    + '.badge, .status';
  const textOf = (el, n) => ((el.matches('input') ? el.value : el.innerText) || '').trim().replace(/\\s+/g, ' ')
    .slice(0, n);"""
    + DESCRIBE_JS
    + """
  const out = [];
  for (const el of document.querySelectorAll(BOXES)) {
    if (!shown(el)) continue;
    const style = getComputedStyle(el);
    if (['auto', 'scroll'].includes(style.overflowX)) continue;
    const found = by => out.push({where: describe(el), text: textOf(el, 80), by, white_space: style.whiteSpace});
    if (style.display === 'inline') {
      let box = el.parentElement;
      while (box && getComputedStyle(box).display === 'inline') box = box.parentElement;
      const outer = box.getBoundingClientRect();
      const by = r => (r.width ? Math.max(r.right - outer.right, outer.left - r.left) : 0);
      const most = Math.max(0, ...[...el.getClientRects()].map(by));
      if (most > 1) found(Math.round(most));
    } else if (el.scrollWidth > el.clientWidth + 1) {
      found(el.scrollWidth - el.clientWidth);
    }
  }
  // a dialog taller than the window, that does not scroll: its top or bottom cannot be reached
  for (const box of document.querySelectorAll('[role=dialog], [role=dialog] > *, dialog[open]')) {
    if (!shown(box) || ['auto', 'scroll'].includes(getComputedStyle(box).overflowY)) continue;
    const r = box.getBoundingClientRect(), tall = window.innerHeight;
    if (r.top < -1 || r.bottom > tall + 1) {
      out.push({where: describe(box), text: `${Math.round(r.height)}px tall in a window of ${tall}px: `
                + (r.top < 0 ? 'its top' : 'its bottom') + ' cannot be reached',
                by: Math.round(Math.max(-r.top, r.bottom - tall)), white_space: ''});
    }
  }
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) {
    // the page scrolls sideways: name the innermost elements past its right edge
    const past = el => el.checkVisibility() && el.getBoundingClientRect().right > doc.clientWidth + 1;
    const culprits = [...document.body.querySelectorAll('*')].filter(el => past(el) && ![...el.children].some(past));
    const names = culprits.slice(0, 5).map(el => describe(el) + ' ' + JSON.stringify(textOf(el, 40)));
    out.push({where: 'html', text: 'the page scrolls sideways: ' + names.join('; '),
              by: doc.scrollWidth - doc.clientWidth, white_space: ''});
  }
  return out;
}"""
)


def overflowing(page) -> list[dict]:
    return page.evaluate(OVERFLOW_JS)


# ---------------------------------------------------------------- one page


def html_lang(page) -> str:
    return (page.evaluate("() => document.documentElement.lang") or "").lower()


def screenshot(page, lang: str, name: str) -> Path:
    path = ARTIFACTS / lang / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path


def check_page(page, lang: str, name: str, data: set[str] | None = None) -> list[str]:
    """The problems of the page as shown now, one line each (none: all is well), after saving its
    screenshot as test-artifacts/i18n/<lang>/<name>.png. On an English page ("en") the detector
    must find English words (its own check), so they are no problem there; overflow is."""
    page.wait_for_load_state()
    problems = []
    screenshot(page, lang, name)
    shown_lang = html_lang(page)
    if shown_lang.split("-")[0] != lang:
        problems.append(f"<html lang={shown_lang!r}>, not {lang!r}")
    words = leftover_english(page, lang, data)
    if lang == "en":
        if not words:
            problems.append("the detector found no English word on an English page")
    else:
        for english, where, text in words:
            problems.append(f"English {', '.join(english)} in {where}: {text!r}")
    for box in overflowing(page):
        problems.append(
            f"overflow by {box['by']}px in {box['where']} (white-space {box['white_space'] or '-'}): {box['text']!r}"
        )
    return problems


class Walk:
    """The pages of one walk through the app in one language: `check(name)` checks the page as it
    is now; `problems()` lists each problem once, with the pages it was seen on."""

    def __init__(self, page, lang: str):
        self.page, self.lang, self.pages, self.seen = page, lang, [], {}

    def check(self, name: str, data: set[str] | None = None) -> None:
        self.pages.append(name)
        for problem in check_page(self.page, self.lang, name, data):
            self.seen.setdefault(problem, []).append(name)

    def problems(self) -> list[str]:
        return [f"[{self.lang}] {problem} (on {', '.join(pages)})" for problem, pages in self.seen.items()]

    def report(self) -> str:
        problems = self.problems()
        return f"{len(problems)} problem(s) on the pages {', '.join(self.pages)}:\n" + "\n".join(problems)


def keys_of_help(html: str) -> list[str]:
    """The keys the review page's keyboard help lists, in order, from the page's HTML."""
    match = re.search(r'<div id="help".*?</table>', html, re.S)
    assert match, "no keyboard help on the page"
    return [re.sub(r"<[^>]+>", "", key).strip() for key in re.findall(r"<kbd>(.*?)</kbd>", match.group(0), re.S)]


# ---------------------------------------------------------------- browser pages


def new_page(browser, base_url: str, lang: str):
    """A page of a fresh browser context whose locale is `lang`'s (its Accept-Language)."""
    context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 900}, locale=LOCALES[lang])
    page = context.new_page()
    page.set_default_timeout(30_000)
    return page


def log_in(page, user):
    from tests.conftest import PASSWORD

    page.goto("/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.press("#id_password", "Enter")  # the login form's own submit (the language menu has one too)
    page.wait_for_url(lambda url: "/login/" not in url)
    return page
