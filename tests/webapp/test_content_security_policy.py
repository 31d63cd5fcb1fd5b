"""The Content-Security-Policy: every page sends exactly the policy, and nothing in our templates
or scripts needs what it refuses (inline scripts, style attributes, event-handler attributes, eval).

The scans read the sources, so a new template with `style="..."` fails here before a browser
silently drops its styling; tests/browser/test_content_security_policy.py loads the pages in
Chromium and listens for violations.
"""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from tests.webapp.test_access_matrix import _urls, note  # noqa: F401 (note is a fixture)

POLICY = {
    "default-src": {"'self'"},
    "script-src": {"'self'"},
    "style-src": {"'self'"},
    "connect-src": {"'self'"},
    "object-src": {"'none'"},
    "base-uri": {"'self'"},
    "form-action": {"'self'"},
    "frame-ancestors": {"'none'"},
}
TEMPLATES = Path(settings.BASE_DIR) / "templates"
OUR_SCRIPTS = [p for p in (Path(settings.BASE_DIR) / "static").rglob("*.js") if "vendor" not in p.parts]


def directives(header: str) -> dict[str, set[str]]:
    parsed = {}
    for part in header.split(";"):
        name, *sources = part.split()
        assert name not in parsed, f"{name} twice in {header!r}"
        parsed[name] = set(sources)
    return parsed


def assert_policy(response, what):
    assert "Content-Security-Policy" in response, what
    assert directives(response["Content-Security-Policy"]) == POLICY, what


@pytest.fixture
def pages(note):  # noqa: F811 (the fixture imported above)
    return _urls(note)


def test_every_page_sends_exactly_the_policy(client, admin_user, pages):
    client.force_login(admin_user)
    for name, (url, _) in pages.items():
        response = client.get(url)
        assert response.status_code == 200, name
        assert_policy(response, name)


def test_the_policy_allows_no_inline_code_nor_eval(client, db):
    header = client.get(reverse("login"))["Content-Security-Policy"]
    assert "unsafe" not in header and "nonce-" not in header and "data:" not in header and "*" not in header


def test_fragments_refusals_and_the_login_page_send_it_too(client, clinician, pages):
    assert_policy(client.get(reverse("login")), "login")
    assert_policy(client.get(reverse("home")), "redirect to login")
    client.force_login(clinician)
    assert_policy(client.get(pages["upload"][0]), "403")
    assert_policy(client.get("/no-such-page/"), "404")
    assert_policy(client.get(pages["review-note"][0], headers={"HX-Request": "true"}), "htmx fragment")


# ---------------------------------------------------------------- what the policy would refuse

TEMPLATE_RULES = [
    (re.compile(r"<[^>]*\sstyle\s*=", re.I | re.S), "a style attribute (style-src refuses it): use a class or SVG"),
    (re.compile(r"<style\b", re.I), "a <style> element: put the rules in a static .css file"),
    # json_script's data blocks are not run, so the policy lets them be
    (
        re.compile(r"<script\b(?![^>]*\s(src\s*=|type=\"application/json\"))[^>]*>", re.I | re.S),
        "an inline <script>: use a static .js file",
    ),
    (re.compile(r"<[^>]*\son[a-z]+\s*=", re.I | re.S), "an event-handler attribute: add a listener from a .js file"),
    (re.compile(r"\bhx-on\b|hx-on:", re.I), "hx-on (htmx evaluates it; allowEval is off)"),
    (re.compile(r"javascript:", re.I), "a javascript: URL"),
]

SCRIPT_RULES = [
    (re.compile(r"setAttribute\(\s*[\"']style"), "setAttribute('style'): assign el.style.x instead"),
    (re.compile(r"(innerHTML|outerHTML|insertAdjacentHTML)[^;]*style\s*="), "markup with a style attribute"),
    (re.compile(r"(innerHTML|outerHTML|insertAdjacentHTML)[^;]*<(script|style)"), "markup with <script> or <style>"),
    (re.compile(r"setAttribute\(\s*[\"']on[a-z]+"), "an event-handler attribute: use addEventListener"),
    (re.compile(r"\beval\s*\("), "eval"),
    (re.compile(r"\bnew\s+Function\s*\("), "new Function"),
    (re.compile(r"\bset(Timeout|Interval)\(\s*[\"'`]"), "a timer given a string (evaluated like eval)"),
]


COMMENTS = re.compile(r"{#.*?#}|{% comment %}.*?{% endcomment %}", re.S)


def offences(path: Path, rules, root: Path = Path(settings.BASE_DIR)) -> list[str]:
    """'file:line: why' for each match of each rule outside template comments."""
    text = COMMENTS.sub(lambda m: "\n" * m.group().count("\n"), path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(root)}:{text.count(chr(10), 0, match.start()) + 1}: {why}"
        for pattern, why in rules
        for match in pattern.finditer(text)
    ]


def test_the_scans_catch_what_they_look_for(tmp_path):
    template = tmp_path / "bad.html"
    template.write_text(
        '<p>fine style="x" in text</p>\n<div\n  class="a" style="left: 1%">\n'
        '<script>alert(1)</script><script src="/ok.js"></script>'
        '<script type="application/json">{}</script>{# <script>ok</script> #}\n'
        '<button onclick="go()">\n'
        '<style>p {}</style><a href="javascript:go()" hx-on:click="x">'
    )
    script = tmp_path / "bad.js"
    script.write_text(
        'el.setAttribute("style", "x");\nel.innerHTML = "<b style=\'x\'>";\neval("1");\n'
        'new Function("return 1");\nsetTimeout("go()", 1);\nel.style.left = "1%";\n'
    )
    where = [line.split(": ", 1)[0] for line in offences(template, TEMPLATE_RULES, tmp_path)]
    assert where == ["bad.html:2", "bad.html:6", "bad.html:4", "bad.html:5", "bad.html:6", "bad.html:6"]
    where = [line.split(": ", 1)[0] for line in offences(script, SCRIPT_RULES, tmp_path)]
    assert where == ["bad.js:1", "bad.js:2", "bad.js:3", "bad.js:4", "bad.js:5"]


def test_no_template_holds_what_the_policy_refuses():
    templates = sorted(TEMPLATES.rglob("*.html"))
    assert len(templates) > 40
    assert [bad for path in templates for bad in offences(path, TEMPLATE_RULES)] == []


def test_none_of_our_scripts_makes_inline_styles_handlers_or_evals():
    assert OUR_SCRIPTS
    assert [bad for path in OUR_SCRIPTS for bad in offences(path, SCRIPT_RULES)] == []


def test_htmx_is_told_to_inject_no_style_and_not_to_eval():
    base = (TEMPLATES / "base.html").read_text(encoding="utf-8")
    config = re.search(r"<meta name=\"htmx-config\" content='([^']*)'>", base)
    assert config and '"includeIndicatorStyles": false' in config.group(1) and '"allowEval": false' in config.group(1)
    assert base.index('name="htmx-config"') < base.index("htmx.min.js")
