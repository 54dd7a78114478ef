// forge view: the one script of the pages. A live run's page shows the
// jobs under way with their phases and adds each trial that finishes to
// its list, from the server's events, and draws itself again when the run
// ends or forge stops playing it; nothing else needs a script. Candidate
// text is set with textContent, never parsed as HTML.
"use strict";
(function () {
  var table = document.getElementById("trialtable");
  if (!table || !table.dataset.events || !window.EventSource) return;
  var body = table.tBodies[0];
  var count = document.getElementById("trialcount");
  var es = new EventSource(table.dataset.events);
  function td(text, cls) {
    var c = document.createElement("td");
    if (cls) c.className = cls;
    c.textContent = text;
    return c;
  }
  es.addEventListener("trial", function (e) {
    var t = JSON.parse(e.data);
    var tr = document.createElement("tr");
    tr.className = "fresh";
    var name = document.createElement("td");
    var a = document.createElement("a");
    a.href = t.href;
    a.textContent = t.name;
    name.appendChild(a);
    tr.appendChild(name);
    var st = document.createElement("td");
    var pill = document.createElement("span");
    pill.className = "pill " + (t.health === "ok" ? "ok" : "failed");
    pill.textContent = t.status;
    st.appendChild(pill);
    tr.appendChild(st);
    tr.appendChild(td(t.score, "num"));
    tr.appendChild(td(t.runtime, "num"));
    tr.appendChild(td(t.error, "notes"));
    body.insertBefore(tr, body.firstChild);
    if (count) count.textContent = String(t.n);
  });
  var running = document.getElementById("running");
  es.addEventListener("running", function (e) {
    if (!running) return;
    var jobs = JSON.parse(e.data);
    while (running.firstChild) running.removeChild(running.firstChild);
    jobs.forEach(function (j) {
      var li = document.createElement("li");
      var name = document.createElement("strong");
      name.textContent = j.job;
      li.appendChild(name);
      li.appendChild(document.createTextNode(" " + j.phase + " · " + j.elapsed));
      running.appendChild(li);
    });
    var n = document.getElementById("runningcount");
    if (n) n.textContent = String(jobs.length);
  });
  // When the run ends, or forge stops playing it, the page is drawn again
  // as the server now has it (its standings, winner and matrix, or the
  // stopped run's notice): the page's own address fetched and its <main>
  // put in place of this one, without a reload.
  function redraw(state) {
    es.close();
    if (running) while (running.firstChild) running.removeChild(running.firstChild);
    var badge = document.getElementById("livebadge");
    if (badge) badge.textContent = state;
    fetch(location.href, { cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error(r.status);
        return r.text();
      })
      .then(function (html) {
        var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var main = document.querySelector("main");
        if (!next || !main) throw new Error("no main");
        main.replaceWith(document.adoptNode(next));
      })
      .catch(function () {
        if (badge) badge.textContent = state + ": reload to see the run as it is";
      });
  }
  es.addEventListener("finished", function () { redraw("finished"); });
  es.addEventListener("stopped", function () { redraw("stopped"); });
})();
