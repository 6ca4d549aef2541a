// Layout check, injected into a report by tests/test_report_layout.py and run in headless
// Chromium once the page has loaded: does the page fit the window's width, and can a reader see
// every value? It writes its findings as JSON into <body data-layout="..."> (read back through
// --dump-dom): {"width", "scrollWidth", "checked", "problems": [...]}.
//
// A value (a table cell, a key-finding card's label, value and note, a caption, a chart, a
// heading, a paragraph) is hidden when
//   - its box reaches past the window's left or right edge,
//   - its own content is wider than its box (text spilling over a neighbour, or cut off), or
//   - an ancestor that clips (overflow other than visible) is narrower than its content.
// Only a container marked data-scrolls (a long period statement, whose summary says so) may be
// scrolled sideways to reach later columns; its table's first column (the line names) must
// then stay in view (position: sticky). Every <details> is opened before measuring, so that
// what a reader can unfold is checked too.
window.addEventListener("load", function () {
  Array.prototype.forEach.call(document.querySelectorAll("details"), function (d) { d.open = true; });
  var width = window.innerWidth;
  var problems = [];
  var checked = 0;
  var selector = "td, th, .finding .label, .finding .value, .finding .note, figcaption, img.chart, h1, h2, h3, p";

  function describe(element) {
    var text = (element.textContent || element.getAttribute("alt") || "").trim().replace(/\s+/g, " ");
    var table = element.closest("table");
    var where = table && table.id ? "#" + table.id : element.tagName.toLowerCase();
    return where + " \"" + text.slice(0, 60) + "\"";
  }

  function clipper(element) {
    for (var node = element.parentElement; node && node !== document.body; node = node.parentElement) {
      if (getComputedStyle(node).overflowX !== "visible" && node.scrollWidth > node.clientWidth + 1) {
        return node;
      }
    }
    return null;
  }

  Array.prototype.forEach.call(document.querySelectorAll(selector), function (element) {
    var box = element.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) {
      return;  // not rendered (display: none)
    }
    checked += 1;
    var container = clipper(element);
    var scrolls = container !== null && container.hasAttribute("data-scrolls");
    if (container !== null && !scrolls) {
      problems.push(describe(element) + ": in a container " + container.clientWidth + " px wide whose content is "
                    + container.scrollWidth + " px");
      return;
    }
    if (scrolls && element.matches("td:first-child, th:first-child")
        && getComputedStyle(element).position !== "sticky") {
      problems.push(describe(element) + ": a line name that scrolls out of view with its table");
    }
    if (!scrolls && (box.left < -0.5 || box.right > width + 0.5)) {
      problems.push(describe(element) + ": spans " + Math.round(box.left) + "–" + Math.round(box.right)
                    + " px of a " + width + " px window");
    }
    if (element.tagName !== "IMG" && element.scrollWidth > element.clientWidth + 1) {
      problems.push(describe(element) + ": content " + element.scrollWidth + " px in a box of "
                    + element.clientWidth + " px");
    }
  });
  var scrollWidth = document.documentElement.scrollWidth;
  if (scrollWidth > width) {
    problems.push("the page is " + scrollWidth + " px wide in a " + width + " px window");
  }
  document.body.setAttribute("data-layout", JSON.stringify(
    {width: width, scrollWidth: scrollWidth, checked: checked, problems: problems}));
});
