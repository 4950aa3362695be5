#!/usr/bin/env python3
"""Runs a notebook top to bottom in a fresh Jupyter kernel (nbclient), in the folder FOLDER, and
prints one JSON object: each cell's printed text, the errors, and the seconds it took.

    tools/.venv/bin/python tools/run_notebook.py NOTEBOOK.ipynb FOLDER [--out EXECUTED.ipynb]

Dev only (`./dev pytorch` calls it for e2e/notebook/run.mjs): CI has no Python.
"""
import argparse
import json
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def text_of(output):
    if output.get("output_type") == "stream":
        return output.get("text", "")
    if output.get("output_type") in ("execute_result", "display_data"):
        return output.get("data", {}).get("text/plain", "")
    if output.get("output_type") == "error":
        return "\n".join(output.get("traceback", []))
    return ""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("notebook")
    p.add_argument("folder")
    p.add_argument("--out")
    p.add_argument("--timeout", type=int, default=600)
    a = p.parse_args()
    nb = nbformat.read(a.notebook, as_version=4)
    nbformat.validate(nb)
    client = NotebookClient(nb, timeout=a.timeout, kernel_name="python3",
                            resources={"metadata": {"path": a.folder}})
    started = time.monotonic()
    error = None
    try:
        client.execute()
    except CellExecutionError as e:
        error = str(e)
    seconds = time.monotonic() - started
    if a.out:
        nbformat.write(nb, a.out)
    cells = [{
        "type": c.cell_type,
        "text": "".join(text_of(o) for o in c.get("outputs", [])),
        "images": sum(1 for o in c.get("outputs", []) if "image/png" in o.get("data", {})),
    } for c in nb.cells]
    json.dump({"seconds": seconds, "error": error, "cells": cells}, sys.stdout)
    return 1 if error else 0


if __name__ == "__main__":
    sys.exit(main())
