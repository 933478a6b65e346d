// The memory browser (README "Memory browser"): one tenant's users and, for one user, the summary and
// its versions, the records over time, facts, episodes, jobs and a query playground. Everything it
// shows comes from the API on this page's own origin (/v1/…); user content is only ever set as
// text (textContent, option labels), never parsed as HTML.
"use strict";

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$/; // docs/api.md "Identifiers"
const PAGE = 50;
const RECORD_PAGES = 10; // up to 1,000 records: a user's cap of current ones (MEMORY_MAX_RECORDS)
const DAY_MS = 86400000;
// Not `deferred` (the tenant's daily token budget is spent): it is condensed after 00:00 UTC; the jobs
// table shows its status and error (token_budget_exhausted: …) as it shows the others'.
const FINAL_JOB = new Set(["completed", "failed", "skipped"]);

const $ = (id) => document.getElementById(id);
// `view` counts the users opened: an answer for a user no longer shown is dropped, not drawn.
const state = { tenant: "", user: "", view: 0, cursors: {}, records: new Map(), versions: [], forgotten: new Set() };

// --- the API

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One call; 429 and 503 are tried again, as the client library does, before they are shown.
async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  for (let attempt = 0; ; attempt += 1) {
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      throw new ApiError(0, "unreachable", "The API did not answer: is the server still running?");
    }
    if ((response.status === 429 || response.status === 503) && attempt < 3) {
      await pause(300 * 2 ** attempt);
      continue;
    }
    const text = await response.text();
    const isJson = (response.headers.get("Content-Type") || "").includes("json");
    let parsed = {};
    try {
      parsed = text && isJson ? JSON.parse(text) : {};
    } catch (error) {
      throw new ApiError(response.status, "malformed_response", `The answer was not JSON (${response.status}).`);
    }
    if (!response.ok) {
      if (!isJson) throw new ApiError(response.status, "error", text.trim() || response.statusText);
      const error = parsed.error || {};
      const details = (error.details || []).map((d) => `${d.field}: ${d.message}`).join("; ");
      const message = `${error.message || response.statusText}${details ? ` (${details})` : ""}`;
      throw new ApiError(response.status, error.code || "error", message);
    }
    // A 204 says what it has to say in its headers: the deletion receipt of forgetting a user.
    const receipt = response.headers.get("Deletion-Receipt");
    return receipt && !text ? { receipt_id: receipt } : parsed;
  }
}

const segment = (id) => encodeURIComponent(id);
const tenantPath = () => `/v1/tenants/${segment(state.tenant)}`;
const memoryPath = () => `${tenantPath()}/users/${segment(state.user)}/memory`;
const withQuery = (path, params) => {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null) query.set(name, value);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
};

// --- building the page (text only)

function el(tag, options = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(options)) {
    if (name === "text") node.textContent = value;
    else if (name === "className") node.className = value;
    else if (name === "onclick") node.addEventListener("click", value);
    else node.setAttribute(name, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function say(message, isError = false) {
  const status = $("status");
  status.setAttribute("role", isError ? "alert" : "status"); // an error is announced at once
  status.textContent = message;
  status.classList.toggle("error", isError);
}

function fail(error) {
  say(error instanceof ApiError ? `${error.message} [${error.status} ${error.code}]` : String(error), true);
}

const day = (iso) => (iso ? new Date(iso).toISOString().slice(0, 10) : "now");
const instant = (iso) => (iso ? new Date(iso).toISOString().replace(".000Z", "Z").replace("T", " ") : "");

function confirmAction(message, verb) {
  const dialog = $("confirm");
  $("confirm-text").textContent = message;
  $("confirm-ok").textContent = verb;
  dialog.returnValue = "";
  dialog.showModal();
  $("confirm-cancel").focus();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), { once: true });
  });
}

// A deletion receipt where the answer carries one; otherwise what the answer says.
function receiptText(body) {
  return body && body.receipt_id ? ` Deletion receipt: ${body.receipt_id}.` : "";
}

// --- tenant and users

