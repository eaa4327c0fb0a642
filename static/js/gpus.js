/* Live GPU status: one WebSocket (/ws/gpus/), a snapshot, then updates applied to the cards in place. */
(function () {
  "use strict";
  var grid = document.getElementById("gpu-grid");
  if (!grid || !window.WebSocket) return;
  var onlyNode = grid.getAttribute("data-node");
  var availableEl = document.getElementById("gpus-available");
  var availableLabel = document.getElementById("gpus-available-label");
  var liveEl = document.getElementById("live-state");
  var gpus = new Map();
  var seq = null;
  var socket = null;
  var attempt = 0;
  var closingDetail = "";
  // The collector sends at least a heartbeat every few seconds; silence longer than this means no live data.
  var staleAfterMs = 1000 * (Number(grid.getAttribute("data-stale-after")) || 30);
  var lastMessageAt = Date.now();

  setInterval(function () {
    if (!socket || Date.now() - lastMessageAt < staleAfterMs) return;
    setLive(interpolate(gettext("no live data since %s"), [new Date(lastMessageAt).toLocaleTimeString(document.documentElement.lang || [])]), false);
    grid.querySelectorAll(".gpu-card").forEach(function (card) {
      card.classList.add("is-stale");
      var state = card.querySelector('[data-field="state"]');
      if (state) state.textContent = gettext("stale");
    });
    if (availableEl) availableEl.textContent = "0";
  }, 2000);

  function keyOf(gpu) { return gpu.node + "/" + gpu.index; }
  function setLive(text, ok) {
    if (!liveEl) return;
    liveEl.textContent = text;
    liveEl.classList.toggle("is-live", !!ok);
  }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  // Numbers as the page's language writes them: 12.5 (en), 12,5 (pt-BR).
  var GIB = new Intl.NumberFormat(document.documentElement.lang || undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  function num(value, suffix) { return value === null || value === undefined ? "—" + suffix : Math.round(value) + suffix; }
  var NODE_STATES = { cordoned: gettext("cordoned"), down: gettext("down") };
  var FRACTIONS = [[0.125, "⅛"], [0.25, "¼"], [1 / 3, "⅓"], [0.5, "½"], [2 / 3, "⅔"], [0.75, "¾"]];
  function shareLabel(share) {
    for (var i = 0; i < FRACTIONS.length; i++) {
      if (Math.abs(share - FRACTIONS[i][0]) < 0.01) return FRACTIONS[i][1];
    }
    return Math.round(share * 100) + " %";
  }
  function partly(gpu) { return !!gpu.holder && gpu.holder.share > 0 && gpu.holder.share < 0.999; }
  // As the server's card says it (templates/telemetry/_gpu_card.html): a cordoned or down node says only that,
  // and a GPU shared out in part is "partly used", not "busy".
  function stateOf(gpu) {
    if (gpu.node_status !== "ready") return NODE_STATES[gpu.node_status] || gpu.node_status;
    if (gpu.stale) return gettext("stale");
    if (gpu.available || !gpu.holder) return gettext("free");
    return partly(gpu) ? gettext("partly used") : gettext("busy");
  }

  function newCard(gpu) {
    var card = el("article", "gpu-card");
    card.setAttribute("data-key", keyOf(gpu));
    card.setAttribute("data-testid", "gpu-" + gpu.node + "-" + gpu.index);
    var header = el("header");
    var link = el("a", "gpu-node", gpu.node);
    link.href = "/lab/nodes/" + encodeURIComponent(gpu.node) + "/";
    header.appendChild(link);
    var badge = el("span", "badge gpu-state");
    badge.setAttribute("data-field", "state");
    header.appendChild(badge);
    card.appendChild(header);
    [[gettext("Util"), "util"], [gettext("Memory"), "mem"]].forEach(function (pair) {
      var metric = el("div", "gpu-metric");
      metric.appendChild(el("span", "label", pair[0]));
      var value = el("span");
      value.setAttribute("data-field", pair[1]);
      metric.appendChild(value);
      var bar = el("div", "bar");
      var fill = el("span");
      fill.setAttribute("data-bar", pair[1]);
      bar.appendChild(fill);
      metric.appendChild(bar);
      card.appendChild(metric);
    });
    var readings = el("p", "gpu-readings");
    var temp = el("span"); temp.setAttribute("data-field", "temp");
    var power = el("span"); power.setAttribute("data-field", "power");
    readings.appendChild(temp); readings.appendChild(document.createTextNode(" · ")); readings.appendChild(power);
    card.appendChild(readings);
    var holder = el("p", "gpu-holder small"); holder.setAttribute("data-field", "holder");
    card.appendChild(holder);
    var alerts = el("p", "gpu-alert small"); alerts.setAttribute("data-field", "alerts"); alerts.hidden = true;
    card.appendChild(alerts);
    grid.appendChild(card);
    return card;
  }

  function field(card, name) { return card.querySelector('[data-field="' + name + '"]'); }
  function bar(card, name, pct) {
    var fill = card.querySelector('[data-bar="' + name + '"]');
    if (fill) fill.style.width = Math.max(0, Math.min(100, pct || 0)).toFixed(0) + "%";
  }

  function render(gpu) {
    if (onlyNode && gpu.node !== onlyNode) return;
    var card = grid.querySelector('[data-key="' + CSS.escape(keyOf(gpu)) + '"]') || newCard(gpu);
    var state = stateOf(gpu);
    card.classList.toggle("is-stale", !!gpu.stale);
    card.classList.toggle("is-busy", !!gpu.holder);
    card.classList.toggle("is-available", !!gpu.available);
    ["ready", "cordoned", "down"].forEach(function (s) { card.classList.toggle("node-" + s, gpu.node_status === s); });
    field(card, "state").textContent = state;
    var reason = field(card, "node_reason");
    if (reason) {
      reason.textContent = gpu.node_reason || "";
      reason.hidden = gpu.node_status === "ready" || !gpu.node_reason;
    }
    field(card, "util").textContent = num(gpu.util_pct, " %");
    bar(card, "util", gpu.util_pct);
    var mem = field(card, "mem");
    if (gpu.mem_used_mb === null || gpu.mem_used_mb === undefined) {
      mem.textContent = "—";
      bar(card, "mem", 0);
    } else {
      mem.textContent = GIB.format(gpu.mem_used_mb / 1024) + " / " + GIB.format(gpu.mem_total_mb / 1024) + " GiB";
      bar(card, "mem", gpu.mem_total_mb ? (100 * gpu.mem_used_mb) / gpu.mem_total_mb : 0);
    }
    field(card, "temp").textContent = num(gpu.temp_c, " °C");
    field(card, "power").textContent = num(gpu.power_w, " W");
    var holder = field(card, "holder");
    holder.textContent = "";
    if (!gpu.holder) {
      holder.textContent = gpu.node_status === "ready" ? gettext("free") : gettext("nothing runs on it");
    } else {
      gpu.holder.holders.forEach(function (h) {
        holder.appendChild(el("span", "holder" + (h.mine ? " mine" : ""),
          (h.mine ? gettext("you") : h.user) + " · " + h.kind + (h.course ? " (" + h.course + ")" : "")));
      });
      if (gpu.holder.others && (gpu.holder.holders.length || !partly(gpu))) {
        holder.appendChild(el("span", "holder others",
          gpu.holder.holders.length ? interpolate(gettext("+%s more"), [gpu.holder.others]) : gettext("busy")));
      }
      if (partly(gpu)) {
        holder.appendChild(el("span", "holder share", interpolate(gettext("%s in use"), [shareLabel(gpu.holder.share)])));
      }
    }
    var alerts = field(card, "alerts");
    if (alerts) {
      var list = gpu.alerts || [];
      alerts.hidden = list.length === 0;
      alerts.textContent = list.map(function (a) { return "⚠ " + a.message; }).join(" ");
    }
    card.classList.remove("changed");
    void card.offsetWidth; // restart the highlight animation
    card.classList.add("changed");
  }

  function count() {
    var n = 0;
    gpus.forEach(function (gpu) { if (gpu.available && (!onlyNode || gpu.node === onlyNode)) n += 1; });
    if (availableEl) availableEl.textContent = String(n);
    if (availableLabel) availableLabel.textContent = ngettext("GPU free that you can use now", "GPUs free that you can use now", n);
  }

  function handle(message) {
    if (!message || typeof message !== "object") return;
    if (message.type === "closing") { closingDetail = String(message.detail || ""); return; }
    lastMessageAt = Date.now();
    setLive(gettext("live"), true);
    if (message.type === "snapshot") {
      gpus.clear();
      grid.querySelectorAll(".gpu-card").forEach(function (card) { card.remove(); });
      (message.gpus || []).forEach(function (gpu) { gpus.set(keyOf(gpu), gpu); render(gpu); });
    } else if (message.type === "update") {
      if (seq !== null && message.seq !== seq + 1 && socket) {
        socket.send(JSON.stringify({ type: "resync" })); // missed one: ask for the whole picture
      }
      // An update carries each changed GPU's node, index, sample time and the fields that changed.
      (message.gpus || []).forEach(function (change) {
        var gpu = Object.assign({}, gpus.get(keyOf(change)) || {}, change);
        gpus.set(keyOf(gpu), gpu);
        render(gpu);
      });
      (message.removed || []).forEach(function (gone) {
        var key = gone.node + "/" + gone.index;
        gpus.delete(key);
        var card = grid.querySelector('[data-key="' + CSS.escape(key) + '"]');
        if (card) card.remove();
      });
    } else {
      return;
    }
    seq = message.seq;
    grid.setAttribute("data-seq", String(seq));
    count();
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + grid.getAttribute("data-ws"));
    socket.onopen = function () { attempt = 0; setLive(gettext("live"), true); };
    socket.onmessage = function (event) {
      var message;
      try { message = JSON.parse(event.data); } catch (e) { return; }
      handle(message);
    };
    socket.onclose = function (event) {
      socket = null;
      seq = null;
      if (event.code === 4401 || event.code === 4403) {
        // The sign-in this page was opened with ended (4401) or the account was switched off (4403):
        // say why, and do not reconnect (the handshake would be refused).
        setLive(closingDetail || event.reason || gettext("You were signed out: sign in again."), false);
        return;
      }
      var delay = Math.min(30000, 1000 * Math.pow(2, attempt++));
      setLive(interpolate(gettext("connection lost, trying again in %s s"), [Math.round(delay / 1000)]), false);
      setTimeout(connect, delay);
    };
  }

  connect();
})();
