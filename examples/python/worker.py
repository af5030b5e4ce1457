#!/usr/bin/env python3
"""A worker: runs the `send` jobs of the `emails` queue, ten at a time, until Ctrl-C (or
SIGTERM), then lets running jobs finish and exits.

    SEPP_SERVER=127.0.0.1:50051 python worker.py

The marked region is the worker in docs/python.md (a test keeps them equal and runs it
from a fresh virtual environment with the package installed).
"""
# region quickstart
import os

import sepp


def send(job: sepp.WorkerJob) -> None:
    print(f"sending to {job.data['to']}", flush=True)  # Return to complete the job; raise to retry it.


with sepp.Client(os.environ.get("SEPP_SERVER", "127.0.0.1:50051")) as client:
    client.worker(["emails"], handlers={"send": send}, concurrency=10).run()  # Until Ctrl-C or SIGTERM.
# endregion quickstart
