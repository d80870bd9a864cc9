// The chunkwise inspector: a client of the server's own /v1 API, in plain JavaScript (no build step,
// nothing loaded from elsewhere). Text from documents is always inserted as text nodes, never as HTML.
"use strict";

const $ = (selector) => document.querySelector(selector);
const SVG = "http://www.w3.org/2000/svg";
const state = { source: "text", chunkers: {} };

// --- helpers -----------------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "class") node.className = value;
    else if (name.startsWith("data-")) node.setAttribute(name, value);
    else node[name] = value;
  }
  for (const child of children) node.append(child);
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  return node;
}

function setStatus(text, ok = true) {
  const line = $("#status");
  line.textContent = text;
  line.className = ok ? "ok" : "";
}

function authHeaders() {
  const key = $("#api-key").value.trim();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

async function api(path, options = {}) {
  const headers = Object.assign({}, authHeaders(), options.headers || {});
  const response = await fetch(path, Object.assign({}, options, { headers }));
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = body.error || { type: "http_error", message: response.statusText };
    throw new Error(`${response.status} ${error.type}: ${error.message}`);
  }
  return body;
}

function postJson(path, data) {
  return api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(data) });
}

async function busy(button, label, work) {
  button.disabled = true;
  setStatus(`${label}…`);
  try {
    await work();
    setStatus("");
  } catch (error) {
    setStatus(error.message, false);
  } finally {
    button.disabled = false;
  }
}

function span(start, end) {
  return `${start}–${end}`;
}

function accountingLine(accounting) {
  const total = (accounting || {}).total;
  if (!total) return "";
  return `model calls ${total.calls} (+${total.cache_hits} cached), tokens in ${total.input_tokens}, ` +
    `out ${total.output_tokens}, $${total.cost.toFixed(6)}`;
}

// --- tabs and key --------------------------------------------------------------------------------

function show(view) {
  for (const button of document.querySelectorAll("#tabs button")) {
    button.classList.toggle("active", button.dataset.view === view);
  }
  for (const section of document.querySelectorAll(".view")) {
    section.classList.toggle("active", section.id === `view-${view}`);
  }
  if (view === "documents") loadDocuments().catch((error) => setStatus(error.message, false));
  if (view === "api") loadApi().catch((error) => setStatus(error.message, false));
}

// --- chunk view ----------------------------------------------------------------------------------

async function loadChunkers() {
  state.chunkers = (await api("/v1/chunkers")).chunkers;
  const select = $("#chunker");
  select.replaceChildren(...Object.keys(state.chunkers).map((name) => el("option", { value: name }, name)));
  select.value = "recursive";
  showParams();
}

function showParams() {
  const defaults = state.chunkers[$("#chunker").value] || {};
  const box = $("#chunk-params");
  box.replaceChildren();
  for (const [name, value] of Object.entries(defaults)) {
    const input = el("input", { name, id: `param-${name}` });
    if (typeof value === "boolean") {
      input.type = "checkbox";
      input.checked = value;
    } else {
      input.type = typeof value === "number" ? "number" : "text";
      input.step = "any";
      input.value = value === null ? "" : String(value);
    }
    input.dataset.kind = value === null ? "text" : typeof value;
    box.append(el("label", { htmlFor: input.id }, name), input);
  }
}

function chunkParams() {
  const params = {};
  for (const input of document.querySelectorAll("#chunk-params input")) {
    if (input.dataset.kind === "boolean") params[input.name] = input.checked;
    else if (input.dataset.kind === "number") params[input.name] = Number(input.value);
    else if (input.value !== "") params[input.name] = input.value;
  }
  return params;
}

async function runChunk() {
  const chunker = $("#chunker").value;
  const params = chunkParams();
  let body;
  const file = $("#chunk-file").files[0];
  if (state.source === "file" && file) {
    const form = new FormData();
    form.append("file", file);
    form.append("chunker", chunker);
    form.append("params", JSON.stringify(params));
    form.append("document", "true");
    body = await api("/v1/chunk", { method: "POST", body: form });
  } else {
    const text = $("#chunk-text").value;
    if (!text.trim()) throw new Error("paste a text, open a file or load a stored document first");
    body = await postJson("/v1/chunk", { text, format: $("#chunk-format").value, chunker, params, document: true });
  }
  renderChunks(body);
}

function renderChunks(body) {
  const text = body.document.text;
  const chunks = body.chunks;
  const stats = body.stats;
  $("#chunk-stats").textContent =
    `${body.doc_id} · ${body.chunker} · ${stats.count} chunks · size mean ${stats.mean_size}, ` +
    `min ${stats.min_size}, max ${stats.max_size} · coverage ${stats.coverage} · ${accountingLine(body.accounting)}`;
  drawChunks($("#chunk-view"), text, chunks);
  drawPlan(body);
  drawCurve(body, text.length);
}

