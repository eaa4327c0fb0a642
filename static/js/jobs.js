// Job pages: live status on the list and the detail page (polling the API), and "will it start now?" on the form.
(function () {
  "use strict";
  const POLL_MS = 3000;
  const FINISHED = ["succeeded", "failed", "cancelled"]; // a job in one of these changes no more

  function text(node, value) {
    if (node && node.textContent !== value) node.textContent = value;
  }

  function statusLabel(job) {
    return job.stopping && (job.status === "starting" || job.status === "running") ? "stopping" : job.status;
  }

  // The status words as the server writes them (jobs/templatetags/job_labels.py), in the page's language.
  const STATUS_WORDS = {
    queued: pgettext("job status", "queued"), starting: pgettext("job status", "starting"),
    running: pgettext("job status", "running"), stopping: pgettext("job status", "stopping"),
    succeeded: pgettext("job status", "succeeded"), failed: pgettext("job status", "failed"),
    cancelled: pgettext("job status", "cancelled"),
  };

  function setBadge(node, label) {
    if (!node) return;
    text(node, STATUS_WORDS[label] || label);
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

  // The server's date-time ("2026-11-27 14:05", "27/11/2026 14:05" in Portuguese) in the lab's time zone.
  function dayTime(iso) {
    const zone = document.body.dataset.labTz;
    const options = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" };
    let parts;
    try {
      parts = new Intl.DateTimeFormat("en-GB", zone ? { ...options, timeZone: zone } : options).formatToParts(new Date(iso));
    } catch (error) {
      parts = new Intl.DateTimeFormat("en-GB", options).formatToParts(new Date(iso));
    }
    const p = Object.fromEntries(parts.map((part) => [part.type, part.value]));
    const day = document.documentElement.lang.startsWith("pt") ? p.day + "/" + p.month + "/" + p.year : p.year + "-" + p.month + "-" + p.day;
    return day + " " + p.hour + ":" + p.minute;
  }

  function cell(cls, field, ...children) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    if (field) td.dataset.field = field;
    td.append(...children.filter((child) => child !== null && child !== undefined));
    return td;
  }

  // A job the page did not have (submitted elsewhere: another tab, the API, the CLI), as the server draws its row.
  function jobRow(job, table) {
    const row = document.createElement("tr");
    row.dataset.jobId = String(job.id);
    const link = document.createElement("a");
    link.href = table.dataset.jobUrl.replace("/0/", "/" + job.id + "/");
    link.textContent = job.name;
    const number = document.createElement("span");
    number.className = "muted small";
    number.textContent = "#" + job.id;
    const badge = document.createElement("span");
    badge.dataset.field = "status";
    setBadge(badge, statusLabel(job));
    row.append(
      cell("", "", link, " ", number), cell("", "", job.owner), cell("", "", badge), cell("", "", String(job.gpus * job.nodes)),
      cell("", "nodes", job.node_names.join(", ")), cell("small", "reason", reasonOf(job)), cell("small", "", dayTime(job.submitted_at)),
    );
    return row;
  }

  // --- My jobs -------------------------------------------------------------------------------
  const table = document.getElementById("job-table");
  if (table) {
    const body = table.tBodies[0];
    const place = (job) => {
      const row = jobRow(job, table);
      const after = Array.from(body.rows).find((other) => Number(other.dataset.jobId) < job.id);
      body.insertBefore(row, after || null);
      table.closest(".table-scroll").hidden = false;
      const none = document.getElementById("no-jobs");
      if (none) none.hidden = true;
    };
    const poll = async () => {
      try {
        const jobs = await getJSON(table.dataset.api + "?limit=100");
        for (const job of jobs) {
          const row = table.querySelector('tr[data-job-id="' + job.id + '"]');
          if (!row) {
            place(job);
            continue;
          }
          setBadge(row.querySelector('[data-field="status"]'), statusLabel(job));
          text(row.querySelector('[data-field="nodes"]'), job.node_names.join(", "));
          text(row.querySelector('[data-field="reason"]'), reasonOf(job));
        }
      } catch (error) { /* try again at the next tick */ }
      setTimeout(poll, POLL_MS);
    };
    setTimeout(poll, POLL_MS);
  }

  // The log followed as it is written (GET .../logs/?follow=1&since=N streams it until the attempt is over);
  // a stream that ends early (a proxy, the server's time limit) is resumed from the bytes already shown.
  function logFollower(detail) {
    const pre = document.getElementById("job-logs");
    const keep = Number(detail.dataset.logLines) || 200;
    let attempt = Number(detail.dataset.attempt) || 1;
    let since = Number(detail.dataset.logEnd) || 0;
    let streaming = false;
    let finished = false;
    const show = (added) => {
      const lines = (pre.textContent + added).split("\n");
      const cut = lines.length > keep + 1 ? lines.slice(lines.length - keep - 1) : lines;
      text(pre, cut.join("\n"));
    };
    const follow = async () => {
      if (streaming) return;
      streaming = true;
      const mine = attempt; // a new attempt (poke) has a log of its own: this stream's bytes are not part of it
      try {
        const url = detail.dataset.follow + "&attempt=" + mine + "&since=" + since;
        const response = await fetch(url, { credentials: "same-origin" });
        if (response.ok && response.body) {
          const reader = response.body.getReader();
          const decoder = new TextDecoder();
          for (;;) {
            const { done, value } = await reader.read();
            if (attempt !== mine) {
              reader.cancel().catch(() => {});
              break;
            }
            if (done) {
              show(decoder.decode());
              break;
            }
            since += value.byteLength;
            show(decoder.decode(value, { stream: true }));
          }
        }
      } catch (error) { /* resumed at the next status tick */ }
      streaming = false;
    };
    return {
      start: follow,
      // Each status tick: a new attempt starts a log of its own; a stream that ended early is resumed.
      poke(job) {
        if (job.attempt > attempt) {
          attempt = job.attempt;
          since = 0;
          text(pre, "");
        }
        if (!finished) follow();
        finished = FINISHED.includes(job.status);
      },
    };
  }

  // --- One job ------------------------------------------------------------------------------
  // The server's "D H:i:s" ("Fri 04:55:17", "sex. 04:55:17") in the lab's time zone and the page's language,
  // whatever the browser's zone and locale are.
  function eventTime(iso) {
    const zone = document.body.dataset.labTz;
    const language = document.documentElement.lang || "en-GB";
    const options = { weekday: "short", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" };
    try {
      return new Intl.DateTimeFormat(language, zone ? { ...options, timeZone: zone } : options).format(new Date(iso));
    } catch (error) {
      return new Intl.DateTimeFormat(language, options).format(new Date(iso));
    }
  }

  function eventItem(e) {
    const item = document.createElement("li");
    const at = document.createElement("span");
    at.className = "muted small";
    at.textContent = eventTime(e.at);
    const to = document.createElement("strong");
    to.textContent = e.to_state;
    item.append(at, " " + (e.from_state || "—") + " → ", to, " (attempt " + e.attempt + "): " + (e.reason || ""));
    return item;
  }

  const detail = document.getElementById("job-detail");
  if (detail) {
    const followed = logFollower(detail);
    followed.start();
    const shownAs = detail.dataset.status; // the state the page was rendered in, with its one-off messages
    const poll = async () => {
      let job = null;
      try {
        job = await getJSON(detail.dataset.api);
        const label = statusLabel(job);
        setBadge(detail.querySelector('[data-field="status"]'), label);
        text(detail.querySelector('[data-field="attempt"]'), String(job.attempt));
        text(detail.querySelector('[data-field="nodes"]'), job.node_names.join(", ") || "—");
        text(detail.querySelector('[data-field="exit_code"]'), job.exit_code === null ? "—" : String(job.exit_code));
        const reason = job.status === "queued"
          ? interpolate(gettext("Position %(position)s: %(reason)s"), { position: job.position || "?", reason: job.reason }, true)
          : job.reason;
        text(detail.querySelector('[data-field="reason"]'), reason || "");
        // "… is queued: starting now" or "… is being stopped" said what was true when the page came: once the job
        // has moved on they would mislead, and the status above says the rest.
        if (label !== shownAs) {
          for (const old of document.querySelectorAll("main .messages")) old.remove();
        }
        if (FINISHED.includes(job.status)) {
          for (const link of detail.querySelectorAll("[data-while-active]")) link.remove();
        }
        const events = document.getElementById("job-events");
        if (events && events.children.length !== job.events.length) {
          events.replaceChildren(...job.events.map(eventItem));
        }
        followed.poke(job);
      } catch (error) { /* try again at the next tick */ }
      const over = job && FINISHED.includes(job.status);
      const resubmit = detail.querySelector('[data-testid="resubmit-link"]');
      if (resubmit) resubmit.hidden = !over;
      if (!over) setTimeout(poll, POLL_MS);
    };
    setTimeout(poll, 1000);
  }

  // --- Will it start now? ---------------------------------------------------------------------
  // A command line is split as a POSIX shell splits words (Python's shlex.split on the server, which decides):
  // quotes, and backslashes outside single quotes. null when a quote is left open.
  const splitLine = (line) => {
    const words = [];
    let word = null;
    let quote = "";
    for (let i = 0; i < line.length; i++) {
      const ch = line[i];
      if (quote === "'") {
        if (ch === "'") quote = ""; else word += ch;
      } else if (quote === '"') {
        if (ch === '"') quote = "";
        else if (ch === "\\" && i + 1 < line.length && '\\"$`\n'.includes(line[i + 1])) word += line[++i];
        else word += ch;
      } else if (/\s/.test(ch)) {
        if (word !== null) words.push(word);
        word = null;
      } else {
        if (word === null) word = "";
        if (ch === "'" || ch === '"') quote = ch;
        else if (ch === "\\") { if (i + 1 >= line.length) return null; word += line[++i]; }
        else word += ch;
      }
    }
    if (quote) return null;
    if (word !== null) words.push(word);
    return words;
  };
  const form = document.getElementById("job-form");
  if (form) {
    const answer = document.getElementById("job-preview");
    const value = (name) => (form.elements[name] ? form.elements[name].value : "");
    const kind = () => (form.querySelector('input[name="kind"]:checked') || { value: "command" }).value;
    const showKind = () => {
      for (const box of form.querySelectorAll(".program")) box.hidden = box.dataset.kind !== kind();
    };
    const argvPreview = document.getElementById("argv-preview");
    const argvList = document.getElementById("argv-list");
    const showArgv = () => {
      const argv = kind() === "command" ? splitLine(value("command")) : null;
      argvPreview.hidden = !argv || !argv.length;
      argvList.replaceChildren(...(argv || []).map((arg) => {
        const item = document.createElement("li");
        const code = document.createElement("code");
        code.textContent = arg;
        item.append(code);
        return item;
      }));
    };
    showKind();
    showArgv();
    // A preset fills in the three fields it stands for; changing one of them by hand makes it "Custom".
    const SIZES = ["gpus", "nodes", "max_runtime_s"];
    const applyPreset = () => {
      const chosen = form.querySelector('input[name="preset"]:checked');
      if (!chosen || !chosen.value) return;
      chosen.value.split(":").forEach((number, at) => {
        if (form.elements[SIZES[at]]) form.elements[SIZES[at]].value = number;
      });
    };
    form.addEventListener("change", (event) => {
      if (event.target.name === "preset") applyPreset();
      if (SIZES.includes(event.target.name)) {
        const custom = form.querySelector('input[name="preset"][value=""]');
        if (custom) custom.checked = true;
      }
    });
    applyPreset();
    const body = () => {
      const env = {};
      for (const line of value("env").split("\n")) {
        const at = line.indexOf("=");
        if (line.trim() && at > 0) env[line.slice(0, at).trim()] = line.slice(at + 1);
      }
      const datasets = Array.from(form.querySelectorAll('input[name="datasets"]:checked')).map((box) => box.value);
      const script = kind() === "script";
      return {
        name: value("name") || "preview",
        image: value("image_other").trim() || value("image"),
        command: script ? null : splitLine(value("command")) || [],
        script: script ? value("script") : null,
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
      if (!request.image || !((request.command && request.command.length) || (request.script || "").trim())) return;
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
        text(answer, response.ok ? data.sentence : interpolate(gettext("Not like this: %s"), [data.detail]));
        const help = document.getElementById("job-preview-help");
        if (help) {
          help.hidden = !data.help;
          if (data.help) help.querySelector("a").setAttribute("href", data.help);
        }
      } catch (error) { /* keep the last answer */ }
    };
    form.addEventListener("input", () => {
      showKind();
      showArgv();
      clearTimeout(timer);
      timer = setTimeout(ask, 400);
    });
    ask();
  }
})();
