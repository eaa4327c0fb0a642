// The booking form: show which nodes are free as the date and times change.
(function () {
  "use strict";
  const form = document.getElementById("booking-form");
  if (!form) return;
  const out = document.getElementById("availability");
  const picker = document.getElementById("node-picker");
  const field = (name) => form.elements.namedItem(name);
  let pending = null;
  let last = "";

  // The form's times are typed in 24-hour form ("9:00", "09.00" and "0900" mean 09:00); null when not a time.
  function hhmm(text) {
    const match = /^\s*(\d{1,2})[:.]?(\d{2})\s*$/.exec(text);
    if (!match || Number(match[1]) > 23 || Number(match[2]) > 59) return null;
    return match[1].padStart(2, "0") + ":" + match[2];
  }

  // The date in the form's one format, year-month-day; "" until it is typed in full.
  function ymd(text) {
    return /^\d{4}-\d{2}-\d{2}$/.test(text.trim()) ? text.trim() : "";
  }

  function mode() {
    const checked = form.querySelector('input[name="mode"]:checked');
    return checked ? checked.value : "count";
  }

  function showPicker() {
    if (picker) picker.hidden = mode() !== "named";
    const count = field("node_count");
    if (count) count.closest("form").querySelector('label[for="' + count.id + '"]').hidden = mode() !== "count";
    if (count) count.hidden = mode() !== "count";
  }

  function say(text, level) {
    out.textContent = text;
    out.dataset.level = level || "";
  }

  async function check() {
    const date = ymd(field("date").value), start = hhmm(field("start").value), end = hhmm(field("end").value);
    if (!date || !start || !end) return say(gettext("Choose a date and times to see which nodes are free."));
    if (end <= start) return say(gettext("The end must be after the start."), "bad");
    const query = new URLSearchParams({ starts_at: date + "T" + start, ends_at: date + "T" + end });
    if (query.toString() === last) return;
    last = query.toString();
    say(gettext("Checking availability…"), "busy");
    if (pending) pending.abort();
    pending = new AbortController();
    try {
      const response = await fetch(form.dataset.availabilityUrl + "?" + query, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
        signal: pending.signal,
      });
      const body = await response.json();
      if (!response.ok) return say(body.detail || gettext("Could not check availability."), "bad");
      const free = new Set(body.free_nodes);
      say(interpolate(gettext("%(free)s of %(ready)s nodes free %(start)s–%(end)s."), { free: body.free_count, ready: body.ready_count, start: start, end: end }, true),
          body.free_count ? "ok" : "bad");
      form.querySelectorAll(".node-check").forEach((label) => {
        const taken = !free.has(label.dataset.node);
        label.classList.toggle("taken", taken);
        label.title = taken ? gettext("Booked in this window") : "";
        const box = label.querySelector("input");
        box.disabled = taken;
        if (taken) box.checked = false;
      });
      const count = field("node_count");
      if (count) count.max = String(Math.max(1, body.free_count));
    } catch (error) {
      if (error.name !== "AbortError") say(gettext("Could not check availability; the form still works."), "bad");
    }
  }

  form.addEventListener("change", () => { showPicker(); check(); });
  form.addEventListener("input", (event) => {
    if (["date", "start", "end"].includes(event.target.name)) check();
  });
  showPicker();
  check();
})();
