// Usage over time on /usage/: one uPlot line per group (or tenant, user, partition), from the page's JSON.
(function () {
  "use strict";
  var PALETTE = ["#2563eb", "#16a34a", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];

  function draw() {
    var source = document.getElementById("usage-series");
    var target = document.getElementById("usage-chart");
    if (!source || !target || typeof uPlot === "undefined") return;
    var data = JSON.parse(source.textContent);
    if (!data.series.length) return;
    var xs = data.times.map(function (t) { return Date.parse(t) / 1000; });
    var series = [{}];
    var columns = [xs];
    data.series.forEach(function (line, i) {
      series.push({ label: line.name, stroke: PALETTE[i % PALETTE.length], width: 2, points: { show: xs.length < 60 }, value: function (u, v) { return v == null ? "–" : v.toFixed(2) + " h"; } });
      columns.push(line.allocated_hours);
    });
    var width = Math.max(320, target.clientWidth || 800);
    var chart = new uPlot({
      width: width,
      height: 300,
      series: series,
      axes: [{}, { label: "accelerator-hours" }],
      // The page speaks UTC; so does its chart, whatever the browser's zone.
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); },
      // The whole window, even when usage covers one step of it (uPlot would stretch a lone point over years).
      scales: {
        x: { time: true, range: function () { return [Date.parse(data.start) / 1000, Date.parse(data.end) / 1000]; } },
        y: { range: function (u, min, max) { return [0, Math.max(max, 0.01) * 1.1]; } },
      },
    }, columns, target);
    window.addEventListener("resize", function () {
      chart.setSize({ width: Math.max(320, target.clientWidth), height: 300 });
    });
  }

  // GrpTRESMins burn-down: minutes left once a day over the lookback, then a dashed line to when it runs out.
  function drawBudgets() {
    var source = document.getElementById("budget-data");
    if (!source || typeof uPlot === "undefined") return;
    var data = JSON.parse(source.textContent);
    document.querySelectorAll(".budget-chart").forEach(function (target) {
      var budget = data.budgets[Number(target.dataset.budget)];
      var xs = budget.burn_down.map(function (p) { return Date.parse(p.at) / 1000; });
      var left = budget.burn_down.map(function (p) { return p.remaining_minutes; });
      var forecast = left.map(function () { return null; });
      forecast[forecast.length - 1] = left[left.length - 1];
      if (budget.runs_out_at) {
        xs.push(Date.parse(budget.runs_out_at) / 1000);
        left.push(null);
        forecast.push(0);
      }
      new uPlot({
        title: budget.group,
        width: Math.max(260, target.clientWidth || 360),
        height: 180,
        axes: [{}, { size: 70 }],
        tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); },
        series: [
          {},
          { label: "left (min)", stroke: PALETTE[0], width: 2 },
          { label: "forecast", stroke: PALETTE[3], width: 2, dash: [6, 4], spanGaps: true },
        ],
        scales: { y: { range: function (u, min, max) { return [Math.min(0, min), Math.max(max, budget.budget_minutes)]; } } },
      }, [xs, left, forecast], target);
    });
  }

  function drawAll() {
    draw();
    drawBudgets();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawAll);
  else drawAll();
})();
