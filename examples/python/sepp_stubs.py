"""Generates the sepp.v1 Python stubs from proto/ (Debian's python3-grpc-tools) and puts them on sys.path.

The stubs are generated, never committed: the .proto files are the contract.
"""
import os
import pathlib
import sys
import tempfile

from grpc_tools import protoc

_REPO = pathlib.Path(__file__).resolve().parents[2]


def load():
    out = pathlib.Path(os.environ.get("SEPP_PY_STUBS") or tempfile.mkdtemp(prefix="sepp-py-"))
    if not (out / "sepp" / "v1" / "queue_service_pb2_grpc.py").exists():
        proto_dir = _REPO / "proto"
        files = sorted(str(p) for p in (proto_dir / "sepp" / "v1").glob("*.proto"))
        code = protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}", *files])
        if code != 0:
            raise SystemExit(f"protoc failed with exit code {code}")
    sys.path.insert(0, str(out))