// Split the text at every chunk start and end; each piece is shown as the chunk that covers it
// (alternating colours), as an overlap when two chunks cover it, or as plain text between chunks.
function drawChunks(container, text, chunks) {
  const cuts = new Set([0, text.length]);
  for (const chunk of chunks) {
    cuts.add(chunk.start);
    cuts.add(chunk.end);
  }
  const points = [...cuts].sort((a, b) => a - b);
  const order = chunks.map((chunk, index) => ({ chunk, index })).sort((a, b) => a.chunk.start - b.chunk.start);
  const nodes = [];
  let next = 0;
  let active = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const [from, to] = [points[i], points[i + 1]];
    while (next < order.length && order[next].chunk.start <= from) active.push(order[next++]);
    active = active.filter((item) => item.chunk.end > from);
    const covering = active.filter((item) => item.chunk.start <= from && item.chunk.end >= to);
    const piece = text.slice(from, to);
    if (!covering.length) {
      nodes.push(document.createTextNode(piece));
      continue;
    }
    const last = covering[covering.length - 1];
    const cls = covering.length > 1 ? "chunk overlap" : `chunk c${last.index % 2}`;
    nodes.push(el("span", { class: cls, "data-chunk": covering.map((item) => item.index).join(" ") }, piece));
  }
  container.replaceChildren(...nodes);
  container.chunks = chunks;
}

function tipFor(chunks, indexes) {
  return indexes.map((index) => {
    const chunk = chunks[index];
    const section = chunk.section.length ? chunk.section.join(" › ") : "(none)";
    return `chunk ${index + 1} · id ${chunk.id}\noffsets ${span(chunk.start, chunk.end)}\n` +
      `section ${section}\ntokens ${chunk.tokens}`;
  }).join("\n\n");
}

function onHover(event) {
  const tip = $("#tip");
  const target = event.target.closest ? event.target.closest(".chunk") : null;
  if (!target) {
    tip.hidden = true;
    return;
  }
  const chunks = target.parentElement.chunks || [];
  tip.textContent = tipFor(chunks, target.dataset.chunk.split(" ").map(Number));
  tip.hidden = false;
  tip.style.left = `${Math.min(event.clientX + 14, window.innerWidth - 440)}px`;
  tip.style.top = `${event.clientY + 14}px`;
}

function drawPlan(body) {
  const box = $("#plan");
  const report = body.llm_report;
  box.hidden = !report;
  if (!report) return;
  box.querySelector("h2").textContent = body.chunker === "wrac"
    ? "W-RAC plan: outcome per window"
    : `${body.chunker}: outcome per window`;
  const rows = report.windows.map((window) => el("tr", {},
    el("td", {}, String(window.index)),
    el("td", {}, span(window.start, window.end)),
    el("td", { class: `outcome ${window.outcome}` }, window.outcome),
    el("td", {}, [...window.issues, ...window.notes].join("; ") || "—"),
  ));
  box.querySelector("tbody").replaceChildren(...rows);
}

function drawCurve(body, length) {
  const box = $("#curve");
  const curve = body.curve;
  box.hidden = !curve;
  if (!curve) return;
  const plot = $("#curve-svg");
  const [width, height, pad] = [1000, 220, 10];
  const low = Math.min(curve.threshold, ...curve.scores);
  const high = Math.max(curve.threshold, ...curve.scores);
  const x = (offset) => (offset / Math.max(length, 1)) * width;
  const y = (score) => height - pad - ((score - low) / Math.max(high - low, 1e-9)) * (height - 2 * pad);
  const points = curve.offsets.map((offset, i) => `${x(offset).toFixed(1)},${y(curve.scores[i]).toFixed(1)}`);
  const nodes = curve.chosen.map((offset) => svg("line", {
    x1: x(offset), x2: x(offset), y1: 0, y2: height, class: "chosen", stroke: "#1a7f37", "stroke-width": 2,
  }));
  nodes.push(svg("line", {
    x1: 0, x2: width, y1: y(curve.threshold), y2: y(curve.threshold), stroke: "#cf222e", "stroke-dasharray": "6 4",
  }));
  nodes.push(svg("polyline", { points: points.join(" "), fill: "none", stroke: "#0969da", "stroke-width": 1.2 }));
  plot.replaceChildren(...nodes);
  plot.dataset.points = String(curve.offsets.length);
}

// --- search view ---------------------------------------------------------------------------------

