// Every page: behaviour that used to sit in inline handlers, which the Content-Security-Policy forbids.
// A form or button with data-confirm="<question>" asks it first; Cancel stops the submission.
(function () {
  "use strict";

  function question(form, submitter) {
    if (submitter && submitter.hasAttribute("data-confirm")) {
      return submitter.getAttribute("data-confirm");
    }
    return form.getAttribute("data-confirm");
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    var text = question(form, event.submitter);
    if (text && !window.confirm(text)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);
})();
