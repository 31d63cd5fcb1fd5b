// Forms with data-confirm="question" (Cancel buttons) ask before they submit. Loaded by base.html;
// no inline handlers under the Content-Security-Policy. The capture phase runs before htmx's own
// submit listener, so a declined confirmation stops an hx-post form too.
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form && form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }
}, true);

// Logging out (form[data-logout]) forgets the review position this tab remembers
// (review.js, sessionStorage keys "dsm-peak-<user>-<note>"), so the next user starts fresh.
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (!form || !form.hasAttribute || !form.hasAttribute("data-logout") || event.defaultPrevented) { return; }
  try {
    for (var i = sessionStorage.length - 1; i >= 0; i--) {
      var key = sessionStorage.key(i);
      if (key && key.indexOf("dsm-peak-") === 0) { sessionStorage.removeItem(key); }
    }
  } catch (e) { /* storage unavailable */ }
});
