"""Execute widget cells (``ipywidgets.interact``) many times under nbclient and fail on a hang.

A chapter run once hung right after its ``interact`` cell, with the kernel and the client both idle
(issue 19). What this loop measured (2-core machine, 606 executions per run, 20 s cell timeout):
under nbclient, 2 (ipykernel 7.4.0) and 4 (ipykernel 6.31.0; also with pyzmq 26.4) executions
stalled for exactly the cell timeout although the kernel had sent its reply within a second: the
client's asyncio wait on the shell channel missed the reply and found it only at the timeout, then
went on. So the kernel version is not the cause, and the per-cell timeout bounds the stall (it is
600 s in ``_config.yml``). Under nbval, which ``make book`` uses (jupyter_client's blocking
client), 606 executions with ipykernel 7.4.0 had no stall (slowest 3.3 s). Three modes:

``python book/_tools/widget_hang_loop.py synthetic [--kernels K] [--repeats R]``
    A small notebook of the widget patterns the chapters use (``interact`` with sliders and a
    dropdown drawing a matplotlib figure, ``interactive_output``, a cell right after a widget
    cell) executed ``R`` times in each of ``K`` fresh kernels. Cheap (tests/book/test_widget_hang.py
    runs it in CI in about 20 s).

``python book/_tools/widget_hang_loop.py nbval [--kernels K] [--repeats R]``
    The same cells, repeated ``R`` times in each of ``K`` notebooks, executed by nbval (the way
    ``make book`` executes the chapters: jupyter_client's blocking client), one kernel per notebook.

``python book/_tools/widget_hang_loop.py cells [--kernels K] [--repeats R] [book/X.ipynb ...]``
    Every chapter's live-widget cells, as committed, executed ``R`` times in each of ``K`` fresh
    kernels under nbclient, without running the chapters: each cell runs after the imports of
    the cells before it, with stand-ins for the other names it reads (a ``live`` grid gets a
    one-parameter grid). Such a cell must make no widget under an executor (gtlib.widgets makes
    them only for a reader), so an execution that outputs a widget, or takes over 5 s, fails.
    Cheap (seconds): tests/book/test_widget_hang.py runs it in CI.

``python book/_tools/widget_hang_loop.py chapters [--repeats R] [book/X.ipynb ...]``
    Each chapter notebook is executed once (as the build does), then every widget cell of it, and
    the cell after it, is executed ``R`` more times in the same kernel. Minutes per chapter.

Every cell runs under a timeout (``--cell-timeout``, default 60 s; no widget cell needs more than
a few seconds), so a hang fails within a minute instead of blocking the build. The exit status is
0 when every execution finished, 1 otherwise; a summary line reports executions, the slowest cell
and the versions of the kernel stack.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(
    0, str(ROOT)
)  # this checkout's gtlib (the kernels run in ROOT, so import it too)
from gtlib.widgets import SKIPPED  # noqa: E402

SYNTHETIC_CELLS = [
    "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
    "import matplotlib.pyplot as plt\nimport numpy as np\nimport ipywidgets as widgets\n"
    "import ipykernel\nprint('ipykernel', ipykernel.__version__, end='')",
    # the chapters' pattern: interact with sliders and a dropdown, drawing a figure
    "def show(magnitude=1.0, network='ReLU', width=64):\n"
    "    fig, ax = plt.subplots(figsize=(4, 2.5))\n"
    "    x = np.linspace(-3, 3, 200)\n"
    "    ax.plot(x, np.maximum(x - magnitude, 0) if network == 'ReLU' else np.tanh(x) * width)\n"
    "    ax.set_title(f'm = {magnitude}, {network}, width {width}')\n"
    "    plt.show()\n\n"
    "widgets.interact(show, magnitude=widgets.FloatSlider(1.0, min=0, max=3, step=0.25),\n"
    "                 network=widgets.Dropdown(options=['ReLU', 'tanh'], value='ReLU'),\n"
    "                 width=widgets.SelectionSlider(options=[16, 64, 256], value=64));",
    "print('the cell after a widget cell')",
    # interact returning a figure (as gtlib.widgets.live does) and interactive_output
    "def fig_of(p=3):\n"
    "    fig, ax = plt.subplots(figsize=(3, 2))\n"
    "    ax.semilogy(np.arange(1, p + 1), 1.0 / np.arange(1, p + 1) ** 2)\n"
    "    plt.close(fig)\n"
    "    return fig\n\n"
    "widgets.interact(fig_of, p=widgets.IntSlider(value=5, min=1, max=50));",
    "s = widgets.IntSlider(value=2, min=0, max=5)\n"
    "out = widgets.interactive_output(lambda k: print('k =', k), {'k': s})\n"
    "display(widgets.VBox([s, out]))",
    "print('done', 2 + 2)",
]


def versions() -> str:
    import importlib.metadata as md

    parts = []
    for pkg in (
        "ipykernel",
        "nbclient",
        "jupyter_client",
        "ipywidgets",
        "pyzmq",
        "tornado",
    ):
        try:
            parts.append(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            parts.append(f"{pkg} (absent)")
    return ", ".join(parts)


def is_widget_cell(cell) -> bool:
    src = cell.source
    return cell.cell_type == "code" and ("interact" in src or "widgets.live(" in src)


class Loop:
    """Counts executions and the slowest one; records hangs instead of raising."""

    def __init__(self, cell_timeout: float):
        self.cell_timeout = cell_timeout
        self.runs = 0
        self.slowest = 0.0
        self.stalls = (
            0  # executions that took over 5 s (none of these cells needs 1 s)
        )
        self.failures: list[str] = []
        self.kernel = ""  # the version the kernel reports (synthetic mode)
        self.cells = 0  # distinct widget cells (cells mode)

    def run(self, client: NotebookClient, nb, index: int, what: str) -> None:
        t = time.perf_counter()
        try:
            client.execute_cell(nb.cells[index], index)
        except (CellTimeoutError, DeadKernelError, TimeoutError) as e:
            self.failures.append(
                f"{what}, cell {index}: {type(e).__name__} after "
                f"{time.perf_counter() - t:.0f} s"
            )
            raise
        dt = time.perf_counter() - t
        self.runs += 1
        self.slowest = max(self.slowest, dt)
        if dt > 5.0:
            self.stalls += 1
            timing = nb.cells[index].metadata.get("execution", {})
            print(
                f"stall: {what}, cell {index}: {dt:.1f} s {dict(timing)}", flush=True
            )


def _log() -> logging.Logger:
    """nbclient's warnings (e.g. 'Timeout waiting for IOPub output'), printed with a time."""
    log = logging.getLogger("widget_hang_loop")
    if not log.handlers:
        h = logging.StreamHandler(sys.stdout)
        h.setFormatter(
            logging.Formatter("%(asctime)s nbclient %(levelname)s: %(message)s")
        )
        log.addHandler(h)
        log.setLevel(logging.WARNING)
    return log


