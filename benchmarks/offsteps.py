"""What a recorder costs on the steps it does not record, and why.

    python benchmarks/offsteps.py [--blocks 16]

Side by side, interleaved as in ``overhead.py``, ratios to the plain tf-keras DTensor SGD
step, on the 2048x2048 parameter and on the sharded MLP: an optimizer with a hook that
does nothing, and recorders whose ``every`` is never reached (so only the skipping runs)
with 0, 1, 4 and 8 staging slots. The difference between the slot counts is the cost of
the staging variables that the ``tf.cond`` takes as inputs on every call.
"""

from __future__ import annotations

import argparse
import os
import sys

import dtsgd_viz

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overhead as ob  # noqa: E402  (sets up the devices)
import tf_keras  # noqa: E402


class _Nothing:
    """A hook that observes nothing: the cost of the hook plumbing alone."""

    def on_build(self, optimizer, variables):
        pass

    def before_update(self, optimizer, variables, params):
        pass

    def after_update(self, event):
        pass


def _variants(mesh, make):
    plain = tf_keras.dtensor.experimental.optimizers.SGD(**ob.NESTEROV, mesh=mesh, jit_compile=False)
    out = [ob.Variant("plain step (no recording)", make(plain)[0])]
    out.append(
        ob.Variant("hook that does nothing", make(dtsgd_viz.SGD(**ob.NESTEROV, mesh=mesh, hooks=[_Nothing()]))[0])
    )
    for slots in (0, 1, 4, 8):
        rec = dtsgd_viz.Recorder(kinds=("param", "velocity"), every=10**9, buffer_steps=slots)
        opt = dtsgd_viz.SGD(**ob.NESTEROV, mesh=mesh, hooks=[rec])
        out.append(ob.Variant(f"recorder, never due, buffer_steps={slots}", make(opt)[0], rec=rec))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--blocks", type=int, default=16)
    args = ap.parse_args(argv)
    print("| workload | variant | ratio | extra per step |\n|---|---|---|---|")
    for label, build in [
        ("2048x2048 on 2x4", lambda: ob._matrix_workload(2048)),
        ("sharded MLP (LayoutMap)", ob._mlp_workload),
    ]:
        mesh, make, _ = build()
        variants = _variants(mesh, make)
        med = ob._measure(variants, args.blocks)
        for v in variants:
            v.close()
        base = med[variants[0].name]
        for v in variants[1:]:
            print(
                f"| {label} | {v.name} | {med[v.name] / base:.2f}x | "
                f"{(med[v.name] - base) / base * 100:+.0f}% of the plain step |"
            )
    print(f"\nmedian over {args.blocks} blocks of {ob.BLOCK} steps per variant, interleaved")


if __name__ == "__main__":
    main()
