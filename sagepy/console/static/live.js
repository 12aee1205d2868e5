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
        if (fresh) main.innerHTML = fresh.innerHTML;
        document.body.setAttribute("data-updated", String(Date.now()));
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) refresh(); });
  }
  var source = new EventSource(main.getAttribute("data-live"));
  source.addEventListener("change", refresh);
  document.addEventListener("focusout", function () { if (again) setTimeout(refresh, 0); });
})();
