/*
 * attnbook-lab: a prebuilt JupyterLab 4 extension, written by hand (no build step, no
 * dependencies), that `make lab` loads (lab/jupyter_lab_config.py).
 *
 * jupyterlab-myst renders the chapters' MyST, but it cannot resolve two kinds of reference that
 * the HTML book resolves:
 *   - {numref}`fig-...`: the figures are code-cell outputs named in the cell's metadata
 *     (mystnb.figure.name), which jupyterlab-myst does not read; it shows the bare label with a
 *     warning sign. Here they become "Fig. C.k" (numbered as in the HTML book: chapter C, the
 *     k-th named figure) and a click scrolls to the figure.
 *   - {doc}`05_seq2seq_attention`: jupyterlab-myst links /files/05_seq2seq_attention, which
 *     is no file, with the bare name as text. Here the text becomes the document's title (its
 *     first "# " heading) and a click opens it in JupyterLab.
 *   - {ref}`label` without text, to a `(label)=` target of another document: jupyterlab-myst
 *     shows the bare label. Here it becomes the heading under that target (what the HTML book
 *     shows) and a click opens that document.
 * It only changes text and attributes of nodes that jupyterlab-myst rendered; a React re-render
 * replaces them and the observer below processes the new nodes again.
 *
 * It also colours code blocks (show_source listings, ```python in markdown cells): jupyterlab-myst
 * tokenises them with highlight.js (react-syntax-highlighter) into spans classed hljs-keyword,
 * hljs-string, ... but ships no colours for them, so every token had the text colour. SYNTAX
 * gives them the colours of JupyterLab's code editor (its --jp-mirror-editor-* variables, as
 * @jupyterlab/codemirror's highlight style uses them), hence as in code cells, in any theme.
 */
