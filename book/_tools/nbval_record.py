"""pytest plugin: nbval's run of the book's notebooks is the execution the site is built from.

``make book`` and ``make test`` execute every notebook once, under nbval (the project's contract:
every cell runs without error), two notebooks at a time::

    PYTHONPATH=book/_tools pytest -n 2 --dist loadfile --nbval-lax -p nbval_record \
        --nbval-record=CACHE book/*.ipynb

This plugin listens to the kernel messages that nbval reads for each cell and assembles the
executed notebook with nbclient's own message handling (the executor of Jupyter Book and
myst-nb): outputs, display updates, cleared outputs, widget state and Output widgets, as a
forced build would have them. When every cell of a notebook has passed, the executed notebook is
written beside the cache; at the end of a session in which every test passed, the controller
stores them in the jupyter-cache ``CACHE``, which the site build reads
(``execute_notebooks: cache``, see ``book/_tools/build_config.py``). The build then executes nothing
again, and every number on the site comes from this run.

Like a forced build, the run starts by emptying ``GTLIB_RESULTS_DIR`` (default ``_build/results``
at the repository root), where the chapters write the claims that the reproduction report shows,
and by emptying ``CACHE``; the per-cell timeout is ``execute.timeout`` of ``_config.yml`` unless
``--nbval-cell-timeout`` is given.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def pytest_addoption(parser):
    group = parser.getgroup("nbval-record")
    group.addoption(
        "--nbval-record",
        metavar="CACHE",
        default=None,
        help="store the notebooks nbval executes in this jupyter-cache folder",
    )


def pytest_configure(config):
    cache = config.getoption("nbval_record")
    if cache:
        config.pluginmanager.register(
            _Recorder(Path(cache).resolve(), config), "nbval-record"
        )


def results_dir() -> Path:
    """Where the chapters write their claims: the folder the site build reads."""
    return Path(
        os.environ.get("GTLIB_RESULTS_DIR") or ROOT / "_build" / "results"
    ).resolve()


def staging_dir(cache: Path) -> Path:
    return cache.with_name(cache.name + "-executed")


class _Notebook:
    """One notebook being executed: nbclient's output handling fed with nbval's messages."""

    def __init__(self, path: Path, kernel):
        from nbclient import NotebookClient

        self.path = path
        self.nb = nbformat.read(path, as_version=4)
        self.client = NotebookClient(self.nb, record_timing=False)
        self.client.kc = kernel.kc  # Output widgets answer the kernel through it
        self.cells_passed = 0
        self.failed = False
        self.start = time.perf_counter()
        info = kernel.kc.kernel_info(reply=True, timeout=60)
        self.nb.metadata["language_info"] = info["content"]["language_info"]


class _Recorder:
    def __init__(self, cache: Path, config):
        self.cache = cache
        self.staging = staging_dir(cache)
        self.worker = hasattr(config, "workerinput")
        self.current: tuple[_Notebook, object, int] | None = None
        self.msg_id: str | None = None
        self.notebooks: dict[str, _Notebook] = {}
        if "--nbval-cell-timeout" not in " ".join(config.invocation_params.args):
            cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
            config.option.nbval_cell_timeout = int(cfg["execute"]["timeout"])
        os.environ["GTLIB_RESULTS_DIR"] = str(
            results_dir()
        )  # inherited by workers and kernels
        if (
            not self.worker
        ):  # the controller (or a run without xdist) starts from nothing
            for folder in (results_dir(), self.staging, self.cache):
                shutil.rmtree(folder, ignore_errors=True)
            results_dir().mkdir(parents=True, exist_ok=True)
            self.staging.mkdir(parents=True, exist_ok=True)
        self._tap_nbval()

    # -- listening to nbval --------------------------------------------------------------------
    def _tap_nbval(self):
        from nbval.kernel import RunningKernel
        from nbval.plugin import IPyNbFile

        recorder = self
        get_message = IPyNbFile.get_kernel_message

        def execute_cell_input(kernel, cell_input, allow_stdin=None):
            # As Jupyter and nbclient run cells: with history, so that a trailing ";" hides the
            # cell's value (nbval's own store_history=False reads the previous cell instead).
            recorder.msg_id = kernel.kc.execute(
                cell_input,
                store_history=True,
                allow_stdin=allow_stdin,
                stop_on_error=False,
            )
            return recorder.msg_id

        def get_kernel_message(nbfile, *args, **kwargs):
            msg = get_message(nbfile, *args, **kwargs)
            recorder.feed(msg)
            return msg

        RunningKernel.execute_cell_input = execute_cell_input
        IPyNbFile.get_kernel_message = get_kernel_message

    def feed(self, msg):
        from nbclient.exceptions import CellExecutionComplete

        if self.current is None or msg["parent_header"].get("msg_id") != self.msg_id:
            return
        record, cell, index = self.current
        try:
            record.client.process_message(msg, cell, index)
        except CellExecutionComplete:
            pass

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        from nbval.plugin import IPyNbCell

        if not isinstance(item, IPyNbCell):
            yield
            return
        key = str(item.parent.fspath)
        if key not in self.notebooks:
            self.notebooks[key] = _Notebook(Path(key), item.parent.kernel)
        record = self.notebooks[key]
        index = next(i for i, c in enumerate(item.parent.nb.cells) if c is item.cell)
        cell = record.nb.cells[index]
        cell.outputs = []
        record.client.clear_before_next_output = False
        self.current, self.msg_id = (record, cell, index), None
        try:
            yield
        finally:
            self.current = None

    def pytest_runtest_logreport(self, report):
        record = next(
            (
                r
                for k, r in self.notebooks.items()
                if report.fspath and k.endswith(report.fspath)
            ),
            None,
        )
        if record is None:
            return
        if report.failed or report.skipped:
            record.failed = True
        elif report.when == "call":
            record.cells_passed += 1

    def pytest_runtest_teardown(self, item, nextitem):
        from nbval.plugin import IPyNbCell

        if not isinstance(item, IPyNbCell):
            return
        if nextitem is not None and nextitem.parent is item.parent:
            return
        record = self.notebooks.pop(str(item.parent.fspath), None)
        if record is None or record.failed:
            return
        record.client.set_widgets_metadata()
        src = record.path.resolve()
        out = self.staging / (
            src.relative_to(ROOT) if src.is_relative_to(ROOT) else src.name
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(record.nb, out)
        meta = {
            "source": str(src),
            "execution_seconds": time.perf_counter() - record.start,
        }
        out.with_suffix(".json").write_text(json.dumps(meta))

    # -- handing the executions to the site build ----------------------------------------------
    def pytest_sessionfinish(self, session, exitstatus):
        if self.worker or exitstatus != 0:
            return
        staged = sorted(self.staging.rglob("*.ipynb"))
        if staged:
            store(self.cache, staged)


def store(cache: Path, staged: list[Path]) -> None:
    """Put the executed notebooks into the jupyter-cache that the build reads."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    jc = get_cache(str(cache))
    for path in staged:
        meta = json.loads(path.with_suffix(".json").read_text())
        nb = nbformat.read(path, as_version=4)
        jc.cache_notebook_bundle(
            CacheBundleIn(
                nb,
                meta["source"],
                data={"execution_seconds": meta["execution_seconds"]},
            ),
            check_validity=False,
            overwrite=True,
        )
