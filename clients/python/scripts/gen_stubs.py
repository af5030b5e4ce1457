#!/usr/bin/python3
"""Regenerates the protocol code of the Python client (src/sepp/v1/) from proto/.

    /usr/bin/python3 clients/python/scripts/gen_stubs.py [--out DIR]

Two Debian tools, each for what it does best:
- `protoc` (protobuf-compiler) writes the messages (`*_pb2.py`) and their type
  stubs (`*_pb2.pyi`). Its code uses the descriptor pool and builder of
  protobuf >= 3.20, which every protobuf runtime since accepts (the C++, upb
  and pure-Python ones), and it can write `.pyi` files.
- `grpc_tools.protoc` (python3-grpc-tools) writes the service stubs
  (`*_pb2_grpc.py`); Debian's protoc has no gRPC plugin for Python. Its own
  bundled protoc is older and would write message code that newer protobuf
  runtimes refuse, so only its gRPC output is used.

The output is committed, and clients/python/tests/test_stubs_fresh.py checks
that regenerating it changes nothing, so this script is deterministic: a
sorted file list, an emptied output directory, no versions written into files.
The proto package is `sepp.v1`, so the generated modules import each other as
`sepp.v1.*_pb2`: they live in the `sepp.v1` subpackage of the client.
"""
from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
PACKAGE = HERE.parent / "src" / "sepp" / "v1"
PROTO_ROOT = HERE.parents[2] / "proto"

INIT = '''"""sepp's protocol (package sepp.v1), generated from proto/ by scripts/gen_stubs.py. Do not edit.

The client (`sepp.Client`, `sepp.Worker`) wraps these; import them only to
speak the protocol directly.
"""
'''


def proto_files() -> list[str]:
    return sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))


def run(command: list[str]) -> None:
    done = subprocess.run(command, cwd=PROTO_ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"gen_stubs: {' '.join(command[:2])} failed (exit {done.returncode}):\n{done.stderr}")


def generate(out: pathlib.Path) -> list[pathlib.Path]:
    """Writes the sepp.v1 package into `out` (a directory that ends up as `sepp/v1`)."""
    if shutil.which("protoc") is None:
        sys.exit("gen_stubs: protoc not found (Debian: apt-get install protobuf-compiler)")
    try:
        import grpc_tools  # noqa: F401
    except ImportError:
        sys.exit("gen_stubs: grpc_tools not found (Debian: apt-get install python3-grpc-tools)")
    sources = proto_files()
    out.parent.mkdir(parents=True, exist_ok=True)
    # protoc writes sepp/v1/… below the directory it is given; staged beside `out` so the move is a rename.
    staging = pathlib.Path(tempfile.mkdtemp(prefix=".gen-", dir=out.parent))
    try:
        run(["protoc", f"--proto_path={PROTO_ROOT}", f"--python_out={staging}", f"--pyi_out={staging}", *sources])
        run([sys.executable, "-m", "grpc_tools.protoc", f"--proto_path={PROTO_ROOT}",
             f"--grpc_python_out={staging}", *sources])
        generated = staging / "sepp" / "v1"
        (generated / "__init__.py").write_text(INIT)
        shutil.rmtree(out, ignore_errors=True)
        shutil.move(str(generated), str(out))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(out.iterdir())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=PACKAGE,
                        help="directory to write the sepp.v1 package into (default: %(default)s)")
    args = parser.parse_args()
    written = generate(args.out.resolve())
    for path in written:
        print(f"gen_stubs: wrote {path}")
    print(f"gen_stubs: {len(proto_files())} .proto files → {len(written)} files in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
