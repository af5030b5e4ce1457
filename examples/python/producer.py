#!/usr/bin/env python3
"""A producer: enqueues two jobs and exits.

    SEPP_SERVER=127.0.0.1:50051 python producer.py

The marked region is the producer in docs/python.md (a test keeps them equal and runs it
from a fresh virtual environment with the package installed).
"""
# region quickstart
import os

import sepp

with sepp.Client(os.environ.get("SEPP_SERVER", "127.0.0.1:50051")) as client:
    for to in ["ada@example.com", "grace@example.com"]:
        job = client.enqueue("emails", "send", json={"to": to})
        print(f"enqueued {job.id} for {to}")
# endregion quickstart
