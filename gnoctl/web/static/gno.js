// gno's page: search as you type, the answer as it is written, status as it changes.
// The server renders (and escapes) every piece of HTML this script puts in the page.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);

async function post(url, body) {
  const token = $('meta[name="csrf-token"]').content;
  const response = await fetch(url, {
    method: "POST", credentials: "same-origin", body: JSON.stringify(body),
    headers: {"Content-Type": "application/json", "X-CSRF-Token": token},
  });
  if (response.status === 401) return {error: {message: SESSION_OVER}};
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    return {error: {message: text || `${response.status} ${response.statusText}`}};
  }
}

// An event stream held only while its page is shown: a browser gives a host six
// connections, each open gno page held one, and a seventh tab never loaded. A page shown
// again opens it anew and calls `back` (what changed meanwhile was not heard).
function shownStream(url, listeners, back) {
  let source = null;
  const open = () => {
    source = new EventSource(url);
    for (const [name, listener] of Object.entries(listeners)) source.addEventListener(name, listener);
  };
  document.addEventListener("visibilitychange", () => {
    if (document.hidden && source) {
      source.close();
      source = null;
      document.body.dataset.live = "no";
    } else if (!document.hidden && !source) {
      open();
      back?.();
    }
  });
  if (!document.hidden) open();
}

const isLive = () => { document.body.dataset.live = "yes"; };

// A request the server refused for want of this browser's session (its cookie gone or expired).
const SESSION_OVER = "this page's session is over: open the address `gnoctl web` printed (with its key) again";

// `/` anywhere but in a field goes to the search box.
document.addEventListener("keydown", (event) => {
  const field = event.target.closest("input, textarea, select, [contenteditable]");
  if (event.key === "/" && !field && !event.ctrlKey && !event.metaKey && !event.altKey) {
    const box = $("#q");
    if (box) {
      event.preventDefault();
      box.focus();
      box.select();
    } else {
      location.href = "/";
    }
  }
});

