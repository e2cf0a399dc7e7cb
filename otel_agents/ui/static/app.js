// The single-page app's entry: reads location and shows the sessions page or a session page.
import { clear, errorBox } from "/static/api.js";
import { showSessions } from "/static/sessions.js";
import { showSession } from "/static/session.js";

const SESSION_PATH = /^\/s\/([^/]+)\/?$/;

let leave = null; // the shown page's clean-up (timers, event sources)

export function navigate(url) {
  history.pushState(null, "", url);
  route();
}

function route() {
  if (leave) leave();
  leave = null;
  const main = document.getElementById("main");
  clear(main);
  const match = SESSION_PATH.exec(location.pathname);
  try {
    leave = match ? showSession(main, decodeURIComponent(match[1]), navigate) : showSessions(main, navigate);
  } catch (error) {
    main.appendChild(errorBox(error));
  }
}

// Links inside the app change the page without reloading it.
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("a[data-nav]");
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
  event.preventDefault();
  navigate(link.getAttribute("href"));
});
window.addEventListener("popstate", route);
// A ?token= of the first load leaves the address bar (and the history) whatever the page or tab: the
// server's cookie carries it from now on.
const first = new URL(location.href);
if (first.searchParams.has("token")) {
  first.searchParams.delete("token");
  history.replaceState(null, "", first);
}
route();
