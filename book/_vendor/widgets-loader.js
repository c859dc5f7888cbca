/* Load the vendored ipywidgets HTML manager (require.js, then embed-amd.js) only after MathJax 3
 * has started. require.js defines a global `define`; a MathJax 3 bundle that runs after it
 * registers itself as an anonymous AMD module instead of typesetting the page. The manager still
 * speaks MathJax 2 (`MathJax.Hub.Queue`), so a two-line bridge to MathJax 3 is added first. */
(function () {
  "use strict";
  var here = document.currentScript.src;
  var base = here.substring(0, here.lastIndexOf("/") + 1) + "widgets/";

  function load(name) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = base + name;
      s.onload = resolve;
      s.onerror = reject;
      document.head.appendChild(s);
    });
  }

  function mathjaxStarted() {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) {
      return mj.startup.promise;
    }
    return Promise.resolve();
  }

  function bridge() {
    var mj = window.MathJax;
    if (mj && mj.typesetPromise && !mj.Hub) {
      mj.Hub = {
        Queue: function (job) {
          var el = job && job[2];
          mj.typesetPromise(el ? [el] : undefined);
        }
      };
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    // deferred scripts (MathJax among them) have run by now
    mathjaxStarted()
      .then(bridge)
      .then(function () { return load("require.js"); })
      .then(function () { return load("embed-amd.js"); });
  });
})();
