// The lab's page (gpurund, issue 24): refreshes the board from api/gpus every few seconds and draws
// the charts from api/minutes and api/usage (relative: the page may sit under a proxy's path). The server renders the same tables first, so the
// page reads without this script. Data goes into the page as text, never as HTML.
"use strict";

const refreshSeconds = Number(document.body.dataset.refresh) || 5;

function element(tag, attributes, text) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svgElement(tag, attributes) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
  return node;
}

// "1d 3h", "2h 5m", "3m 7s", "12s": as gpurund writes durations.
function brief(seconds) {
  const units = [[86400, "d"], [3600, "h"], [60, "m"], [1, "s"]];
  let s = Math.max(0, Math.round(seconds));
  if (s < 60) return s + "s";
  const parts = [];
  for (const [size, name] of units) {
    if (parts.length === 0 && s < size) continue;
    const value = Math.floor(s / size);
    s -= value * size;
    parts.push([value, name]);
    if (parts.length === 2) break;
  }
  return parts.filter((p, i) => i === 0 || p[0] !== 0).map((p) => p[0] + p[1]).join(" ");
}

function meterCell(className, value, max, label) {
  const cell = element("td", { class: className });
  if (value !== null && value !== undefined && max) {
    cell.append(element("meter", { min: "0", max: String(Math.round(max)),
                                   value: String(Math.round(Math.min(Math.max(value, 0), max))) }), " ");
  }
  cell.append(element("span", {}, label));
  return cell;
}

function gib(mib) { return (mib / 1024).toFixed(1); }

// A name as lab_page.cpp's page_safe shows it (the board comes cleaned; api/usage gives names as
// they are): a control or invisible character (a right-to-left override would turn the chart's
// text around) as its UTF-8 bytes in \xNN, and a backslash as \x5c.
const kUnshown = /[\\\u0000-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb]|\udb40[\udc00-\udc7f]/g;
function shown(name) {
  return name.replace(kUnshown, (c) => Array.from(new TextEncoder().encode(c),
                                                  (b) => "\\x" + b.toString(16).padStart(2, "0")).join(""));
}

function holdersText(heldBy) {
  return heldBy.map((h) => (h.user || "unknown") + " · " + h.name + (h.run !== null ? " (run " + h.run + ")" : ""))
    .join(", ");
}

// One board row, as lab_page.cpp renders it.
function boardRows(gpu) {
  const held = Array.isArray(gpu.held_by) && gpu.held_by.length > 0;
  const idle = held && gpu.idle_s !== null && gpu.idle_s !== undefined;
  const row = element("tr", { class: idle ? "idle" : gpu.state === "free" ? "free" : "busy",
                              "data-gpu": String(gpu.index) });
  const util = gpu.utilization_percent;
  const used = gpu.memory_used_mib;
  const total = gpu.memory_total_mib;
  row.append(element("td", { class: "index" }, String(gpu.index)),
             element("td", { class: "model" }, gpu.name),
             meterCell("util", util, 100, util === null ? "?" : Math.round(util) + " %"),
             meterCell("mem", used, total, used === null || total === null ? "?" : gib(used) + " / " + gib(total) + " GiB"),
             element("td", { class: "state" }, gpu.state),
             element("td", { class: "holder" }, held ? holdersText(gpu.held_by) : ""),
             element("td", { class: "idle" }, idle ? brief(gpu.idle_s) : ""));
  const rows = [row];
  for (const mig of gpu.mig_instances || []) {
    const migRow = element("tr", { class: "mig" });
    migRow.append(element("td", { class: "index" }), element("td", { class: "model" }, "MIG " + mig.profile),
                  element("td", { class: "util" }),
                  meterCell("mem", mig.memory_used_mib, mig.memory_total_mib,
                            mig.memory_used_mib === null || mig.memory_total_mib === null ? "?"
                              : gib(mig.memory_used_mib) + " / " + gib(mig.memory_total_mib) + " GiB"),
                  element("td", { class: "state" }, mig.free ? "free" : "busy"), element("td", { class: "holder" }),
                  element("td", { class: "idle" }));
    rows.push(migRow);
  }
  return rows;
}

async function fetchJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) throw new Error(path + ": HTTP " + response.status);
  return response.json();
}

