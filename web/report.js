// tokperf report.html: draws the charts from the JSON embedded in the page (id "tokperf-data") with
// uPlot, then checks each one actually painted and records the outcome on <body> for the headless
// browser test: data-report-state ("ok" | "error"), data-charts-expected, data-charts-drawn.
(function () {
  'use strict';
  var body = document.body;
  var data = JSON.parse(document.getElementById('tokperf-data').textContent);
  var palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
                 '#17becf', '#7f7f7f', '#bcbd22'];
  var charts = [];  // {el, plot, series: [[...]], canvas}

  function finiteCount(arr) {
    var n = 0;
    for (var i = 0; i < arr.length; i++) if (arr[i] !== null && isFinite(arr[i])) n++;
    return n;
  }
  function fmtMs(v) {
    if (v === null || !isFinite(v)) return '-';
    if (Math.abs(v) >= 1000) return (v / 1000).toFixed(2) + ' s';
    if (Math.abs(v) >= 10) return v.toFixed(0) + ' ms';
    return v.toFixed(1) + ' ms';
  }
  function panel(title, note) {
    var wrap = document.createElement('figure');
    wrap.className = 'chart';
    var h = document.createElement('figcaption');
    h.textContent = title;
    wrap.appendChild(h);
    if (note) {
      var p = document.createElement('p');
      p.className = 'note';
      p.textContent = note;
      wrap.appendChild(p);
    }
    document.getElementById('charts').appendChild(wrap);
    return wrap;
  }
  function width(el) { return Math.max(320, Math.min(624, el.clientWidth - 16)); }

  // series: [{label, values, color, dash, scale}], x: ascending array.
  function plot(title, note, x, xLabel, series, opts) {
    opts = opts || {};
    var el = panel(title, note);
    var s = [{label: xLabel, value: function (u, v) { return v === null ? '-' : +v.toFixed(2); }}];
    var d = [x];
    series.forEach(function (sr, i) {
      var one = {
        label: sr.label, stroke: sr.color || palette[i % palette.length], width: 2,
        dash: sr.dash, scale: sr.scale || 'y', points: {show: x.length <= 12, size: 6},
        value: function (u, v) { return sr.scale === 'count' || sr.plain ? v : fmtMs(v); },
        spanGaps: true,
      };
      // A CDF holds its value until the next x: a straight line between grid points would show
      // requests at latencies nobody measured.
      if (sr.stepped) one.paths = uPlot.paths.stepped({align: 1});
      s.push(one);
      d.push(sr.values);
    });
    var axes = [{label: xLabel}, {label: opts.yLabel || 'ms', size: 60}];
    var scales = {x: {time: false}};
    if (opts.y2Label) {
      axes.push({scale: opts.y2Scale, side: 1, label: opts.y2Label, grid: {show: false}, size: 60});
    }
    var u = new uPlot({width: width(el), height: 260, series: s, axes: axes, scales: scales,
                       legend: {live: true}}, d, el);
    charts.push({el: el, canvas: u.ctx.canvas, series: series.map(function (x) { return x.values; })});
  }

  function cdfCharts() {
    var names = {ttft: 'TTFT', ttfo: 'TTFO (first visible text)', tpot: 'TPOT', itl: 'ITL',
                 e2e: 'E2E'};
    Object.keys(names).forEach(function (k) {
      var c = data.cdf[k];
      if (!c || !c.x.length) return;
      plot(names[k] + ' distribution (CDF)', 'share of requests (ITL: of gaps) at or below x',
           c.x, names[k] + ' (ms)',
           c.series.map(function (sr) {
             return {label: sr.label, values: sr.y, plain: true, stepped: true};
           }),
           {yLabel: 'fraction'});
    });
  }

  function loadCharts() {
    var lv = data.levels;
    if (!lv.length) return;
    var x = lv.map(function (l) { return l.load; });
    [['ttft', 'TTFT'], ['tpot', 'TPOT']].forEach(function (m) {
      var series = [
        {label: m[1] + ' P50', values: lv.map(function (l) { return l[m[0]].p50; })},
        {label: m[1] + ' P95', values: lv.map(function (l) { return l[m[0]].p95; })}];
      (data.slo || []).forEach(function (o) {
        if (o.metric !== m[0]) return;
        series.push({label: 'SLO ' + o.text, color: '#444', dash: [6, 4],
                     values: lv.map(function () { return o.threshold_ms; })});
      });
      plot(m[1] + ' vs load', 'P50 and P95 per load level; dashed: SLO', x, data.load_axis,
           series);
    });
    var byTput = lv.slice().filter(function (l) { return l.out_tps !== null; })
        .sort(function (a, b) { return a.out_tps - b.out_tps; });
    if (byTput.length) {
      plot('Throughput vs latency', 'each point is a load level',
           byTput.map(function (l) { return l.out_tps; }), 'output tokens/s', [
             {label: 'TTFT P95', values: byTput.map(function (l) { return l.ttft.p95; })},
             {label: 'TPOT P95', scale: 'tpot',
              values: byTput.map(function (l) { return l.tpot.p95; })}],
           {y2Label: 'TPOT ms', y2Scale: 'tpot', yLabel: 'TTFT ms'});
    }
  }

  function timeseriesCharts() {
    var t = data.timeseries;
    if (!t || !t.t.length) return;
    plot('In flight and errors per second', null, t.t, 'run time (s)', [
      {label: 'in flight', values: t.in_flight, plain: true},
      {label: 'errors', values: t.errors, plain: true, color: '#d62728'}], {yLabel: 'requests'});
    plot('Output tokens per second', null, t.t, 'run time (s)',
         [{label: 'tok/s', values: t.tok_s, plain: true}], {yLabel: 'tokens/s'});
    plot('TTFT and ITL per second', 'requests whose first token / gaps ending in that second',
         t.t, 'run time (s)', [
           {label: 'TTFT P50', values: t.ttft_p50}, {label: 'TTFT P95', values: t.ttft_p95},
           {label: 'ITL P50', values: t.itl_p50, scale: 'itl'},
           {label: 'ITL P95', values: t.itl_p95, scale: 'itl'}],
         {yLabel: 'TTFT ms', y2Label: 'ITL ms', y2Scale: 'itl'});
    if (t.server_running) {
      plot('Server: running and waiting', 'the engine\'s own /metrics, on the client\'s clock',
           t.t, 'run time (s)', [
             {label: 'running', values: t.server_running, plain: true},
             {label: 'waiting', values: t.server_waiting, plain: true, color: '#d62728'},
             {label: 'KV usage %', values: t.server_kv_pct, plain: true, scale: 'kv'}],
           {yLabel: 'requests', y2Label: 'KV %', y2Scale: 'kv'});
      plot('Server: generated tokens per second and preemptions',
           'engine counters between scrapes', t.t, 'run time (s)', [
             {label: 'server tok/s', values: t.server_gen_tok_s, plain: true},
             {label: 'preemptions', values: t.server_preemptions, plain: true, scale: 'pre',
              color: '#d62728'}],
           {yLabel: 'tokens/s', y2Label: 'preemptions', y2Scale: 'pre'});
    }
  }

  // One row per request: grey = waiting to be sent (client queue), orange = waiting for the first
  // token, blue = streaming, red = failed.
  function timelineChart() {
    var rows = data.timeline;
    if (!rows.length) return;
    var el = panel('Per-request timeline',
                   'grey: queued in the client; orange: waiting for the first token; ' +
                   'blue: streaming; red: failed');
    el.classList.add('wide');
    var w = Math.max(640, el.clientWidth - 8), rowH = Math.max(2, Math.min(8, 420 / rows.length));
    var h = Math.ceil(rows.length * rowH) + 30;
    var cv = document.createElement('canvas');
    cv.width = w; cv.height = h;
    el.appendChild(cv);
    var ctx = cv.getContext('2d');
    var end = 0;
    rows.forEach(function (r) { end = Math.max(end, r.t0_ms + r.queue_ms + (r.end_ms || 0)); });
    var sx = (w - 60) / Math.max(end, 1);
    ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, w, h);
    rows.forEach(function (r, i) {
      var y = i * rowH, x0 = 50 + r.t0_ms * sx, xs = x0 + r.queue_ms * sx;
      ctx.fillStyle = '#bbb'; ctx.fillRect(x0, y, Math.max(1, r.queue_ms * sx), rowH * 0.8);
      if (!r.ok) {
        ctx.fillStyle = '#d62728'; ctx.fillRect(xs, y, Math.max(1, (r.end_ms || 0) * sx), rowH * 0.8);
        return;
      }
      ctx.fillStyle = '#ff7f0e'; ctx.fillRect(xs, y, Math.max(1, r.ttft_ms * sx), rowH * 0.8);
      ctx.fillStyle = '#1f77b4';
      ctx.fillRect(xs + r.ttft_ms * sx, y, Math.max(1, (r.e2e_ms - r.ttft_ms) * sx), rowH * 0.8);
    });
    ctx.fillStyle = '#333'; ctx.font = '11px sans-serif';
    for (var k = 0; k <= 4; k++) {
      var ms = end * k / 4;
      ctx.fillText((ms / 1000).toFixed(1) + ' s', 50 + ms * sx - 10, h - 8);
    }
    charts.push({el: el, canvas: cv, series: [rows.map(function (r) { return r.ttft_ms; })]});
  }

  // A chart counts as drawn when it has data and its canvas holds painted, non-white pixels.
  function painted(canvas) {
    var px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    var n = 0;
    for (var i = 0; i < px.length; i += 4) {
      if (px[i + 3] > 0 && (px[i] < 240 || px[i + 1] < 240 || px[i + 2] < 240)) n++;
    }
    return n;
  }

  function verify() {
    var drawn = 0;
    charts.forEach(function (c) {
      var hasData = c.series.some(function (s) { return finiteCount(s) > 0; });
      var ok = hasData && painted(c.canvas) > 200;
      c.el.setAttribute('data-drawn', ok ? 'yes' : 'no');
      if (ok) drawn++;
    });
    body.setAttribute('data-charts-expected', String(charts.length));
    body.setAttribute('data-charts-drawn', String(drawn));
    body.setAttribute('data-report-state', drawn === charts.length ? 'ok' : 'error');
  }

  try {
    if (typeof uPlot === 'undefined') {
      document.getElementById('charts').textContent =
          'Charts were left out: this tokperf was built without its chart library (npm).';
      body.setAttribute('data-charts-expected', '0');
      body.setAttribute('data-charts-drawn', '0');
      body.setAttribute('data-report-state', 'ok');
      return;
    }
    cdfCharts();
    loadCharts();
    timeseriesCharts();
    timelineChart();
    // uPlot paints in a microtask after construction; check once those have run.
    Promise.resolve().then(verify).catch(function (e) {
      body.setAttribute('data-report-state', 'error');
      console.error(e);
    });
  } catch (e) {
    body.setAttribute('data-report-state', 'error');
    throw e;
  } finally {
    body.setAttribute('data-resources', String(performance.getEntriesByType('resource').length));
  }
})();
