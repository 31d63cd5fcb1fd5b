/* Review pages: keyboard review of peaks, live slider labels, help overlay.
   Everything here is a shortcut for buttons, links and selects that are on the page anyway;
   the pages work without it. No key does anything while a text field has the focus. */
(function () {
  "use strict";

  var TEXT_FIELDS = "input:not([type]), input[type=text], input[type=search], input[type=number], " +
    "input[type=email], input[type=password], textarea, select, [contenteditable=''], [contenteditable=true]";
  var current = 0;
  var advanceAfterSwap = false;

  function $(selector, root) { return (root || document).querySelector(selector); }
  function $$(selector, root) { return Array.prototype.slice.call((root || document).querySelectorAll(selector)); }
  function peaks() { return $$("#note-text mark.peak"); }
  function items() { return $$("#peak-list .peak-item"); }
  function storageKey() { var p = $("#note-panel"); return p ? "dsm-peak-" + p.dataset.note : null; }

  function select(index, focus) {
    var marks = peaks();
    var rows = items();
    if (!marks.length) { current = 0; return; }
    current = Math.max(0, Math.min(index, marks.length - 1));
    marks.forEach(function (m, k) { m.classList.toggle("current", k === current); });
    rows.forEach(function (r, k) { r.classList.toggle("current", k === current); });
    if (focus) { marks[current].focus({ preventScroll: true }); }
    marks[current].scrollIntoView({ block: "nearest" });
    var key = storageKey();
    if (key) { try { sessionStorage.setItem(key, String(current)); } catch (e) { /* private mode */ } }
  }

  function clickInCurrent(selector) {
    var row = items()[current];
    var button = row && $(selector, row);
    if (button) { button.click(); return true; }
    return false;
  }

  function follow(selector) {
    var link = $(selector);
    if (link) { window.location.href = link.href; }
  }

  function moveBound(which, step) {
    var row = items()[current];
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

  function help(open) {
    var box = $("#help");
    if (!box) { return; }
    if (open === undefined) { open = box.hidden; }
    box.hidden = !open;
    if (open) { $(".overlay-box", box).focus(); } else { select(current, true); }
  }

  function onKey(event) {
    var target = event.target;
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

    if ($("#validation-round")) {
      if (event.key === "y") { $("#answer-yes").click(); event.preventDefault(); }
      else if (event.key === "n") { $("#answer-no").click(); event.preventDefault(); }
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
      case "j": select(current + 1, true); break;
      case "k": select(current - 1, true); break;
      case "a": if (clickInCurrent("button[value=accept]")) { advanceAfterSwap = true; } break;
      case "x": if (clickInCurrent("button[value=reject]")) { advanceAfterSwap = true; } break;
      case "Enter":
        if (target.closest && target.closest("button, a, summary")) { return; }
        if (clickInCurrent("button[value=adjust]")) { advanceAfterSwap = true; }
        break;
      case "u": var undo = $("#undo-button"); if (undo) { undo.click(); } break;
      case "n": follow("a[rel=next]"); break;
      case "p": follow("a[rel=prev]"); break;
      case "q": follow("#queue-link"); break;
      default: return;
    }
    event.preventDefault();
  }

  function restore() {
    var key = storageKey();
    var saved = 0;
    if (key) { try { saved = parseInt(sessionStorage.getItem(key) || "0", 10) || 0; } catch (e) { saved = 0; } }
    if (advanceAfterSwap) { saved += 1; advanceAfterSwap = false; }
    var active = document.activeElement;
    var typing = active && active.closest && (active.closest("#view-form") || active.closest(TEXT_FIELDS));
    select(saved, !typing);
  }

  function liveOutputs() {
    $$("output[data-for]").forEach(function (out) {
      var input = document.getElementById(out.dataset.for);
      if (!input) { return; }
      input.addEventListener("input", function () {
        var v = parseFloat(input.value);
        out.textContent = input.step && input.step.indexOf(".") >= 0 ? v.toFixed(2) : String(v);
      });
    });
  }

  document.addEventListener("keydown", onKey);
  document.addEventListener("click", function (event) {
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
    if (event.detail && event.detail.elt && event.detail.elt.id === "note-panel") { restore(); }
  });
  document.addEventListener("htmx:responseError", function (event) {
    var panel = $("#note-panel");
    if (!panel) { return; }
    var note = document.createElement("p");
    note.className = "notice notice-40";
    note.setAttribute("role", "alert");
    note.textContent = event.detail.xhr.status === 403
      ? "Your role cannot record review decisions."
      : "The server did not accept this (" + event.detail.xhr.status + "). Reload the page.";
    panel.insertBefore(note, panel.firstChild);
  });
  document.addEventListener("DOMContentLoaded", function () {
    liveOutputs();
    if ($("#note-panel")) { restore(); }
  });
}());
