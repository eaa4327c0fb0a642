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

// The header's menu on a phone: the links fold behind a Menu button (aria-expanded says which). Without this script
// the button stays hidden and the links stay shown, as on a desktop.
(function () {
  "use strict";
  var toggle = document.querySelector(".menu-toggle");
  if (!toggle) return;
  var bar = toggle.closest(".topbar");
  function show(open) {
    bar.classList.toggle("is-open", open);
    toggle.setAttribute("aria-expanded", String(open));
  }
  document.documentElement.classList.add("has-menu");
  toggle.hidden = false;
  toggle.addEventListener("click", function () { show(!bar.classList.contains("is-open")); });
  bar.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && bar.classList.contains("is-open")) {
      show(false);
      toggle.focus();
    }
  });
})();

// A table (or a card) wider than the screen scrolls inside its box; a box that scrolls is a tab stop, named after
// its heading, so that a keyboard can scroll it too (and only those: one that fits is no extra stop).
(function () {
  "use strict";
  function heading(box) {
    var h = box.querySelector("h2, h3, caption") || (box.closest("section, .card") || box).querySelector("h2, h3");
    return h ? h.textContent.trim() : "";
  }
  function mark() {
    document.querySelectorAll(".table-scroll, .card, .timeline-card, .usage-side").forEach(function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1 && getComputedStyle(box).overflowX !== "visible";
      var added = box.hasAttribute("data-scroll-stop");
      if (scrolls && !added && !box.hasAttribute("tabindex")) {
        box.setAttribute("data-scroll-stop", "");
        box.setAttribute("tabindex", "0");
        if (!box.hasAttribute("role")) box.setAttribute("role", "region");
        if (!box.hasAttribute("aria-label") && heading(box)) box.setAttribute("aria-label", heading(box));
      } else if (!scrolls && added) {
        ["data-scroll-stop", "tabindex"].forEach(function (name) { box.removeAttribute(name); });
      }
    });
  }
  mark();
  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(mark, 150);
  });
})();