function initSearch() {
  const form = $("#search");
  const box = $("#q");
  // A page opened with a query (a link, back, reload): typing goes on after it, not before.
  box.setSelectionRange(box.value.length, box.value.length);
  const results = $("#results");
  const info = $("#info");
  const error = $("#error");
  const mode = $("#mode");
  let sent = 0;          // requests sent
  let painted = 0;       // the latest request whose answer is on the page
  let inFlight = false;
  let queued = null;     // what to send once the request in flight is back
  let selected = -1;
  let shown = {mode: mode.dataset.mode, typing: false, uris: uris()};
  let counted = info.textContent;  // what the results shown were said to be

  function uris() {
    return new Set([...results.querySelectorAll(".result")].map((li) => li.dataset.uri));
  }

  function params(searchMode, typing) {
    const p = new URLSearchParams(new FormData(form));
    p.set("mode", searchMode);
    if (typing) p.set("typing", "1");
    return p;
  }

  // The page's address: what was typed, and whether it was searched as it is being
  // typed (its last word a prefix, `mutex_lo*`), so a reload, Back or a bookmark shows
  // these results again, the box holding what the user typed (not a `*` of gno's).
  function address(searchMode, typing) {
    const p = params(searchMode, typing);
    for (const [k, v] of [...p]) if (!v) p.delete(k);
    return box.value.trim() || describe() ? `/?${p}` : "/";
  }

  function setMode(searchMode) {
    mode.dataset.mode = searchMode;
    const names = {hybrid: "hybrid", definitions: "definitions"};
    mode.textContent = names[searchMode] || "lexical, as you type";
  }

  function showError(message) {
    error.textContent = message;
    error.hidden = false;
  }

  // `typedAt`: the input event's time, for the keystroke-to-painted measure.
  async function send(searchMode, typing, typedAt) {
    if (typing && inFlight) {
      queued = {typedAt};
      return;
    }
    if (!typing) queued = null;  // this search covers what was typed
    const id = ++sent;
    if (!box.value.trim() && !describe()) {
      painted = id;
      results.innerHTML = "";
      info.textContent = counted = "";
      error.hidden = true;
      shown = {mode: searchMode, typing, uris: new Set()};
      history.replaceState(null, "", "/");
      return;
    }
    if (searchMode === "hybrid") info.textContent = "searching words and meaning…";
    inFlight = typing;
    let data;
    try {
      const response = await fetch(`/api/search?${params(searchMode, typing)}`, {credentials: "same-origin"});
      data = response.status === 401 ? {error: {message: SESSION_OVER}} : await response.json();
    } catch {
      data = {error: {message: "gno web is not answering (stopped?)"}};
    } finally {
      if (typing) inFlight = false;
    }
    if (id > painted) {
      painted = id;
      if (data.error) {
        // The last results stay, said to be those of the search before (their count
        // beside the error read as this search's).
        showError(data.error.message);
        info.textContent = counted ? `${counted} · the last search that worked` : "";
      } else {
        paint(data, searchMode, typing, typedAt);
      }
    }
    if (queued && !inFlight) {
      const next = queued;
      queued = null;
      send("lexical", true, next.typedAt);
    }
  }

  function paint(data, searchMode, typing, typedAt) {
    error.hidden = true;
    results.innerHTML = data.html;
    selected = -1;
    shown = {mode: searchMode, typing, uris: new Set(data.hits.map((h) => h.uri))};
    setMode(searchMode);
    const n = data.count;
    info.textContent = `${data.more ? "the first " : ""}${n} result${n === 1 ? "" : "s"} · ${Math.round(data.took_ms)} ms`;
    counted = info.textContent;
    history.replaceState(null, "", address(searchMode, typing));
    document.title = box.value.trim() ? `${box.value.trim()} · gno` : "gno";  // a bookmark's name (it stayed "gno")
    if (typedAt !== undefined) {
      // After the frame that shows the results: the time from keystroke to pixels.
      requestAnimationFrame(() => setTimeout(() => {
        performance.measure("gno:typed", {start: typedAt, end: performance.now()});
      }, 0));
    }
  }

  function links() {
    return [...results.querySelectorAll(".hit-link")];
  }

  function select(index) {
    const all = links();
    all.forEach((a) => a.parentElement.classList.remove("selected"));
    selected = Math.max(-1, Math.min(index, all.length - 1));
    if (selected >= 0) {
      all[selected].parentElement.classList.add("selected");
      all[selected].scrollIntoView({block: "nearest"});
    }
  }

  // While an input method composes (とうきょう on its way to 東京), what the box holds is
  // not typed yet: it is searched once the composition ends.
  const typed = (event) => {
    select(-1);  // Enter now searches what is typed
    send("lexical", true, event.timeStamp);
  };
  box.addEventListener("input", (event) => {
    if (!event.isComposing) typed(event);
  });
  box.addEventListener("compositionend", typed);
  // A filter changed: the open results are filtered again, a text field's as it is typed
  // (it waited for Enter or a click elsewhere, the list showing the old results), and the
  // filters' summary says which are on, seen when they are folded away.
  const filtered = () => send(shown.mode === "hybrid" ? "hybrid" : "lexical", shown.mode !== "hybrid");
  const clear = $("#clear-filters");
  function describe() {
    const p = new FormData(form);
    const on = p.getAll("c").length ? [`collection ${p.getAll("c").join(", ")}`] : [];
    const labels = {tags: "tags", since: "since", until: "until", lang: "language", path: "path", type: "type", from: "from"};
    for (const [field, label] of Object.entries(labels)) {
      const value = (p.get(field) || "").trim();
      if (value) on.push(`${label} ${value}`);
    }
    $("#filters-on").textContent = on.length ? `: ${on.join(" · ")}` : "";
    clear.hidden = !on.length;
    return on.length;
  }
  let filtering = null;
  form.addEventListener("input", (event) => {
    if (event.target === box) return;
    describe();
    clearTimeout(filtering);
    filtering = setTimeout(filtered, event.target.type === "checkbox" || event.target.type === "date" ? 0 : 300);
  });
  form.addEventListener("change", (event) => {
    if (event.target !== box) describe();
  });
  clear.addEventListener("click", () => {
    for (const field of form.querySelectorAll(".filter-grid input")) {
      if (field.type === "checkbox") field.checked = false;
      else field.value = "";
    }
    describe();
    filtered();
    box.focus();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    send("hybrid", false);
  });
  document.addEventListener("keydown", (event) => {
    // Keys that pick and confirm an input method's candidates are its own.
    if (event.isComposing || !event.target.closest("#q, .hit-link")) return;
    if (event.key === "ArrowDown") {
      event.preventDefault();
      select(selected + 1);
    } else if (event.key === "ArrowUp") {
      event.preventDefault();
      select(selected - 1);
    } else if (event.key === "Enter" && selected >= 0) {
      event.preventDefault();
      location.href = links()[selected].href;
    } else if (event.key === "Escape") {
      select(-1);
      box.focus();
    }
  });

  // Saved, added or deleted files: the open list is searched again.
  let refresh = null;
  const again = () => {
    clearTimeout(refresh);
    refresh = setTimeout(() => send(shown.mode, shown.typing), 150);
  };
  shownStream("/events/changes", {
    ready: isLive,
    change: (event) => {
      const change = JSON.parse(event.data);
      if (!box.value.trim()) return;
      if (shown.mode === "hybrid" && change.kind === "changed" && !shown.uris.has(change.uri)) return;
      again();
    },
  }, () => { if (box.value.trim()) again(); });
  setMode(shown.mode);
}

