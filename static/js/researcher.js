// Researcher study page: draws the plotly figures, keeps the live panel fresh, sorts and
// filters the participants table (again after each refresh), fills the exclusion form from a
// row, and asks before buttons marked data-confirm act.
(function () {
  "use strict";
  const REFRESH_MS = 15000;
  const panel = document.getElementById("live-panel");
  const toggle = document.getElementById("auto-refresh");

  function drawFigures(root) {
    if (!window.Plotly) return;
    root.querySelectorAll("script.plotly-figure").forEach(function (node) {
      const target = document.getElementById(node.dataset.target);
      if (!target) return;
      const figure = JSON.parse(node.textContent);
      window.Plotly.react(target, figure.data, figure.layout, { responsive: true, displaylogo: false });
    });
  }

  async function refresh() {
    if (!panel || document.hidden || (toggle && !toggle.checked)) return;
    try {
      const response = await fetch(panel.dataset.url, { credentials: "same-origin" });
      if (response.redirected || !response.ok) return; // signed out or server busy: keep what is shown
      panel.innerHTML = await response.text();
      drawFigures(panel);
      arrangeTable();
    } catch (error) {
      // Offline for a moment: the next tick tries again.
    }
  }

  // Sorting and filtering live here, not in the table, so they survive a refresh.
  const view = { column: -1, ascending: true, numeric: false };
  const filterBox = document.getElementById("participant-filter");
  const showBox = document.getElementById("participant-show");
  const form = document.getElementById("exclusion-form");

  function cellKey(row, column, numeric) {
    const cell = row.cells[column];
    if (!cell) return numeric ? NaN : "";
    const raw = cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent.trim();
    return numeric ? (raw === "" ? NaN : Number(raw)) : raw.toLowerCase();
  }

  function compare(a, b) {
    // Empty numbers sort last whichever the direction, so a blank never hides the extremes.
    if (view.numeric) {
      if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : 1;
      if (Number.isNaN(b)) return -1;
      return view.ascending ? a - b : b - a;
    }
    return view.ascending ? a.localeCompare(b) : b.localeCompare(a);
  }

  function arrangeTable() {
    const table = document.getElementById("participants");
    if (!table) return;
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    if (view.column >= 0) {
      rows.sort(function (r1, r2) {
        return compare(cellKey(r1, view.column, view.numeric), cellKey(r2, view.column, view.numeric));
      });
      rows.forEach(function (row) { body.appendChild(row); });
    }
    const text = filterBox ? filterBox.value.trim().toLowerCase() : "";
    const show = showBox ? showBox.value : "all";
    rows.forEach(function (row) {
      const excluded = row.dataset.excluded === "yes";
      const shown = (!text || row.textContent.toLowerCase().includes(text)) &&
        (show === "all" || (show === "excluded" && excluded) || (show === "included" && row.dataset.verdict === "included") ||
         (show === "manual" && row.dataset.manual !== ""));
      row.hidden = !shown;
    });
    table.querySelectorAll("th[data-sort]").forEach(function (th, i) {
      th.setAttribute("aria-sort", i === view.column ? (view.ascending ? "ascending" : "descending") : "none");
    });
    if (!form) table.querySelectorAll(".review-button").forEach(function (b) { b.hidden = true; });
  }

  document.addEventListener("click", function (event) {
    const heading = event.target.closest("#participants th[data-sort]");
    if (heading) {
      const column = Array.from(heading.parentNode.children).indexOf(heading);
      view.ascending = column === view.column ? !view.ascending : true;
      view.column = column;
      view.numeric = heading.dataset.sort === "number";
      arrangeTable();
      return;
    }
    const review = event.target.closest(".review-button");
    if (review && form) {
      form.querySelector("#exclusion-participant").value = review.dataset.participant;
      form.querySelector("#exclusion-action").value = review.dataset.action;
      form.scrollIntoView({ behavior: "smooth", block: "center" });
      form.querySelector("#exclusion-reason").focus();
    }
  });
  if (filterBox) filterBox.addEventListener("input", arrangeTable);
  if (showBox) showBox.addEventListener("change", arrangeTable);
  if (form) {
    // One rule per click: a second submit while the first is on its way would only be refused.
    form.addEventListener("submit", function () {
      window.setTimeout(function () { form.querySelector("#exclusion-submit").disabled = true; }, 0);
    });
  }

  if (panel) {
    drawFigures(panel);
    arrangeTable();
    window.setInterval(refresh, REFRESH_MS);
  }

  // The study form offers the stimulus sets the chosen design can use (each option names its
  // designs in data-designs; the server refuses any other all the same).
  const design = document.getElementById("design");
  const stimulusSet = document.getElementById("stimulus_set");
  function offerUsableSets() {
    let firstUsable = null;
    Array.from(stimulusSet.options).forEach(function (option) {
      const usable = (option.dataset.designs || "").split(" ").indexOf(design.value) >= 0;
      option.hidden = option.disabled = !usable;
      if (usable && firstUsable === null) firstUsable = option;
    });
    if (stimulusSet.selectedOptions[0]?.disabled && firstUsable) firstUsable.selected = true;
  }
  if (design && stimulusSet) {
    design.addEventListener("change", offerUsableSets);
    offerUsableSets();
  }

  // A button that needs a second thought names it in data-confirm: the Content-Security-Policy
  // allows no inline onclick handlers.
  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-confirm]");
    if (button && !window.confirm(button.dataset.confirm)) event.preventDefault();
  });
})();
