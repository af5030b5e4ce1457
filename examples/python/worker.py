#!/usr/bin/env python3
"""A worker: runs the `send` jobs of the `emails` queue, ten at a time, until Ctrl-C (or
SIGTERM), then lets running jobs finish and exits.

    SEPP_SERVER=127.0.0.1:50051 SEPP_API_KEY=sepp_… python worker.py

The marked region is the worker in docs/python.md (a test keeps them equal and runs it
from a fresh virtual environment with the package installed).
"""
# region quickstart
import sepp


def send(job: sepp.WorkerJob) -> None:
    print(f"sending to {job.data['to']}", flush=True)  # Return to complete the job; raise to retry it.


# The server and the API key come from SEPP_SERVER and SEPP_API_KEY (or sepp.Client(address, api_key=…)).
try:
    with sepp.Client() as client:
        client.worker(["emails"], handlers={"send": send}, concurrency=10).run()  # Until Ctrl-C or SIGTERM.
except sepp.SeppError as error:
    raise SystemExit(f"worker: {error}")  # A refused API key stops the worker: one line, exit 1.
# endregion quickstart
