// Researcher study page: draws the plotly figures, keeps the live panel fresh, and asks
// before buttons marked data-confirm act.
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
    } catch (error) {
      // Offline for a moment: the next tick tries again.
    }
  }

  if (panel) {
    drawFigures(panel);
    window.setInterval(refresh, REFRESH_MS);
  }

  // A button that needs a second thought names it in data-confirm: the Content-Security-Policy
  // allows no inline onclick handlers.
  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-confirm]");
    if (button && !window.confirm(button.dataset.confirm)) event.preventDefault();
  });
})();