async function refreshBoard() {
  const board = await fetchJson("api/gpus");
  const body = document.getElementById("board-rows");
  const rows = [];
  for (const gpu of board.gpus) rows.push(...boardRows(gpu));
  body.replaceChildren(...rows);
  const free = board.gpus.filter((g) => g.state === "free").length;
  const idle = board.gpus.filter((g) => g.held_by.length > 0 && g.idle_s !== null).length;
  const summary = document.getElementById("summary");
  summary.replaceChildren(element("strong", {}, free + " of " + board.gpus.length), " GPUs free · ",
                          element("strong", {}, String(idle)), " held idle · as of ",
                          element("time", { id: "as-of" }, board.time));
  if (board.sample_ok === false)  // the source fails (a hung driver): this is what it gave last, if anything
    summary.append(" · ", element("strong", { class: "stale" },
                                  (board.sampled === false ? "the GPUs could not be looked at yet"
                                                           : "the GPUs could not be looked at since: this is the last reading") +
                                  (board.source_error ? " (" + board.source_error + ")" : "")));
}

// Each GPU's last 24 hours: one polyline of its per-minute mean utilization.
async function drawDay() {
  const day = await fetchJson("api/minutes?hours=24");
  const charts = document.getElementById("day-charts");
  const width = 288;
  const height = 48;
  const end = Date.parse(day.time);
  const start = end - 24 * 3600 * 1000;
  const figures = [];
  for (const gpu of day.gpus) {
    const svg = svgElement("svg", { viewBox: "0 0 " + width + " " + height, preserveAspectRatio: "none",
                                    role: "img", "aria-label": "GPU " + gpu.index + " utilization, 24 hours" });
    svg.append(svgElement("line", { class: "axis", x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5 }));
    const points = gpu.minutes.map(([ms, util]) =>
      ((ms - start) / (end - start) * width).toFixed(1) + "," + (height - 1 - util / 100 * (height - 2)).toFixed(1));
    if (points.length > 1) svg.append(svgElement("polyline", { points: points.join(" ") }));
    if (points.length === 1) {  // a line needs two points: a dot until the next minute
      const [x, y] = points[0].split(",");
      svg.append(svgElement("circle", { cx: x, cy: y, r: 2 }));
    }
    const mean = gpu.minutes.length ? gpu.minutes.reduce((a, m) => a + m[1], 0) / gpu.minutes.length : null;
    const figure = element("figure", { "data-gpu": String(gpu.index) });
    figure.append(svg, element("figcaption", {}, "GPU " + gpu.index + (mean === null ? ": no samples"
      : ": mean " + Math.round(mean) + " % over " + gpu.minutes.length + " min")));
    figures.push(figure);
  }
  charts.replaceChildren(...figures);
}

// GPU-hours per user, the busy part darker: a bar each.
async function drawUsage() {
  const chart = document.getElementById("usage-chart");
  if (!chart) return;  // not shown to everyone (history_visibility: own)
  const rows = await fetchJson("api/usage");
  const most = Math.max(1e-9, ...rows.map((r) => r.gpu_hours));
  const barHeight = 20;
  const width = 600;
  const labelWidth = 120;
  const figureWidth = 160;
  const svg = svgElement("svg", { viewBox: "0 0 " + width + " " + Math.max(barHeight, rows.length * (barHeight + 4)),
                                  role: "img", "aria-label": "GPU-hours per user, last 30 days" });
  rows.forEach((row, i) => {
    const y = i * (barHeight + 4);
    const full = (width - labelWidth - figureWidth) * row.gpu_hours / most;
    const busy = (width - labelWidth - figureWidth) * row.busy_gpu_hours / most;
    const name = svgElement("text", { x: 0, y: y + 14 });
    name.textContent = row.key ? shown(row.key) : "unknown";
    const figure = svgElement("text", { x: labelWidth + full + 6, y: y + 14 });
    figure.textContent = row.gpu_hours.toFixed(1) + " h" +
      (row.efficiency === null ? "" : ", " + Math.round(row.efficiency) + " % busy");
    svg.append(name, svgElement("rect", { class: "bar", x: labelWidth, y: y, width: full, height: barHeight }),
               svgElement("rect", { class: "busy", x: labelWidth, y: y, width: busy, height: barHeight }), figure);
  });
  chart.replaceChildren(svg);
}

// What could not be fetched, by task, said under the header until that task succeeds again.
const failures = new Map();

function showFailures() {
  const status = document.getElementById("page-status");  // (a page from before it had one: none)
  if (status) status.textContent = [...failures.values()].join("; ");
}

// Runs `task` now and `seconds` after each run ends: never two at once (a slow server would pile
// them up, and an older answer could replace a newer one).
function every(seconds, task) {
  const run = async () => {
    try {
      await task();
      failures.delete(task);
    } catch (error) {
      failures.set(task, "could not refresh (" + error.message + "); trying again in " + seconds + " s");
    } finally {
      try { showFailures(); } finally { setTimeout(run, seconds * 1000); }
    }
  };
  run();
}

every(refreshSeconds, refreshBoard);
every(60, drawDay);
every(60, drawUsage);
