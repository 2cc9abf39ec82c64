/*
 * The ipywidgets HTML manager typesets widget labels with the MathJax 2 API
 * (MathJax.Hub.Queue). The book serves MathJax 3, which has no Hub, so every
 * widget page would throw "Cannot read properties of undefined (reading 'Queue')".
 * This shim gives whatever object window.MathJax holds (the config object first,
 * then MathJax 3 itself once it loads) a Hub.Queue that calls MathJax 3's typesetPromise.
 */
(function () {
  var hub = {
    Queue: function (job) {
      var element = job && job[2];
      var mathjax = window.MathJax;
      if (!mathjax || typeof mathjax.typesetPromise !== "function") {
        return; // MathJax 3 typesets the whole page when it starts up anyway.
      }
      var ready = mathjax.startup && mathjax.startup.promise ? mathjax.startup.promise : Promise.resolve();
      ready.then(function () {
        return mathjax.typesetPromise(element ? [element] : undefined);
      }).catch(function () {});
    }
  };
  var current = window.MathJax;
  function withHub(value) {
    if (value && typeof value === "object" && !value.Hub) {
      value.Hub = hub;
    }
    return value;
  }
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    get: function () { return current; },
    set: function (value) { current = withHub(value); }
  });
  withHub(current);
})();
