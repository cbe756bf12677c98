// pslab's "not live yet" note. A notebook opened with its saved widgets, before it runs, shows
// its dashboards and knobs as they were saved: sliders that move nothing. This view asks the
// kernel whether it is there ({hello: true}); when no answer has come and ipywidgets has marked
// the container's views "disconnected" (their models have no kernel behind them), it says at the
// top of its container (.pslab-dashboard or .pslab-knob) that it is a picture and what to press,
// hides the status ("ready" would be a lie) and the broken-link marks, and greys the controls.
// The kernel's answer ({live: true}) takes the note away.

const STYLE = ".pslab-picture .pslab-status { display: none; }\n" +
  ".pslab-picture .jupyter-widgets-disconnected::before, " +
  ".pslab-picture.jupyter-widgets-disconnected::before { content: none !important; " +
  "display: none !important; }\n" +
  ".pslab-picture :is(.widget-slider, .widget-dropdown, .widget-toggle-buttons) " +
  "{ opacity: 0.55; }";
const SAID = "Not live yet: a picture saved with the notebook. The controls move nothing " +
  "until the notebook runs: choose Run ▸ Run All Cells, then use them.";

// A part of a dashboard or knob that shows older values than its controls carries the class
// pslab-faded (pslab.notebook.dashboard.show_faded): drawn pale until it is of them again.
const FADED_STYLE = ".pslab-faded { opacity: 0.45; }";

function render({ model, el }) {
  if (!document.getElementById("pslab-faded-style")) {
    const style = document.createElement("style");
    style.id = "pslab-faded-style";
    style.textContent = FADED_STYLE;
    document.head.append(style);
  }
  let live = false, note = null, tries = 0, box = null;
  function alive() {
    live = true;
    if (box) box.classList.remove("pslab-picture");
    if (note) { note.remove(); note = null; }
  }
  function picture() {
    if (live || note) return;
    box = el.closest(".pslab-dashboard, .pslab-knob");
    if (!box) { if (tries++ < 20) setTimeout(picture, 500); return; }
    const saved = ".jupyter-widgets-disconnected";
    if (!(box.matches(saved) || box.querySelector(saved))) return;
    if (!document.getElementById("pslab-picture-style")) {
      const style = document.createElement("style");
      style.id = "pslab-picture-style";
      style.textContent = STYLE;
      document.head.append(style);
    }
    note = document.createElement("div");
    note.className = "pslab-not-live";
    note.style.cssText = "font:bold 13px/1.3 sans-serif;color:#7a4a00;background:#fff4e0;" +
      "border:1px solid #b26a00;padding:3px 6px;margin:2px 4px";
    note.textContent = SAID;
    el.append(note);
    box.classList.add("pslab-picture");
  }
  model.on("msg:custom", msg => { if (msg && msg.live) alive(); });
  if (typeof model.send === "function") model.send({ hello: true });
  setTimeout(picture, 300);
  return () => alive();
}

export default { render };
