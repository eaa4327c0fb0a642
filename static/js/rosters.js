// The roster pages (templates/rosters/): no inline script, so that the Content-Security-Policy can forbid it.
// A pressed Preview or Import button says it is working and cannot be pressed twice (one import per press).
(function () {
  "use strict";
  document.querySelectorAll("form[data-roster-upload], form[data-roster-confirm]").forEach(function (form) {
    form.addEventListener("submit", function () {
      var button = form.querySelector("button[type=submit]");
      if (button) {
        button.disabled = true;
        button.textContent = form.hasAttribute("data-roster-confirm") ? gettext("Importing…") : gettext("Reading the file…");
      }
    });
  });
})();
