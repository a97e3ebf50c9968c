#!/usr/bin/python3
"""Executes notebooks headless with nbclient, one kernel each, and prints one line per notebook:
'PASS <name> <seconds>' or 'FAIL <name> <seconds> <why>', then 'N passed, N failed'. Exits 1 if any
failed. A notebook fails if a cell raises (cells tagged 'raises-exception' may) or if it takes
longer than --max-seconds (default 60), after one untimed warm-up start of the kernel.
Usage: JUPYTER_PATH=notebooks/jupyter run_notebooks.py [--out DIR] [--update] [--max-seconds S] NB.ipynb..."""
import argparse
import os
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

parser = argparse.ArgumentParser()
parser.add_argument("--out", help="where the executed notebooks are written")
parser.add_argument("--update", action="store_true",
                    help="write each notebook that passed back over its source, outputs and plots included "
                         "(the committed notebooks carry their outputs, so a reader on the web sees them)")
parser.add_argument("--max-seconds", type=float, default=60.0)
parser.add_argument("notebooks", nargs="+")
args = parser.parse_args()
if args.out:
    os.makedirs(args.out, exist_ok=True)


def warm_up():
    """One untimed kernel start and include of the library before the timed notebooks. On a fresh
    machine the first start reads clang-repl, the library and its headers from a cold disk (the
    first notebook took 76 s there against 3-5 s once warm): the machine's cost, not the notebook's,
    so it is not charged to the first notebook's budget."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("#include <fluxion.h>")])
    client = NotebookClient(nb, kernel_name="fluxion-cpp", timeout=600, startup_timeout=600)
    t0 = time.time()
    try:
        client.execute()
        print("warm-up %.1fs" % (time.time() - t0), flush=True)
    except Exception as e:  # the notebooks will fail with their own message
        print("warm-up failed after %.1fs: %s" % (time.time() - t0, str(e).strip().splitlines()[-1][:300]), flush=True)


warm_up()
passed = failed = 0
for path in args.notebooks:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="fluxion-cpp", timeout=600, startup_timeout=60,
                            resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
    t0 = time.time()
    why = ""
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, RuntimeError) as e:
        why = str(e).strip().splitlines()[-1][:300]
    seconds = time.time() - t0
    if not why and seconds > args.max_seconds:
        why = "took %.1f s, over the %.0f s budget" % (seconds, args.max_seconds)
    name = os.path.basename(path)
    if why:
        failed += 1
        print("FAIL %s %.1fs %s" % (name, seconds, why), flush=True)
    else:
        passed += 1
        print("PASS %s %.1fs" % (name, seconds), flush=True)
    if args.out:
        nbformat.write(nb, os.path.join(args.out, name))
    if args.update and not why:
        nbformat.write(nb, path)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
