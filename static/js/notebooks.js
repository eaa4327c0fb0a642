// Notebooks page: keeps "Your notebooks" current without a reload by polling GET /api/v1/notebooks/?mine=true
// every 2 s while one of them is live (queued, starting, ready, stopping). The server renders the same cards
// (templates/notebooks/_session.html), so the page shows the truth without JavaScript too.
(function () {
  "use strict";
  const POLL_MS = 2000;
  const RETRY_MS = 5000;
  const LIVE = ["queued", "starting", "ready", "stopping"];
  const ACTIVE = ["queued", "starting", "ready"];
  const LABELS = {
    queued: gettext("Queued"), starting: gettext("Starting"), ready: gettext("Ready"), stopping: gettext("Stopping"), stopped: gettext("Stopped"), failed: gettext("Failed"),
  };
  const FRACTIONS = [[0.125, "⅛"], [0.2, "⅕"], [0.25, "¼"], [1 / 3, "⅓"], [0.5, "½"], [0.75, "¾"]];

  const root = document.getElementById("nb-sessions");
  if (!root) return;
  const liveBox = document.getElementById("nb-live");
  const endedBox = document.getElementById("nb-ended");
  const none = document.getElementById("nb-none");
  const endedTitle = document.getElementById("nb-ended-title");
  const endedShown = parseInt(root.dataset.endedShown, 10) || 5;
  // Times in the lab's time zone, as the server renders them, whatever the browser's zone is.
  let zone = document.body.dataset.labTz || undefined;
  try {
    new Intl.DateTimeFormat("en-GB", { timeZone: zone });
  } catch (error) {
    zone = undefined;
  }

  // --- Formatting, as the server does it (labs/notebooks/forms.py, labs/notebooks/views.py) ------------------
  function shareLabel(share) {
    if (share >= 1) return gettext("a whole RTX 4090");
    for (const [value, glyph] of FRACTIONS) {
      if (Math.abs(share - value) < 0.002) return interpolate(gettext("%s of an RTX 4090"), [glyph]);
    }
    return interpolate(gettext("%s % of an RTX 4090"), [Math.round(share * 100)]);
  }

  function inZone(options) {
    return zone ? { ...options, timeZone: zone } : options;
  }

  function clock(iso) {
    if (!iso) return "";
    const moment = new Date(iso);
    const day = (d) => d.toLocaleDateString("en-CA", inZone({}));
    const hm = moment.toLocaleTimeString("en-GB", inZone({ hour: "2-digit", minute: "2-digit", hourCycle: "h23" }));
    if (day(moment) === day(new Date())) return hm;
    return moment.toLocaleDateString(document.documentElement.lang || "en-GB", inZone({ weekday: "short" })) + " " + hm;
  }

  function signature(nb) {
    const position = nb.status === "queued" && nb.position ? String(nb.position) : "";
    const url = nb.status === "ready" ? nb.url || "" : "";
    return [nb.id, nb.status, position, nb.reason || "", url, nb.node || "", clock(nb.ends_at), clock(nb.must_end_by),
      clock(nb.stopped_at)].join("|");
  }

  // --- One card ------------------------------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined && value !== false) node.setAttribute(name, value === true ? "" : value);
    }
    for (const child of children) {
      if (child !== null && child !== undefined && child !== "") node.append(child);
    }
    return node;
  }

  // DOM's append() writes null as the text "null": leave out what a card does not have.
  function put(node, ...children) {
    node.append(...children.filter((child) => child !== null && child !== undefined && child !== ""));
  }

  function urlFor(template, id) {
    return template.replace("/0/", "/" + id + "/");
  }

  function stopLink(nb, label) {
    return el("div", { class: "actions" }, el("a", { class: "button-link", href: urlFor(root.dataset.stopUrl, nb.id) }, label));
  }

  function card(nb) {
    const article = el("article", {
      class: "nb-session nb-" + nb.status, "data-notebook-id": nb.id, "data-status": nb.status, "data-testid": "notebook",
    });
    put(article, el("header", { class: "nb-session-head" },
      el("span", {},
        el("strong", { class: "nb-name" }, nb.profile_name), " ",
        el("span", { class: "muted small" }, "#" + nb.id + " · " + shareLabel(nb.gpu_share))),
      el("span", { class: "badge nb-badge nb-badge-" + nb.status, "data-field": "status" }, LABELS[nb.status] || nb.status)));
    const mustEnd = clock(nb.must_end_by);
    if (nb.status === "queued") {
      put(article,
        el("p", { class: "nb-headline", "data-field": "position" }, interpolate(gettext("Position %s in the queue"), [nb.position || "?"])),
        el("p", { class: "nb-reason", "data-field": "reason" }, nb.reason),
        stopLink(nb, gettext("Leave the queue…")));
    } else if (nb.status === "starting") {
      put(article,
        el("progress", { class: "nb-progress", "aria-label": gettext("Starting") }),
        el("p", { class: "nb-headline", "data-field": "reason" }, nb.node ? interpolate(gettext("Starting on %s…"), [nb.node]) : gettext("Starting on a GPU…")),
        mustEnd ? el("p", { class: "small" }, interpolate(gettext("It must end by %s: the node is reserved then."), [mustEnd])) : null,
        stopLink(nb, gettext("Stop…")));
    } else if (nb.status === "ready") {
      const ends = clock(nb.ends_at);
      const extend = el("form", { method: "post", action: urlFor(root.dataset.extendUrl, nb.id), class: "inline" },
        el("input", { type: "hidden", name: "csrfmiddlewaretoken", value: root.dataset.csrf }),
        el("button", {
          type: "submit", class: "button-link",
          title: interpolate(gettext("Resets the idle clock and adds %s minutes"), [root.dataset.extendMin]),
        }, gettext("Keep running / Extend")));
      const actions = stopLink(nb, gettext("Stop…"));
      actions.prepend(extend);
      put(article,
        el("p", {}, el("a", {
          class: "button-link primary-link nb-open", href: nb.url || "#", target: "_blank", rel: "noopener",
          "data-testid": "open-notebook",
        }, gettext("Open JupyterLab"))),
        el("p", { class: "small", "data-field": "ends" },
          interpolate(gettext("On %s"), [nb.node]) + (ends ? " · " + interpolate(gettext("ends at %s"), [ends]) : "") +
          (mustEnd ? " (" + interpolate(gettext("the node is reserved from %s"), [mustEnd]) + ")" : "")),
        actions);
    } else if (nb.status === "stopping") {
      put(article,
        el("p", { class: "nb-headline" }, gettext("Stopping…")),
        el("p", { class: "nb-reason", "data-field": "reason" }, nb.reason));
    } else {
      const stopped = clock(nb.stopped_at);
      put(article,
        el("p", { class: "nb-reason", "data-field": "reason" }, nb.reason || gettext("Stopped.")),
        stopped ? el("p", { class: "small muted" }, interpolate(gettext("Ended %s"), [stopped])) : null);
    }
    return article;
  }

  // --- The list ------------------------------------------------------------------------------------------------
  let moved = false; // a notebook changed state since the page came, so its one-off banners are out of date
  function sync(box, items) {
    const existing = new Map();
    for (const child of box.children) existing.set(child.dataset.notebookId, child);
    const wanted = items.map((nb) => {
      const sig = signature(nb);
      const old = existing.get(String(nb.id));
      if (old && old.dataset.sig === sig) return old;
      const fresh = card(nb);
      fresh.dataset.sig = sig;
      if (old && old.dataset.status !== nb.status) {
        fresh.classList.add("nb-changed");
        moved = true;
      }
      return fresh;
    });
    const same = wanted.length === box.children.length && wanted.every((node, i) => box.children[i] === node);
    if (!same) box.replaceChildren(...wanted);
  }

  function render(notebooks) {
    const live = notebooks.filter((nb) => LIVE.includes(nb.status));
    const ended = notebooks.filter((nb) => !LIVE.includes(nb.status)).slice(0, endedShown);
    sync(liveBox, live);
    sync(endedBox, ended);
    // "… is in the queue" was true when the page came; once a notebook has moved on, its card says the truth.
    if (moved) for (const old of document.querySelectorAll("main .messages")) old.remove();
    none.hidden = live.length + ended.length > 0;
    endedTitle.hidden = ended.length === 0;
    const count = document.querySelector('[data-field="active-count"]');
    const active = String(live.filter((nb) => ACTIVE.includes(nb.status)).length);
    if (count && count.textContent !== active) count.textContent = active;
    return live.length > 0;
  }

  let timer = null;
  let busy = false;
  async function poll() {
    timer = null;
    if (document.hidden || busy) return; // a hidden tab is resumed by visibilitychange
    busy = true;
    let again = true;
    let wait = POLL_MS;
    try {
      const response = await fetch(root.dataset.api, {
        headers: { Accept: "application/json" }, credentials: "same-origin",
      });
      if (response.status === 401 || response.status === 403) return; // signed out: the page says the rest
      if (!response.ok) throw new Error(String(response.status));
      again = render(await response.json());
    } catch (error) {
      wait = RETRY_MS; // try again a little later
    } finally {
      busy = false;
    }
    if (again) timer = setTimeout(poll, wait);
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && timer === null && !busy && liveBox.children.length > 0) poll();
  });
  if (parseInt(root.dataset.live, 10) > 0) timer = setTimeout(poll, POLL_MS);
})();
