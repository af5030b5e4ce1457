#!/usr/bin/env python3
"""Enqueues jobs to sepp from Python, speaking only the gRPC protocol in proto/.

    /usr/bin/python3 examples/python/producer.py QUEUE TYPE JSON [JSON...]

Prints one line per job: its id, and "(duplicate)" when an idempotency key was seen before.
Environment: SEPP_SERVER (default 127.0.0.1:50051), SEPP_API_KEY (optional).
"""
import os
import sys

import grpc

import sepp_stubs

sepp_stubs.load()
from sepp.v1 import job_pb2, produce_pb2, queue_service_pb2_grpc  # noqa: E402


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    queue, job_type, payloads = argv[1], argv[2], argv[3:]
    metadata = []
    if os.environ.get("SEPP_API_KEY"):
        metadata.append(("authorization", "Bearer " + os.environ["SEPP_API_KEY"]))
    with grpc.insecure_channel(os.environ.get("SEPP_SERVER", "127.0.0.1:50051")) as channel:
        stub = queue_service_pb2_grpc.QueueServiceStub(channel)
        jobs = [
            job_pb2.EnqueueJob(queue=queue, type=job_type, payload=p.encode(), content_type="application/json")
            for p in payloads
        ]
        try:
            reply = stub.EnqueueBatch(produce_pb2.EnqueueBatchRequest(jobs=jobs), metadata=metadata, timeout=10)
        except grpc.RpcError as error:
            print(f"enqueue failed: {error.code().name}: {error.details()}", file=sys.stderr)
            return 1
        failed = 0
        for result in reply.results:
            if result.WhichOneof("outcome") == "accepted":
                dup = " (duplicate)" if result.accepted.deduplicated else ""
                print(result.accepted.job_id + dup)
            else:
                failed += 1
                reason = job_pb2.RejectionReason.Name(result.rejection.reason)
                print(f"rejected: {reason}: {result.rejection.message}", file=sys.stderr)
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