def synthetic(loop: Loop, kernels: int, repeats: int) -> None:
    cells = [nbformat.v4.new_code_cell(src) for src in SYNTHETIC_CELLS]
    for k in range(kernels):
        nb = nbformat.v4.new_notebook(cells=[c.copy() for c in cells])
        client = NotebookClient(
            nb,
            timeout=loop.cell_timeout,
            kernel_name="python3",
            allow_errors=False,
            log=_log(),
        )
        try:
            with client.setup_kernel():
                loop.run(client, nb, 0, f"kernel {k}")
                loop.kernel = "".join(o.get("text", "") for o in nb.cells[0].outputs)
                for r in range(repeats):
                    for i in range(1, len(cells)):
                        loop.run(client, nb, i, f"kernel {k}, repeat {r}")
        except (CellTimeoutError, DeadKernelError, TimeoutError):
            continue


def nbval(loop: Loop, kernels: int, repeats: int) -> None:
    """Execute the synthetic cells under nbval (the build's executor); per-cell times from
    pytest's ``--durations``."""
    import re
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for k in range(kernels):
            cells = [SYNTHETIC_CELLS[0]] + SYNTHETIC_CELLS[1:] * repeats
            nb = nbformat.v4.new_notebook(
                cells=[nbformat.v4.new_code_cell(c) for c in cells]
            )
            nbformat.write(nb, Path(tmp) / f"loop{k}.ipynb")
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--nbval-lax",
            f"--nbval-cell-timeout={int(loop.cell_timeout)}",
            "--durations=0",
            "-W",
            "ignore",
            tmp,
        ]
        r = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            cwd=tmp,
            timeout=loop.cell_timeout * kernels * (repeats + 2) * 5,
        )
        for line in r.stdout.splitlines():
            m = re.match(r"\s*([0-9.]+)s call\s+(\S+)", line)
            if m:
                dt = float(m.group(1))
                loop.runs += 1
                loop.slowest = max(loop.slowest, dt)
                if dt > 5.0:
                    loop.stalls += 1
                    print(f"stall: {m.group(2)}: {dt:.1f} s", flush=True)
        if r.returncode != 0:
            loop.failures.append(
                "nbval: " + (r.stdout.strip().splitlines() or ["?"])[-1]
            )
        m = re.search(r"(\d+) passed", r.stdout)
        if m and loop.runs < int(
            m.group(1)
        ):  # cells below pytest's durations threshold
            loop.runs = int(m.group(1))


