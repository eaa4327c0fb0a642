// Job pages: live status on the list and the detail page (polling the API), and "will it start now?" on the form.
(function () {
  "use strict";
  const POLL_MS = 3000;

  function text(node, value) {
    if (node && node.textContent !== value) node.textContent = value;
  }

  function statusLabel(job) {
    return job.stopping && (job.status === "starting" || job.status === "running") ? "stopping" : job.status;
  }

  function setBadge(node, label) {
    if (!node) return;
    text(node, label);
    node.className = "badge job-" + label;
  }

  async function getJSON(url) {
    const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!response.ok) throw new Error(response.status);
    return response.json();
  }

  function reasonOf(job) {
    if (job.status === "queued") return "#" + (job.position || "?") + " · " + job.reason;
    return job.reason || "";
  }

  // --- My jobs -------------------------------------------------------------------------------
  const table = document.getElementById("job-table");
  if (table) {
    const poll = async () => {
      try {
        const jobs = await getJSON(table.dataset.api + "?limit=100");
        for (const job of jobs) {
          const row = table.querySelector('tr[data-job-id="' + job.id + '"]');
          if (!row) continue;
          setBadge(row.querySelector('[data-field="status"]'), statusLabel(job));
          text(row.querySelector('[data-field="nodes"]'), job.node_names.join(", "));
          text(row.querySelector('[data-field="reason"]'), reasonOf(job));
        }
      } catch (error) { /* try again at the next tick */ }
      setTimeout(poll, POLL_MS);
    };
    setTimeout(poll, POLL_MS);
  }

  // As Django's filesizeformat writes sizes, so the note reads the same as the server-rendered one.
  function sizeOf(bytes) {
    const units = ["KB", "MB", "GB", "TB"];
    if (bytes < 1024) return bytes + (bytes === 1 ? "\u00a0byte" : "\u00a0bytes");
    let value = bytes / 1024;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
    return value.toFixed(1) + "\u00a0" + units[unit];
  }

  // The logs API holds at most X-Log-Max-Bytes per answer and says when that cut the log (X-Log-Truncated).
  function logNote(headers, shown) {
    const note = document.getElementById("job-logs-note");
    if (!note) return;
    if (headers.get("X-Log-Truncated") !== "true") { note.hidden = true; text(note, ""); return; }
    const size = headers.get("X-Log-Size");
    const of = size === null ? "" : " of " + sizeOf(Number(size));
    text(note, "Showing the last " + sizeOf(shown) + of + ": one view holds at most " +
      sizeOf(Number(headers.get("X-Log-Max-Bytes"))) + "; page through the rest with the logs API (offset and limit_bytes).");
    note.hidden = false;
  }

  // --- One job ------------------------------------------------------------------------------
  const detail = document.getElementById("job-detail");
  if (detail) {
    const poll = async () => {
      let job = null;
      try {
        job = await getJSON(detail.dataset.api);
        setBadge(detail.querySelector('[data-field="status"]'), statusLabel(job));
        text(detail.querySelector('[data-field="attempt"]'), String(job.attempt));
        text(detail.querySelector('[data-field="nodes"]'), job.node_names.join(", ") || "—");
        text(detail.querySelector('[data-field="exit_code"]'), job.exit_code === null ? "—" : String(job.exit_code));
        const reason = job.status === "queued" ? "Position " + (job.position || "?") + ": " + job.reason : job.reason;
        text(detail.querySelector('[data-field="reason"]'), reason || "");
        const events = document.getElementById("job-events");
        if (events && events.children.length !== job.events.length) {
          events.replaceChildren(...job.events.map((e) => {
            const item = document.createElement("li");
            // In the lab's time zone, as the server renders times, whatever the browser's zone is.
            const zone = document.body.dataset.labTz;
            const at = new Date(e.at).toLocaleTimeString([], zone ? { timeZone: zone } : {});
            item.textContent = at + " " + (e.from_state || "—") + " → " + e.to_state + " (attempt " + e.attempt + "): " + e.reason;
            return item;
          }));
        }
        const logs = await fetch(detail.dataset.logs, { credentials: "same-origin" });
        if (logs.ok) {
          const body = await logs.text();
          text(document.getElementById("job-logs"), body);
          const start = logs.headers.get("X-Log-Start");
          const end = logs.headers.get("X-Log-End");
          logNote(logs.headers, start !== null && end !== null ? end - start : new TextEncoder().encode(body).length);
        }
      } catch (error) { /* try again at the next tick */ }
      const over = job && ["succeeded", "failed", "cancelled"].includes(job.status);
      if (!over) setTimeout(poll, POLL_MS);
    };
    setTimeout(poll, 1000);
  }

  // --- Will it start now? ---------------------------------------------------------------------
  const form = document.getElementById("job-form");
  if (form) {
    const answer = document.getElementById("job-preview");
    const value = (name) => (form.elements[name] ? form.elements[name].value : "");
    const body = () => {
      const env = {};
      for (const line of value("env").split("\n")) {
        const at = line.indexOf("=");
        if (line.trim() && at > 0) env[line.slice(0, at).trim()] = line.slice(at + 1);
      }
      const datasets = Array.from(form.querySelectorAll('input[name="datasets"]:checked')).map((box) => box.value);
      return {
        name: value("name") || "preview",
        image: value("image"),
        command: value("command").split("\n").map((line) => line.trim()).filter(Boolean),
        gpus: parseInt(value("gpus"), 10) || 0,
        nodes: parseInt(value("nodes"), 10) || 0,
        max_runtime_s: parseInt(value("max_runtime_s"), 10) || 0,
        priority: value("priority") || "normal",
        reservation: value("reservation") ? parseInt(value("reservation"), 10) : null,
        env: env,
        datasets: datasets,
      };
    };
    let timer = null;
    let asked = 0;
    const ask = async () => {
      const number = ++asked;
      const request = body();
      if (!request.image || !request.command.length) return;
      try {
        const response = await fetch(form.dataset.previewUrl, {
          method: "POST",
          credentials: "same-origin",
          headers: {
            "Content-Type": "application/json",
            Accept: "application/json",
            "X-CSRFToken": form.elements.csrfmiddlewaretoken.value,
          },
          body: JSON.stringify(request),
        });
        const data = await response.json();
        if (number !== asked) return;
        text(answer, response.ok ? data.sentence : "Not like this: " + data.detail);
      } catch (error) { /* keep the last answer */ }
    };
    form.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(ask, 400);
    });
    ask();
  }
})();