(function () {
  'use strict';

  var UNRESOLVED = '.jp-Notebook .myst span[title="Cross Reference Not Found"]:not([data-attnbook-ref])';
  var DOC_LINK = '.myst a.link[href*="/files/"]:not([data-attnbook-ref])';
  var CSS = [
    '.myst .attnbook-ref { color: var(--jp-content-link-color); cursor: pointer; }',
    '.myst .attnbook-ref:hover { text-decoration: underline; }',
    '.myst span.attnbook-ref > svg { display: none; }'
  ].join('\n');
  // A nested token carries its ancestors' classes too (a number in an f-string's {...} is
  // "hljs-string hljs-subst hljs-number"), so at equal specificity the innermost kinds come last.
  // Python's highlighter emits string, subst, keyword, literal, built_in, type, number, comment,
  // meta (decorators), title (the name after def/class), params and function/class (these two
  // uncoloured); operator is for other languages' blocks.
  var SYNTAX = [
    '.myst .hljs-string { color: var(--jp-mirror-editor-string-color); }',
    '.myst .hljs-subst { color: var(--jp-mirror-editor-variable-color); }',
    '.myst .hljs-keyword { color: var(--jp-mirror-editor-keyword-color); font-weight: bold; }',
    '.myst .hljs-literal { color: var(--jp-mirror-editor-keyword-color); font-weight: bold; }',  // None True False
    '.myst .hljs-built_in, .myst .hljs-type { color: var(--jp-mirror-editor-builtin-color); }',
    '.myst .hljs-number { color: var(--jp-mirror-editor-number-color); }',
    '.myst .hljs-title { color: var(--jp-mirror-editor-def-color); }',
    '.myst .hljs-meta { color: var(--jp-mirror-editor-meta-color); }',
    '.myst .hljs-operator { color: var(--jp-mirror-editor-operator-color); font-weight: bold; }',
    '.myst .hljs-comment { color: var(--jp-mirror-editor-comment-color); font-style: italic; }'
  ].join('\n');

  function textNode(element) {
    for (var i = element.childNodes.length - 1; i >= 0; i--) {
      var child = element.childNodes[i];
      if (child.nodeType === Node.TEXT_NODE && child.textContent.trim()) return child;
    }
    return null;
  }

  function panelOf(app, node) {
    for (var widget of app.shell.widgets('main')) {
      if (widget.context && widget.content && widget.node.contains(node)) return widget;
    }
    return null;
  }

  function directory(path) {
    var i = path.lastIndexOf('/');
    return i < 0 ? '' : path.slice(0, i + 1);
  }

  function figures(panel) {
    var match = /^(\d+)_/.exec(panel.context.path.split('/').pop());
    var prefix = match ? String(parseInt(match[1], 10)) + '.' : '';
    var numbers = {};
    var k = 0;
    panel.content.widgets.forEach(function (cell, index) {
      if (cell.model.type !== 'code') return;
      var meta = cell.model.getMetadata('mystnb');
      var name = meta && meta.figure && meta.figure.name;
      if (!name) return;
      k += 1;
      numbers[name] = {text: 'Fig. ' + prefix + k, index: index};
    });
    return numbers;
  }

  function showCell(panel, index) {
    var notebook = panel.content;
    notebook.activeCellIndex = index;
    var cell = notebook.widgets[index];
    var output = cell.node.querySelector('.jp-OutputArea') || cell.node;
    if (typeof notebook.scrollToItem === 'function') {
      notebook.scrollToItem(index, 'start').then(function () { output.scrollIntoView({block: 'start'}); });
    } else {
      output.scrollIntoView({block: 'start'});
    }
  }

  // The markdown texts of a document: each markdown cell of a notebook, or a .md file's text.
  var texts = {};
  function documentTexts(app, path) {
    if (!texts[path]) {
      texts[path] = app.serviceManager.contents.get(path, {content: true}).then(function (model) {
        if (model.type === 'notebook') {
          return model.content.cells.filter(function (cell) { return cell.cell_type === 'markdown'; })
            .map(function (cell) { return [].concat(cell.source).join(''); });
        }
        return [model.content || ''];
      }).catch(function () { return []; });
    }
    return texts[path];
  }

  function title(app, path) {
    return documentTexts(app, path).then(function (parts) {
      var heading = /^#\s+(.+)$/m.exec(parts.length ? parts[0] : '');
      return heading ? heading[1].trim() : null;
    });
  }

  // Targets `(label)=` of the documents next to `directory`: label -> {path, text}, the text being
  // the heading the label stands before (what the HTML book shows for a {ref} without text).
  var targets = {};
  function labelTargets(app, directory) {
    if (!targets[directory]) {
      targets[directory] = app.serviceManager.contents.get(directory, {content: true}).then(function (listing) {
        var paths = listing.content.filter(function (item) { return /\.(md|ipynb)$/.test(item.name); })
          .map(function (item) { return item.path; });
        return Promise.all(paths.map(function (path) { return documentTexts(app, path); })).then(function (all) {
          var found = {};
          all.forEach(function (parts, i) {
            parts.forEach(function (text) {
              var pattern = /^\((\S+)\)=[ \t]*\n+(?:#+[ \t]+(.+))?/gm;
              var match;
              while ((match = pattern.exec(text)) !== null) {
                found[match[1]] = {path: paths[i], text: match[2] ? match[2].trim() : null};
              }
            });
          });
          return found;
        });
      }).catch(function () { return {}; });
    }
    return targets[directory];
  }

  function open(app, path) {
    var args = path.endsWith('.md') ? {path: path, factory: 'Markdown Preview'} : {path: path};
    return app.commands.execute('docmanager:open', args);
  }

  function asLink(span, text, title, onClick) {
    span.title = title;
    span.classList.remove('text-yellow-600');
    span.classList.add('attnbook-ref');
    span.setAttribute('role', 'link');
    var node = textNode(span);
    if (node) node.textContent = text;
    span.addEventListener('click', function (event) {
      event.preventDefault();
      onClick();
    });
  }

  function fixFigureReferences(app) {
    document.querySelectorAll(UNRESOLVED).forEach(function (span) {
      var panel = panelOf(app, span);
      var text = textNode(span);
      if (!panel || !text) return;
      var label = text.textContent.trim();
      var figure = figures(panel)[label];
      span.setAttribute('data-attnbook-ref', figure ? 'figure' : 'label');
      if (figure) {
        asLink(span, figure.text, figure.text + ' (a figure of this chapter)', function () { showCell(panel, figure.index); });
        return;
      }
      // A label of another document (a {ref} without text): its heading, and a click opens it.
      labelTargets(app, directory(panel.context.path).replace(/\/$/, '')).then(function (found) {
        var target = found[label];
        if (!target) return;  // left as jupyterlab-myst shows it: tests/test_lab.py reports it
        asLink(span, target.text || label, 'Open ' + target.path.split('/').pop() + ' in JupyterLab',
               function () { open(app, target.path); });
      });
    });
  }

  function fixDocumentLinks(app) {
    document.querySelectorAll(DOC_LINK).forEach(function (link) {
      var name = decodeURIComponent(new URL(link.href).pathname.split('/files/').pop());
      var panel = panelOf(app, link);
      link.setAttribute('data-attnbook-ref', 'document');
      if (!panel || /\.[A-Za-z0-9]+$/.test(name)) return;  // a real file: leave it
      var base = directory(panel.context.path) + name;
      var path = /^\d+_/.test(name.split('/').pop()) ? base + '.ipynb' : base + '.md';
      link.classList.add('attnbook-ref');
      link.setAttribute('href', '#');
      link.title = 'Open ' + path.split('/').pop() + ' in JupyterLab';
      link.addEventListener('click', function (event) {
        event.preventDefault();
        open(app, path);
      });
      title(app, path).then(function (heading) {
        var text = textNode(link);
        if (heading && text && text.textContent.trim() === name) text.textContent = heading;
      });
    });
  }

  var plugin = {
    id: 'attnbook-lab:book-references',
    description: "Numbers the book's figure references and names its chapter links in JupyterLab.",
    autoStart: true,
    activate: function (app) {
      var style = document.createElement('style');
      style.textContent = CSS + '\n' + SYNTAX;
      document.head.appendChild(style);
      var pending = false;
      function run() {
        pending = false;
        fixFigureReferences(app);
        fixDocumentLinks(app);
      }
      new MutationObserver(function () {
        if (!pending) {
          pending = true;
          setTimeout(run, 50);
        }
      }).observe(document.body, {childList: true, subtree: true});
    }
  };

  var container = {
    init: function () { return Promise.resolve(); },
    get: function (module) {
      if (module !== './extension') return Promise.reject(new Error('attnbook-lab has no module ' + module));
      return Promise.resolve(function () { return {__esModule: true, default: [plugin]}; });
    }
  };
  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB['attnbook-lab'] = container;
})();
