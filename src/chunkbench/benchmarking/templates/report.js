(function () {
  "use strict";
  // The worst → best colour stops and the no-value fill come from report/charts.py: one definition for both sides.
  var STOPS = {{ colour_stops|tojson }}, NOT_MEASURED = {{ not_measured|tojson }};
  document.documentElement.classList.add("js");

  function colour(t) {
    t = Math.min(Math.max(t, 0), 1);
    var n = STOPS.length - 1, seg = Math.min(Math.floor(t * n), n - 1), local = t * n - seg, out = "#";
    for (var i = 0; i < 3; i++) {
      var v = Math.round(STOPS[seg][i] + (STOPS[seg + 1][i] - STOPS[seg][i]) * local);
      out += (v < 16 ? "0" : "") + v.toString(16);
    }
    return out;
  }

  function format(value, digits) {
    if (value === "" || value === null || isNaN(Number(value))) { return "\u2014"; }
    return Number(value).toFixed(digits);
  }

  // Tabs: every panel is visible without JS (and in print); with JS only the selected one.
  document.querySelectorAll("[data-tabs]").forEach(function (box) {
    var buttons = box.querySelectorAll(":scope > .tablist > button[data-tab]");
    var panels = box.querySelectorAll(":scope > [role=tabpanel]");
    function select(id) {
      buttons.forEach(function (b) { b.setAttribute("aria-selected", String(b.dataset.tab === id)); });
      panels.forEach(function (p) { p.classList.toggle("inactive", p.id !== id); });
    }
    buttons.forEach(function (b) { b.addEventListener("click", function () { select(b.dataset.tab); }); });
    if (buttons.length) { select(buttons[0].dataset.tab); }
  });

  // Sortable tables: numbers by their data-v value (missing values last), text otherwise.
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var body = table.tBodies[0];
    table.querySelectorAll("th[data-sort]").forEach(function (th, index) {
      th.addEventListener("click", function () {
        var column = Array.prototype.indexOf.call(th.parentNode.children, th);
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var numeric = th.dataset.sort === "num";
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[column], y = b.cells[column];
          if (numeric) {
            var u = x.dataset.v === "" ? NaN : Number(x.dataset.v), w = y.dataset.v === "" ? NaN : Number(y.dataset.v);
            if (isNaN(u) || isNaN(w)) { return isNaN(u) - isNaN(w); }
            return ascending ? u - w : w - u;
          }
          var c = x.textContent.trim().localeCompare(y.textContent.trim(), undefined, {numeric: true});
          return ascending ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  // Filters: a text box (any cell contains it) and a configuration picker over one table.
  document.querySelectorAll("[data-filter-table]").forEach(function (box) {
    var table = document.getElementById(box.dataset.filterTable);
    var text = box.querySelector("input"), pick = box.querySelector("select"), count = box.querySelector(".count");
    function apply() {
      var needle = (text ? text.value : "").trim().toLowerCase(), config = pick ? pick.value : "", shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var ok = (!needle || row.textContent.toLowerCase().indexOf(needle) >= 0) &&
                 (!config || row.dataset.config === config);
        row.hidden = !ok;
        shown += ok ? 1 : 0;
      });
      if (count) { count.textContent = shown + " rows"; }
    }
    if (text) { text.addEventListener("input", apply); }
    if (pick) { pick.addEventListener("change", apply); }
    apply();
  });

  // Heatmap: recolour every cell with the picked metric; the legend follows.
  var picker = document.getElementById("hm-metric");
  if (picker) {
    picker.addEventListener("change", function () {
      var option = picker.options[picker.selectedIndex], metric = picker.value;
      var low = Number(option.dataset.low), high = Number(option.dataset.high), digits = Number(option.dataset.digits);
      var better = option.dataset.better;
      document.querySelectorAll("#heatmap .hm-cell").forEach(function (cell) {
        if (cell.dataset.state !== "ok") { return; }
        var raw = cell.getAttribute("data-m-" + metric);
        var value = raw === null || raw === "" ? null : Number(raw);
        var t = value === null ? null : (value - low) / (high - low);
        cell.setAttribute("fill", t === null ? NOT_MEASURED : colour(better === "high" ? t : 1 - t));
        cell.dataset.tip = cell.dataset.question + " \u00b7 " + cell.dataset.config + ": " + option.textContent +
          " " + format(value, digits);
      });
      document.getElementById("hm-worst").textContent = format(better === "high" ? low : high, digits);
      document.getElementById("hm-best").textContent = format(better === "high" ? high : low, digits);
    });
  }

  // Tooltips for anything with data-tip.
  var tip = document.getElementById("tip");
  document.addEventListener("mouseover", function (event) {
    var target = event.target.closest ? event.target.closest("[data-tip]") : null;
    if (!target || !tip) { return; }
    tip.textContent = target.dataset.tip;
    tip.style.display = "block";
  });
  document.addEventListener("mousemove", function (event) {
    if (tip && tip.style.display === "block") {
      tip.style.left = Math.min(event.clientX + 14, window.innerWidth - 430) + "px";
      tip.style.top = (event.clientY + 14) + "px";
    }
  });
  document.addEventListener("mouseout", function (event) {
    var target = event.target.closest ? event.target.closest("[data-tip]") : null;
    if (target && tip) { tip.style.display = "none"; }
  });
})();
