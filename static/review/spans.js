/* Spans the model missed, and accepting the rest, on the note page (webapp.review.spans, .bulk).
   A shortcut for the forms of the "Evidence the model missed" section, which work without it
   (character offsets typed in, a confirmation page for accepting the rest).
   Mouse: select words in the note; the add form takes them (snapped to whole words, as the server
   snaps them), then its button or `s` saves. Keyboard: `m` starts a span at the cursor word (the
   caret a click leaves, else the selected peak's first word), `→`/`←` move its end one word,
   `Shift+←`/`Shift+→` its start, `s` saves, `Esc` cancels. `Shift+A` accepts every undecided
   peak of the note and task after a confirmation that names how many.
   Offsets are posted in characters of the note as Python counts them (code points).
   Active time (`active_ms`): from starting a span to saving it, gaps over 60 s without activity cut. */
(function () {
  "use strict";

  // Django's JavaScript catalog (base.html loads it) defines gettext, ngettext and interpolate;
  // a page without it shows the English.
  function gettext(s) { return window.gettext ? window.gettext(s) : s; }
  function ngettext(singular, plural, n) {
    return window.ngettext ? window.ngettext(singular, plural, n) : (n === 1 ? singular : plural);
  }
  function interpolate(fmt, obj, named) {
    if (window.interpolate) { return window.interpolate(fmt, obj, named); }
    return fmt.replace(/%\((\w+)\)s/g, function (match, key) { return String(obj[key]); });
  }

  var TEXT_FIELDS = "input:not([type]), input[type=text], input[type=search], input[type=number], " +
    "textarea, select, [contenteditable=''], [contenteditable=true]";
  var WORD_CHAR = /[\p{L}\p{N}_]/u;
  var ALNUM = /[\p{L}\p{N}]/u;
  var IDLE_MS = 60000;
  var pending = null;  // [a, b) in the window's characters while a span is being built by keys
  var clock = null;  // {active, last}

  function $(selector, root) { return (root || document).querySelector(selector); }
  function $$(selector, root) { return Array.prototype.slice.call((root || document).querySelectorAll(selector)); }
  function now() { return window.performance ? window.performance.now() : Date.now(); }
  function box() { return $("#note-text"); }
  function base() { var p = $("#note-panel"); return p ? parseInt(p.dataset.windowStart, 10) || 0 : 0; }
  function chars() { var b = box(); return b ? Array.from(b.textContent) : []; }

  function tick() {
    if (!clock) { return; }
    var t = now();
    if (clock.last !== null) { var gap = t - clock.last; if (gap > 0 && gap <= IDLE_MS) { clock.active += gap; } }
    clock.last = document.hidden ? null : t;
  }
  function startClock() { if (!clock) { clock = { active: 0, last: now() }; } }

  function say(message) {
    var p = $("#note-panel");
    if (!p) { return; }
    var line = $("#key-status", p);
    if (!line) {
      line = document.createElement("p");
      line.id = "key-status";
      line.className = "notice";
      line.setAttribute("role", "status");
      p.insertBefore(line, p.firstChild);
    }
    line.textContent = message;
  }

  // -- offsets <-> DOM
  function offsetIn(root, node, offset) {
    var range = document.createRange();
    range.setStart(root, 0);
    range.setEnd(node, offset);
    return Array.from(range.toString()).length;
  }
  function pointAt(root, k) {  // the text node and its UTF-16 offset of code point k
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    var seen = 0;
    var last = null;
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      var cps = Array.from(node.data);
      if (seen + cps.length >= k) { return [node, cps.slice(0, k - seen).join("").length]; }
      seen += cps.length;
      last = node;
    }
    return last ? [last, last.data.length] : [root, 0];
  }
  function rangeOf(root, a, b) {
    var r = document.createRange();
    var s = pointAt(root, a), e = pointAt(root, b);
    r.setStart(s[0], s[1]);
    r.setEnd(e[0], e[1]);
    return r;
  }

  // -- words
  function snap(text, a, b) { return window.DSMReview.snapWords(text, a, b); }  // review.js's
  function words(text) {
    var out = [], i = 0, n = text.length;
    while (i < n) {
      if (ALNUM.test(text[i])) {
        var j = i;
        while (j < n && WORD_CHAR.test(text[j])) { j += 1; }
        out.push([i, j]);
        i = j;
      } else { i += 1; }
    }
    return out;
  }

  // The words the mouse selected in the note (snapped), or null.
  function selected() {
    var root = box();
    var chosen = window.getSelection ? window.getSelection() : null;
    if (!root || !chosen || !chosen.rangeCount) { return null; }
    var r = chosen.getRangeAt(0);
    if (!root.contains(r.startContainer) || !root.contains(r.endContainer)) { return null; }
    var a = offsetIn(root, r.startContainer, r.startOffset), b = offsetIn(root, r.endContainer, r.endOffset);
    return { span: snap(chars(), a, b), caret: r.collapsed };
  }

  function fill(form, span) {
    var text = chars();
    form.elements.start.value = String(base() + span[0]);
    form.elements.end.value = String(base() + span[1]);
    var preview = $("#span-preview", form);
    if (preview) { preview.textContent = text.slice(span[0], span[1]).join(""); }
  }

  function show(span) {
    var root = box();
    var chosen = window.getSelection ? window.getSelection() : null;
    if (!root || !chosen) { return; }
    var r = rangeOf(root, span[0], span[1]);
    chosen.removeAllRanges();
    chosen.addRange(r);
  }

  // -- keyboard span
  function begin() {
    var form = $("#add-span-form");
    if (!form || !box()) { say(gettext("Show the note's words (not its sentences), with a task, to add a span.")); return; }
    var picked = selected();
    var span = picked && picked.span;
    if (span && picked.caret) {  // the word at the caret only
      var w = words(chars()).filter(function (x) { return x[0] <= span[0] && span[0] < x[1]; })[0];
      span = w || span;
    }
    if (!span) {
      var mark = $("#note-text mark.peak.current");
      if (mark) {
        var k = offsetIn(box(), mark, 0);
        span = words(chars()).filter(function (x) { return x[1] > k; })[0] || null;
      }
    }
    if (!span) { say(interpolate(gettext("Click a word of the note, then press %(key)s to start a span there."), { key: "m" }, true)); return; }
    pending = span;
    startClock();
    fill(form, pending);
    show(pending);
    say(interpolate(gettext("Span started: %(end_keys)s move its end, %(start_keys)s its start, %(save_key)s saves, %(cancel_key)s cancels."),
      { end_keys: "→ / ←", start_keys: "Shift+← / Shift+→", save_key: "s", cancel_key: "Esc" }, true));
  }

  function move(which, step) {
    var list = words(chars());
    var a = pending[0], b = pending[1];
    if (which === "end") {
      if (step > 0) { var next = list.filter(function (x) { return x[0] >= b; })[0]; if (next) { b = next[1]; } }
      else { var prev = list.filter(function (x) { return x[1] < b && x[0] >= a; }); if (prev.length) { b = prev[prev.length - 1][1]; } }
    } else if (step < 0) {
      var before = list.filter(function (x) { return x[1] <= a; }); if (before.length) { a = before[before.length - 1][0]; }
    } else {
      var after = list.filter(function (x) { return x[0] > a && x[0] < b; })[0]; if (after) { a = after[0]; }
    }
    pending = [a, b];
    fill($("#add-span-form"), pending);
    show(pending);
  }

  function cancel() {
    pending = null;
    if (window.getSelection) { window.getSelection().removeAllRanges(); }
    say(gettext("Span cancelled."));
  }

  function save() {
    var form = $("#add-span-form");
    if (!form || !form.elements.start.value || !form.elements.end.value) {
      say(interpolate(gettext("Select words of the note (or press %(start_key)s at a word) first, then %(save_key)s saves them as evidence."),
        { start_key: "m", save_key: "s" }, true));
      return;
    }
    form.requestSubmit();
  }

  function acceptRest() {
    var form = $("#accept-rest-form");
    if (!form) { return; }
    var n = parseInt(form.dataset.count, 10) || 0;
    if (!n) { say(gettext("Every peak of this note is decided by you: nothing to accept.")); return; }
    var question = interpolate(ngettext(
      "Accept the %(count)s undecided peak of this note for %(task)s? (%(undo_key)s undoes them all at once)",
      "Accept the %(count)s undecided peaks of this note for %(task)s? (%(undo_key)s undoes them all at once)", n),
      { count: n, task: form.dataset.task, undo_key: "u" }, true);
    if (!window.confirm(question)) { say(gettext("Nothing accepted.")); return; }
    form.elements.confirm.value = "yes";
    form.elements.count.value = String(n);
    form.requestSubmit();
  }

  function onKey(event) {
    var target = event.target;
    if (!$("#note-panel") || ($("#help") && !$("#help").hidden)) { return; }
    var missed = $("#missed-dialog");
    if (missed && missed.open) { return; }
    if (target.closest && target.closest(TEXT_FIELDS)) { return; }
    if (event.key.indexOf("Arrow") === 0 && target.tagName === "INPUT") { return; }  // a focused slider's, as in review.js
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var handled = true;
    if (pending && (event.key === "ArrowRight" || event.key === "ArrowLeft")) {
      move(event.shiftKey ? "start" : "end", event.key === "ArrowRight" ? 1 : -1);
    } else if (pending && event.key === "Escape") { cancel(); }
    else if (event.key === "m") { begin(); }
    else if (event.key === "s") { save(); }
    else if (event.key === "A") { acceptRest(); }
    else { handled = false; }
    if (handled) { event.preventDefault(); event.stopImmediatePropagation(); }
  }

  // The mouse: a selection in the note goes into the add form (snapped).
  function onMouseUp(event) {
    if (!event.target.closest || !event.target.closest("#note-text")) { return; }
    var form = $("#add-span-form");
    var picked = selected();
    if (!form || !picked || picked.caret || !picked.span) { return; }
    startClock();
    fill(form, picked.span);
  }

  function onSubmit(event) {
    var form = event.target;
    if (!form.matches) { return; }
    if (form.matches(".edit-span-form") && event.submitter && event.submitter.classList.contains("use-selection")) { return; }
    if (form.matches("#add-span-form, .edit-span-form")) {
      var field = form.querySelector("input[name=active_ms]");
      if (field && clock) { tick(); field.value = String(Math.round(clock.active)); }
      clock = null;
      pending = null;
    }
  }

  function onClick(event) {
    var use = event.target.closest && event.target.closest(".use-selection");
    if (!use) { return; }
    var picked = selected();
    if (!picked || !picked.span) { say(gettext("Select the words in the note first.")); return; }
    var form = use.form;
    form.elements.start.value = String(base() + picked.span[0]);
    form.elements.end.value = String(base() + picked.span[1]);
  }

  // Added spans are drawn on the note's text (CSS custom highlights: the text is unchanged).
  function highlight() {
    if (!window.CSS || !CSS.highlights || typeof Highlight === "undefined") { return; }
    var root = box();
    var ranges = { mine: [], other: [] };
    if (root) {
      var start = base(), n = chars().length;
      $$("#added-span-list .added-span").forEach(function (li) {
        var a = parseInt(li.dataset.start, 10) - start, b = parseInt(li.dataset.end, 10) - start;
        if (b <= 0 || a >= n) { return; }
        ranges[li.classList.contains("mine") ? "mine" : "other"].push(rangeOf(root, Math.max(a, 0), Math.min(b, n)));
      });
    }
    CSS.highlights.set("added-mine", new (Function.prototype.bind.apply(Highlight, [null].concat(ranges.mine)))());
    CSS.highlights.set("added-other", new (Function.prototype.bind.apply(Highlight, [null].concat(ranges.other)))());
  }

  ["keydown", "mousemove", "mousedown", "wheel", "scroll", "focus"].forEach(function (name) {
    window.addEventListener(name, tick, { capture: true, passive: true });
  });
  document.addEventListener("keydown", onKey, true);  // before review.js's keys (capture)
  document.addEventListener("mouseup", onMouseUp);
  document.addEventListener("submit", onSubmit, true);
  document.addEventListener("click", onClick);
  document.addEventListener("htmx:afterSettle", function (event) {
    var elt = event.detail && event.detail.elt;
    if (elt && elt.id === "note-panel") { pending = null; highlight(); }
  });
  document.addEventListener("DOMContentLoaded", highlight);
}());