async function openTenant(tenant) {
  if (!ID_PATTERN.test(tenant)) {
    say(`"${tenant}" is not a valid tenant id (letters, digits and . _ @ : -, up to 128).`, true);
    return;
  }
  state.tenant = tenant;
  $("tenant").value = tenant;
  $("users").replaceChildren();
  $("user-view").hidden = true;
  remember();
  await loadUsers(null);
}

async function loadUsers(cursor) {
  try {
    const page = await api("GET", withQuery(`${tenantPath()}/users`, { limit: PAGE, cursor }));
    for (const { user_id: userId } of page.items) {
      if (state.forgotten.has(userId)) continue; // the list is eventually consistent: not yet gone
      const button = el("button", { type: "button", text: userId, onclick: () => openUser(userId) });
      button.dataset.user = userId;
      $("users").append(el("li", {}, button));
    }
    state.cursors.users = page.next_cursor;
    $("more-users").hidden = !page.next_cursor;
    say(`Tenant ${state.tenant}: ${$("users").children.length} user(s) listed${page.next_cursor ? ", more to load" : ""}.`);
  } catch (error) {
    fail(error);
  }
}

async function openUser(userId) {
  if (!ID_PATTERN.test(userId)) {
    say(`"${userId}" is not a valid user id (letters, digits and . _ @ : -, up to 128).`, true);
    return;
  }
  if (!state.tenant) {
    say("Open a tenant first.", true);
    return;
  }
  state.user = userId;
  state.view += 1;
  for (const button of $("users").querySelectorAll("button")) {
    button.setAttribute("aria-current", String(button.dataset.user === userId));
  }
  $("user-heading").textContent = userId;
  $("user-view").hidden = false;
  remember();
  await reloadUser();
}

async function reloadUser() {
  const view = state.view;
  say(`Loading ${state.user}…`);
  const loaded = await Promise.allSettled([loadSummary(), loadRecords(), loadFacts(null), loadJobs(null)]);
  // Each episode links to the records it taught: the records first.
  loaded.push(...(await Promise.allSettled([loadEpisodes(null)])));
  if (view !== state.view) return;
  const failed = loaded.find((result) => result.status === "rejected");
  if (failed) fail(failed.reason);
  else say(`Showing ${state.user} of tenant ${state.tenant}.`);
}

// Drawing an answer only while its user is still the one shown.
const current = (view) => view === state.view;

function remember() {
  const query = new URLSearchParams();
  if (state.tenant) query.set("tenant", state.tenant);
  if (state.user) query.set("user", state.user);
  history.replaceState(null, "", `?${query}`);
}

// --- summary and versions

async function loadSummary() {
  const view = state.view;
  const memory = await api("GET", memoryPath());
  const history = await api("GET", withQuery(`${memoryPath()}/history`, { limit: 100 }));
  if (!current(view)) return;
  $("summary").textContent = memory.memory ?? "(no summary yet)";
  $("summary-meta").textContent = memory.version
    ? `Version ${memory.version} · ${memory.word_count} words · updated ${instant(memory.updated_at)}`
    : "Nothing condensed yet.";
  state.versions = history.versions;
  $("versions").replaceChildren(
    ...history.versions.map((v) =>
      el("li", {}, el("span", { className: "meta", text: `v${v.version} · ${instant(v.updated_at)} · ` }), el("span", { className: "text", text: v.memory ?? "" })),
    ),
  );
  for (const [select, pick] of [[$("diff-from"), 1], [$("diff-to"), 0]]) {
    select.replaceChildren(...history.versions.map((v) => el("option", { value: String(v.version), text: `v${v.version}` })));
    if (history.versions[pick]) select.value = String(history.versions[pick].version);
  }
  $("diff").replaceChildren();
}

