// Live updates (SPEC §24): the page works without this script; with it, a server-sent event from the console
// says that what the page shows changed, and the page's <main> is fetched again and put in place. Nothing is
// loaded from anywhere but the console.
(function () {
  "use strict";
  var main = document.querySelector("main[data-live]");
  if (!main || !window.EventSource || !window.fetch || !window.DOMParser) return;
  var busy = false, again = false;
  function editing() {
    var a = document.activeElement;
    return a && main.contains(a) && (a.tagName === "INPUT" || a.tagName === "SELECT") && a.value;
  }
  function refresh() {
    if (busy || editing()) { again = true; return; }
    busy = true; again = false;
    fetch(location.pathname + location.search.replace(/([?&])notice=[^&]*&?/, "$1"), {credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (text === null) return;
        var fresh = new DOMParser().parseFromString(text, "text/html").querySelector("main");
        if (fresh) { main.innerHTML = fresh.innerHTML; append(received); }
        document.body.setAttribute("data-updated", String(Date.now()));
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) refresh(); });
  }
  // a run's new output lines, [number, stream, text] each, appended as text; kept so that a refreshed page
  // that was rendered before some of them still shows them
  var received = [];
  function append(lines) {
    var out = document.getElementById("output");
    if (!out) return;
    var shown = 0, spans = out.querySelectorAll("span[data-n]");
    if (spans.length) shown = parseInt(spans[spans.length - 1].getAttribute("data-n"), 10);
    var nothing = out.querySelector(".nothing");
    lines.forEach(function (line) {
      if (line[0] <= shown) return;
      if (nothing) { out.textContent = ""; nothing = null; }
      var span = document.createElement("span");
      span.className = line[1] === "stderr" ? "stderr" : "stdout";
      span.setAttribute("data-n", String(line[0]));
      span.textContent = line[2];
      out.appendChild(span);
      out.appendChild(document.createTextNode("\n"));
      shown = line[0];
    });
    document.body.setAttribute("data-updated", String(Date.now()));
  }
  var source = new EventSource(main.getAttribute("data-live"));
  source.addEventListener("change", refresh);
  source.addEventListener("output", function (e) {
    var lines = JSON.parse(e.data);
    received = received.concat(lines).slice(-500);
    append(lines);
  });
  document.addEventListener("focusout", function () { if (again) setTimeout(refresh, 0); });
})();
