"""What a cluster's executors need from the driver, shipped with the run (as Beam ships a
`--setup_file` and Spark users pass `--py-files` and `--archives`):

- a zip of pomset and of the pipeline's local modules (those loaded from under the script's
  directory or the working directory, not from the standard library or site-packages: cloudpickle
  pickles their functions by reference), with their bytecode, added with
  `SparkContext.addPyFile`;
- a tar.gz of the binary distributions pomset's tasks import that a zip cannot carry
  (`BINARY`, as installed on the driver), added with `SparkContext.addArchive` and put on the
  executors' Python path: so the executors' Python must be the driver's minor version (PySpark
  requires that anyway) on the same platform.

Both are content-addressed files in a cache directory, built once. Executors must have Python,
pyarrow, pandas and numpy themselves; a local master needs nothing shipped."""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import marshal
import os
import re
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from typing import Any, Callable, Dict, List, Optional

import pomset

# pomset's third-party imports in executor tasks that are not pure Python: protobuf for
# `transformWithState`'s state API, confluent-kafka for the Kafka source's reads
BINARY = ("protobuf", "confluent-kafka")
ARCHIVE_DIR = "pomset_binary_deps"   # the archive's directory in an executor's working dir

_LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?$|local-cluster\[")


def is_local(master: str) -> bool:
    """Whether a master runs executors in this process's machine with its Python (`local`,
    `local[N]`, `local-cluster[...]`): nothing needs shipping there."""
    return bool(_LOCAL_MASTER.match(master.strip()))


def ship(spark: Any, what: str) -> None:
    """Ship to the executors of a session not yet used: `all` (pomset, local modules and the
    binary distributions), `python` (only the zip), or `none`."""
    if what == "none":
        return
    from pyspark import SparkFiles
    sc = spark.sparkContext
    driver = SparkFiles.getRootDirectory()
    code = python_zip(cache_dir())
    sc.addPyFile(code)
    # executors find what is added in their Python workers' working directory; the driver,
    # whose Python workers (planning data sources, transformWithState's set-up) start
    # elsewhere, in its own files directory
    paths = [os.path.join(driver, os.path.basename(code))]
    archive = binary_archive(cache_dir()) if what == "all" else None
    if archive is not None:
        sc.addArchive(f"{archive}#{ARCHIVE_DIR}")
        paths = [ARCHIVE_DIR, os.path.join(driver, ARCHIVE_DIR)] + paths
    user = sc.environment.get("PYTHONPATH")
    sc.environment["PYTHONPATH"] = os.pathsep.join(paths + ([user] if user else []))


def cache_dir() -> str:
    """Where the shipped files are kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pomset", "spark")


def python_zip(cache: str) -> str:
    """The zip of pomset's and the local modules' sources (name in the zip -> file), each with
    its bytecode beside it (`_bytecode`), named by a hash of their contents and this Python's
    bytecode version."""
    files = dict(_package_files(os.path.dirname(os.path.abspath(pomset.__file__)), "pomset"))
    files.update(local_modules())
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER)
    contents = {}
    for name in sorted(files):
        with open(files[name], "rb") as f:
            contents[name] = f.read()
        digest.update(name.encode() + b"\0" + contents[name] + b"\0")

    def write(path: str) -> None:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for name in sorted(contents):
                z.writestr(name, contents[name])
                code = _bytecode(name, contents[name])
                if code is not None:
                    z.writestr(name + "c", code)
    return _cached(cache, f"pomset-py-{digest.hexdigest()[:16]}.zip", write)


def _bytecode(name: str, source: bytes) -> Optional[bytes]:
    """A module's unchecked hash-based `.pyc` (PEP 552). Python imports a zip's `x.pyc` before
    its `x.py`, so executors skip compiling pomset in every fresh Python worker (0.2-0.25 s
    of a worker's start); one whose Python has another bytecode version reads the `.py`. None
    for a source that does not compile: importing it fails there as it would here."""
    try:
        code = compile(source, name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return (importlib.util.MAGIC_NUMBER + (0b01).to_bytes(4, "little")
            + importlib.util.source_hash(source) + marshal.dumps(code))


def binary_archive(cache: str) -> Optional[str]:
    """The tar.gz of the `BINARY` distributions installed here (None when none is), named by
    their versions and this interpreter's platform."""
    dists = []
    for name in BINARY:
        try:
            dists.append(importlib.metadata.distribution(name))
        except importlib.metadata.PackageNotFoundError:
            continue
    if not dists:
        return None
    key = ";".join(f"{d.metadata['Name']}=={d.version}" for d in dists)
    key += f";{sysconfig.get_platform()};{sys.implementation.cache_tag}"

    def write(path: str) -> None:
        with tarfile.open(path, "w:gz") as tar:
            for dist in dists:
                for rel in dist.files or ():
                    first = rel.parts[0]
                    if first == ".." or first.endswith(".dist-info") or "__pycache__" in rel.parts:
                        continue
                    source = str(dist.locate_file(rel))
                    if os.path.isfile(source):
                        tar.add(source, arcname=str(rel))
    return _cached(cache, f"pomset-bin-{hashlib.sha256(key.encode()).hexdigest()[:16]}.tar.gz",
                   write)


def local_modules() -> Dict[str, str]:
    """The pipeline's own modules (name in a zip -> source file): those imported from under the
    main script's directory or the working directory, outside this interpreter's installation;
    a regular package comes whole."""
    roots = [os.path.realpath(os.getcwd())]
    if sys.argv and sys.argv[0] and os.path.isfile(sys.argv[0]):
        roots.append(os.path.dirname(os.path.realpath(sys.argv[0])))
    installed = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                                *sysconfig.get_paths().values())}
    files: Dict[str, str] = {}
    for name, module in list(sys.modules.items()):
        source = getattr(module, "__file__", None)
        top = name.split(".")[0]
        if name == "__main__" or top == "pomset" or not source or not source.endswith(".py"):
            continue
        source = os.path.realpath(source)
        if not _under(source, roots) or _under(source, installed):
            continue
        package = sys.modules.get(top)
        init = getattr(package, "__file__", None) or ""
        if init.endswith("__init__.py"):   # the whole top-level package
            files.update(_package_files(os.path.dirname(os.path.realpath(init)), top))
        else:
            tail = "/__init__.py" if source.endswith("__init__.py") else ".py"
            files[name.replace(".", "/") + tail] = source
    return files


def _under(path: str, roots: Any) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def _package_files(directory: str, name: str) -> List[tuple]:
    """(name in a zip, file) for a package directory's Python sources."""
    out = []
    for folder, dirs, names in os.walk(directory):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(folder, directory)
        prefix = name if rel == "." else f"{name}/{rel.replace(os.sep, '/')}"
        out += [(f"{prefix}/{n}", os.path.join(folder, n)) for n in names if n.endswith(".py")]
    return out


def _cached(cache: str, name: str, write: Callable[[str], None]) -> str:
    """The path of `name` in the cache, written by `write` (atomically) if not there yet."""
    path = os.path.join(cache, name)
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache, suffix=".part")
        os.close(fd)
        try:
            write(tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return path