// Word-level difference of two versions: the longest common subsequence of their words.
function showDiff() {
  const text = (version) => (state.versions.find((v) => String(v.version) === version) || {}).memory || "";
  const before = text($("diff-from").value).split(/(\s+)/).slice(0, 4000);
  const after = text($("diff-to").value).split(/(\s+)/).slice(0, 4000);
  const common = Array.from({ length: before.length + 1 }, () => new Uint16Array(after.length + 1));
  for (let i = before.length - 1; i >= 0; i -= 1) {
    for (let j = after.length - 1; j >= 0; j -= 1) {
      common[i][j] = before[i] === after[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const runs = []; // [kind, text]: kept, added or removed, adjacent words of a kind together
  const add = (kind, word) => {
    const last = runs[runs.length - 1];
    if (last && last[0] === kind) last[1] += word;
    else runs.push([kind, word]);
  };
  let i = 0;
  let j = 0;
  while (i < before.length || j < after.length) {
    if (i < before.length && j < after.length && before[i] === after[j]) {
      add("kept", before[i]);
      i += 1;
      j += 1;
    } else if (j < after.length && (i === before.length || common[i][j + 1] >= common[i + 1][j])) {
      add("ins", after[j]);
      j += 1;
    } else {
      add("del", before[i]);
      i += 1;
    }
  }
  const hidden = (text) => el("span", { className: "visually-hidden", text });
  $("diff").replaceChildren(
    ...runs.map(([kind, text]) => {
      if (kind === "kept") return document.createTextNode(text);
      return el(kind, {}, hidden(kind === "ins" ? "[added: " : "[removed: "), document.createTextNode(text), hidden("]"));
    }),
  );
}

// --- records over time

async function loadRecords() {
  const view = state.view;
  const all = [];
  let cursor = null;
  for (let page = 0; page < RECORD_PAGES; page += 1) {
    const answer = await api("GET", withQuery(`${memoryPath()}/records`, { limit: 100, include_invalidated: "true", cursor }));
    all.push(...answer.items);
    cursor = answer.next_cursor;
    if (!cursor) break;
  }
  if (!current(view)) return;
  state.records = new Map(all.map((record) => [record.id, record]));
  renderTimeline(all, Boolean(cursor));
  const slider = $("as-of");
  const now = Date.now();
  const earliest = Math.min(now, ...all.map((record) => Date.parse(record.valid_from)));
  slider.min = String(earliest);
  slider.max = String(earliest + Math.ceil((now - earliest) / DAY_MS) * DAY_MS);
  slider.value = slider.max;
  slider.setAttribute("aria-valuetext", "now");
  await showRecordsAsOf(null);
}

function renderTimeline(records, truncated) {
  const now = Date.now();
  const start = Math.min(now, ...records.map((record) => Date.parse(record.valid_from)));
  const width = Math.max(now - start, 1);
  const ordered = [...records].sort((a, b) => Date.parse(a.valid_from) - Date.parse(b.valid_from));
  $("timeline-range").textContent = records.length ? `${day(new Date(start).toISOString())} → now` : "No records yet.";
  if (truncated) $("timeline-range").textContent += ` (the ${records.length} newest only)`;
  $("timeline").replaceChildren(
    ...ordered.map((record) => {
      const from = Date.parse(record.valid_from);
      const to = record.valid_to ? Date.parse(record.valid_to) : now;
      const span = el("span", { className: "span" });
      span.style.left = `${((from - start) / width) * 100}%`;
      span.style.width = `${(Math.max(to - from, 0) / width) * 100}%`;
      const item = recordItem(record, "timeline");
      item.append(el("div", { className: "track", "aria-hidden": "true" }, span));
      if (record.valid_to || record.invalidated_at) item.classList.add("ended");
      return item;
    }),
  );
}

function recordItem(record, where) {
  const path = memoryPath(); // the user it was drawn for, whoever is shown when it is clicked
  const item = el("li", { id: `${where}-record-${record.id}` });
  item.dataset.record = record.id;
  const validity = `true from ${day(record.valid_from)} to ${day(record.valid_to)}`;
  const head = el(
    "div",
    { className: "row" },
    el("span", {}, el("span", { className: "tag", text: record.category }), el("span", { className: "text record-text", text: record.text })),
    el("button", { type: "button", className: "danger", "aria-label": `Delete record ${record.id}`, text: "Delete…", onclick: () => deleteRecord(record, path) }),
  );
  const meta = el("div", { className: "meta" }, document.createTextNode(`${validity} · recorded ${instant(record.recorded_at)}`));
  if (record.superseded_by) {
    meta.append(" · superseded by ");
    const replacement = state.records.get(record.superseded_by);
    const label = replacement ? `“${replacement.text}”` : record.superseded_by;
    meta.append(el("a", { href: `#${where}-record-${record.superseded_by}`, text: label, onclick: (event) => focusRecord(event, where, record.superseded_by) }));
  }
  if (record.episode_ids && record.episode_ids.length) {
    meta.append(" · from ");
    record.episode_ids.forEach((episodeId, index) => {
      if (index) meta.append(", ");
      meta.append(el("a", { href: `#episode-${episodeId}`, text: episodeId, onclick: (event) => focusEpisode(event, episodeId) }));
    });
  }
  item.append(head, meta);
  return item;
}

function highlight(target) {
  for (const node of document.querySelectorAll(".highlight")) node.classList.remove("highlight");
  target.classList.add("highlight");
  target.tabIndex = -1;
  target.focus();
}

function focusRecord(event, where, recordId) {
  event.preventDefault();
  selectTab($("tab-records"));
  const target = document.getElementById(`${where}-record-${recordId}`) || document.getElementById(`timeline-record-${recordId}`);
  if (target) highlight(target);
  else say(`Record ${recordId} is no longer stored.`, true);
}

function focusEpisode(event, episodeId) {
  event.preventDefault();
  selectTab($("tab-episodes"));
  const target = document.getElementById(`episode-${episodeId}`);
  if (target) highlight(target);
  else say(`Episode ${episodeId} is not on the pages loaded (or was forgotten).`, true);
}

let asOfTimer = null;
function onSlide() {
  const slider = $("as-of");
  const at = Math.min(Number(slider.value), Date.now());
  $("as-of-date").textContent = at >= Date.now() - 1000 ? "now" : day(new Date(at).toISOString());
  slider.setAttribute("aria-valuetext", $("as-of-date").textContent);
  clearTimeout(asOfTimer);
  asOfTimer = setTimeout(() => showRecordsAsOf(at >= Date.now() - 1000 ? null : new Date(at).toISOString()).catch(fail), 150);
}

let asOfAsked = 0; // the slider's answers may come back out of order: the last asked is drawn
async function showRecordsAsOf(asOf) {
  const asked = (asOfAsked += 1);
  const view = state.view;
  const items = [];
  let cursor = null;
  for (let page = 0; page < RECORD_PAGES; page += 1) {
    const answer = await api("GET", withQuery(`${memoryPath()}/records`, { limit: 100, as_of: asOf, cursor }));
    items.push(...answer.items);
    cursor = answer.next_cursor;
    if (!cursor) break;
  }
  if (asked !== asOfAsked || !current(view)) return;
  const when = asOf ? `on ${day(asOf)}` : "now";
  $("records-heading").textContent = `Records true ${when}` + (cursor ? ` (the ${items.length} newest)` : "");
  $("as-of-date").textContent = asOf ? day(asOf) : "now";
  $("records").replaceChildren(...items.map((record) => recordItem(record, "current")));
  if (!items.length) $("records").append(el("li", { className: "muted", text: "No record was true then." }));
}

async function deleteRecord(record, path) {
  if (!(await confirmAction(`Delete the record "${record.text}"? The summary and the episode it came from stay.`, "Delete record"))) return;
  try {
    const answer = await api("DELETE", `${path}/records/${segment(record.id)}`);
    say(`Deleted record ${record.id}.${receiptText(answer)}`);
    await loadRecords();
  } catch (error) {
    fail(error);
  }
}

// --- facts, episodes, jobs

async function loadFacts(cursor) {
  const view = state.view;
  const page = await api("GET", withQuery(`${memoryPath()}/facts`, { limit: PAGE, cursor }));
  if (!current(view)) return;
  const items = page.facts.map((fact) =>
    el(
      "li",
      {},
      el("div", {}, el("span", { className: "tag", text: fact.id }), el("span", { className: "text", text: fact.text })),
      el("div", { className: "meta", text: `updated ${instant(fact.updated_at)}` }),
    ),
  );
  if (cursor) $("facts").append(...items);
  else $("facts").replaceChildren(...items);
  if (!cursor && !items.length) $("facts").append(el("li", { className: "muted", text: "No facts." }));
  state.cursors.facts = page.next_cursor;
  $("more-facts").hidden = !page.next_cursor;
}

function taughtBy(episodeId) {
  return [...state.records.values()].filter((record) => (record.episode_ids || []).includes(episodeId));
}

async function loadEpisodes(cursor) {
  const view = state.view;
  const path = memoryPath();
  const page = await api("GET", withQuery(`${path}/episodes`, { limit: PAGE, cursor }));
  if (!current(view)) return;
  const items = page.episodes.map((episode) => {
    const item = el("li", { id: `episode-${episode.id}` });
    item.dataset.episode = episode.id;
    item.append(
      el(
        "div",
        { className: "row" },
        el("span", {}, el("span", { className: "tag", text: day(episode.occurred_at) }), el("span", { className: "tag", text: episode.id })),
        el("button", { type: "button", className: "danger", "aria-label": `Forget episode ${episode.id}`, text: "Forget…", onclick: () => forgetEpisode(episode, path) }),
      ),
      el("div", { className: "text episode-text", text: episode.text }),
    );
    const taught = taughtBy(episode.id);
    const meta = el("div", { className: "meta taught" }, document.createTextNode(taught.length ? "taught: " : "taught no current record"));
    taught.forEach((record, index) => {
      if (index) meta.append("; ");
      meta.append(el("a", { href: `#timeline-record-${record.id}`, text: record.text, onclick: (event) => focusRecord(event, "timeline", record.id) }));
    });
    item.append(meta);
    return item;
  });
  if (cursor) $("episodes").append(...items);
  else $("episodes").replaceChildren(...items);
  if (!cursor && !items.length) $("episodes").append(el("li", { className: "muted", text: "No episodes." }));
  state.cursors.episodes = page.next_cursor;
  $("more-episodes").hidden = !page.next_cursor;
}

async function waitForJob(job) {
  for (let waited = 0; waited < 60000 && !FINAL_JOB.has(job.status); waited += 500) {
    await pause(500);
    job = await api("GET", `${tenantPath()}/jobs/${segment(job.job_id)}`);
  }
  return job;
}

async function forgetEpisode(episode, path) {
  const taught = taughtBy(episode.id).length;
  const message = `Forget episode ${episode.id} (${day(episode.occurred_at)})? Its turn is erased with the ${taught} record(s) only it taught, and the summary is rebuilt.`;
  if (!(await confirmAction(message, "Forget episode"))) return;
  try {
    const answer = await api("DELETE", `${path}/episodes/${segment(episode.id)}`);
    const job = answer.jobs[0];
    say(`Forgetting episode ${episode.id}: job ${job.job_id} ${job.status}…${receiptText(answer)}`);
    const done = await waitForJob(job);
    if (path !== memoryPath()) return; // another user is shown now
    await reloadUser();
    say(`Episode ${episode.id} forgotten: job ${done.job_id} ${done.status}.${receiptText(answer)}`, done.status !== "completed");
  } catch (error) {
    fail(error);
  }
}

async function loadJobs(cursor) {
  const view = state.view;
  const page = await api("GET", withQuery(`${memoryPath()}/jobs`, { limit: PAGE, cursor }));
  if (!current(view)) return;
  const rows = page.items.map((job) =>
    el(
      "tr",
      {},
      el("td", { text: instant(job.created_at) }),
      el("td", { text: job.item_id ?? "(redacted)" }),
      el("td", { text: job.status }),
      el("td", { text: job.memory_version ?? "" }),
      el("td", { text: job.error ? `${job.error.code}: ${job.error.message}` : "" }),
      el("td", { className: "meta", text: job.job_id }),
    ),
  );
  if (cursor) $("jobs").append(...rows);
  else $("jobs").replaceChildren(...rows);
  state.cursors.jobs = page.next_cursor;
  $("more-jobs").hidden = !page.next_cursor;
}

async function forgetUser() {
  const user = state.user;
  if (!(await confirmAction(`Forget user ${user} entirely? Everything stored about them is erased; this cannot be undone.`, "Forget user"))) return;
  try {
    const answer = await api("DELETE", memoryPath());
    state.forgotten.add(user);
    state.user = "";
    state.view += 1;
    $("user-view").hidden = true;
    remember();
    $("users").replaceChildren();
    await loadUsers(null);
    say(`Forgot user ${user}.${receiptText(answer)}`);
    $("status").focus(); // the button that had the focus is gone
  } catch (error) {
    fail(error);
  }
}

// --- the query playground

async function runQuery(event) {
  event.preventDefault();
  try {
    const body = { query: $("query").value, top_k: Number($("top-k").value) };
    const answer = await api("POST", `${memoryPath()}/query`, body);
    $("results").replaceChildren(
      ...answer.results.map((result) =>
        el(
          "li",
          { className: "result" },
          el(
            "div",
            {},
            el("span", { className: "tag", text: result.type }),
            el("span", { className: "tag score", text: `score ${result.score.toFixed(3)}` }),
            el("span", { className: "tag", text: result.id }),
            result.occurred_at ? el("span", { className: "tag", text: day(result.occurred_at) }) : null,
          ),
          el("div", { className: "text result-text", text: result.text }),
        ),
      ),
    );
    if (!answer.results.length) $("results").append(el("li", { className: "muted", text: "Nothing matched." }));
    const retrieval = answer.retrieval;
    say(`${answer.results.length} result(s), ranked by ${retrieval.embedding_provider}${retrieval.model ? ` (${retrieval.model})` : ""}.`);
  } catch (error) {
    fail(error);
  }
}

async function buildContext() {
  try {
    const maxWords = Number($("max-words").value);
    const query = $("query").value.trim();
    const answer = await api("POST", `${memoryPath()}/context`, { max_words: maxWords, ...(query ? { query } : {}) });
    $("context").textContent = answer.context;
    const sources = answer.sources.map((source) => source.type + (source.id ? ` ${source.id}` : "")).join(", ");
    $("context-meta").textContent = `${answer.word_count} of ${maxWords} words (max_words) · memory v${answer.memory_version} · sources: ${sources || "none"}`;
  } catch (error) {
    fail(error);
  }
}

// --- tabs: arrow keys, Home and End move between them (WAI-ARIA tabs pattern)

function selectTab(tab) {
  for (const other of document.querySelectorAll('[role="tab"]')) {
    const selected = other === tab;
    other.setAttribute("aria-selected", String(selected));
    other.tabIndex = selected ? 0 : -1;
    $(other.getAttribute("aria-controls")).hidden = !selected;
  }
}

function onTabKey(event) {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  const index = tabs.indexOf(document.activeElement);
  const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1 };
  if (index < 0 || !(event.key in moves)) return;
  event.preventDefault();
  const next = tabs[(moves[event.key] + tabs.length) % tabs.length];
  selectTab(next);
  next.focus();
}

// --- wiring

function start() {
  const submit = (id, handler) => $(id).addEventListener("submit", (event) => { event.preventDefault(); handler(event); });
  submit("tenant-form", () => openTenant($("tenant").value.trim()));
  submit("user-form", () => openUser($("user-id").value.trim()));
  submit("diff-form", showDiff);
  $("query-form").addEventListener("submit", runQuery);
  $("build-context").addEventListener("click", buildContext);
  $("more-users").addEventListener("click", () => loadUsers(state.cursors.users));
  $("more-facts").addEventListener("click", () => loadFacts(state.cursors.facts).catch(fail));
  $("more-episodes").addEventListener("click", () => loadEpisodes(state.cursors.episodes).catch(fail));
  $("more-jobs").addEventListener("click", () => loadJobs(state.cursors.jobs).catch(fail));
  $("forget-user").addEventListener("click", forgetUser);
  $("as-of").addEventListener("input", onSlide);
  $("as-of-now").addEventListener("click", () => {
    $("as-of").value = $("as-of").max;
    showRecordsAsOf(null).catch(fail);
  });
  for (const tab of document.querySelectorAll('[role="tab"]')) tab.addEventListener("click", () => selectTab(tab));
  $("tabs").addEventListener("keydown", onTabKey);

  const query = new URLSearchParams(location.search);
  const tenant = query.get("tenant");
  const user = query.get("user");
  if (tenant) openTenant(tenant).then(() => (user ? openUser(user) : undefined));
  else $("tenant").focus();
}

start();
