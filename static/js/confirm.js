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

// A launch form's live estimate (hx-post on change, after a delay) never races the launch: once
// the form is submitted, a pending estimate is aborted and none starts, so the click on Launch
// always ends in the launch (or the form again, saying why not). A page restored from the
// back/forward cache estimates again.
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (!form || !form.hasAttribute || !form.hasAttribute("hx-post") || event.defaultPrevented) { return; }
  form.setAttribute("data-submitted", "");
  if (window.htmx) { window.htmx.trigger(form, "htmx:abort"); }
});
document.addEventListener("htmx:confirm", function (event) {
  if (event.target && event.target.hasAttribute && event.target.hasAttribute("data-submitted")) { event.preventDefault(); }
});
window.addEventListener("pageshow", function () {
  var forms = document.querySelectorAll("form[data-submitted]");
  for (var i = 0; i < forms.length; i++) { forms[i].removeAttribute("data-submitted"); }
});
