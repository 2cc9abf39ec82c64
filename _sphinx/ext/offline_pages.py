"""Sphinx extension: keep the built pages free of scripts the offline book
never uses.

Jupyter Book 1.x always loads sphinx-thebe (live code via a remote Binder
kernel). The book does not use it (thebe is off in _config.yml), yet its
configuration script is injected twice per page, which raises "Identifier
'THEBE_JS_URL' has already been declared", and it names a CDN URL. This removes
both thebe scripts.
"""


def _is_thebe(script) -> bool:
    filename = getattr(script, "filename", None) or str(script)
    body = getattr(script, "attributes", {}).get("body", "")
    return "sphinx-thebe.js" in filename or "THEBE_JS_URL" in body


def drop_thebe_scripts(app, pagename, templatename, context, doctree):
    if "script_files" in context:
        context["script_files"] = [
            script
            for script in context["script_files"]
            if not _is_thebe(script)
        ]


def setup(app):
    app.connect("html-page-context", drop_thebe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
