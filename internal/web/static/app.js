// portalwatch's page works without this file; with it, times read as
// "4 min ago" stay current and show the exact time in the reader's own
// time zone, j/k/o move through the news as in a feed reader, x opens a
// collapsed redesign, and feed addresses copy with one click. The server
// writes the same relative times (web.relativeTime): keep the two alike.
"use strict";

(function () {
  function relative(then, now) {
    var d = (now - then) / 1000;
    var future = d < 0;
    if (future) d = -d;
    var span;
    if (d < 45) return future ? "in a moment" : "just now";
    if (d < 90 * 60) span = Math.max(1, Math.round(d / 60)) + " min";
    else if (d < 36 * 3600) span = Math.round(d / 3600) + " h";
    else if (d < 14 * 86400) span = Math.round(d / 86400) + " days";
    else return "on " + then.toLocaleDateString(undefined, { day: "numeric", month: "short", year: "numeric" });
    return future ? "in " + span : span + " ago";
  }

  function refreshTimes() {
    var now = new Date();
    document.querySelectorAll("time[data-ago]").forEach(function (el) {
      var then = new Date(el.getAttribute("datetime"));
      if (isNaN(then)) return;
      el.textContent = relative(then, now);
      el.title = then.toLocaleString(undefined, { dateStyle: "full", timeStyle: "short" });
    });
  }

  // j/k move a mark through the stories, o (or Enter on it) opens the
  // marked story's link in a new tab, x opens or closes a redesign.
  var current = -1;
  function stories() {
    return Array.prototype.slice.call(document.querySelectorAll(".river > li.story"));
  }
  function mark(i) {
    var all = stories();
    if (!all.length) return;
    i = Math.max(0, Math.min(all.length - 1, i));
    if (all[current]) all[current].classList.remove("current");
    current = i;
    var el = all[current];
    el.classList.add("current");
    el.scrollIntoView({ block: "nearest" });
    var link = el.querySelector(".headline a, summary");
    if (link) link.focus({ preventScroll: true });
  }
  function onKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
    var all = stories();
    if (!all.length) return;
    switch (e.key) {
      case "j": mark(current + 1); break;
      case "k": mark(current - 1); break;
      case "o": {
        var el = all[current];
        var link = el && el.querySelector(".headline a");
        if (link) window.open(link.href, "_blank", "noopener,noreferrer");
        break;
      }
      case "x": {
        var d = all[current] && all[current].querySelector("details");
        if (d) d.open = !d.open;
        break;
      }
      default: return;
    }
    e.preventDefault();
  }

  // Copy buttons stay hidden without this file: they could not work.
  function setUpCopy() {
    document.querySelectorAll("button[data-copy]").forEach(function (b) {
      b.hidden = false;
      b.addEventListener("click", function () {
        var src = document.getElementById(b.getAttribute("data-copy"));
        if (!src) return;
        var done = function () {
          b.textContent = "Copied";
          setTimeout(function () { b.textContent = "Copy"; }, 2000);
        };
        // The older way, where the clipboard API is missing or refused:
        // the address ends up selected either way, for a manual copy.
        var byCommand = function () {
          src.focus();
          src.select();
          if (document.execCommand("copy")) done();
        };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(src.value).then(done, byCommand);
        } else {
          byCommand();
        }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    refreshTimes();
    setInterval(refreshTimes, 30000);
    document.addEventListener("keydown", onKey);
    setUpCopy();
    document.documentElement.classList.add("js");
  });
})();