async function runSearch() {
  const query = $("#search-q").value;
  const k = Number($("#search-k").value) || 5;
  const [found, segments] = await Promise.all([
    postJson("/v1/search", { query, k }),
    postJson("/v1/segments", { query }),
  ]);
  $("#hits").replaceChildren(...found.hits.map((hit, rank) => el("li", { class: "hit" },
    el("div", { class: "meta" }, `#${rank + 1} · score ${hit.score.toFixed(3)} · ${hit.doc_id} · ${span(hit.start, hit.end)}`),
    el("div", { class: "scores" }, Object.entries(hit.scores).map(([stage, value]) => `${stage} ${value.toFixed(3)}`).join(" · ")),
    el("div", { class: "text" }, hit.text),
  )));
  $("#trace tbody").replaceChildren(...found.trace.map((stage) => el("tr", { class: "stage" },
    el("td", {}, stage.stage),
    el("td", {}, String(stage.inputs)),
    el("td", {}, String(stage.outputs)),
    el("td", {}, (stage.seconds * 1000).toFixed(1)),
    el("td", {}, String(stage.calls)),
    el("td", {}, notesText(stage.notes)),
  )));
  $("#segments").replaceChildren(...segments.segments.map((segment) => el("li", { class: "segment" },
    el("div", { class: "meta" },
      `value ${segment.value.toFixed(3)} · ${segment.doc_id} · ${span(segment.start, segment.end)} · ` +
      `chunks ${segment.chunks[0]}–${segment.chunks[1]}`),
    el("div", { class: "text" }, segment.text),
  )));
}

function notesText(notes) {
  const show = (value) => typeof value === "number" && !Number.isInteger(value) ? value.toFixed(3)
    : Array.isArray(value) ? `${value.length} (${value.join(", ")})` : String(value);
  return Object.entries(notes || {}).map(([name, value]) => `${name} ${show(value)}`).join(" · ") || "—";
}

// --- answer view ---------------------------------------------------------------------------------

async function runAnswer() {
  const body = await postJson("/v1/answer", { query: $("#answer-q").value });
  const text = body.answer;
  // Link each citation's quote where the answer repeats it; the rest get a marker at the end.
  const found = body.citations
    .map((citation, index) => ({ index, at: text.indexOf(citation.quote), length: citation.quote.length }))
    .filter((item) => item.at >= 0)
    .sort((a, b) => a.at - b.at);
  const nodes = [];
  let at = 0;
  const linked = new Set();
  for (const item of found) {
    if (item.at < at) continue;
    nodes.push(document.createTextNode(text.slice(at, item.at)));
    nodes.push(citeLink(body.citations, item.index, text.slice(item.at, item.at + item.length)));
    nodes.push(el("sup", {}, `[${item.index + 1}]`));
    linked.add(item.index);
    at = item.at + item.length;
  }
  nodes.push(document.createTextNode(text.slice(at)));
  body.citations.forEach((_, index) => {
    if (!linked.has(index)) nodes.push(" ", citeLink(body.citations, index, `[${index + 1}]`));
  });
  $("#answer-text").replaceChildren(...nodes);
  const grounding = body.grounding;
  $("#answer-verdict").textContent = `${grounding.grounded ? "grounded" : "not grounded"} · ` +
    `${grounding.verified} verified, ${grounding.rejected.length} rejected · ${accountingLine(body.accounting)}`;
  $("#citations").replaceChildren(...body.citations.map((citation, index) => el("li", { class: "citation" },
    el("div", { class: "meta" }, `[${index + 1}] ${citation.doc_id} · ${span(citation.start, citation.end)}`),
    citeLink(body.citations, index, `“${citation.quote}”`),
  )));
  if (body.citations.length) await jumpTo(body.citations[0]);
}

function citeLink(citations, index, label) {
  const link = el("a", { class: "cite", href: "#", "data-citation": String(index) }, label);
  link.addEventListener("click", (event) => {
    event.preventDefault();
    jumpTo(citations[index]).catch((error) => setStatus(error.message, false));
  });
  return link;
}

// Open the cited document and scroll to the quoted span, drawn as a <mark>.
async function jumpTo(citation) {
  const doc = await api(`/v1/documents/${encodeURI(citation.doc_id)}`);
  const text = doc.text;
  const mark = el("mark", { id: "quote" }, text.slice(citation.start, citation.end));
  $("#source-title").textContent = `${doc.doc_id} · ${span(citation.start, citation.end)}`;
  $("#source-view").replaceChildren(text.slice(0, citation.start), mark, text.slice(citation.end));
  mark.scrollIntoView({ block: "center" });
}

// --- documents view ------------------------------------------------------------------------------