function initAsk() {
  const form = $("#ask");
  const question = $("#q").value.trim();
  if (!question) return;
  const section = $("#answer");
  const thinking = $("#thinking");
  const stream = $("#stream");
  const final = $("#final");
  const p = new URLSearchParams(new FormData(form));
  const answer = new EventSource(`/api/ask?${p}`);
  section.setAttribute("aria-busy", "true");
  thinking.hidden = false;
  answer.addEventListener("token", (event) => {
    thinking.hidden = true;
    stream.hidden = false;
    stream.textContent += JSON.parse(event.data);
  });
  answer.addEventListener("done", (event) => {
    answer.close();
    thinking.hidden = true;
    stream.hidden = true;  // the raw text is replaced by the final answer, citations renumbered
    final.innerHTML = JSON.parse(event.data).html;
    section.setAttribute("aria-busy", "false");
  });
  answer.onerror = () => {
    answer.close();
    thinking.hidden = true;
    section.setAttribute("aria-busy", "false");
    if (!final.innerHTML) final.textContent = "The answer stopped: gno web is not answering.";
  };
}

function initStatus() {
  const panel = $("#panel");
  const message = $("#message");
  const say = (reply) => {
    message.textContent = reply.error ? reply.error.message : reply.message;
    message.classList.toggle("error", Boolean(reply.error));
  };
  shownStream("/events/status", {
    status: (event) => {
      const focused = document.activeElement.closest("#panel [data-action]");
      const again = focused && `[data-action="${focused.dataset.action}"][data-name="${CSS.escape(focused.dataset.name)}"]`;
      panel.innerHTML = JSON.parse(event.data).html;
      if (again) $(again, panel)?.focus();
    },
  });
  panel.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const name = button.dataset.name;
    if (button.dataset.action === "remove") {
      if (!confirm(`Remove the collection ${name}? Its files stay where they are; gno forgets them.`)) return;
      say(await post("/api/collections/remove", {name}));
    } else {
      say(await post("/api/index", {name}));
    }
  });
  $("#add-collection").addEventListener("submit", async (event) => {
    event.preventDefault();
    const reply = await post("/api/collections", Object.fromEntries(new FormData(event.target)));
    say(reply);
    if (!reply.error) event.target.reset();
  });
}

function initDoc() {
  const hit = $("#hit");
  if (hit) hit.scrollIntoView({block: "center"});
  // The file's path to paste elsewhere: a browser opens no file:// link from a page served
  // over http (the link there was dead).
  for (const button of document.querySelectorAll("button.copy")) {
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(button.dataset.copy);
        button.textContent = "Copied";
      } catch {
        window.prompt("The file's path:", button.dataset.copy);
      }
    });
  }
  // The file saved, or gone, while the page is open: said where the reader looks first.
  const uri = $("article.doc").dataset.uri;
  shownStream("/events/changes", {
    ready: isLive,
    change: (event) => {
      const change = JSON.parse(event.data);
      if (change.uri !== uri) return;
      const gone = change.kind === "removed";
      $("#removed").hidden = !gone;
      $("#changed").hidden = gone;
    },
  });
}

const pages = {search: initSearch, ask: initAsk, status: initStatus, doc: initDoc};
pages[document.body.dataset.page]?.();
