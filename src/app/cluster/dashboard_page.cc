// The dashboard page (dashboard_page.h).
#include "app/cluster/dashboard_page.h"

namespace sedna::app {

namespace {

constexpr std::string_view kPage = R"PAGE(<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>sedna-lc dashboard</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f5f6f8;color:#1d2330}
header{background:#1d2330;color:#fff;padding:10px 18px;display:flex;gap:18px;align-items:baseline}
header h1{font-size:17px;margin:0}
main{padding:12px 18px}
section{background:#fff;border-radius:6px;padding:10px 14px;margin:0 0 14px;box-shadow:0 1px 2px #0002}
h2{font-size:15px;margin:4px 0 8px}h3{font-size:14px;margin:12px 0 6px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{font-weight:600;color:#555;font-size:12px}
.ok{color:#138a36}.bad{color:#c0392b}.dim{color:#777}.mono,code,pre{font-family:ui-monospace,monospace;font-size:12px}
.bar{display:inline-block;width:90px;height:8px;background:#e3e6ea;border-radius:4px;vertical-align:middle;margin-right:6px}
.bar i{display:block;height:8px;background:#3a7bd5;border-radius:4px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.chart{background:#fafbfc;border:1px solid #e3e6ea;border-radius:4px}
.chart .new{fill:#3a7bd5;stroke:#3a7bd5}.chart .deployed{fill:#999;stroke:#999}.chart .train{fill:#d5803a;stroke:#d5803a}
.chart polyline.new,.chart polyline.deployed,.chart polyline.train{fill:none;stroke-width:2}.chart polyline.deployed{stroke-dasharray:4 3}
.mark-deployed,.mark-deploy{fill:#138a36}.mark-kept{fill:#888}.mark-bad{fill:#c0392b}
pre{background:#1d2330;color:#dfe3ea;padding:8px;max-height:220px;overflow:auto;white-space:pre-wrap}
#err{color:#fff;background:#c0392b;padding:2px 8px;border-radius:4px}
</style></head>
<body data-polls="0">
<header><h1>sedna-lc</h1><span id="mode"></span><span id="gm"></span><span id="upd" class="dim"></span><span id="err" hidden></span></header>
<main>
<section><h2>Jobs</h2><table id="jobs"><thead><tr><th>Kind</th><th>Job</th><th>Stage</th><th>Round</th><th>Samples waiting / trigger</th><th>GM link</th><th>Doing now</th><th>Deployed</th></tr></thead><tbody></tbody></table></section>
<div id="details"></div>
<section id="workers-sec" hidden><h2>Workers</h2><table id="workers"><thead><tr><th>Job</th><th>Stage</th><th>Worker</th><th>State</th><th>Started</th><th>Ended</th><th>Log</th></tr></thead><tbody></tbody></table></section>
</main>
<script>
"use strict";
const open = new Set();
const esc = s => String(s ?? "").replace(/[&<>"']/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;","'":"&#39;"}[c]));
const t = ms => ms ? new Date(ms).toLocaleTimeString() : "";
const dur = (a, b) => a && b && b >= a ? ((b - a) / 1000).toFixed(1) + " s" : "";
function doing(j) {
  const w = j.work || "";
  const m = {"write-train":"writing train samples","write-eval":"writing eval samples","deploy":"deploying the model",
    "hot-update":"hot-updating the model","reported":"answered; waiting for the GM"};
  if (m[w]) return m[w];
  if (w.includes("/")) { const [p, x] = w.split("/"); if (m[x]) return m[x]; if (x && x !== "none") return "phase " + p + ", " + x; }
  if (j.lastError) return "blocked: " + j.lastError;
  return j.stage.startsWith("Train") || !j.stage ? "waiting for samples" : "waiting for " + j.stage;
}
function waiting(j) {
  const trig = j.history.trainTrigger || "";
  const m = trig.match(/num_of_samples\s*(>=|>|=)\s*([\d.]+)/);
  let bar = "";
  if (m) { const p = Math.min(100, 100 * j.samplesWaiting / Math.max(1, +m[2])); bar = `<span class="bar"><i style="width:${p}%"></i></span>`; }
  return `${bar}${j.samplesWaiting} <span class="dim mono">${esc(trig)}</span>`;
}
function decisionClass(d) { return d === "deployed" || d === "deploy" ? "mark-" + d : d === "kept" ? "mark-kept" : "mark-bad"; }
function chart(name, rounds, kind, series) {
  const W = 360, H = 170, L = 44, R = 10, T = 28, B = 26;
  const vals = [];
  rounds.forEach(r => series.forEach(([, key]) => { if (name in r[key]) vals.push(r[key][name]); }));
  let lo = Math.min(...vals), hi = Math.max(...vals);
  if (!(hi > lo)) { const pad = Math.abs(hi) * 0.05 || 0.5; lo -= pad; hi += pad; }
  const n = rounds.length;
  const x = i => L + (n < 2 ? (W - L - R) / 2 : i * (W - L - R) / (n - 1));
  const y = v => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
  let s = `<svg class="chart" data-kind="${kind}" data-metric="${esc(name)}" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img">`;
  s += `<text x="4" y="13" font-size="12" font-weight="600">${esc(name)}</text>`;
  s += `<text x="${W - R}" y="13" font-size="11" text-anchor="end">${series.map(([c]) => `<tspan class="${c}">● ${c}</tspan>`).join(" ")}</text>`;
  s += `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#ccc"/>`;
  s += `<text x="${L - 4}" y="${y(hi) + 4}" font-size="10" text-anchor="end">${+hi.toPrecision(4)}</text><text x="${L - 4}" y="${y(lo) + 4}" font-size="10" text-anchor="end">${+lo.toPrecision(4)}</text>`;
  for (const [cls, key] of series) {
    const line = [], dots = [];
    rounds.forEach((r, i) => { if (name in r[key]) { line.push(`${x(i)},${y(r[key][name])}`); dots.push(`<circle class="pt ${cls}" data-round="${r.round}" cx="${x(i)}" cy="${y(r[key][name])}" r="3.5"><title>round ${r.round} ${cls}: ${r[key][name]}</title></circle>`); } });
    if (line.length > 1) s += `<polyline class="${cls}" points="${line.join(" ")}"/>`;
    s += dots.join("");
  }
  rounds.forEach((r, i) => {
    s += `<text x="${x(i)}" y="${H - B + 12}" font-size="10" text-anchor="middle">${r.round}</text>`;
    if (r.decision) s += `<g class="mark" data-decision="${esc(r.decision)}" data-round="${r.round}"><path class="${decisionClass(r.decision)}" d="M${x(i) - 5},${H - 2}l5,-8l5,8z"/><title>round ${r.round}: ${esc(r.decision)} ${esc(r.decisionReason)}</title></g>`;
  });
  return s + "</svg>";
}
function history(j) {
  const rs = j.history.rounds;
  if (!rs.length) return `<p class="dim">No rounds yet.</p>`;
  let h = `<table class="rounds"><thead><tr><th>Round</th><th>Samples in</th><th>Trigger fired</th><th>Train</th><th>Eval</th><th>Decision</th></tr></thead><tbody>`;
  for (const r of rs.slice().reverse()) {
    const tr = r.trainStatus ? `${esc(r.trainStatus)} ${dur(r.trainReadyMs, r.trainDoneMs)}` : r.trainReadyMs ? "running since " + t(r.trainReadyMs) : "";
    const ev = r.evalStatus ? `${esc(r.evalStatus)} ${dur(r.evalReadyMs, r.evalDoneMs)}` : r.evalReadyMs ? "running since " + t(r.evalReadyMs) : "";
    const dc = r.decision ? `<b class="${r.decision === "deployed" || r.decision === "deploy" ? "ok" : r.decision === "kept" ? "" : "bad"}">${esc(r.decision)}</b> ${t(r.decidedMs)}${r.deployTrigger || r.decisionReason ? `<br><span class="dim mono">${esc([r.deployTrigger, r.decisionReason].filter(x => x).join(": "))}</span>` : ""}` : "";
    h += `<tr class="round" data-round="${r.round}"><td>${r.round}</td><td>${r.samples}</td><td>${t(r.firedMs)}<br><span class="dim mono">${esc(r.trainTrigger)}: ${esc(r.fired)}</span></td>` +
      `<td>${tr}<br><span class="dim mono">${esc(r.trainedModel)}</span></td><td>${ev}</td><td>${dc}<br><span class="dim">round ${dur(r.firedMs, r.deployedMs || r.decidedMs)}</span></td></tr>`;
  }
  return h + "</tbody></table>";
}
function versions(j) {
  const tgt = j.history.deployTarget;
  if (!tgt) return "";
  let h = `<h3>Deployed model</h3><p class="mono">${esc(tgt)} ${j.deployedUrl ? "← " + esc(j.deployedUrl) + " at " + esc(j.deployedAt) : ""}</p>`;
  if (j.versionsError) h += `<p class="bad">${esc(j.versionsError)}</p>`;
  if (!j.versions.length) return h + `<p class="dim">No kept versions yet.</p>`;
  h += `<table class="versions"><thead><tr><th>Version</th><th>Written</th><th>Size</th><th>Roll back with</th></tr></thead><tbody>`;
  for (const v of j.versions.slice().reverse()) h += `<tr class="version"><td>${v.number}</td><td>${t(v.mtime * 1000)}</td><td>${v.size}</td><td><code>${esc(v.command)}</code></td></tr>`;
  return h + "</tbody></table>";
}
function render(d) {
  document.getElementById("mode").textContent = d.standalone ? "standalone" : "cluster";
  const gm = document.getElementById("gm");
  gm.textContent = (d.standalone ? "local GM " : "GM ") + (d.gmConnected ? "connected" : "disconnected");
  gm.className = d.gmConnected ? "ok" : "bad";
  document.getElementById("upd").textContent = "updated " + t(d.now);
  document.querySelector("#jobs tbody").innerHTML = d.jobs.map(j => `<tr class="job" data-job="${esc(j.namespace + "/" + j.name)}"><td>${esc(j.short)}</td><td><a href="#job-${esc(j.namespace + "-" + j.name)}">${esc(j.namespace + "/" + j.name)}</a></td>` +
    `<td>${esc(j.stage || "-")}</td><td>${j.round}</td><td>${waiting(j)}</td><td class="${d.gmConnected ? "ok" : "bad"}">${d.gmConnected ? "up" : "down"}</td><td>${esc(doing(j))}</td><td class="mono">${esc(j.deployedUrl || "-")}</td></tr>`).join("") ||
    `<tr><td colspan="8" class="dim">No jobs.</td></tr>`;
  document.getElementById("details").innerHTML = d.jobs.map(j => {
    const rs = j.history.rounds, names = new Set(), tnames = new Set();
    rs.forEach(r => { Object.keys(r.newMetrics).forEach(k => names.add(k)); Object.keys(r.deployedMetrics).forEach(k => names.add(k)); Object.keys(r.trainMetrics || {}).forEach(k => tnames.add(k)); });
    const charts = [...names].sort().map(n => chart(n, rs, "eval", [["deployed", "deployedMetrics"], ["new", "newMetrics"]])).join("");
    const tcharts = [...tnames].sort().map(n => chart(n, rs, "train", [["train", "trainMetrics"]])).join("");
    return `<section class="job-detail" id="job-${esc(j.namespace + "-" + j.name)}" data-job="${esc(j.namespace + "/" + j.name)}"><h2>${esc(j.short)} ${esc(j.namespace + "/" + j.name)} <span class="dim">— ${j.history.deploys || 0} deploys</span></h2>` +
      (j.lastError ? `<p class="bad">${esc(j.lastError)}</p>` : "") +
      `<h3>Eval metrics by round</h3>${charts ? `<div class="charts">${charts}</div>` : `<p class="dim">No eval yet.</p>`}` +
      (tcharts ? `<h3>Train metrics by round${[...tnames].some(n => n.includes("/")) ? " (per task)" : ""}</h3><div class="charts">${tcharts}</div>` : "") + `<h3>Rounds</h3>${history(j)}${versions(j)}</section>`;
  }).join("");
  const ws = document.getElementById("workers-sec");
  ws.hidden = !d.standalone;
  document.querySelector("#workers tbody").innerHTML = d.workers.map(w => `<tr class="worker" data-worker="${esc(w.name)}"><td>${esc(w.namespace + "/" + w.job)}</td><td>${esc(w.stage)}</td><td class="mono">${esc(w.name)}</td>` +
    `<td class="${w.state === "failed" ? "bad" : w.state === "running" ? "" : "ok"}">${esc(w.state)} ${esc(w.detail)}</td><td>${t(w.startedMs)}</td><td>${t(w.exitedMs)}</td>` +
    `<td><details data-worker="${esc(w.name)}"${open.has(w.name) ? " open" : ""}><summary class="mono">${esc(w.logPath)}</summary><pre>${esc(w.logTail)}</pre></details></td></tr>`).join("") ||
    `<tr><td colspan="7" class="dim">No workers started yet.</td></tr>`;
  document.querySelectorAll("#workers details").forEach(e => e.addEventListener("toggle", () => e.open ? open.add(e.dataset.worker) : open.delete(e.dataset.worker)));
}
async function poll() {
  const err = document.getElementById("err");
  try {
    const r = await fetch("api/dashboard", {cache: "no-store"});
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    err.hidden = true;
    document.body.dataset.polls = String(+document.body.dataset.polls + 1);
  } catch (e) {
    err.textContent = "cannot reach the LC: " + e.message;
    err.hidden = false;
  }
  setTimeout(poll, 1000);
}
poll();
</script></body></html>
)PAGE";

}  // namespace

std::string_view DashboardPage() { return kPage; }

}  // namespace sedna::app
