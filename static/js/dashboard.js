// The dashboard's live parts (notices, my notebooks) converge on the truth without a reload: every few seconds,
// while the tab is shown, the server renders them as they are now (/dashboard/live/) and the parts that changed are
// swapped in, so a notice that was dealt with elsewhere goes and a notebook card follows its notebook.
(function () {
  "use strict";
  const POLL_MS = 3000;
  const RETRY_MS = 10000;
  const url = document.currentScript && document.currentScript.dataset.live;
  if (!url) return;

  function swap(fresh) {
    for (const part of fresh.querySelectorAll("[data-live-part]")) {
      const old = document.querySelector('[data-live-part="' + part.dataset.livePart + '"]');
      // A part with the focus inside (a Dismiss button being pressed) waits for the next round.
      if (!old || old.contains(document.activeElement)) continue;
      if (old.innerHTML.replace(/value="[^"]*"/g, "") === part.innerHTML.replace(/value="[^"]*"/g, "")) continue;
      old.replaceWith(document.importNode(part, true));
    }
  }

  let timer = null;
  let busy = false;
  async function poll() {
    timer = null;
    if (document.hidden || busy) return; // resumed by visibilitychange
    busy = true;
    let wait = POLL_MS;
    try {
      const response = await fetch(url, { headers: { Accept: "text/html" }, credentials: "same-origin" });
      if (response.status === 401 || response.status === 403 || response.redirected) return; // signed out
      if (!response.ok) throw new Error(String(response.status));
      swap(new DOMParser().parseFromString(await response.text(), "text/html"));
    } catch (error) {
      wait = RETRY_MS;
    } finally {
      busy = false;
    }
    timer = setTimeout(poll, wait);
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && timer === null && !busy) poll();
  });
  timer = setTimeout(poll, POLL_MS);
})();
