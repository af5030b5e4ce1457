#!/usr/bin/env python3
"""A sepp worker in Python: long-poll Reserve, run, then Ack (or Nack with the error).

    /usr/bin/python3 examples/python/worker.py QUEUE [--max-jobs N]

Each job's JSON payload is printed as one line: `JOB_ID TYPE ATTEMPT PAYLOAD`. A payload
with {"fail": "message"} is nacked with that message (to show retries and dead letters).
The lease is extended by a heartbeat thread at a third of its length while a job runs.
Stops after --max-jobs jobs (default: run until Ctrl-C).
Environment: SEPP_SERVER (default 127.0.0.1:50051), SEPP_API_KEY (optional).
"""
import argparse
import json
import os
import signal
import sys
import threading

import grpc

import sepp_stubs

sepp_stubs.load()
from sepp.v1 import queue_service_pb2_grpc, work_pb2  # noqa: E402

LEASE_MS = 30_000
WAIT_MS = 20_000


def heartbeat(stub, job, metadata, stop):
    """Extends the lease every third of its length until the job is settled."""
    while not stop.wait(LEASE_MS / 3 / 1000):
        try:
            stub.Extend(
                work_pb2.ExtendRequest(job_id=job.job_id, attempt=job.attempt, lease_duration_ms=LEASE_MS),
                metadata=metadata,
                timeout=5,
            )
        except grpc.RpcError as error:
            # FAILED_PRECONDITION or NOT_FOUND: the lease is gone; another worker may have the job.
            print(f"lease lost for {job.job_id}: {error.details()}", file=sys.stderr)
            return


def run(job):
    payload = json.loads(job.payload.decode() or "null")
    if isinstance(payload, dict) and "fail" in payload:
        raise RuntimeError(payload["fail"])
    print(f"{job.job_id} {job.type} {job.attempt} {json.dumps(payload, separators=(',', ':'))}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("queue")
    parser.add_argument("--max-jobs", type=int, default=0)
    args = parser.parse_args()
    metadata = []
    if os.environ.get("SEPP_API_KEY"):
        metadata.append(("authorization", "Bearer " + os.environ["SEPP_API_KEY"]))
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    done = 0
    with grpc.insecure_channel(os.environ.get("SEPP_SERVER", "127.0.0.1:50051")) as channel:
        stub = queue_service_pb2_grpc.QueueServiceStub(channel)
        while not stopping.is_set() and (args.max_jobs == 0 or done < args.max_jobs):
            request = work_pb2.ReserveRequest(
                queues=[args.queue], max_jobs=1, lease_duration_ms=LEASE_MS, wait_timeout_ms=WAIT_MS, worker_id="python"
            )
            try:
                # The call's deadline is the wait plus a margin, so a quiet queue is not an error.
                reply = stub.Reserve(request, metadata=metadata, timeout=WAIT_MS / 1000 + 5)
            except grpc.RpcError as error:
                if error.code() == grpc.StatusCode.UNAVAILABLE:
                    stopping.wait(1)
                    continue
                print(f"reserve failed: {error.code().name}: {error.details()}", file=sys.stderr)
                return 1
            for job in reply.jobs:
                stop = threading.Event()
                beat = threading.Thread(target=heartbeat, args=(stub, job, metadata, stop), daemon=True)
                beat.start()
                try:
                    run(job)
                    stop.set()
                    stub.Ack(work_pb2.AckRequest(job_id=job.job_id, attempt=job.attempt), metadata=metadata, timeout=10)
                except grpc.RpcError as error:
                    stop.set()
                    print(f"ack failed for {job.job_id}: {error.details()}", file=sys.stderr)
                except Exception as error:  # noqa: BLE001 - any failure of the job is reported as a nack
                    stop.set()
                    stub.Nack(
                        work_pb2.NackRequest(job_id=job.job_id, attempt=job.attempt, error_message=str(error)),
                        metadata=metadata,
                        timeout=10,
                    )
                done += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
