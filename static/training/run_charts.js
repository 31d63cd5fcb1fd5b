// Loss and learning-rate curves of a training run (uPlot, vendored under static/vendor/uplot).
// Reads <section id="charts" data-metrics-url>; refreshes every 5 s until the run has ended.
(function () {
  "use strict";

  // Django's JavaScript catalog (base.html loads it) defines gettext and interpolate;
  // a page without it shows the English.
  function gettext(s) { return window.gettext ? window.gettext(s) : s; }
  function interpolate(fmt, obj, named) {
    if (window.interpolate) { return window.interpolate(fmt, obj, named); }
    return fmt.replace(/%\((\w+)\)s/g, function (match, key) { return String(obj[key]); });
  }

  var COLOURS = ["#1f6fb2", "#c0392b", "#2e8b57", "#8e44ad", "#d35400"];
  var REFRESH_MS = 5000;
  var STEP_INCREMENTS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000];

  // An axis label is for a person: in the page's language (<html lang>), 0,0125 in Italian.
  var LANG = document.documentElement.lang || undefined;
  var SCIENTIFIC = { notation: "scientific", minimumFractionDigits: 1, maximumFractionDigits: 1 };
  function formatNumber(v) {
    if (v === null || v === undefined) { return ""; }
    var a = Math.abs(v);
    if (a !== 0 && (a < 0.01 || a >= 100000)) { return v.toLocaleString(LANG, SCIENTIFIC); }
    return (+v.toPrecision(4)).toLocaleString(LANG, { maximumFractionDigits: 20, useGrouping: false });
  }
  var charts = {};

  function seriesFor(phases, key) {
    var tables = phases.map(function (p) { return [p.step, p[key]]; });
    return tables.length === 1 ? [tables[0][0], tables[0][1]] : uPlot.join(tables);
  }

  function draw(el, title, phases, key, logScale, xLabel) {
    var data = seriesFor(phases, key);
    var width = Math.max(320, el.clientWidth || 600);
    if (charts[key] && charts[key]._phases === phases.length) {
      charts[key].setData(data);
      return;
    }
    if (charts[key]) { charts[key].destroy(); }
    var series = [{ label: gettext("step") }].concat(phases.map(function (p, i) {
      // the phase's name is data (the run's own), the metric's is ours
      return { label: interpolate(gettext("%(phase)s %(metric)s"), { phase: p.phase, metric: title }, true), stroke: COLOURS[i % COLOURS.length], width: 1.5, spanGaps: true };
    }));
    var opts = {
      title: title, width: width, height: 220, series: series,
      scales: { x: { time: false }, y: logScale ? { distr: 3 } : {} },
      axes: [
        { label: xLabel || gettext("optimizer step"), incrs: STEP_INCREMENTS },
        { size: 80, values: function (u, ticks) { return ticks.map(formatNumber); } }
      ]
    };
    charts[key] = new uPlot(opts, data, el);
    charts[key]._phases = phases.length;
  }

  function refresh(section) {
    fetch(section.dataset.metricsUrl, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
      .then(function (payload) {
        var phases = payload.phases.filter(function (p) { return p.step.length > 0; });
        if (phases.length && window.uPlot) {
          section.classList.add("has-data");
          // one series per phase, and per task for CH heads (x: the head's epoch), never joined
          draw(document.getElementById("chart-loss"), gettext("loss"), phases, "loss", false, payload.x_label);
          draw(document.getElementById("chart-lr"), gettext("learning rate"), phases, "lr", false, payload.x_label);
        }
        if (!payload.ended) { window.setTimeout(function () { refresh(section); }, REFRESH_MS); }
      })
      .catch(function () { window.setTimeout(function () { refresh(section); }, 4 * REFRESH_MS); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var section = document.getElementById("charts");
    if (section && section.dataset.metricsUrl) { refresh(section); }
  });
})();
