/* Job metric charts (uPlot, vendored): utilisation per rank, memory, step time and communication share.
   Reads /api/v1/jobs/<id>/metrics/ with the page's session; refreshes while the job is active. */
(function () {
  "use strict";
  var COLOURS = ["#2563eb", "#16a34a", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];

  function pivot(points) {
    var times = [], byTime = {}, ranks = {};
    points.forEach(function (p) {
      var t = Math.round(Date.parse(p.ts) / 1000);
      if (!(t in byTime)) { byTime[t] = {}; times.push(t); }
      byTime[t][p.rank] = p;
      ranks[p.rank] = true;
    });
    times.sort(function (a, b) { return a - b; });
    return { times: times, byTime: byTime, ranks: Object.keys(ranks).map(Number).sort(function (a, b) { return a - b; }) };
  }

  function column(table, pick) {
    return table.times.map(function (t) { return pick(table.byTime[t]); });
  }

  function sum(row, name) {
    var total = null;
    Object.keys(row).forEach(function (rank) {
      var v = row[rank][name];
      if (v !== null && v !== undefined) { total = (total || 0) + v; }
    });
    return total;
  }

  function mean(row, name) {
    var total = 0, n = 0;
    Object.keys(row).forEach(function (rank) {
      var v = row[rank][name];
      if (v !== null && v !== undefined) { total += v; n += 1; }
    });
    return n ? total / n : null;
  }

  function specs(table) {
    var util = { title: "Utilisation (%)", series: [], data: [table.times] };
    table.ranks.forEach(function (rank, i) {
      util.series.push({ label: "rank " + rank, stroke: COLOURS[i % COLOURS.length] });
      util.data.push(column(table, function (row) {
        var p = row[rank]; return p && p.utilisation !== null ? p.utilisation * 100 : null;
      }));
    });
    var gib = function (v) { return v === null ? null : v / (1 << 30); };
    var memory = {
      title: "Memory (GiB)",
      series: [{ label: "resident", stroke: COLOURS[0] }, { label: "in swap", stroke: COLOURS[3] }],
      data: [table.times, column(table, function (row) { return gib(sum(row, "rss_bytes")); }),
             column(table, function (row) { return gib(sum(row, "swap_bytes")); })]
    };
    var step = {
      title: "Step time (s) · communication (% of step)",
      series: [{ label: "step time s", stroke: COLOURS[4] }, { label: "communication %", stroke: COLOURS[2] }],
      data: [table.times, column(table, function (row) { return mean(row, "step_time_s"); }),
             column(table, function (row) { var v = mean(row, "comm_share"); return v === null ? null : v * 100; })]
    };
    return { utilisation: util, memory: memory, step: step };
  }

  function draw(section, points) {
    var empty = section.querySelector(".mon-empty");
    empty.hidden = points.length > 0;
    if (!points.length || typeof window.uPlot === "undefined") { return; }
    var table = pivot(points), all = specs(table);
    section.querySelectorAll(".mon-chart").forEach(function (el) {
      var spec = all[el.dataset.chart];
      var measured = spec.data.slice(1).some(function (values) { return values.some(function (v) { return v !== null; }); });
      el.hidden = !measured;  // jobs without SDK step records have no step chart
      if (!measured) { return; }
      var width = Math.max(280, el.clientWidth || section.clientWidth - 32);
      if (el._plot && el._plot.series.length === spec.series.length + 1) {
        el._plot.setData(spec.data);
        return;
      }
      if (el._plot) { el._plot.destroy(); }
      el._plot = new window.uPlot({
        title: spec.title, width: width, height: 180,
        series: [{}].concat(spec.series.map(function (s) { return Object.assign({ width: 1.5, spanGaps: false }, s); })),
        axes: [{}, { size: 50 }]
      }, spec.data, el);
    });
  }

  function load(section) {
    fetch(section.dataset.metricsUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : { points: [] }; })
      .then(function (body) { draw(section, body.points || []); })
      .catch(function () { /* the next refresh tries again */ });
  }

  function start() {
    document.querySelectorAll(".mon-charts").forEach(function (section) {
      load(section);
      if (section.dataset.active === "true") {
        var seconds = Math.max(2, parseInt(section.dataset.refresh, 10) || 10);
        section._timer = window.setInterval(function () {
          if (!document.body.contains(section)) { window.clearInterval(section._timer); return; }
          load(section);
        }, seconds * 1000);
      }
    });
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
