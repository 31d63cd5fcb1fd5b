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
