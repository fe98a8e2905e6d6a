#!/usr/bin/python3
"""Regenerates tests/data/fixtures/*.json deterministically (torch.manual_seed per model).

    /usr/bin/python3 tests/torch/make_fixtures.py [NAME ...]

Each fixture is exported by tools/optimus_fx.py with record_io=True (inputs, the parameters
the graph reads, outputs); resnet18 uses param_fill="sin" so its 11.7M parameters are stored
as closed-form fills. Prints each file's size and node count, and the ops of
engine/ops/ox_ops.def that no fixture uses (there should be none).
"""

import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fixture_models as fm  # noqa: E402
import op_coverage  # noqa: E402


def main(argv):
    names = argv or list(fm.MODELS)
    os.makedirs(fm.FIXTURE_DIR, exist_ok=True)
    for name in names:
        if name not in fm.MODELS:
            print("unknown fixture %r; known: %s" % (name, ", ".join(fm.MODELS)), file=sys.stderr)
            return 2
        doc, _ = fm.export_fixture(name)
        path = fm.fixture_path(name)
        print("%-18s %6d bytes %4d nodes" % (name, os.path.getsize(path),
                                            len(doc["graphs"][0]["nodes"])))
    total = sum(os.path.getsize(os.path.join(fm.FIXTURE_DIR, f))
                for f in os.listdir(fm.FIXTURE_DIR) if f.endswith(".json"))
    print("total %d bytes" % total)
    missing = op_coverage.uncovered_ops()
    if missing:
        print("ops of ox_ops.def no fixture uses: %s" % ", ".join(missing))
        return 1
    print("every op of ox_ops.def is used by a fixture")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
