// leader-dashboard: re-renders the page's live part (#live) each time the server's event stream
// (/events) says so, by fetching the same page's fragment. No build chain, no library.
(() => {
  "use strict";
  const live = document.getElementById("live");
  const offline = document.getElementById("offline");
  if (!live || !window.EventSource) return;
  let busy = false;
  const show = (down) => { if (offline) offline.hidden = !down; };
  const refresh = () => {
    if (busy) return;
    busy = true;
    fetch(location.href, {
      headers: { "x-leader-fragment": "1" },
      credentials: "same-origin",
      cache: "no-store",
    })
      .then((response) => response.text())
      .then((html) => {
        live.innerHTML = html;
        live.dataset.refreshed = String(Date.now());
        show(false);
      })
      .catch(() => show(true))
      .finally(() => { busy = false; });
  };
  const events = new EventSource("/events");
  events.addEventListener("refresh", refresh);
  events.onerror = () => show(true);
  events.onopen = () => show(false);
})();
