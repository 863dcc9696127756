"""The static site's build (`make site`), one module per step, run as modules from the repository's root:
``python -m build.make_site``, ``build.pyodide_files`` (serving a built site, the browser engines and the
JavaScript linter are ``tools/``; the scripts that measure the built site are in ``benchmarks/``). Its modules import each other
relatively (``from . import render``); ``templates/`` (what ships to the browser, ``sdpa_worker.py``
included) and ``stubs/`` (stand-ins for packages the page never uses) are files the build reads, not
modules of this package. Not PyPA's ``build`` (not installed here): from the root, this folder is imported.
"""
