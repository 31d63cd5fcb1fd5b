// Keyboard of the adjudication page: a accept, x reject, j/k next/previous disputed peak,
// g the task's guideline. No key acts while a text field has the focus.
(function () {
  "use strict";
  function typing(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT" || el.isContentEditable);
  }
  function click(selector) {
    var el = document.querySelector(selector);
    if (el) { el.click(); }
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(document.activeElement)) { return; }
    switch (event.key) {
      case "a": click("#adj-accept"); break;
      case "x": click("#adj-reject"); break;
      case "j": click("#next-peak"); break;
      case "k": click("#prev-peak"); break;
      case "g": {
        var details = document.querySelector("#guideline");
        if (details) { details.open = !details.open; }
        break;
      }
      default: return;
    }
    event.preventDefault();
  });
})();