def chapters(loop: Loop, paths: list[Path], repeats: int) -> None:
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        hot = [i for i, c in enumerate(nb.cells) if is_widget_cell(c)]
        hot = sorted(
            set(hot)
            | {
                i + 1
                for i in hot
                if i + 1 < len(nb.cells) and nb.cells[i + 1].cell_type == "code"
            }
        )
        client = NotebookClient(
            nb,
            timeout=loop.cell_timeout * 20,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
            log=_log(),
        )
        t = time.perf_counter()
        try:
            with client.setup_kernel():
                for i, cell in enumerate(nb.cells):
                    if cell.cell_type == "code":
                        client.execute_cell(cell, i)
                built = time.perf_counter() - t
                client.timeout = loop.cell_timeout
                for r in range(repeats):
                    for i in hot:
                        loop.run(client, nb, i, f"{path.name}, repeat {r}")
            print(
                f"{path.name}: built in {built:.0f} s, {len(hot)} widget(-adjacent) cells "
                f"x {repeats} repeats",
                flush=True,
            )
        except (CellTimeoutError, DeadKernelError, TimeoutError) as e:
            if not loop.failures or path.name not in loop.failures[-1]:
                loop.failures.append(f"{path.name}: {type(e).__name__}")


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# Stand-ins for the names a widget cell reads from the chapter (the cell's functions are defined,
# not called: an executor gets no widget, so nothing draws).
STUB_PRELUDE = """
class _Stub:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self
    def __call__(self, *a, **k):
        return self
    def __getitem__(self, key):
        return self
    def __iter__(self):
        return iter([0.0, 1.0])
    def __len__(self):
        return 2
    def __format__(self, spec):  # f"{ratio:g}" in a label
        return format(1.0, spec) if spec else "stub"
    def __float__(self):
        return 1.0
"""


def _python(src: str) -> str | None:
    """A cell's source as plain Python (magics transformed), or None if it does not parse."""
    import ast

    from IPython.core.inputtransformer2 import TransformerManager

    try:
        code = TransformerManager().transform_cell(src)
        ast.parse(code)
        return code
    except SyntaxError:
        return None


def cell_prelude(cells: list, index: int) -> str:
    """The imports of the code cells before ``index`` and stand-ins for every other name that the
    widget cell ``index`` reads at module level (a ``live`` grid: ``{"x": [0.0, 1.0]}``, its
    labels: ``{}``; anything else: a ``_Stub``)."""
    import ast
    import builtins
    import symtable

    imports = []
    for c in cells[:index]:
        code = _python(c.source) if c.cell_type == "code" else None
        if code:
            imports += [
                ast.unparse(n)
                for n in ast.parse(code).body
                if isinstance(n, (ast.Import, ast.ImportFrom))
            ]
    bound = set()
    for line in imports:
        for n in ast.parse(line).body[0].names:
            bound.add((n.asname or n.name).split(".")[0])
    code = _python(cells[index].source) or ""
    roles = {}
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "live"
        ):
            args = {1: "grid", 2: "labels"}
            for j, a in enumerate(node.args):
                if isinstance(a, ast.Name) and j in args:
                    roles[a.id] = args[j]
            for kw in node.keywords:
                if isinstance(kw.value, ast.Name) and kw.arg in ("grid", "labels"):
                    roles[kw.value.id] = kw.arg
    top = symtable.symtable(code, "<cell>", "exec")
    local = {
        sym.get_name()
        for sym in top.get_symbols()
        if sym.is_assigned() or sym.is_imported()
    }

    def reads(table, outer=True):
        """Names the cell reads from the notebook: at top level, and inside comprehensions and
        functions (their own scopes) where a name is global or free."""
        for sym in table.get_symbols():
            if sym.is_referenced() and (outer or sym.is_global() or sym.is_free()):
                yield sym.get_name()
        for child in table.get_children():
            yield from reads(child, outer=False)

    free = sorted(
        {
            n
            for n in reads(top)
            if n not in local and n not in bound and not hasattr(builtins, n)
        }
    )
    value = {"grid": '{"x": [0.0, 1.0]}', "labels": "{}"}
    stubs = [f"{n} = {value.get(roles.get(n), '_Stub()')}" for n in free]
    return "\n".join(imports + [STUB_PRELUDE] + stubs)