async function loadDocuments() {
  const docs = (await api("/v1/documents")).documents;
  $("#documents tbody").replaceChildren(...docs.map((doc) => {
    const remove = el("button", { class: "danger", type: "button" }, "delete");
    remove.addEventListener("click", () => busy(remove, `deleting ${doc.doc_id}`, async () => {
      await api(`/v1/documents/${encodeURI(doc.doc_id)}`, { method: "DELETE" });
      await loadDocuments();
    }));
    return el("tr", { class: "document" },
      el("td", {}, doc.doc_id), el("td", {}, doc.title || ""), el("td", {}, doc.format),
      el("td", {}, String(doc.chunks)), el("td", {}, remove));
  }));
  const select = $("#chunk-doc");
  select.replaceChildren(el("option", { value: "" }, "(choose)"),
    ...docs.map((doc) => el("option", { value: doc.doc_id }, doc.doc_id)));
}

// What a finished job did, or why it stopped; how far a job in flight is.
function jobOutcome(job) {
  const result = job.result;
  if (result) {
    return `added ${result.added.length}, replaced ${result.replaced.length}, ` +
      `skipped ${result.skipped.length}, failed ${result.failed.length}` +
      result.failed.map((failure) => ` · ${failure.error}`).join("") + ` · ${result.chunks} chunks`;
  }
  return job.error ? job.error.message : `${job.done} of ${job.total} files`;
}

async function loadJobs() {
  const jobs = (await api("/v1/jobs?limit=20")).jobs;
  $("#jobs tbody").replaceChildren(...jobs.map((job) => el("tr", { class: "job" },
    el("td", {}, job.id), el("td", {}, job.status), el("td", {}, job.files.join(", ")),
    el("td", {}, new Date(job.created * 1000).toLocaleString()), el("td", {}, jobOutcome(job)))));
}

async function ingest() {
  const files = $("#upload-files").files;
  if (!files.length) throw new Error("choose one or more files first");
  const form = new FormData();
  for (const file of files) form.append("files", file);
  let job = await api("/v1/documents", { method: "POST", body: form });
  while (job.status === "queued" || job.status === "running") {
    const embedding = job.embedding
      ? ` · embedding ${job.embedding.source}: ${job.embedding.embedded} of ${job.embedding.chunks} chunks`
      : "";
    $("#job").textContent = `${job.id}: ${job.status}, ${job.done} of ${job.total} files${embedding}`;
    await new Promise((resolve) => setTimeout(resolve, 300));
    job = await api(`/v1/jobs/${job.id}`);
  }
  $("#job").textContent = `${job.id}: ${job.status} · ${jobOutcome(job)}`;
  await Promise.all([loadDocuments(), loadJobs()]);
}

// --- API view ------------------------------------------------------------------------------------

async function loadApi() {
  const spec = await (await fetch("/openapi.json")).json();
  const rows = [];
  for (const [path, operations] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      rows.push(el("tr", {}, el("td", {}, method.toUpperCase()), el("td", {}, el("code", {}, path)),
        el("td", {}, operation.summary || "")));
    }
  }
  $("#api tbody").replaceChildren(...rows);
}

// --- wiring --------------------------------------------------------------------------------------

function wire() {
  const key = $("#api-key");
  key.value = sessionStorage.getItem("chunkwise-key") || "";
  key.addEventListener("change", () => {
    sessionStorage.setItem("chunkwise-key", key.value.trim());
    loadChunkers().catch((error) => setStatus(error.message, false));
  });
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => { location.hash = button.dataset.view; });
  }
  window.addEventListener("hashchange", () => show(location.hash.slice(1) || "chunk"));
  $("#chunker").addEventListener("change", showParams);
  $("#chunk-file").addEventListener("change", () => { state.source = "file"; });
  $("#chunk-text").addEventListener("input", () => { state.source = "text"; });
  $("#chunk-doc").addEventListener("change", async (event) => {
    if (!event.target.value) return;
    const doc = await api(`/v1/documents/${encodeURI(event.target.value)}`);
    $("#chunk-text").value = doc.text;
    // A stored document's text is its canonical form: Markdown for every format but plain text.
    $("#chunk-format").value = doc.format === "text" ? "text" : "markdown";
    state.source = "text";
  });
  const run = $("#chunk-run");
  run.addEventListener("click", () => busy(run, "chunking", runChunk));
  const view = $("#chunk-view");
  view.addEventListener("mousemove", onHover);
  view.addEventListener("mouseleave", () => { $("#tip").hidden = true; });
  for (const [form, label, work] of [
    ["#search-form", "searching", runSearch],
    ["#answer-form", "answering", runAnswer],
    ["#upload-form", "ingesting", ingest],
  ]) {
    $(form).addEventListener("submit", (event) => {
      event.preventDefault();
      busy($(form).querySelector("button"), label, work);
    });
  }
  show(location.hash.slice(1) || "chunk");
  Promise.all([loadChunkers(), loadDocuments(), loadJobs()]).catch((error) => setStatus(error.message, false));
}

wire();
