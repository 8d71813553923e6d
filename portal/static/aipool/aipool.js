// aipool portal: small progressive enhancements. Everything works without it except live updates (htmx).
(function () {
  "use strict";

  function onReady(fn) {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  }

  // Navigation toggle on small screens.
  function setupNav() {
    var toggle = document.querySelector(".nav-toggle");
    var nav = document.getElementById("main-nav");
    if (!toggle || !nav) return;
    toggle.addEventListener("click", function () {
      var open = nav.classList.toggle("open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }

  // Forms that ask before they do something that cannot be undone (cancel a job, revoke a token).
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  }, true);

  // Filter selects that apply on change.
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (el.hasAttribute && el.hasAttribute("data-autosubmit") && el.form) el.form.requestSubmit();
  });

  // Copy buttons: data-copy="#id-of-input".
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var done = function () {
      var label = button.textContent;
      button.textContent = "Copied";
      button.setAttribute("aria-live", "polite");
      setTimeout(function () { button.textContent = label; }, 2000);
    };
    var fallback = function () {
      source.focus();
      source.select();
      try { document.execCommand("copy"); done(); } catch (e) { /* the secret stays selected for Ctrl+C */ }
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(source.value).then(done, fallback);
    } else {
      fallback();
    }
  });

  // Tabs (role=tablist): click or arrow keys.
  function setupTabs(root) {
    root.querySelectorAll('[role="tablist"]').forEach(function (list) {
      if (list.dataset.ready) return;
      list.dataset.ready = "1";
      var tabs = Array.prototype.slice.call(list.querySelectorAll('[role="tab"]'));
      function select(tab) {
        tabs.forEach(function (t) {
          var on = t === tab;
          t.setAttribute("aria-selected", on ? "true" : "false");
          t.tabIndex = on ? 0 : -1;
          var panel = document.getElementById(t.getAttribute("aria-controls"));
          if (panel) panel.hidden = !on;
        });
        var log = document.querySelector("#" + tab.getAttribute("aria-controls") + " .log");
        if (log) log.scrollTop = log.scrollHeight;
      }
      tabs.forEach(function (tab, i) {
        tab.addEventListener("click", function () { select(tab); });
        tab.addEventListener("keydown", function (e) {
          var next = e.key === "ArrowRight" ? tabs[(i + 1) % tabs.length] : e.key === "ArrowLeft" ? tabs[(i - 1 + tabs.length) % tabs.length] : null;
          if (next) { select(next); next.focus(); e.preventDefault(); }
        });
      });
    });
  }

  // Logs follow their end unless the reader scrolled up.
  function setupLogs(root) {
    root.querySelectorAll("pre.log[id^='log-']").forEach(function (log) {
      if (log.dataset.ready) return;
      log.dataset.ready = "1";
      log.dataset.stick = "1";
      log.scrollTop = log.scrollHeight;
      log.addEventListener("scroll", function () {
        log.dataset.stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 24 ? "1" : "";
      });
    });
  }
  document.addEventListener("htmx:afterSwap", function (event) {
    var log = event.target.closest ? event.target.closest("pre.log") : null;
    if (!log && event.target.parentElement) log = event.target.parentElement.closest("pre.log");
    if (log && log.dataset.stick) log.scrollTop = log.scrollHeight;
  });
  document.addEventListener("htmx:afterSettle", function () {
    document.querySelectorAll("pre.log[id^='log-']").forEach(function (log) {
      if (log.dataset.stick) log.scrollTop = log.scrollHeight;
    });
  });

  // The script editor: line numbers in a gutter that scrolls with the text.
  function setupEditors(root) {
    root.querySelectorAll(".code-editor").forEach(function (editor) {
      if (editor.dataset.ready) return;
      editor.dataset.ready = "1";
      var gutter = editor.querySelector(".gutter");
      var area = editor.querySelector("textarea");
      function render() {
        var lines = area.value.split("\n").length;
        var text = "";
        for (var i = 1; i <= lines; i++) text += i + "\n";
        gutter.textContent = text;
        gutter.scrollTop = area.scrollTop;
      }
      area.addEventListener("input", render);
      area.addEventListener("scroll", function () { gutter.scrollTop = area.scrollTop; });
      area.addEventListener("keydown", function (e) {
        // Tab indents inside the script; Escape then Tab leaves the editor (keyboard users are not trapped).
        if (e.key === "Escape") { area.dataset.escaped = "1"; return; }
        if (e.key === "Tab" && !e.shiftKey && !area.dataset.escaped) {
          e.preventDefault();
          var start = area.selectionStart, end = area.selectionEnd;
          area.setRangeText("    ", start, end, "end");
          render();
          area.dispatchEvent(new Event("input", { bubbles: true }));
        }
        if (e.key !== "Tab") delete area.dataset.escaped;
      });
      render();
    });
  }

  // The submission form: command or script, partitions of the chosen group, which fields were touched.
  function setupJobForm() {
    var form = document.getElementById("job-form");
    if (!form) return;
    var touched = document.getElementById("touched");
    function touch(name) {
      if (!name || name === "touched" || name === "csrfmiddlewaretoken") return;
      var names = touched.value ? touched.value.split(",") : [];
      if (names.indexOf("*") >= 0 || names.indexOf(name) >= 0) return;
      names.push(name);
      touched.value = names.join(",");
    }
    form.addEventListener("input", function (e) { touch(e.target.name); }, true);
    form.addEventListener("change", function (e) { touch(e.target.name); }, true);
    form.addEventListener("submit", function () { touched.value = "*"; });

    function showMode() {
      var checked = form.querySelector('input[name="mode"]:checked');
      var mode = checked ? checked.value : "command";
      form.querySelectorAll("[data-mode-panel]").forEach(function (panel) {
        panel.hidden = panel.getAttribute("data-mode-panel") !== mode;
      });
    }
    form.querySelectorAll('input[name="mode"]').forEach(function (r) { r.addEventListener("change", showMode); });
    showMode();

    var data = document.getElementById("partitions-by-group");
    var byGroup = data ? JSON.parse(data.textContent) : {};
    var group = form.querySelector('select[name="group"]');
    var partition = form.querySelector('select[name="partition"]');
    function filterPartitions() {
      if (!group || !partition) return;
      var allowed = byGroup[group.value] || [];
      Array.prototype.forEach.call(partition.options, function (option) {
        var ok = option.value === "" || allowed.indexOf(option.value) >= 0;
        option.hidden = !ok;
        option.disabled = !ok;
      });
      if (partition.selectedOptions.length && partition.selectedOptions[0].disabled) partition.value = "";
    }
    if (group) group.addEventListener("change", filterPartitions);
    filterPartitions();

    // A suggestion of the checker: one click puts its change into the form, which is then checked again.
    form.addEventListener("click", function (event) {
      var button = event.target.closest && event.target.closest("[data-apply]");
      if (!button) return;
      var change = JSON.parse(button.getAttribute("data-apply"));
      Object.keys(change).forEach(function (name) {
        var field = form.elements[name];
        if (!field) return;
        if (field.type === "checkbox") field.checked = !!change[name];
        else field.value = change[name];
        touch(name);
      });
      form.dispatchEvent(new Event("change", { bubbles: true }));
    });
  }

  // Field errors swapped in by the checker: mark their inputs invalid for assistive technology.
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var slot = event.detail && event.detail.target;
    if (!slot || !slot.id || slot.id.indexOf("err-") !== 0) return;
    var input = document.getElementById("id_" + slot.id.slice(4));
    if (!input) return;
    if (slot.textContent.trim()) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  });

  function setup(root) {
    setupTabs(root);
    setupLogs(root);
    setupEditors(root);
  }

  onReady(function () {
    setupNav();
    setupJobForm();
    setup(document);
  });
  document.addEventListener("htmx:load", function (event) { setup(event.target.parentElement || document); });
})();
