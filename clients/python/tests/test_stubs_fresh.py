"""The committed protocol code (src/sepp/v1) is what scripts/gen_stubs.py makes
from proto/ today: a .proto change without regenerating fails here."""
from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
COMMITTED = PACKAGE / "src" / "sepp" / "v1"


def test_generated_stubs_are_fresh() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "sepp" / "v1"
        subprocess.run([sys.executable, str(PACKAGE / "scripts" / "gen_stubs.py"), "--out", str(out)],
                       check=True, capture_output=True, text=True)
        fresh = {p.name: p.read_bytes() for p in out.iterdir()}
    committed = {p.name: p.read_bytes() for p in COMMITTED.iterdir() if p.is_file()}
    stale = sorted(name for name in fresh.keys() | committed.keys() if fresh.get(name) != committed.get(name))
    assert not stale, (
        f"clients/python/src/sepp/v1 is out of date with proto/ ({', '.join(stale)}): "
        "run /usr/bin/python3 clients/python/scripts/gen_stubs.py (npm run gen does it too) and commit the result"
    )
