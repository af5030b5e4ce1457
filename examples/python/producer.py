#!/usr/bin/env python3
"""A producer: enqueues two jobs and exits.

    SEPP_SERVER=127.0.0.1:50051 SEPP_API_KEY=sepp_… python producer.py

The marked region is the producer in docs/python.md (a test keeps them equal and runs it
from a fresh virtual environment with the package installed).
"""
# region quickstart
import sepp

# The server and the API key come from SEPP_SERVER and SEPP_API_KEY (or sepp.Client(address, api_key=…)).
try:
    with sepp.Client() as client:
        for to in ["ada@example.com", "grace@example.com"]:
            job = client.enqueue("emails", "send", json={"to": to})
            print(f"enqueued {job.id} for {to}")
except sepp.SeppError as error:
    raise SystemExit(f"producer: {error}")  # One line, e.g. that the server needs an API key.
# endregion quickstart
