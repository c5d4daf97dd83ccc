// sessionquery viewer: keyboard, loading more events, live updates, highlights, copy.
// Reads only data-* attributes the server wrote; inserts only text or server-rendered
// fragments of its own origin; runs nothing from session data. The same file is inlined in
// exported pages (data-page="export"), where it only reads the page itself.
(function () {
  "use strict";

  var body, conv, page, sessionId, focusIndex = -1;

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $all(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  function sessionPath(suffix) {
    return "/s/" + encodeURIComponent(sessionId) + (suffix || "");
  }

  function apiPath(suffix) {
    return "/api/s/" + encodeURIComponent(sessionId) + suffix;
  }

  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  // -- highlights ---------------------------------------------------------------------------

  function words(query) {
    return (query || "").toLowerCase().split(/[^\p{L}\p{N}_]+/u).filter(function (w) { return w.length > 0; });
  }

  function clearMarks(root) {
    $all("mark.hl", root).forEach(function (mark) {
      var parent = mark.parentNode;
      parent.replaceChild(document.createTextNode(mark.textContent), mark);
      parent.normalize();
    });
  }

  // Wrap every occurrence of the query's words in <mark class="hl"> (text nodes only).
  // With `phrase`, the query is found as it is typed (spaces match any whitespace).
  function highlight(root, query, phrase) {
    var list = phrase ? [query.trim()] : words(query);
    if (!root || list.length === 0 || !list[0]) { return 0; }
    var escaped = list.map(function (w) {
      return w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\s+/g, "\\s+");
    });
    var pattern = new RegExp("(" + escaped.join("|") + ")", "giu");
    var tester = new RegExp(pattern.source, "iu");
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        var p = node.parentNode;
        if (!p || p.closest("mark, script, style, button, summary.noh")) { return NodeFilter.FILTER_REJECT; }
        return tester.test(node.nodeValue) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP;
      }
    });
    var nodes = [], node, count = 0;
    while ((node = walker.nextNode())) { nodes.push(node); }
    nodes.forEach(function (text) {
      var value = text.nodeValue, last = 0, frag = document.createDocumentFragment(), m;
      pattern.lastIndex = 0;
      while ((m = pattern.exec(value)) !== null) {
        if (m[0].length === 0) { pattern.lastIndex++; continue; }
        frag.appendChild(document.createTextNode(value.slice(last, m.index)));
        var mark = document.createElement("mark");
        mark.className = "hl";
        mark.textContent = m[0];
        frag.appendChild(mark);
        last = m.index + m[0].length;
        count++;
      }
      frag.appendChild(document.createTextNode(value.slice(last)));
      text.parentNode.replaceChild(frag, text);
    });
    return count;
  }

  function openFolds(el) {
    var d = el && el.closest("details");
    while (d) { d.open = true; d = d.parentElement && d.parentElement.closest("details"); }
  }

  // -- messages and keyboard ------------------------------------------------------------------

  function messages() { return $all("#conversation article.msg, ol.hits li.hit, table.sessions tbody tr"); }

  function focusItem(index) {
    var list = messages();
    if (list.length === 0) { return; }
    focusIndex = Math.max(0, Math.min(index, list.length - 1));
    $all(".kfocus").forEach(function (e) { e.classList.remove("kfocus"); });
    var item = list[focusIndex];
    item.classList.add("kfocus");
    item.scrollIntoView({ block: "center" });
    if (focusIndex === list.length - 1) { loadMore("later"); }
    if (focusIndex === 0) { loadMore("earlier"); }
  }

  function currentIndex() {
    var list = messages();
    if (focusIndex >= 0 && focusIndex < list.length) { return focusIndex; }
    var mid = window.innerHeight / 3;
    for (var i = 0; i < list.length; i++) {
      if (list[i].getBoundingClientRect().bottom > mid) { return i - 1; }
    }
    return list.length - 1;
  }

  // Enter on a focused row of the sessions or search page opens it.
  function openFocused() {
    var row = $("tr.kfocus a.title, li.hit.kfocus a.snippet");
    if (!row) { return false; }
    window.location.href = row.href;
    return true;
  }

  function follow(rel) {
    var link = $('a[rel="' + rel + '"]');
    if (link) { window.location.href = link.href; }
  }

  function toggleHelp() {
    var help = $("#help");
    if (!help) { return; }
    if (help.open) { help.close(); } else { help.showModal(); }
  }

  function switchView() {
    var other = $('.toggle a:not(.on)');
    if (other) { window.location.href = other.href; }
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var help = $("#help");
    if (event.key === "Escape") {
      if (help && help.open) { help.close(); }
      if (typing(event.target)) { event.target.blur(); }
      return;
    }
    if (typing(event.target)) { return; }
    switch (event.key) {
      case "j": focusItem(currentIndex() + 1); break;
      case "k": focusItem(currentIndex() - 1); break;
      case "g": focusItem(0); break;
      case "G": focusItem(messages().length - 1); break;
      case "n": stepHit(1); break;
      case "N": stepHit(-1); break;
      case "[": follow("prev"); break;
      case "]": follow("next"); break;
      case "s": switchView(); break;
      case "?": toggleHelp(); break;
      case "Enter": if (!openFocused()) { return; } break;
      case "/":
        var box = $("#find") || $("header.top input[type=search]");
        if (box) { box.focus(); box.select(); }
        break;
      default: return;
    }
    event.preventDefault();
  }

  // -- session page: windows, targets, hits ---------------------------------------------------

  var loading = {};

  function insertFragment(html, where, anchor) {
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    var first = tpl.content.firstElementChild;
    var q = body.dataset.q;
    if (q) { highlight(tpl.content, q); }
    if (where === "before") { anchor.parentNode.insertBefore(tpl.content, anchor); }
    else { anchor.parentNode.insertBefore(tpl.content, anchor.nextSibling); }
    return first;
  }

  function loadMore(direction) {
    var button = $("#conversation button.load." + direction);
    if (!button || loading[direction]) { return Promise.resolve(false); }
    loading[direction] = true;
    var start = +button.dataset.start, end = +button.dataset.end;
    var view = conv.dataset.view;
    var keep = direction === "earlier" ? document.documentElement.scrollHeight - window.scrollY : 0;
    return fetch(apiPath("/window?view=" + view + "&start=" + start + "&end=" + end), { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
      .then(function (html) {
        if (direction === "earlier") {
          insertFragment(html, "after", button);
          conv.dataset.start = start;
          if (start > 0) {
            button.dataset.end = start;
            button.dataset.start = Math.max(0, start - (end - start));
            button.textContent = "Load " + (start - button.dataset.start) + " earlier";
            conv.insertBefore(button, conv.firstChild);
          } else { button.remove(); }
          window.scrollTo(0, document.documentElement.scrollHeight - keep);
        } else {
          insertFragment(html, "before", button);
          conv.dataset.end = end;
          var total = +conv.dataset.total;
          if (end < total) {
            button.dataset.start = end;
            button.dataset.end = Math.min(total, end + (end - start));
          } else { button.remove(); }
        }
        loading[direction] = false;
        return true;
      })
      .catch(function () { loading[direction] = false; return false; });
  }

  function watchLoaders() {
    if (!("IntersectionObserver" in window)) { return; }
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) {
          loadMore(entry.target.classList.contains("earlier") ? "earlier" : "later");
        }
      });
    }, { rootMargin: "600px" });
    $all("#conversation button.load").forEach(function (b) { observer.observe(b); });
  }

  function markTarget(seq, scroll) {
    var el = document.getElementById("seq-" + seq);
    if (!el) { return false; }
    $all("article.target").forEach(function (e) { e.classList.remove("target"); });
    el.classList.add("target");
    var mark = $("mark.hl", el);
    openFolds(mark || el);
    if (scroll) { (mark || el).scrollIntoView({ block: "center" }); }
    return true;
  }

  function hitSeqs() {
    var bar = $(".hitbar[data-hits]");
    return bar ? bar.dataset.hits.split(" ").map(Number) : [];
  }

  function stepHit(delta) {
    var hits = hitSeqs();
    if (hits.length === 0) { return; }
    var at = +(conv && conv.dataset.target || -1), next;
    if (delta > 0) { next = hits.filter(function (s) { return s > at; })[0]; if (next === undefined) { next = hits[0]; } }
    else { var before = hits.filter(function (s) { return s < at; }); next = before.length ? before[before.length - 1] : hits[hits.length - 1]; }
    conv.dataset.target = next;
    var bar = $(".hitbar span");
    if (bar) { bar.firstChild.nodeValue = "hit " + (hits.indexOf(next) + 1) + " of " + hits.length + " for "; }
    if (markTarget(next, true)) {
      history.replaceState(null, "", pathWithSeq(next) + "#seq-" + next);
      return;
    }
    window.location.href = pathWithSeq(next) + "#seq-" + next;
  }

  function pathWithSeq(seq) {
    var params = new URLSearchParams(window.location.search);
    return sessionPath("/" + seq) + (params.toString() ? "?" + params.toString() : "");
  }

  function onClick(event) {
    var t = event.target;
    if (!(t instanceof Element)) { return; }
    var help = t.closest("[data-help]");
    if (help) { toggleHelp(); return; }
    var copy = t.closest("button[data-copy]");
    if (copy) { copyText(copy); return; }
    if (t.closest(".hit-next")) { stepHit(1); return; }
    if (t.closest(".hit-prev")) { stepHit(-1); return; }
    var show = t.closest("button.show-replaced");
    if (show) { showReplaced(show); return; }
    var loader = t.closest("button.load");
    if (loader) { loadMore(loader.classList.contains("earlier") ? "earlier" : "later"); return; }
    var link = t.closest("a[data-seq]");
    if (link && conv && !event.ctrlKey && !event.metaKey && !event.shiftKey) {
      var seq = link.dataset.seq;
      if (document.getElementById("seq-" + seq)) {
        event.preventDefault();
        markTarget(seq, true);
        history.replaceState(null, "", "#seq-" + seq);
      }
    }
  }

  function copyText(button) {
    var text = button.dataset.copy, done = function () {
      var old = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = old; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(button, done); });
    } else { fallbackCopy(button, done); }
  }

  function fallbackCopy(button, done) {
    var input = button.parentNode.querySelector("input.resume-command");
    if (!input) { return; }
    input.focus();
    input.select();
    try { if (document.execCommand("copy")) { done(); } } catch (e) { /* leave it selected */ }
  }

  function showReplaced(button) {
    var seq = button.dataset.seq, box = button.closest("article");
    var open = box.querySelector(".replaced-list");
    if (open) { open.remove(); button.textContent = "Show what it replaced"; return; }
    if (body.dataset.page === "export") {
      var holder = document.createElement("div");
      holder.className = "replaced-list";
      button.closest(".replaces").dataset.replaces.split(" ").forEach(function (s) {
        var src = document.getElementById("seq-" + s);
        if (src) { var c = src.cloneNode(true); c.removeAttribute("id"); holder.appendChild(c); }
      });
      box.appendChild(holder);
      button.textContent = "Hide what it replaced";
      return;
    }
    fetch(apiPath("/replaced/" + seq), { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var holder = document.createElement("div");
        holder.className = "replaced-list";
        box.appendChild(holder);
        var tpl = document.createElement("template");
        tpl.innerHTML = html;
        holder.appendChild(tpl.content);
        button.textContent = "Hide what it replaced";
      });
  }

  // -- live updates ---------------------------------------------------------------------------

  function pollSession() {
    if (document.hidden || !conv || $("#conversation button.load.later")) { return; }
    var view = conv.dataset.view;
    fetch(apiPath("/state?view=" + view), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (state) {
        if (!state) { return; }
        var end = +conv.dataset.end;
        if (state.events === +conv.dataset.events) { return; }
        // Closers a read adds to an interrupted turn are not stored: drop them, load again.
        $all("#conversation > article.synthetic").forEach(function (a) { a.remove(); end--; });
        conv.dataset.events = state.events;
        if (state.total > end) {
          return fetch(apiPath("/window?view=" + view + "&start=" + end + "&end=" + state.total), { credentials: "same-origin" })
            .then(function (r) { return r.text(); })
            .then(function (html) {
              var tpl = document.createElement("template");
              tpl.innerHTML = html;
              $all("article", tpl.content).forEach(function (a) { a.classList.add("fresh"); });
              conv.appendChild(tpl.content);
              conv.dataset.end = state.total;
              conv.dataset.total = state.total;
            });
        }
      })
      .catch(function () {});
  }

  function pollStamp() {
    if (document.hidden) { return; }
    fetch("/api/stamp", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) {
        if (s && s.stamp !== body.dataset.stamp) {
          var note = $(".live-note");
          if (note) { note.hidden = false; }
        }
      })
      .catch(function () {});
  }

  function fillTitles() {
    var pending = $all("[data-title-pending]");
    if (pending.length === 0) { return; }
    var ids = pending.map(function (e) { return "id=" + encodeURIComponent(e.dataset.titlePending); });
    fetch("/api/titles?" + ids.join("&"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (answer) {
        if (!answer) { return; }
        var got = 0;
        pending.forEach(function (e) {
          var id = e.dataset.titlePending;
          if (Object.prototype.hasOwnProperty.call(answer.titles, id)) {
            var title = answer.titles[id];
            e.textContent = title || "untitled";
            if (!title) { e.parentNode.classList.add("untitled"); }
            e.removeAttribute("data-title-pending");
            e.classList.remove("pending");
            got++;
          }
        });
        if (got > 0) { setTimeout(fillTitles, 50); }
      })
      .catch(function () {});
  }

  // -- exported page: find in page ------------------------------------------------------------

  function setupFind() {
    var box = $("#find"), count = $(".find-count"), marks = [], at = -1;
    if (!box) { return; }
    function run() {
      clearMarks(conv);
      marks = [];
      at = -1;
      var q = box.value.trim();
      if (q) {
        $all("#conversation details").forEach(function (d) { d.open = true; });
        highlight(conv, q, true);
        marks = $all("#conversation mark.hl");
      }
      count.textContent = q ? (marks.length ? marks.length + " found" : "not found") : "";
      if (marks.length) { step(1); }
    }
    function step(delta) {
      if (!marks.length) { return; }
      if (at >= 0) { marks[at].classList.remove("current"); }
      at = (at + delta + marks.length) % marks.length;
      marks[at].classList.add("current");
      marks[at].scrollIntoView({ block: "center" });
      count.textContent = (at + 1) + " of " + marks.length;
    }
    var timer = null;
    box.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { timer = null; run(); }, 120);
    });
    box.addEventListener("keydown", function (e) {
      if (e.key === "Enter") { e.preventDefault(); if (timer) { clearTimeout(timer); timer = null; run(); } else { step(e.shiftKey ? -1 : 1); } }
    });
    box.form.addEventListener("submit", function (e) { e.preventDefault(); });
  }

  // -- start ----------------------------------------------------------------------------------

  function start() {
    body = document.body;
    page = body.dataset.page;
    conv = $("#conversation");
    sessionId = body.dataset.session || (conv && conv.dataset.session) || "";
    document.addEventListener("keydown", onKey);
    document.addEventListener("click", onClick);
    fillTitles();
    if (page === "search") {
      var hits = $("ol.hits");
      if (hits) { highlight(hits, body.dataset.q); }
      var retry = $("[data-retry]");
      if (retry) { setTimeout(function () { window.location.reload(); }, +retry.dataset.retry); }
    }
    if (page === "sessions") { setInterval(pollStamp, 5000); }
    if (page === "export") { setupFind(); }
    if (page === "session" && conv) {
      if (body.dataset.q) { highlight(conv, body.dataset.q); }
      watchLoaders();
      var hash = /^#seq-(\d+)$/.exec(window.location.hash);
      var target = hash ? hash[1] : conv.dataset.target;
      if (target !== undefined && target !== "") {
        if (!markTarget(target, true) && hash) {
          window.location.replace(pathWithSeq(target) + window.location.hash);
        }
      }
      setInterval(pollSession, 3000);
    }
    if (page === "export") {
      var h = /^#seq-(\d+)$/.exec(window.location.hash);
      if (h) { markTarget(h[1], true); }
    }
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); }
  else { start(); }
})();