def cells_mode(loop: Loop, paths: list[Path], kernels: int, repeats: int) -> None:
    """Every chapter's widget cells under nbclient, in fresh kernels (see the module docstring)."""
    jobs = []  # (chapter, prelude cell, widget cell)
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        for i, c in enumerate(nb.cells):
            if is_widget_cell(c):
                jobs.append(
                    (
                        f"{path.name} cell {i}",
                        nbformat.v4.new_code_cell(cell_prelude(nb.cells, i)),
                        nbformat.v4.new_code_cell(c.source),
                    )
                )
    loop.cells = len(jobs)
    for k in range(kernels):
        nb = nbformat.v4.new_notebook(cells=[c for _, p, w in jobs for c in (p, w)])
        client = NotebookClient(
            nb,
            timeout=loop.cell_timeout,
            kernel_name="python3",
            allow_errors=False,
            resources={"metadata": {"path": str(ROOT)}},
            log=_log(),
        )
        try:
            with client.setup_kernel():
                for j, (what, _, _) in enumerate(jobs):
                    client.execute_cell(
                        nb.cells[2 * j], 2 * j
                    )  # imports and stand-ins
                for r in range(repeats):
                    for j, (what, _, _) in enumerate(jobs):
                        cell = nb.cells[2 * j + 1]
                        cell.outputs = []
                        loop.run(
                            client, nb, 2 * j + 1, f"kernel {k}, repeat {r}, {what}"
                        )
                        made = [
                            o
                            for o in cell.outputs
                            if WIDGET_VIEW in o.get("data", {})
                        ]
                        text = "".join(o.get("text", "") for o in cell.outputs)
                        if made or SKIPPED not in text:
                            loop.failures.append(
                                f"{what}: made {len(made)} widget(s) under "
                                "nbclient, note printed: "
                                f"{SKIPPED in text} (make them with "
                                "gtlib.widgets.live or .interact)"
                            )
                            return
        except (CellTimeoutError, DeadKernelError, TimeoutError):
            continue
        except Exception as e:  # a cell that fails (e.g. a name the stand-ins lack)
            loop.failures.append(f"kernel {k}: {type(e).__name__}: {str(e)[-800:]}")
            return


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("synthetic", "nbval", "cells", "chapters"))
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--kernels", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--cell-timeout", type=float, default=60.0)
    a = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("GTLIB_THREADS", "1")
    loop = Loop(a.cell_timeout)
    t = time.perf_counter()
    if a.mode == "synthetic":
        synthetic(loop, a.kernels, a.repeats)
    elif a.mode == "nbval":
        nbval(loop, a.kernels, a.repeats)
    else:
        paths = a.notebooks or sorted(
            p
            for p in (ROOT / "book").glob("*.ipynb")
            if any(is_widget_cell(c) for c in nbformat.read(p, as_version=4).cells)
        )
        if a.mode == "cells":
            cells_mode(loop, paths, a.kernels, a.repeats)
            print(f"{loop.cells} widget cells in {len(paths)} chapters", flush=True)
        else:
            chapters(loop, paths, a.repeats)
    print(
        f"{loop.runs} cell executions in {time.perf_counter() - t:.0f} s, slowest "
        f"{loop.slowest:.2f} s, {loop.stalls} stall(s) over 5 s, {len(loop.failures)} "
        f"hang(s); kernel: {loop.kernel or 'see above'}; client: {versions()}"
    )
    for f in loop.failures:
        print("HANG:", f)
    return 1 if loop.failures or loop.stalls else 0


if __name__ == "__main__":
    sys.exit(main())
