"""Real text that installs with Python: the source of a fixed list of standard-library modules.

FILES is a sorted list of 135 ``.py`` files under the standard library's folder (``Lib/`` in CPython's
source, ``sysconfig.get_paths()["stdlib"]`` once installed) whose bytes are identical in CPython 3.11.7,
3.12.1 and 3.13.0 (checked byte for byte when the list was made); their concatenation, in this order, is
995,552 bytes with sha256 ``TEXT_SHA256``. A later patch release may edit one of them: ``load_text``
then still returns the text, and the run records its actual sha256 and ``matches_reference: false``.

The files are CPython's, under the Python Software Foundation License (PSF-2.0). The vocabulary is the 256
byte values; the last 10% of the bytes are the validation split, the first 90% the training split.
"""
from __future__ import annotations

import hashlib
import sysconfig
from pathlib import Path

import numpy as np

FILES = (
    "__future__.py", "_compression.py", "_markupbase.py", "_py_abc.py", "_sitebuiltins.py", "_threading_local.py",
    "_weakrefset.py", "abc.py", "asyncio/exceptions.py", "asyncio/log.py", "asyncio/mixins.py",
    "asyncio/protocols.py", "asyncio/threads.py", "asyncio/trsock.py", "asyncio/windows_utils.py",
    "concurrent/__init__.py", "concurrent/futures/_base.py", "contextvars.py", "difflib.py", "email/__init__.py",
    "email/_encoded_words.py", "email/base64mime.py", "email/contentmanager.py", "email/encoders.py",
    "email/header.py", "email/headerregistry.py", "email/iterators.py", "email/mime/application.py",
    "email/mime/base.py", "email/mime/image.py", "email/mime/message.py", "email/mime/multipart.py",
    "email/mime/nonmultipart.py", "email/quoprimime.py", "graphlib.py", "heapq.py", "html/__init__.py",
    "idlelib/__init__.py", "idlelib/__main__.py", "idlelib/autocomplete.py", "idlelib/autocomplete_w.py",
    "idlelib/autoexpand.py", "idlelib/browser.py", "idlelib/calltip.py", "idlelib/calltip_w.py",
    "idlelib/codecontext.py", "idlelib/colorizer.py", "idlelib/config_key.py", "idlelib/debugobj_r.py",
    "idlelib/delegator.py", "idlelib/dynoption.py", "idlelib/filelist.py", "idlelib/format.py", "idlelib/history.py",
    "idlelib/hyperparser.py", "idlelib/idle.py", "idlelib/mainmenu.py", "idlelib/multicall.py",
    "idlelib/parenmatch.py", "idlelib/pathbrowser.py", "idlelib/percolator.py", "idlelib/pyparse.py",
    "idlelib/query.py", "idlelib/runscript.py", "idlelib/scrolledlist.py", "idlelib/search.py",
    "idlelib/squeezer.py", "idlelib/statusbar.py", "idlelib/textview.py", "idlelib/undo.py", "idlelib/window.py",
    "idlelib/zoomheight.py", "idlelib/zzdummy.py", "importlib/metadata/_collections.py",
    "importlib/metadata/_functools.py", "importlib/metadata/_itertools.py", "importlib/metadata/_text.py",
    "importlib/readers.py", "importlib/simple.py", "json/__init__.py", "json/scanner.py",
    "multiprocessing/__init__.py", "multiprocessing/dummy/__init__.py", "multiprocessing/dummy/connection.py",
    "multiprocessing/heap.py", "multiprocessing/popen_forkserver.py", "multiprocessing/popen_spawn_posix.py",
    "multiprocessing/reduction.py", "multiprocessing/sharedctypes.py", "multiprocessing/spawn.py",
    "multiprocessing/synchronize.py", "nturl2path.py", "optparse.py", "py_compile.py", "pyclbr.py", "sre_compile.py",
    "sre_constants.py", "sre_parse.py", "string.py", "stringprep.py", "struct.py", "tomllib/__init__.py",
    "tomllib/_parser.py", "tomllib/_re.py", "tomllib/_types.py", "tracemalloc.py", "unittest/__main__.py",
    "unittest/_log.py", "unittest/signals.py", "unittest/suite.py", "unittest/util.py", "urllib/error.py",
    "urllib/response.py", "urllib/robotparser.py", "weakref.py", "wsgiref/__init__.py", "wsgiref/headers.py",
    "wsgiref/types.py", "xml/__init__.py", "xml/dom/NodeFilter.py", "xml/dom/__init__.py", "xml/dom/domreg.py",
    "xml/dom/minicompat.py", "xml/dom/pulldom.py", "xml/dom/xmlbuilder.py", "xml/etree/ElementPath.py",
    "xml/etree/__init__.py", "xml/etree/cElementTree.py", "xml/parsers/__init__.py", "xml/parsers/expat.py",
    "xml/sax/handler.py", "xml/sax/saxutils.py", "zoneinfo/__init__.py", "zoneinfo/_common.py",
    "zoneinfo/_zoneinfo.py",
)
TEXT_SHA256 = "d5a0cc5708d183790ddde21d0ef4a098f2b71575619989b2b26b45d2aaf7bfe3"
VOCAB = 256
VALIDATION_SHARE = 0.1


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def load_text(root: Path | None = None) -> bytes:
    """The concatenated bytes of FILES, read from `root` (default: this Python's standard library)."""
    root = stdlib_dir() if root is None else Path(root)
    return b"".join((root / name).read_bytes() for name in FILES)


def provenance(text: bytes) -> dict:
    sha = hashlib.sha256(text).hexdigest()
    return {"source": "CPython standard library, sorted fixed list of files (experiments/real_transformer/data.py)",
            "stdlib_dir": str(stdlib_dir()), "n_files": len(FILES), "n_bytes": len(text), "sha256": sha,
            "matches_reference": sha == TEXT_SHA256, "license": "PSF-2.0",
            "vocab": "bytes (256)", "validation": f"last {VALIDATION_SHARE:.0%} of the bytes"}


def split(text: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) as uint8 arrays: the first 90% and the last 10% of the bytes."""
    data = np.frombuffer(text, dtype=np.uint8)
    cut = int(len(data) * (1 - VALIDATION_SHARE))
    return data[:cut], data[cut:]
