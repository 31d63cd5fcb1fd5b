/* Review pages: keyboard review of peaks, live slider labels, help overlay, the guideline, and the
   active-time clock of a decision.
   Everything here is a shortcut for buttons, links and selects that are on the page anyway;
   the pages work without it. No key does anything while a text field has the focus.
   Active time (sent as `active_ms` with a decision): the clock starts when a peak is shown
   (selected) and stops at the decision. Time between two signs of activity (a key, a mouse move,
   click or wheel, a scroll, focus coming back to the page) counts only when the gap is at most
   IDLE_MS (60 s); a longer gap is idle and counts nothing, and neither does time with the page
   hidden. Without this script no time is sent and the decision stores none. */
(function () {
  "use strict";

  // Django's JavaScript catalog (base.html loads it) defines gettext and interpolate;
  // a page without it shows the English.
  function gettext(s) { return window.gettext ? window.gettext(s) : s; }
  function interpolate(fmt, obj, named) {
    if (window.interpolate) { return window.interpolate(fmt, obj, named); }
    return fmt.replace(/%\((\w+)\)s/g, function (match, key) { return String(obj[key]); });
  }

  var TEXT_FIELDS = "input:not([type]), input[type=text], input[type=search], input[type=number], " +
    "input[type=email], input[type=password], textarea, select, [contenteditable=''], [contenteditable=true]";
  var current = null;  // index in the note of the selected peak; null: none in this window
  var advanceAfterSwap = false;
  var guidelineOpen = false;  // kept across swaps of the note panel (a task switch swaps it)
  var IDLE_MS = 60000;
  var clock = { peak: null, active: 0, last: null };  // last: time of the last activity; null: paused

  function now() { return window.performance ? window.performance.now() : Date.now(); }
  function tick() {
    var t = now();
    if (clock.last !== null) {
      var gap = t - clock.last;
      if (gap > 0 && gap <= IDLE_MS) { clock.active += gap; }
    }
    clock.last = document.hidden ? null : t;
  }
  function startClock(index) {
    if (clock.peak === index) { return; }
    clock = { peak: index, active: 0, last: document.hidden ? null : now() };
  }

  function $(selector, root) { return (root || document).querySelector(selector); }
  function $$(selector, root) { return Array.prototype.slice.call((root || document).querySelectorAll(selector)); }
  function panel() { return $("#note-panel"); }
  function markOf(k) { return $("#note-text mark.peak[data-peak='" + k + "']"); }
  function itemOf(k) { return document.getElementById("peak-item-" + k); }
  // The remembered peak is per signed-in user (body[data-user]): another user in the same browser
  // (same tab, after a logout and login) starts fresh. No user on the page: nothing is remembered.
  function storageKey() {
    var p = panel();
    var user = document.body ? document.body.dataset.user : "";
    return p && user ? "dsm-peak-" + user + "-" + p.dataset.note : null;
  }

  // A long note shows one window at a time; peaks are numbered in the note. The panel says how
  // many peaks the note has and which of them this window shows (first..end-1).
  function peakRange() {
    var p = panel();
    if (!p) { return { total: 0, first: 0, end: 0 }; }
    return { total: parseInt(p.dataset.peaks, 10) || 0, first: parseInt(p.dataset.firstPeak, 10) || 0,
             end: parseInt(p.dataset.endPeak, 10) || 0 };
  }

  // The server finds the window holding peak `index` (peak=N, 1-based) and marks it to select.
  function loadPeak(index) {
    var p = panel();
    if (!p || !window.htmx) { return; }
    var url = p.dataset.peakUrl + (index + 1);
    window.htmx.ajax("GET", url, { target: "#note-panel", swap: "outerHTML", replace: url });
  }

  function select(index, focus) {
    var range = peakRange();
    if (!range.total) { current = null; return; }
    index = Math.max(0, Math.min(index, range.total - 1));
    var mark = markOf(index);
    if (!mark) { loadPeak(index); return; }
    current = index;
    startClock(index);
    $$("#note-text mark.peak.current, #peak-list .peak-item.current").forEach(function (el) {
      el.classList.remove("current");
    });
    mark.classList.add("current");
    var row = itemOf(index);
    if (row) { row.classList.add("current"); }
    if (focus) { mark.focus({ preventScroll: true }); }
    mark.scrollIntoView({ block: "nearest" });
    var key = storageKey();
    if (key) { try { sessionStorage.setItem(key, String(current)); } catch (e) { /* private mode */ } }
  }

  function stepPeak(delta) {
    var range = peakRange();
    var target = current === null ? (delta > 0 ? range.first : range.first - 1) : current + delta;
    if (target < 0 || target >= range.total) { return; }
    select(target, true);
  }

  function clickInCurrent(selector) {
    var row = current === null ? null : itemOf(current);
    var button = row && $(selector, row);
    if (button) { button.click(); return true; }
    return false;
  }

  function follow(selector, otherwise) {
    var link = $(selector);
    if (link) { window.location.href = link.href; }
    else if (otherwise) { say(otherwise); }
  }

  // A short status line at the top of the note panel (one, reused), e.g. "n" at the last note.
  function say(message) {
    var p = panel();
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

  function moveBound(which, step) {
    var row = current === null ? null : itemOf(current);
    if (!row) { return; }
    var startSel = $("select[data-bound=start]", row);
    var endSel = $("select[data-bound=end]", row);
    var sel = which === "start" ? startSel : endSel;
    if (!sel) { return; }
    var next = sel.selectedIndex + step;
    if (next < 0 || next >= sel.options.length) { return; }
    var value = parseInt(sel.options[next].value, 10);
    if (which === "start" && value >= parseInt(endSel.value, 10)) { return; }
    if (which === "end" && value <= parseInt(startSel.value, 10)) { return; }
    sel.selectedIndex = next;
    var details = $("details", row);
    if (details) { details.open = true; }
    row.classList.add("adjusting");
  }

  function guideline(open) {
    var box = $("#guideline");
    if (!box) { return; }
    box.open = open === undefined ? !box.open : open;
    guidelineOpen = box.open;
  }

  function help(open) {
    var box = $("#help");
    if (!box) { return; }
    if (open === undefined) { open = box.hidden; }
    box.hidden = !open;
    if (open) { $(".overlay-box", box).focus(); } else if (current !== null) { select(current, true); }
  }

  // A missed identifier (`i`, webapp.deid.missed): the note's selected text, else the word at the
  // caret (a click in the text puts it there), else the current peak; snapped to whole words as
  // the server snaps it (missed.snap), shown in the chooser, posted as offsets in the note (in
  // characters as Python counts them: code points), never as text.
  var WORD_CHAR = /[\p{L}\p{N}_]/u;
  var ALNUM = /[\p{L}\p{N}]/u;
  var SPACE = /\s/u;

  function offsetIn(box, node, offset) {
    var range = document.createRange();
    range.setStart(box, 0);
    range.setEnd(node, offset);
    return Array.from(range.toString()).length;
  }

  function pickedSpan(box) {
    var chosen = window.getSelection ? window.getSelection() : null;
    if (chosen && chosen.rangeCount) {
      var r = chosen.getRangeAt(0);
      if (box.contains(r.startContainer) && box.contains(r.endContainer)) {
        return [offsetIn(box, r.startContainer, r.startOffset), offsetIn(box, r.endContainer, r.endOffset)];
      }
    }
    var mark = current === null ? null : markOf(current);
    return mark ? [offsetIn(box, mark, 0), offsetIn(box, mark, mark.childNodes.length)] : null;
  }

  function snapWords(text, a, b) {  // text: an array of characters
    var n = text.length;
    function word(i) { return WORD_CHAR.test(text[i]); }
    if (a > b) { var swap = a; a = b; b = swap; }
    if (a === b) {
      if (a < n && word(a)) { b = a + 1; } else if (a > 0 && word(a - 1)) { a -= 1; } else { return null; }
    }
    while (a < b && SPACE.test(text[a])) { a += 1; }
    while (b > a && SPACE.test(text[b - 1])) { b -= 1; }
    if (a < b && word(a)) { while (a > 0 && word(a - 1)) { a -= 1; } }
    if (a < b && word(b - 1)) { while (b < n && word(b)) { b += 1; } }
    while (a < b && !ALNUM.test(text[a])) { a += 1; }
    while (b > a && !ALNUM.test(text[b - 1])) { b -= 1; }
    return a < b ? [a, b] : null;
  }
  // The one copy in the browser (spans.js, loaded after this file, snaps added spans with it), as
  // ml.peaks.words.snap_to_words is on the server.
  window.DSMReview = Object.assign(window.DSMReview || {}, { snapWords: snapWords });

  function markMissed() {
    var dialog = $("#missed-dialog");
    var box = $("#note-text");
    if (!dialog) { say(gettext("Your role cannot mark identifiers: clinicians and admins can.")); return; }
    if (!box) { say(gettext("Show the note's words (not its sentences) to mark an identifier.")); return; }
    var text = Array.from(box.textContent);
    var picked = pickedSpan(box);
    var span = picked && snapWords(text, picked[0], picked[1]);
    if (!span) {
      say(interpolate(gettext("Click a word of the note, or select its words, then press %(key)s to mark a missed identifier."), { key: "i" }, true));
      return;
    }
    var base = parseInt(panel().dataset.windowStart, 10) || 0;  // the window's first character in the note
    var form = $("#missed-form");
    form.elements.start.value = String(base + span[0]);
    form.elements.end.value = String(base + span[1]);
    form.elements.hash.value = panel().dataset.contentHash || "";
    $("#missed-value").textContent = text.slice(span[0], span[1]).join("");
    dialog.showModal();
    $("#missed-type").focus();
  }

  function closeMissed() {
    var dialog = $("#missed-dialog");
    if (dialog && dialog.open) { dialog.close(); }
  }

  // While the chooser is open: Enter replaces (on Cancel it cancels), Esc cancels, nothing else acts.
  function onMissedKey(event) {
    var target = event.target;
    if (event.key === "Escape") { closeMissed(); event.preventDefault(); }
    else if (event.key === "Enter" && !(target.closest && target.closest("button"))) {
      $("#missed-form").requestSubmit();
      event.preventDefault();
    }
  }

  function onKey(event) {
    var target = event.target;
    var missedBox = $("#missed-dialog");
    if (missedBox && missedBox.open) { onMissedKey(event); return; }
    var helpBox = $("#help");
    if (event.key === "Escape") {
      if (helpBox && !helpBox.hidden) { help(false); event.preventDefault(); }
      else if (target.closest && target.closest(TEXT_FIELDS)) { target.blur(); }
      return;
    }
    if (target.closest && target.closest(TEXT_FIELDS)) { return; }
    if (event.ctrlKey || event.metaKey) { return; }
    if (event.key.indexOf("Arrow") === 0 && target.tagName === "INPUT") { return; }  // a focused slider
    if (event.key === "?") { help(); event.preventDefault(); return; }
    if (helpBox && !helpBox.hidden) { return; }

    if (event.key === "g" && !event.altKey && $("#guideline")) { guideline(); event.preventDefault(); return; }
    if ($("#validation-round")) {
      if (event.key === "y") { $("#answer-yes").click(); event.preventDefault(); }
      else if (event.key === "n") { $("#answer-no").click(); event.preventDefault(); }
      else if (event.key === "j" && $("#next-peak")) { $("#next-peak").click(); event.preventDefault(); }
      else if (event.key === "k" && $("#prev-peak")) { $("#prev-peak").click(); event.preventDefault(); }
      return;
    }
    if (!$("#note-panel")) { return; }
    if (event.shiftKey && (event.key === "ArrowRight" || event.key === "ArrowLeft")) {
      var step = event.key === "ArrowRight" ? 1 : -1;
      moveBound(event.altKey ? "start" : "end", step);
      event.preventDefault();
      return;
    }
    if (event.altKey) { return; }
    switch (event.key) {
      case "j": stepPeak(1); break;
      case "k": stepPeak(-1); break;
      case "a": if (clickInCurrent("button[value=accept]")) { advanceAfterSwap = true; } break;
      case "x": if (clickInCurrent("button[value=reject]")) { advanceAfterSwap = true; } break;
      case "Enter":
        if (target.closest && target.closest("button, a, summary")) { return; }
        if (clickInCurrent("button[value=adjust]")) { advanceAfterSwap = true; }
        break;
      case "u": var undo = $("#undo-button"); if (undo) { undo.click(); } break;
      case "n": follow("a[rel=next]", gettext("This is the last note (under this task and setting).")); break;
      case "p": follow("a[rel=prev]", gettext("This is the first note (under this task and setting).")); break;
      case "q": follow("#queue-link"); break;
      case "i": markMissed(); break;
      default: return;
    }
    event.preventDefault();
  }

  // After a page load or a swap of the panel: the peak the server was asked for, else the one
  // selected before on this note when this window shows it, else the window's first peak. Only
  // "go on to the next peak" after a decision may load another window.
  function restore() {
    var p = panel();
    var range = peakRange();
    var wanted = null;
    var advance = advanceAfterSwap;
    advanceAfterSwap = false;
    if (p && p.dataset.select !== undefined) {
      wanted = parseInt(p.dataset.select, 10);
      advance = false;
    } else {
      var key = storageKey();
      try { wanted = key ? parseInt(sessionStorage.getItem(key), 10) : null; } catch (e) { wanted = null; }
      if (isNaN(wanted)) { wanted = null; }
      if (wanted !== null && advance) { wanted += 1; }
    }
    var active = document.activeElement;
    var typing = active && active.closest && (active.closest("#view-form") || active.closest(TEXT_FIELDS));
    current = null;
    var box = $("#guideline");
    if (box && guidelineOpen) { box.open = true; }
    if (wanted !== null && wanted >= range.first && wanted < range.end) { select(wanted, !typing); }
    else if (advance && wanted !== null && wanted < range.total) { select(wanted, !typing); }
    else if (range.first < range.end) { select(range.first, !typing); }
  }

  // A decision answers with its peak's row only (the notice and the counter come out of band):
  // the row's state goes to the peak's mark in the text, then the peak that was selected stays
  // selected, or after a key the next one is (another window loads past this one's end).
  var ROW_STATES = ["undecided", "conflict", "mine-accept", "mine-reject", "mine-adjust"];
  function afterDecision(row) {
    var k = parseInt(row.dataset.peak, 10);
    var mark = markOf(k);
    if (mark) {
      ROW_STATES.forEach(function (name) { mark.classList.remove(name); });
      ROW_STATES.forEach(function (name) { if (row.classList.contains(name)) { mark.classList.add(name); } });
    }
    var advance = advanceAfterSwap;
    advanceAfterSwap = false;
    var active = document.activeElement;
    var typing = active && active.closest && (active.closest("#view-form") || active.closest(TEXT_FIELDS));
    var wanted = (current === null ? k : current) + (advance ? 1 : 0);
    current = null;
    select(wanted < peakRange().total ? wanted : k, !typing);
  }

  function liveOutputs() {
    $$("output[data-for]").forEach(function (out) {
      var input = document.getElementById(out.dataset.for);
      if (!input) { return; }
      input.addEventListener("input", function () {
        // the input keeps the machine number (1.25); its <output> is for a person, in the page's
        // language as the server wrote it (floatformat:2: 1,25 in Italian and Spanish)
        var v = parseFloat(input.value);
        var decimals = input.step && input.step.indexOf(".") >= 0 ? 2 : 0;
        out.textContent = v.toLocaleString(document.documentElement.lang || undefined,
          { minimumFractionDigits: decimals, maximumFractionDigits: decimals, useGrouping: false });
      });
    });
  }

  // The note panel swaps in a refused decision too (400 and 409 say why on the panel). Set here,
  // before htmx reads base.html's <meta name="htmx-config"> at DOMContentLoaded (that merge keeps
  // it): htmx reads only the first such meta, and a second one would be ignored.
  if (window.htmx && document.getElementById("note-panel")) {
    window.htmx.config.responseHandling = [
      { code: "204", swap: false }, { code: "[23]..", swap: true },
      { code: "40[09]", swap: true, error: false }, { code: "[45]..", swap: false, error: true }];
  }

  // The decision carries the active time since the peak was shown (a decision with the mouse on
  // another row than the selected one: since the selected one was); the next peak starts anew.
  function sendActiveTime(event) {
    var form = event.target;
    if (!form.matches || !form.matches(".decide-form")) { return; }
    var field = form.querySelector("input[name=active_ms]");
    if (!field || clock.peak === null) { return; }
    tick();
    field.value = String(Math.round(clock.active));
    clock.peak = null;
  }

  ["keydown", "mousemove", "mousedown", "wheel", "scroll", "focus"].forEach(function (name) {
    window.addEventListener(name, tick, { capture: true, passive: true });
  });
  document.addEventListener("visibilitychange", tick);
  document.addEventListener("submit", sendActiveTime, true);  // capture: before htmx reads the form
  document.addEventListener("toggle", function (event) {
    if (event.target.id === "guideline") { guidelineOpen = event.target.open; }
  }, true);
  document.addEventListener("keydown", onKey);
  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-close-missed]")) { closeMissed(); return; }
    if (event.target.closest("[data-open-help]")) { help(true); }
    else if (event.target.closest("[data-close-help]")) { help(false); }
    else if (event.target.id === "help") { help(false); }
    var mark = event.target.closest && event.target.closest("#note-text mark.peak");
    if (mark) { select(parseInt(mark.dataset.peak, 10), true); }
  });
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("select[data-autosubmit]")) { event.target.form.submit(); }
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail && event.detail.target && event.detail.target.id === "note-panel") { restore(); }
  });
  // htmx swaps the panel in place of #note-panel (outerHTML): the event's target is the old node
  document.addEventListener("htmx:afterSettle", function (event) {
    var elt = event.detail && event.detail.elt;
    if (elt && elt.id === "note-panel") { restore(); }
    else if (elt && elt.id && elt.id.indexOf("peak-item-") === 0) { afterDecision(elt); }
  });
  // The chooser's answer (the panel, with what was replaced or why not) closes it.
  document.addEventListener("htmx:afterRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (!elt || elt.id !== "missed-form") { return; }
    closeMissed();
    if (window.getSelection) { window.getSelection().removeAllRanges(); }
  });
  document.addEventListener("htmx:responseError", function (event) {
    var panel = $("#note-panel");
    if (!panel) { return; }
    var note = document.createElement("p");
    note.className = "notice notice-40";
    note.setAttribute("role", "alert");
    note.textContent = event.detail.xhr.status === 403
      ? gettext("Your role cannot record review decisions.")
      : interpolate(gettext("The server did not accept this (%(status)s). Reload the page."), { status: event.detail.xhr.status }, true);
    panel.insertBefore(note, panel.firstChild);
  });
  document.addEventListener("DOMContentLoaded", function () {
    liveOutputs();
    if ($("#note-panel")) { restore(); }
  });
}());
